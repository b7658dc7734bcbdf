"""Writes for tenancy: loading a workspace file, creating and revoking keys."""

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from common.codes import AwayError, ErrorCode
from common.errors import DomainError, InvalidInput, NotFound

from .models import (
    AliasKind,
    ApiKey,
    Audience,
    Person,
    PersonAlias,
    Rights,
    Tenant,
    TenantGroup,
    normalise_alias,
)

KEY_PREFIX = "tlh_"
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_GROUP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# An email (a sign-in name) holds at most 150 characters, as Django user names did when
# they were the email; a longer one was never accepted, so none exists.
EMAIL_MAX_LENGTH = 150
_FIRST_NAME_MAX_LENGTH = 150


class WorkspaceInvalid(InvalidInput):
    code = ErrorCode.WORKSPACE_INVALID
    default_detail = "The workspace file is invalid; nothing was loaded."


@dataclass
class WorkspaceLoadResult:
    tenant: Tenant
    created_people: int = 0
    updated_people: int = 0
    groups: list[str] = field(default_factory=list)


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _workspace_errors(data: Any) -> list[str]:
    """Every problem with a workspace document, as `path: message` strings."""
    errors: list[str] = []
    if not isinstance(data, dict):
        return ["$: expected a JSON object"]
    allowed = {"tenant", "name", "groups", "people"}
    errors += [f"{k}: unknown field" for k in data if k not in allowed]
    tenant = data.get("tenant")
    if not isinstance(tenant, str) or not _SLUG_RE.fullmatch(tenant):
        errors.append("tenant: expected a slug (lowercase letters, digits, '-')")
    if "name" in data and (not isinstance(data["name"], str) or len(data["name"]) > 200):
        errors.append("name: expected a string of at most 200 characters")
    groups = data.get("groups", [])
    if not isinstance(groups, list) or not all(
        isinstance(g, str) and _GROUP_RE.fullmatch(g) for g in groups
    ):
        errors.append("groups: expected a list of group names")
        groups = []
    people = data.get("people", [])
    if not isinstance(people, list):
        return [*errors, "people: expected a list"]
    seen_emails: set[str] = set()
    seen_aliases: dict[tuple[str, str], str] = {}
    person_fields = {"name", "email", "role", "groups", "aliases", "password"}
    for i, person in enumerate(people):
        path = f"people[{i}]"
        if not isinstance(person, dict):
            errors.append(f"{path}: expected an object")
            continue
        errors += [f"{path}.{k}: unknown field" for k in person if k not in person_fields]
        name = person.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            errors.append(f"{path}.name: required, a string of at most 200 characters")
        email = person.get("email")
        if not isinstance(email, str):
            errors.append(f"{path}.email: required, a string")
        elif len(email) > EMAIL_MAX_LENGTH:
            errors.append(f"{path}.email: at most {EMAIL_MAX_LENGTH} characters")
        else:
            try:
                validate_email(email)
            except ValidationError:
                errors.append(f"{path}.email: not a valid email address")
            else:
                if email.lower() in seen_emails:
                    errors.append(f"{path}.email: duplicate {email}")
                seen_emails.add(email.lower())
        role = person.get("role", "viewer")
        if not isinstance(role, str) or role not in Rights.values:
            errors.append(f"{path}.role: expected one of viewer, editor, steward")
        pgroups = person.get("groups", [])
        if not isinstance(pgroups, list) or any(
            not isinstance(g, str) or g not in groups for g in pgroups
        ):
            errors.append(f"{path}.groups: every group must be listed in the top-level groups")
        if "password" in person and (
            not isinstance(person["password"], str) or len(person["password"]) < 8
        ):
            errors.append(f"{path}.password: at least 8 characters")
        aliases = person.get("aliases", {})
        if not isinstance(aliases, dict):
            errors.append(f"{path}.aliases: expected an object")
            continue
        for kind, value in aliases.items():
            if kind not in AliasKind.values:
                errors.append(f"{path}.aliases.{kind}: unknown alias kind")
            elif not isinstance(value, str) or not value.strip() or len(value) > 320:
                errors.append(f"{path}.aliases.{kind}: expected a non-empty string")
            else:
                key = (kind, normalise_alias(kind, value))
                owner = seen_aliases.setdefault(key, str(email).lower())
                if owner != str(email).lower():
                    errors.append(f"{path}.aliases.{kind}: already used by {owner}")
    return errors


