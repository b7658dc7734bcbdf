"""Reads for tenancy: alias resolution is tenant-scoped, always."""

from collections.abc import Iterable

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
