"""Withdrawing cards: a delivery whose recipient may no longer be asked (lost read access
while it waited in a digest; deprovisioned by the identity provider) has its nonce
revoked, its status failed, a `skipped` event with the reason code, and — if its routing
job still waits on that recipient — the job moved on to its next candidate at once
instead of waiting out the escalation window. The tap on such a card is refused."""

from typing import Any

from django.db import transaction

from clarify.models import Clarification
from clarify.services import CLARIFY_JOB_KIND, audit_event_append
from telha.jobs import dispatch
from telha.jobs.services import job_attempt_skip
from telha.tenancy.models import Person

from .models import Delivery, DeliveryStatus, NonceState


def delivery_withdraw(d: Delivery, *, reason: str, detail: str, **audit: Any) -> bool:
    """Withdraw one delivery in the caller's transaction (which holds its clarification's
    lock); returns whether its routing job moved on (the caller kicks the queue once)."""
    Delivery.objects.filter(pk=d.pk).update(
        status=DeliveryStatus.FAILED, nonce_state=NonceState.REVOKED
    )
    audit_event_append(
        tenant=d.tenant,
        clarification=d.clarification,
        type="skipped",
        detail={"attempt": d.attempt, "candidate": str(d.person_id), "reason": reason, **audit},
    )
    return d.job_id is not None and job_attempt_skip(
        job_id=d.job_id, attempt=d.attempt, reason=reason, detail=detail
    )


def kick_after_commit() -> None:
    """One wake-up of the routing queue, however many jobs moved."""
    transaction.on_commit(lambda: dispatch.kick(CLARIFY_JOB_KIND))


@transaction.atomic
def person_cards_withdraw(*, person: Person, reason: str, detail: str) -> int:
    """Withdraw every open card of the person (nonce still active); returns how many.
    Locks in the answer's order: the clarifications first, then the deliveries."""
    open_cards = Delivery.objects.filter(person=person, nonce_state=NonceState.ACTIVE)
    locked = list(
        Clarification.objects.select_for_update()
        .filter(pk__in=open_cards.values("clarification_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    cards = list(
        open_cards.select_for_update(of=("self",))
        .filter(clarification_id__in=locked)
        .select_related("clarification", "tenant")
        .order_by("created_at")
    )
    moved = False
    for d in cards:
        moved = delivery_withdraw(d, reason=reason, detail=detail) or moved
    if moved:
        kick_after_commit()
    return len(cards)
