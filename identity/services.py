"""Writes of enterprise identity: provisioning people and groups from the tenant's
identity provider (SCIM), deprovisioning and reactivating them.

People, memberships and aliases are written by the same tenancy services the workspace
file uses (`person_upsert`, `person_groups_set`, `person_aliases_set`,
`tenant_group_ensure`), and every change re-resolves the tenant's source ACLs exactly as a
workspace load does (`tenant_identity_resolve`)."""

import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from clarify.services import audit_event_append
from common.codes import ErrorCode, SkipReason
from common.errors import Conflict, InvalidInput
from delivery.revocation import person_cards_withdraw
from tenancy.models import AliasKind, Person, PersonAlias, Rights, Tenant, TenantGroup
from tenancy.services import (
    _GROUP_RE,
    EMAIL_MAX_LENGTH,
    IdentityClash,
    person_aliases_set,
    person_groups_set,
    person_upsert,
    tenant_group_ensure,
    tenant_identity_resolve,
)

from .models import ProvisionedUser, SsoProvider

# The aliases the identity provider owns; Slack and Teams ids stay as the workspace file
# or the admin set them.
PROVISIONED_ALIASES = [AliasKind.EMAIL.value, AliasKind.UPN.value, AliasKind.AAD_OID.value]


class ProvisioningInvalid(InvalidInput):
    code = ErrorCode.PROVISIONING_INVALID


class ProvisioningConflict(Conflict):
    code = ErrorCode.PROVISIONING_CONFLICT


@dataclass
class PersonSpec:
    """What the identity provider says about a person (already parsed from SCIM)."""

    user_name: str
    email: str | None
    name: str
    roles: list[str] = field(default_factory=list)
    external_id: str | None = None
    active: bool = True
    unset: list[str] = field(default_factory=list)  # of displayName, active, roles


@dataclass
class GroupSpec:
    name: str
    external_id: str = ""
    members: list[str] | None = None  # person ids; None: leave memberships as they are


def _email_of(spec: PersonSpec) -> str:
    email = (spec.email or spec.user_name).strip().lower()
    try:
        validate_email(email)
    except ValidationError as exc:
        raise ProvisioningInvalid(
            "A person needs an email: send a primary `emails` value (or an email as userName)."
        ) from exc
    if len(email) > EMAIL_MAX_LENGTH:
        raise ProvisioningInvalid(f"emails: at most {EMAIL_MAX_LENGTH} characters.")
    return email


def _role_of(roles: list[str]) -> str:
    unknown = [r for r in roles if r not in Rights.values]
    if unknown:
        raise ProvisioningInvalid(f"roles: {unknown[0]!r} is not one of viewer, editor, steward.")
    return max(roles, key=Rights.rank) if roles else Rights.VIEWER


@transaction.atomic
def person_provision(*, tenant: Tenant, spec: PersonSpec, person: Person | None = None) -> Person:
    """Create (`person` None) or replace a person from the identity provider: userName is
    their UPN alias and sign-in name (unique within the tenant; another tenant may hold
    the same name), the email their email, externalId their Entra
    object id alias, the highest of `roles` their rights. `active` false deprovisions,
    true reactivates. Refused with nothing written on bad input or a clash."""
    user_name = spec.user_name.strip().lower()
    if not user_name or len(user_name) > 150:
        raise ProvisioningInvalid("userName: required, at most 150 characters.")
    email, role = _email_of(spec), _role_of(spec.roles)
    name = (spec.name or user_name).strip()[:200]
    if person is None:
        existing = Person.objects.filter(tenant=tenant, email=email).first()
        if existing is not None and not existing.deleted_by_provider:
            raise ProvisioningConflict(f"A person with email {email} already exists.")
        person = existing  # deleted by the provider and created again: the same person
        if person is not None:
            person.deleted_by_provider = False
            person.save(update_fields=["deleted_by_provider", "updated_at"])
    taken = PersonAlias.objects.filter(tenant=tenant, kind=AliasKind.UPN, value=user_name)
    if person is not None:
        taken = taken.exclude(person=person)
    if taken.exists():
        # Only this tenant's names are compared: another tenant's are never seen here. A
        # concurrent create of the same name fails on `alias_unique_value` instead (409).
        raise ProvisioningConflict(f"userName {user_name} already belongs to another user.")
    aliases = {AliasKind.EMAIL.value: email, AliasKind.UPN.value: user_name}
    if spec.external_id:
        aliases[AliasKind.AAD_OID.value] = spec.external_id[:320]
    try:
        person, _ = person_upsert(
            tenant=tenant,
            email=email,
            name=name,
            role=role,
            person=person,
            keep_password=True,
        )
        person_aliases_set(person=person, aliases=aliases, managed=PROVISIONED_ALIASES)
    except IdentityClash as exc:
        raise ProvisioningConflict(exc.detail) from exc
    ProvisionedUser.objects.update_or_create(person=person, defaults={"unset": spec.unset})
    if not spec.active and person.deactivated_at is None:
        person_deprovision(person=person)
    elif spec.active and person.deactivated_at is not None:
        person_reactivate(person=person)
    tenant_identity_resolve(tenant=tenant)
    return person