@transaction.atomic
def workspace_load(*, data: Any) -> WorkspaceLoadResult:
    """Load (or re-load) a workspace file (CONTRACT §2.1). Idempotent: people are matched
    by email within the tenant. A person without a `upn` alias in the file keeps the one
    they have (set by SCIM), else their email is their `upn` (their SCIM userName, unique
    in the tenant). The whole file is validated first; a refused file loads
    nothing. In the same transaction, every source ACL of the tenant is re-resolved (so a
    principal named before its person, alias or group existed is granted, and a removed
    alias loses its grant) and PERSON nodes keyed by a now-known alias become that
    person's node."""
    errors = _workspace_errors(data)
    if errors:
        raise WorkspaceInvalid("; ".join(errors[:20]), errors=errors)
    tenant, _ = Tenant.objects.get_or_create(
        slug=data["tenant"], defaults={"name": data.get("name") or data["tenant"]}
    )
    if data.get("name") and tenant.name != data["name"]:
        tenant.name = data["name"]
        tenant.save(update_fields=["name"])
    result = WorkspaceLoadResult(tenant=tenant)
    groups: dict[str, TenantGroup] = {}
    for name in data.get("groups", []):
        groups[name] = tenant_group_ensure(tenant=tenant, name=name)
        result.groups.append(name)
    for entry in data.get("people", []):
        email = entry["email"].strip().lower()
        try:
            person, created = person_upsert(
                tenant=tenant,
                email=email,
                name=entry["name"],
                role=entry.get("role", Rights.VIEWER),
                password=entry.get("password") or None,
            )
            person_groups_set(person=person, groups=[groups[g] for g in entry.get("groups", [])])
            wanted = {AliasKind.EMAIL.value: email, **entry.get("aliases", {})}
            wanted.setdefault(AliasKind.UPN.value, _upn_of(person) or email)
            person_aliases_set(person=person, aliases=wanted)
        except IdentityClash as exc:
            raise WorkspaceInvalid(exc.detail) from exc
        if created:
            result.created_people += 1
        else:
            result.updated_people += 1
    tenant_identity_resolve(tenant=tenant)
    return result


def _upn_of(person: Person) -> str | None:
    return (
        PersonAlias.objects.filter(person=person, kind=AliasKind.UPN)
        .values_list("value", flat=True)
        .first()
    )


class IdentityClash(InvalidInput):
    """A sign-in name or alias already belongs to someone else."""

    code = ErrorCode.IDENTITY_CLASH


def tenant_group_ensure(*, tenant: Tenant, name: str) -> TenantGroup:
    """The tenant's group NAME (ACL principal `group:NAME`), created with its Django auth
    group `<tenant>:<name>` when missing."""
    tg = TenantGroup.objects.filter(tenant=tenant, name=name).first()
    if tg is None:
        auth_group, _ = Group.objects.get_or_create(name=f"{tenant.slug}:{name}")
        tg = TenantGroup.objects.create(tenant=tenant, name=name, auth_group=auth_group)
    return tg


