"""Losing read access revokes what was sent (spec §3.3; issue 19 item 2).

`graph.access.read_access_changed` is the core's seam "whose read access changed";
`read_access_recheck` is delivery's hook on it (registered in `DeliveryConfig.ready`).
It re-checks every open question card in the change's scope with the one read rule
(`gate.floor_check`) and drops each card whose recipient may no longer read its source
(`deliveries_drop`): the nonce revoked (a tap is refused, the inbox and digests stop
showing the passage), the delivery failed, a `skipped` event with the reason code, and a
routing job still waiting on that recipient moved on to its next candidate now
(`job_attempt_skip`: no escalation window burned). The digest flush drops its items the
same way; SCIM deprovisioning calls the seam like any other change.

A re-ask revokes the cards sent before it too (`reask_revoke`, delivery's hook in
`clarify.stewardship.REASK_HOOKS`).
"""

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from clarify.models import Clarification
from clarify.services import CLARIFY_JOB_KIND, audit_event_append
from graph.access import ReadAccessChange
from jobs import dispatch
from jobs.services import job_attempt_skip
from tenancy.models import Person

from .gate import floor_check
from .models import Delivery, DeliveryKind, DeliveryStatus, NonceState


def deliveries_drop(items: Iterable[tuple[Delivery, str]], *, detail: str, **audit: Any) -> int:
    """Drop each `(delivery, reason)`: nonce revoked, status failed, a `skipped` event on
    its clarification (`audit` added to its detail), its routing job moved on if it still
    waits on this attempt; the workers are woken once after commit. Returns how many."""
    dropped, moved = 0, False
    for d, reason in items:
        Delivery.objects.filter(pk=d.pk).update(
            status=DeliveryStatus.FAILED, nonce_state=NonceState.REVOKED
        )
        audit_event_append(
            tenant=d.tenant,
            clarification=d.clarification,
            type="skipped",
            detail={"attempt": d.attempt, "candidate": str(d.person_id), "reason": reason, **audit},
        )
        if d.job_id is not None and job_attempt_skip(
            job_id=d.job_id, attempt=d.attempt, reason=reason, detail=detail
        ):
            moved = True
        dropped += 1
    if moved:  # one wake-up for however many jobs moved
        transaction.on_commit(lambda: dispatch.kick(CLARIFY_JOB_KIND))
    return dropped


def read_access_recheck(change: ReadAccessChange) -> int:
    """The open question cards in `change`'s scope whose recipient may no longer read the
    source, dropped (`deliveries_drop`). Returns how many."""
    cards = Delivery.objects.select_related(
        "tenant", "clarification__source_version__source", "person"
    ).filter(tenant_id=change.tenant_id, kind=DeliveryKind.QUESTION, nonce_state=NonceState.ACTIVE)
    if change.person_ids is not None:
        cards = cards.filter(person_id__in=change.person_ids)
    if change.source_ids is not None:
        cards = cards.filter(clarification__source_version__source_id__in=change.source_ids)
    lost = []
    for d in cards.order_by("pk"):
        reason = floor_check(d.clarification, [d.person]).get(d.person.pk)
        if reason is not None:
            lost.append((d, reason))
    return deliveries_drop(lost, detail="read access ended", revoked=True)


@transaction.atomic
def person_cards_withdraw(*, person: Person, reason: str, detail: str) -> int:
    """Drop every open card of the person (nonce still active), e.g. on deprovisioning;
    returns how many. Locks in the answer's order: the clarifications first, then the
    deliveries."""
    open_cards = Delivery.objects.filter(person=person, nonce_state=NonceState.ACTIVE)
    locked = list(
        Clarification.objects.select_for_update()
        .filter(pk__in=open_cards.values("clarification_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    cards = (
        open_cards.select_for_update(of=("self",))
        .filter(clarification_id__in=locked)
        .select_related("clarification", "tenant")
        .order_by("created_at")
    )
    return deliveries_drop(((d, reason) for d in cards), detail=detail)


def reask_revoke(clar: Clarification) -> None:
    """A re-ask revokes the clarification's open card nonces (a tap on an earlier card is
    refused): delivery's hook in `clarify.stewardship.REASK_HOOKS`, run inside the re-ask
    transaction with `clar` locked. Nothing is audited here: the re-ask's own `reasked`
    event records it."""
    Delivery.objects.filter(clarification=clar, nonce_state=NonceState.ACTIVE).update(
        nonce_state=NonceState.REVOKED
    )
