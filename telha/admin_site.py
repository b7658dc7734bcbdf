"""The steward admin: only stewards enter, and each sees only their own tenant (the rules:
`telha.tenancy.steward_admin`, below every app's admin)."""

import json
import re
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from telha.common.times import iso
from telha.tenancy.forms import StewardSignInForm
from telha.tenancy.steward_admin import steward_of

# A 16-digit integer is a µs time (2001 to 2286); people see it as a date.
_RAW_US = re.compile(r"(?<![\w-])1\d{15}(?![\w-])")


def json_for_people(value: Any) -> str:
    """A JSON value (an audit detail, a provenance) as text, µs times shown as dates."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return _RAW_US.sub(lambda m: iso(int(m.group())), text)


class StewardAdminSite(admin.AdminSite):
    site_header = "Telha clarify — steward review"
    site_title = "Telha clarify"
    index_title = "Review"
    index_template = "admin/telha_index.html"
    login_form = StewardSignInForm  # email, password and (when needed) the organisation

    def has_permission(self, request: HttpRequest) -> bool:
        return steward_of(request) is not None
