"""The steward admin: only stewards enter, and each sees only their own tenant (the rules:
`tenancy.steward_admin`, below every app's admin)."""

from django.contrib import admin
from django.http import HttpRequest

from tenancy.forms import StewardSignInForm
from tenancy.steward_admin import steward_of


class StewardAdminSite(admin.AdminSite):
    site_header = "Telha clarify — steward review"
    site_title = "Telha clarify"
    index_title = "Review"
    index_template = "admin/telha_index.html"
    login_form = StewardSignInForm  # email, password and (when needed) the organisation

    def has_permission(self, request: HttpRequest) -> bool:
        return steward_of(request) is not None
