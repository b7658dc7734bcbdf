"""Password sign-in, refused for the people of a tenant whose OpenID provider has
password sign-in turned off (`SsoProvider.password_login`). Listed before Django's
ModelBackend: raising PermissionDenied stops `authenticate()` there."""

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from .models import SsoProvider


class PasswordPolicyBackend:
    """Only refuses: no `get_user`, so sessions (and `force_login`) never name it."""

    def authenticate(self, request: HttpRequest | None, **credentials: Any) -> Any:
        username = credentials.get("username")
        if username and "password" in credentials:
            off = SsoProvider.objects.filter(
                password_login=False, tenant__people__user__username=username
            )
            if off.exists():
                raise PermissionDenied("This organisation signs in with its provider.")
        return None
