"""People and keys, viewable by their tenant's stewards."""

from django.contrib import admin

from .models import ApiKey, Person, PersonAlias
from .steward_admin import TenantScopedAdmin


class AliasInline(admin.TabularInline):
    model = PersonAlias
    fields = ("kind", "value")
    readonly_fields = ("kind", "value")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Person)
class PersonAdmin(TenantScopedAdmin):
    list_display = ("name", "email", "role", "group_names", "erased_at")
    list_filter = ("role",)
    search_fields = ("name", "email")
    fields = ("name", "email", "role", "erased_at")
    readonly_fields = fields
    inlines = [AliasInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    @admin.display(description="groups")
    def group_names(self, obj: Person) -> str:
        return ", ".join(g.name for g in obj.groups.all())


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScopedAdmin):
    list_display = ("prefix", "name", "person", "role", "audience", "created_at", "revoked_at")
    list_select_related = ("person",)
    fields = ("prefix", "name", "person", "role", "audience", "created_at", "revoked_at")
    readonly_fields = fields
