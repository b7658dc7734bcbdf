"""The steward admin: only stewards enter, and each sees only their own tenant."""

import json
import re
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from telha.common.times import iso
from telha.tenancy.models import Person, Rights

# A 16-digit integer is a µs time (2001 to 2286); people see it as a date.
_RAW_US = re.compile(r"(?<![\w-])1\d{15}(?![\w-])")


def json_for_people(value: Any) -> str:
    """A JSON value (an audit detail, a provenance) as text, µs times shown as dates."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return _RAW_US.sub(lambda m: iso(int(m.group())), text)


def steward_of(request: HttpRequest) -> Person | None:
    """The signed-in steward's person, or None (non-stewards may not enter)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active or not user.is_staff:
        return None
    person = getattr(user, "person", None)
    if person is None or person.role != Rights.STEWARD or person.erased_at is not None:
        return None
    return person


class StewardAdminSite(admin.AdminSite):
    site_header = "Telha clarify — steward review"
    site_title = "Telha clarify"
    index_title = "Review"
    index_template = "admin/telha_index.html"

    def has_permission(self, request: HttpRequest) -> bool:
        return steward_of(request) is not None


class TenantScopedAdmin(admin.ModelAdmin):
    """Read-only by default and restricted to the steward's tenant; another tenant's
    object is indistinguishable from a missing one."""

    tenant_field = "tenant"
    editable = False

    def get_queryset(self, request: HttpRequest) -> Any:
        qs = super().get_queryset(request)
        person = steward_of(request)
        if person is None:
            return qs.none()
        return qs.filter(**{self.tenant_field: person.tenant})

    def has_module_permission(self, request: HttpRequest) -> bool:
        return steward_of(request) is not None

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return steward_of(request) is not None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.editable and steward_of(request) is not None

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