def person_upsert(
    *,
    tenant: Tenant,
    email: str,
    name: str,
    role: str,
    password: str | None = None,
    person: Person | None = None,
    keep_password: bool = False,
) -> tuple[Person, bool]:
    """Create or update a person (matched by `person`, else by email in the tenant) and
    their Django user. With `password` the user signs in with it; without, sign-in by
    password is disabled unless `keep_password`. Only stewards are staff. Returns
    `(person, created)`.

    The Django user name is the person's id (`user_name_for`): a tenant's sign-in names
    (email, SCIM userName) are its own, unique within it by `person_unique_email` and the
    `upn` alias, and never compared with another tenant's; password sign-in resolves them
    (`identity.backends`). Refused (`IdentityClash`) when the email is another person's
    of this tenant."""
    if person is None:
        person = Person.objects.filter(tenant=tenant, email=email).first()
    same_email = Person.objects.filter(tenant=tenant, email=email)
    if person is not None:
        same_email = same_email.exclude(pk=person.pk)
    if same_email.exists():
        raise IdentityClash(f"{email} already belongs to another person of this tenant")
    created = person is None
    if person is None:
        person_id = uuid.uuid4()
        user = User.objects.create(username=user_name_for(person_id), email=email)
        person = Person.objects.create(
            id=person_id, tenant=tenant, name=name, email=email, role=role, user=user
        )
    else:
        person.name, person.role, person.email = name, role, email
        person.save(update_fields=["name", "role", "email"])
        user = person.user or User.objects.create(username=user_name_for(person.pk), email=email)
        if person.user is None:
            person.user = user
            person.save(update_fields=["user"])
        user.email = email
    if password:
        if not user.check_password(password):
            user.set_password(password)
    elif not keep_password or created:
        user.set_unusable_password()
    user.first_name = name[:_FIRST_NAME_MAX_LENGTH]  # what the admin greets them by
    user.is_staff = role == Rights.STEWARD
    user.is_active = person.deactivated_at is None
    user.save()
    return person, created


def user_name_for(person_id: uuid.UUID) -> str:
    """The Django user name of a person: their id, the same in every tenant's terms and
    never a name a tenant chose (which another tenant may also hold)."""
    return str(person_id)


def person_groups_set(*, person: Person, groups: list[TenantGroup]) -> None:
    """The person is a member of exactly these groups of their tenant (and their user of
    the groups' auth groups, which is what source ACLs grant to)."""
    person.groups.set(groups)
    if person.user is not None:
        person.user.groups.set([g.auth_group for g in groups])


def person_aliases_set(
    *, person: Person, aliases: dict[str, str], managed: list[str] | None = None
) -> None:
    """The person holds exactly these aliases among the `managed` kinds (default: every
    kind): the others of those kinds are removed. Refused (`IdentityClash`) when one is
    another person's."""
    wanted = {kind: normalise_alias(kind, value) for kind, value in aliases.items()}
    kinds = managed if managed is not None else AliasKind.values
    PersonAlias.objects.filter(person=person, kind__in=kinds).exclude(
        kind__in=list(wanted)
    ).delete()
    for kind, value in wanted.items():
        taken = PersonAlias.objects.filter(
            tenant_id=person.tenant_id, kind=kind, value=value
        ).exclude(person=person)
        if taken.exists():
            raise IdentityClash(f"alias {kind}:{value} already belongs to another person")
        PersonAlias.objects.update_or_create(
            person=person, kind=kind, defaults={"tenant_id": person.tenant_id, "value": value}
        )


# The seam "a tenant's identity changed" (people, groups, memberships, aliases): sent with
# `tenant=`; `graph` connects its re-resolution in `GraphConfig.ready`.
tenant_identity_changed = Signal()


def tenant_identity_resolve(*, tenant: Tenant) -> None:
    """After people, groups, memberships or aliases changed: tell the layers above through
    `tenant_identity_changed`, in the caller's transaction. The graph (above tenancy, so
    never imported here) re-resolves every source ACL of the tenant (a principal named
    before its person, alias or group existed is granted, a removed one loses its grant),
    tells whoever lost read access, and adopts PERSON nodes keyed by a now-known alias."""
    tenant_identity_changed.send(sender=Tenant, tenant=tenant)


