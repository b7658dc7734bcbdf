"""The ACL floor check before anything is sent (spec §3.3; architecture "Permission check
before delivery"): the candidate must pass the one read rule (`graph.access`) on
the source. An unparseable ACL fails closed."""

from collections.abc import Iterable
from typing import Any

from clarify.models import Clarification
from common.codes import SkipReason
from graph.access import people_reading
from graph.services import acl_principal_valid
from tenancy.models import Person


def acl_parses(acl: Any) -> bool:
    return isinstance(acl, list) and all(acl_principal_valid(p) for p in acl)


def floor_check(clar: Clarification, people: Iterable[Person]) -> dict[Any, SkipReason | None]:
    """`{person_id: None (may read) | reason code}` for a batch of candidates, with the
    source's readers fetched once."""
    source = clar.source_version.source
    people = list(people)
    if not acl_parses(source.acl):
        return {p.pk: SkipReason.NO_READ_PERMISSION for p in people}
    readers = people_reading(source, people)
    verdicts: dict[Any, SkipReason | None] = {}
    for person in people:
        if person.tenant_id != clar.tenant_id:
            verdicts[person.pk] = SkipReason.TENANT_SCOPE_MISMATCH
        elif person.pk not in readers:
            verdicts[person.pk] = SkipReason.NO_READ_PERMISSION
        else:
            verdicts[person.pk] = None
    return verdicts
