"""The tenant's OpenID provider, set by its stewards in the admin (the same service as
`telha sso configure`)."""

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from tenancy.steward_admin import TenantScopedAdmin, steward_of

from .models import SsoProvider
from .services import issuer_problem, sso_configure


class SsoProviderForm(forms.ModelForm):
    issuer = forms.URLField(max_length=500, assume_scheme="https")
    client_secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="Leave empty to keep the current secret.",
    )

    class Meta:
        model = SsoProvider
        fields = ("issuer", "client_id", "client_secret", "display_name", "password_login")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("client_secret") and self.instance.pk is not None:
            data["client_secret"] = self.instance.client_secret
        if not data.get("client_secret"):
            self.add_error("client_secret", "The client secret is required.")
        problem = issuer_problem(data.get("issuer") or "")
        if problem is not None:
            self.add_error("issuer", problem)
        return data


@admin.register(SsoProvider)
class SsoProviderAdmin(TenantScopedAdmin):
    form = SsoProviderForm
    editable = True
    list_display = ("issuer", "client_id", "display_name", "password_login", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        steward = steward_of(request)
        return (
            steward is not None and not SsoProvider.objects.filter(tenant=steward.tenant).exists()
        )

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        steward = steward_of(request)
        assert steward is not None
        data = form.cleaned_data
        saved = sso_configure(
            tenant=steward.tenant,
            issuer=data["issuer"],
            client_id=data["client_id"],
            client_secret=data["client_secret"],
            display_name=data.get("display_name") or "",
            password_login=bool(data.get("password_login")),
        )
        obj.pk, obj.tenant, obj.created_at = saved.pk, saved.tenant, saved.created_at