def api_key_create(
    *,
    tenant: Tenant,
    person: Person | None = None,
    role: str | None = None,
    audience: str | None = None,
    name: str = "",
) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret (shown once; only the hash is kept).

    A key is bound either to a principal (person + role, the role never above the
    person's own rights) or to an audience, or to neither."""
    if person is not None and audience is not None:
        raise InvalidInput("A key is bound to a person or to an audience, not both.")
    if person is not None and person.tenant_id != tenant.pk:
        raise NotFound("No such person in this tenant.")
    if audience is not None and audience not in Audience.values:
        raise InvalidInput("audience must be 'ingest', 'clarify' or 'scim'.")
    if person is None and role is not None:
        raise InvalidInput("--role needs --person.")
    if person is not None:
        role = role or person.role
        if role not in Rights.values:
            raise InvalidInput("role must be viewer, editor or steward.")
        if not Rights.at_least(person.role, role):
            raise DomainError(
                f"{person.email} has {person.role} rights; a key cannot grant {role}.",
            )
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=secret[: len(KEY_PREFIX) + 6],
        key_hash=hash_key(secret),
        person=person,
        role=role if person is not None else None,
        audience=audience,
    )
    return key, secret


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Revoke a key; it stops authenticating at once. Revoking twice is harmless."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


# --- away and delegates (issue 32) -------------------------------------------------------

# The seam "a person's away changed": sent with `tenant=`, `type=` ("away_set" or
# "away_cleared") and `detail=` inside the change's transaction; clarify audits it.
person_away_changed = Signal()


class AwayRefused(DomainError):
    """An away setting refused before anything is written: `code` says why."""

    status_code = 422

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


def away_errors(*, person: Person, until: date, delegate: Person | None) -> AwayRefused | None:
    """Why `person` may not be marked away until `until` with `delegate`, or None:
    a day already past (AWAY_UNTIL_INVALID); a delegate who is the person themselves, of
    another tenant, erased or deprovisioned (DELEGATE_INVALID)."""
    if until < timezone.now().date():
        return AwayRefused(AwayError.AWAY_UNTIL_INVALID, f"{until.isoformat()} is already past.")
    if delegate is None:
        return None
    if delegate.pk == person.pk:
        return AwayRefused(AwayError.DELEGATE_INVALID, "A person cannot be their own delegate.")
    if (
        delegate.tenant_id != person.tenant_id
        or delegate.erased_at is not None
        or delegate.deactivated_at is not None
    ):
        return AwayRefused(
            AwayError.DELEGATE_INVALID,
            "The delegate must be an active person of the same workspace.",
        )
    return None


@transaction.atomic
def person_away_set(
    *, person: Person, until: date, delegate: Person | None, by: Person | None, via: str
) -> Person:
    """Mark `person` away through the end of `until` (UTC), with an optional delegate
    asked in their place (never their delegate's delegate: the delivery plan's rule).
    Refused (`AwayRefused`) before anything is written; audited `away_set`."""
    error = away_errors(person=person, until=until, delegate=delegate)
    if error is not None:
        raise error
    Person.objects.filter(pk=person.pk).update(
        away_until=until, away_delegate=delegate, updated_at=timezone.now()
    )
    person.away_until, person.away_delegate = until, delegate
    detail = {
        "person": str(person.pk),
        "until": until.isoformat(),
        "delegate": str(delegate.pk) if delegate else None,
        "by": str(by.pk) if by else None,
        "via": via,
    }
    person_away_changed.send(sender=Person, tenant=person.tenant, type="away_set", detail=detail)
    return person


@transaction.atomic
def person_back(*, person: Person, by: Person | None, via: str) -> Person:
    """`person` is back: asked again in their own right, their delegate no longer."""
    Person.objects.filter(pk=person.pk).update(
        away_until=None, away_delegate=None, updated_at=timezone.now()
    )
    person.away_until, person.away_delegate = None, None
    detail = {"person": str(person.pk), "by": str(by.pk) if by else None, "via": via}
    person_away_changed.send(
        sender=Person, tenant=person.tenant, type="away_cleared", detail=detail
    )
    return person
