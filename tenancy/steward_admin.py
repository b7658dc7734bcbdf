"""The steward admin's rules, for every app's admin: who may enter (`steward_of`: a
steward), and `TenantScopedAdmin`, the base of every model admin, which shows a steward
only their own tenant's rows. The site itself is project glue (`telha.admin_site`)."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import Person, Rights


def steward_of(request: HttpRequest) -> Person | None:
    """The signed-in steward's person, or None (non-stewards may not enter)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active or not user.is_staff:
        return None
    person = getattr(user, "person", None)
    if person is None or person.role != Rights.STEWARD or person.erased_at is not None:
        return None
    return person


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
