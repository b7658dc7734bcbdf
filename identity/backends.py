"""Password sign-in of a tenant's people. A person signs in with their email (or their
SCIM userName) and password, within their organisation: the same email may be a person
of several tenants, so the organisation (the tenant's slug) is named on the sign-in form
when it has to be. Tenants whose OpenID provider turned password sign-in off
(`SsoProvider.password_login`) are never signed into by password."""

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from tenancy.forms import SIGN_IN_AMBIGUOUS
from tenancy.models import Person
from tenancy.selectors import people_signing_in

from .models import SsoProvider


class PersonBackend(ModelBackend):
    """`authenticate(request, username=EMAIL, password=…, tenant=SLUG|None)`: the one
    person, of the named tenant or else of any, whose email or userName is the name and
    whose password this is. Listed first; it ends every password attempt (a refusal is
    `PermissionDenied`), so Django's ModelBackend, listed after it for the sessions it
    names (single sign-on, sessions from before), never signs in by the Django user name
    (a person's id). Sessions, permissions and `get_user` are ModelBackend's."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        tenant: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if username is None or password is None:
            return None  # not a password sign-in
        people = _passwords_allowed(people_signing_in(name=username, tenant=tenant or None))
        if not people:
            User().set_password(password)  # as long as a wrong password takes
            raise PermissionDenied
        # One password check per candidate: only the password picks among several.
        matched = [p for p in people if p.user is not None and p.user.check_password(password)]
        if len(matched) == 1 and matched[0].user is not None:
            user = matched[0].user
            if self.user_can_authenticate(user):
                return user
        elif len(matched) > 1 and request is not None:
            setattr(request, SIGN_IN_AMBIGUOUS, True)
        raise PermissionDenied


def _passwords_allowed(people: list[Person]) -> list[Person]:
    """Those of `people` whose tenant has not turned password sign-in off."""
    off = set(
        SsoProvider.objects.filter(
            password_login=False, tenant_id__in={p.tenant_id for p in people}
        ).values_list("tenant_id", flat=True)
    )
    return [p for p in people if p.tenant_id not in off]
