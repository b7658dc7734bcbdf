"""API authentication: `Authorization: Bearer <key>` resolves to a `Caller`."""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.utils.functional import cached_property
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from .models import ApiKey, Audience, Person, Rights, Tenant
from .services import hash_key


@dataclass(frozen=True)
class Caller:
    """Who is calling: the key's tenant and, for a principal key, the person and rights.

    Rights are the lower of the key's role and the person's current rights, captured
    at request time."""

    tenant: Tenant
    key: ApiKey
    person: Person | None
    rights: str | None
    audience: str | None

    is_authenticated = True
    is_anonymous = False

    @cached_property
    def user(self) -> User | None:
        return self.person.user if self.person is not None else None

    @property
    def is_steward(self) -> bool:
        return self.rights == Rights.STEWARD

    @property
    def sees_whole_tenant(self) -> bool:
        """Service tokens, stewards and unbound API keys read every source of the tenant;
        a viewer's or editor's key reads only sources whose ACL grants them `view_source`.

        An unbound key (no person, no audience: `telha api_key create --tenant SLUG`) is the
        tenant's read-only integration key: it has no principal an ACL could name, and
        CONTRACT §2 binds only principal keys to a principal's grants. It cannot submit
        (`ingest` audience), lease jobs (no audience) or answer (no principal:
        RESPONDER_NOT_AUTHORISED), so it reads what an `ingest` token reads and writes
        nothing."""
        return self.audience is not None or self.is_steward or self.person is None


def caller_of(request: Request) -> Caller:
    """`request.user` as the `Caller` that `ApiKeyAuthentication` put there.

    DRF types `request.user` as a Django user; every view behind `ApiKeyAuthentication`
    reads it through this instead of a cast. A request without a key never reaches a view
    (its permission refuses it first); should one, it is `401 UNAUTHENTICATED`, rendered by
    the view's exception handler like any other missing credential."""
    user = request.user
    if not isinstance(user, Caller):
        raise exceptions.NotAuthenticated()
    return user


def caller_for_key(key: ApiKey) -> Caller:
    rights = None
    person = key.person
    if person is not None and key.role is not None:
        rights = min(key.role, person.role, key=Rights.rank)
    return Caller(tenant=key.tenant, key=key, person=person, rights=rights, audience=key.audience)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Bearer keys; an unknown or revoked key is 401 UNAUTHENTICATED."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Caller, ApiKey] | None:
        header = authentication.get_authorization_header(request).split()
        if not header:
            return None
        if header[0].decode("latin-1").lower() != self.keyword.lower() or len(header) != 2:
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <key>'.")
        try:
            secret = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid key.") from exc
        key = (
            ApiKey.objects.select_related("tenant", "person", "person__user")
            .filter(key_hash=hash_key(secret), revoked_at__isnull=True)
            .first()
        )
        if key is None or (
            key.person is not None
            and (key.person.erased_at is not None or key.person.deactivated_at is not None)
        ):
            raise exceptions.AuthenticationFailed("Unknown or revoked key.")
        return caller_for_key(key), key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="telha"'


class IsTenantCaller(permissions.BasePermission):
    """Any authenticated key of a tenant, except the identity provider's `scim` token,
    which may call only `/scim/v2/` (CONTRACT §3)."""

    message = "A `scim` token may call only /scim/v2/."

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.user, Caller) and request.user.audience != Audience.SCIM


class IsScimService(permissions.BasePermission):
    """The tenant's identity provider: a `scim` service token."""

    message = "Only a `scim` service token may call /scim/v2/."

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.user, Caller) and request.user.audience == Audience.SCIM


class _AudiencePermission(permissions.BasePermission):
    audience: str = ""
    allow_steward = False
    message = "This credential may not call this endpoint."

    def has_permission(self, request: Request, view: object) -> bool:
        caller = request.user
        if not isinstance(caller, Caller):
            return False
        return caller.audience == self.audience or (self.allow_steward and caller.is_steward)


class IsIngestService(_AudiencePermission):
    audience = Audience.INGEST
    message = "Only an `ingest` service token may call this endpoint."


class IsIngestServiceOrSteward(_AudiencePermission):
    audience = Audience.INGEST
    allow_steward = True
    message = "Only an `ingest` service token or a steward's key may call this endpoint."
