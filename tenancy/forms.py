"""The sign-in forms (`/accounts/login/` and the steward admin's): email, password and
the organisation (the tenant's slug), which is needed only when the email and password
are a person's in more than one tenant. The backend that reads them is
`identity.backends.PersonBackend` (above this layer; named in settings)."""

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import authenticate
from django.contrib.auth.forms import AuthenticationForm

# Set on the request by the sign-in backend (`identity.backends.PersonBackend`) when the
# email and password are an account in several tenants and no organisation was named.
SIGN_IN_AMBIGUOUS = "telha_sign_in_ambiguous"

AMBIGUOUS_MESSAGE = (
    "This email and password are an account in more than one organisation: "
    "enter the organisation you sign in to."
)


def _organisation_field() -> forms.CharField:
    return forms.CharField(
        label="Organisation",
        required=False,
        max_length=64,
        widget=forms.TextInput(attrs={"autocomplete": "organization"}),
    )


def _clean(form: "SignInForm | StewardSignInForm") -> dict[str, Any]:
    """`AuthenticationForm.clean` with the organisation passed to `authenticate`."""
    data = form.cleaned_data
    username, password = data.get("username"), data.get("password")
    if username is not None and password:
        tenant = (data.get("tenant") or "").strip().lower() or None
        form.user_cache = authenticate(
            form.request, username=username, password=password, tenant=tenant
        )
        if form.user_cache is None:
            if getattr(form.request, SIGN_IN_AMBIGUOUS, False):
                form.ambiguous = AMBIGUOUS_MESSAGE
                raise forms.ValidationError(AMBIGUOUS_MESSAGE, code="ambiguous")
            raise form.get_invalid_login_error()
        form.confirm_login_allowed(form.user_cache)
    return data


class SignInForm(AuthenticationForm):
    """Everyone's sign-in (`/accounts/login/`)."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Please enter a correct email and password.",
    }

    tenant = _organisation_field()
    ambiguous = ""  # AMBIGUOUS_MESSAGE when the organisation must be named

    def clean(self) -> dict[str, Any]:
        return _clean(self)


class StewardSignInForm(AdminAuthenticationForm):
    """The steward admin's sign-in (`/admin/login/`): stewards only."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "invalid_login": "Please enter the correct email and password of a steward.",
    }

    tenant = _organisation_field()
    ambiguous = ""  # AMBIGUOUS_MESSAGE when the organisation must be named

    def clean(self) -> dict[str, Any]:
        return _clean(self)
