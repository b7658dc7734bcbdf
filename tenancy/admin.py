"""People and keys, viewable by their tenant's stewards."""

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from .models import ApiKey, Person, PersonAlias
from .services import away_errors, person_away_set, person_back
from .steward_admin import TenantScopedAdmin, steward_of


class AliasInline(admin.TabularInline):
    model = PersonAlias
    fields = ("kind", "value")
    readonly_fields = ("kind", "value")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class PersonAwayForm(forms.ModelForm):
    """The one thing a steward changes on a person here: away until a day, and the
    delegate asked in their place (checked by `away_errors`, saved by the service)."""

    class Meta:
        model = Person
        fields = ("away_until", "away_delegate")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        until, delegate = data.get("away_until"), data.get("away_delegate")
        if until is None and delegate is not None:
            raise forms.ValidationError("Give the last day away for a delegate to be asked.")
        if until is not None:
            error = away_errors(person=self.instance, until=until, delegate=delegate)
            if error is not None:
                raise forms.ValidationError(f"{error.code}: {error.detail}")
        return data


@admin.register(Person)
class PersonAdmin(TenantScopedAdmin):
    editable = True
    form = PersonAwayForm
    list_display = ("name", "email", "role", "group_names", "away_until", "erased_at")
    list_filter = ("role",)
    search_fields = ("name", "email")
    fields = ("name", "email", "role", "erased_at", "away_until", "away_delegate")
    readonly_fields = ("name", "email", "role", "erased_at")
    inlines = [AliasInline]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        steward = steward_of(request)
        if db_field.name == "away_delegate":
            kwargs["queryset"] = Person.objects.filter(
                tenant=steward.tenant if steward else None,
                erased_at__isnull=True,
                deactivated_at__isnull=True,
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Person, form: Any, change: bool) -> None:
        """Through the away services (validated, audited), never a plain save; only the
        away fields are editable, so an unchanged form writes nothing."""
        if not form.has_changed():
            return
        steward = steward_of(request)
        until, delegate = (
            form.cleaned_data.get("away_until"),
            form.cleaned_data.get("away_delegate"),
        )
        if until is None:
            person_back(person=obj, by=steward, via="admin")
        else:
            person_away_set(person=obj, until=until, delegate=delegate, by=steward, via="admin")

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None

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