@transaction.atomic
def group_provision(
    *, tenant: Tenant, spec: GroupSpec, group: TenantGroup | None = None
) -> TenantGroup:
    """Create or replace a tenant group: `name` is the name ACL principals use
    (`group:NAME`), `members` the people in it. Renaming re-resolves ACLs too."""
    if not _GROUP_RE.fullmatch(spec.name):
        raise ProvisioningInvalid(
            "displayName: letters, digits, '_', '.', '-' (starting with a letter or digit)."
        )
    taken = TenantGroup.objects.filter(tenant=tenant, name=spec.name)
    if group is not None:
        taken = taken.exclude(pk=group.pk)
    if taken.exists():
        raise ProvisioningConflict(f"A group named {spec.name} already exists.")
    members = _members(tenant, spec.members) if spec.members is not None else None
    if group is None:
        group = tenant_group_ensure(tenant=tenant, name=spec.name)
    elif group.name != spec.name:
        group.name = spec.name
        group.auth_group.name = f"{tenant.slug}:{spec.name}"
        group.auth_group.save(update_fields=["name"])
    group.external_id = spec.external_id[:300]
    group.save()
    if members is not None:
        _memberships_set(group, members)
    tenant_identity_resolve(tenant=tenant)
    return group


def _members(tenant: Tenant, ids: list[str]) -> list[Person]:
    people = {
        str(p.pk): p
        for p in Person.objects.select_related("user").filter(
            tenant=tenant,
            erased_at__isnull=True,
            deleted_by_provider=False,
            pk__in=[i for i in ids if _is_uuid(i)],
        )
    }
    missing = [i for i in ids if i not in people]
    if missing:
        raise ProvisioningInvalid(f"members: no user {missing[0]!r} in this tenant.")
    return list(people.values())


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _memberships_set(group: TenantGroup, members: list[Person]) -> None:
    """Exactly these people are the group's members: each one's memberships are written
    by `person_groups_set`, the workspace file's service. The people whose memberships
    change are locked (in id order) and their groups read under the lock, so a
    concurrent change of another group's members is kept, not undone."""
    wanted = {p.pk for p in members}
    have = set(group.members.values_list("pk", flat=True))
    changing = sorted(have ^ wanted)
    list(
        Person.objects.select_for_update()
        .filter(pk__in=changing)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    people = Person.objects.select_related("user").prefetch_related("groups")
    for person in people.filter(pk__in=changing):
        others = [g for g in person.groups.all() if g.pk != group.pk]
        person_groups_set(person=person, groups=[*others, group] if person.pk in wanted else others)


@transaction.atomic
def group_delete(*, group: TenantGroup) -> None:
    """Delete a tenant group; its ACL principals then name no one."""
    tenant, auth_group = group.tenant, group.auth_group
    for person in group.members.select_related("user").prefetch_related("groups"):
        person_groups_set(
            person=person, groups=[g for g in person.groups.all() if g.pk != group.pk]
        )
    group.delete()
    auth_group.delete()
    tenant_identity_resolve(tenant=tenant)


@transaction.atomic
def person_deprovision(*, person: Person, via: str = "scim") -> dict[str, int]:
    """The identity provider removed the person (SCIM `active: false` or DELETE): their
    keys are revoked (401 from now on, for good), their sessions end (the user is
    inactive and its session hash changes), they are never asked again (delivery skips
    them with RESPONDER_NOT_AUTHORISED), their open cards are withdrawn (a tap gets
    "moved on") and any routing job waiting on them moves on. What they answered stays."""
    now = timezone.now()
    if person.deactivated_at is None:
        person.deactivated_at = now
        person.save(update_fields=["deactivated_at", "updated_at"])
    user = person.user
    if user is not None:
        user.is_active = False
        user.set_unusable_password()  # a new hash: every session of the user is invalid
        user.save(update_fields=["is_active", "password"])
    keys = person.api_keys.filter(revoked_at__isnull=True).update(revoked_at=now)
    cards = person_cards_withdraw(
        person=person, reason=SkipReason.RESPONDER_NOT_AUTHORISED, detail="deprovisioned"
    )
    counts = {"keys": keys, "cards": cards}
    audit_event_append(
        tenant=person.tenant,
        type="person_deprovisioned",
        detail={"person": str(person.pk), "via": via, **counts},
    )
    return counts


@transaction.atomic
def person_remove(*, person: Person) -> None:
    """SCIM DELETE: deprovisioned, and no longer one of the provider's resources (the
    person and what they answered stay as evidence)."""
    person_deprovision(person=person, via="scim-delete")
    person.deleted_by_provider = True
    person.save(update_fields=["deleted_by_provider", "updated_at"])


@transaction.atomic
def person_reactivate(*, person: Person, via: str = "scim") -> None:
    """Sign-in works again (by the tenant's OpenID provider; a password was cleared at
    deprovisioning); revoked keys stay revoked."""
    person.deactivated_at = None
    person.save(update_fields=["deactivated_at", "updated_at"])
    if person.user is not None:
        person.user.is_active = True
        person.user.save(update_fields=["is_active"])
    audit_event_append(
        tenant=person.tenant,
        type="person_reactivated",
        detail={"person": str(person.pk), "via": via},
    )


class SsoInvalid(InvalidInput):
    code = ErrorCode.SSO_INVALID


def issuer_problem(issuer: str) -> str | None:
    """Why an issuer URL is refused, or None: https, a host, no query or fragment. A
    loopback host (127.0.0.1, localhost, ::1), over http or https, only with
    `SSO_ALLOW_INSECURE_ISSUER` (default: DEBUG; the tests and a local provider)."""
    parts = urlsplit(issuer.strip())
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if loopback and not settings.SSO_ALLOW_INSECURE_ISSUER:
        return "issuer: a loopback address is refused (SSO_ALLOW_INSECURE_ISSUER is off)."
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        return "issuer: an https URL (the provider's issuer identifier)."
    if parts.query or parts.fragment or not parts.hostname:
        return "issuer: a URL without query or fragment."
    return None


def sso_configure(
    *,
    tenant: Tenant,
    issuer: str,
    client_id: str,
    client_secret: str,
    display_name: str = "",
    password_login: bool | None = None,
) -> SsoProvider:
    """Set (or replace) the tenant's OpenID provider. The issuer is an https URL (see
    `issuer_problem` for loopback addresses)."""
    issuer = issuer.strip().rstrip("/")
    problem = issuer_problem(issuer)
    if problem is not None:
        raise SsoInvalid(problem)
    if not client_id.strip() or not client_secret:
        raise SsoInvalid("client id and client secret are required.")
    defaults: dict[str, object] = {
        "issuer": issuer,
        "client_id": client_id.strip(),
        "client_secret": client_secret,
        "display_name": display_name[:100],
    }
    if password_login is not None:
        defaults["password_login"] = password_login
    provider, _ = SsoProvider.objects.update_or_create(tenant=tenant, defaults=defaults)
    return provider
