"""Reads for tenancy: alias resolution is tenant-scoped, always."""

from collections.abc import Iterable

from django.db.models import Exists, OuterRef, Q

from .models import AliasKind, Person, PersonAlias, Tenant, normalise_alias

PERSON_ALIAS_PROPERTIES = {
    "email": AliasKind.EMAIL,
    "upn": AliasKind.UPN,
    "aadOid": AliasKind.AAD_OID,
    "slackUserId": AliasKind.SLACK_USER_ID,
    "teamsUserId": AliasKind.TEAMS_USER_ID,
}


def person_by_alias(*, tenant: Tenant, kind: str, value: str) -> Person | None:
    """The tenant's person holding this alias, or None."""
    alias = (
        PersonAlias.objects.select_related("person")
        .filter(tenant=tenant, kind=kind, value=normalise_alias(kind, value))
        .first()
    )
    if alias is None or alias.person.erased_at is not None:
        return None
    return alias.person


def aliases_for(person_ids: Iterable[object]) -> dict[str, dict[str, str]]:
    """`{personId: {kind: value}}` for the given people (one query)."""
    out: dict[str, dict[str, str]] = {}
    for alias in PersonAlias.objects.filter(person_id__in=list(person_ids)).order_by("kind"):
        out.setdefault(str(alias.person_id), {})[alias.kind] = alias.value
    return out


def people_signing_in(*, name: str, tenant: str | None = None) -> list[Person]:
    """The active people (with their users and tenants) a password sign-in as `name` may
    be: those whose email or `upn` alias (SCIM userName) is the name, in the tenant whose
    slug is `tenant`, or in any tenant when none is named (the same email may be a
    person of several tenants). Erased and deprovisioned people are never among them."""
    name = normalise_alias(AliasKind.UPN, name)
    upn = PersonAlias.objects.filter(person=OuterRef("pk"), kind=AliasKind.UPN, value=name)
    people = Person.objects.select_related("user", "tenant").filter(
        Q(email=name) | Q(Exists(upn)),
        erased_at__isnull=True,
        deactivated_at__isnull=True,
        user__is_active=True,
    )
    if tenant is not None:
        people = people.filter(tenant__slug=tenant.strip().lower())
    return list(people.order_by("pk"))
