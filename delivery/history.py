"""The delivery history of a clarification: its section (`deliveryHistory`) of the
clarification detail the CLI and the steward admin show (`clarify.reports`), registered
into `clarify.reports.DETAIL_SECTIONS` in `DeliveryConfig.ready`."""

from collections.abc import Callable
from typing import Any

from clarify.models import AuditEvent, Clarification
from common.times import to_us

from .models import Delivery, DeliveryKind

DELIVERY_EVENT_TYPES = (
    "delivered",
    "skipped",
    "escalated",
    "digested",
    "delivery_failed",
    "delegated",
    "reminded",
    "reminder_failed",
)


def delivery_history(clar: Clarification) -> list[dict[str, Any]]:
    """Each job attempt → the routing job, the candidate asked, send or skip with reason
    code, and the card's nonce state as it stands now (from its delivery row: a re-ask
    revokes it, a binding closes it), not as it was at send time. None where no card was
    made (a skip, the steward escalation) or its record was erased. A re-ask asking the
    same person at the same attempt number again shows both cards, each with its own.
    An away candidate's delegation (`delegated`, naming the `delegate`), the delegate's
    card (`delivered` with `onBehalfOf`), a skip about an away candidate's delegate (its
    `delegate`) and a card's one reminder (`reminded`, `reminder_failed`) are entries too."""
    events = AuditEvent.objects.filter(clarification=clar, type__in=DELIVERY_EVENT_TYPES).order_by(
        "at", "id"
    )
    nonce_state = _nonce_states(clar)
    return [
        {
            "at": e.at,
            "job": e.detail.get("job"),
            "attempt": e.detail.get("attempt"),
            "candidate": e.detail.get("candidate"),
            "channel": e.detail.get("channel"),
            "outcome": e.type,
            "reason": e.detail.get("reason"),
            "nonceState": nonce_state(e) if "nonceState" in e.detail else None,
            "delegate": e.detail.get("delegate"),
            "onBehalfOf": e.detail.get("onBehalfOf"),
        }
        for e in events
    ]


def _nonce_states(clar: Clarification) -> Callable[[AuditEvent], str | None]:
    """The current nonce state of the question card a delivery event is about: the row of
    the event's routing job and attempt; for an event that names no job (a digest's, or
    one from before events carried it), the row for that attempt and candidate made last
    before the event."""
    by_job: dict[tuple[Any, Any, str], str] = {}
    by_card: dict[tuple[Any, str], list[tuple[int, str]]] = {}
    for job, attempt, person, state, created in (
        Delivery.objects.filter(clarification=clar, kind=DeliveryKind.QUESTION)
        .order_by("created_at", "id")
        .values_list("job_id", "attempt", "person_id", "nonce_state", "created_at")
    ):
        by_job[(job, attempt, str(person))] = state
        by_card.setdefault((attempt, str(person)), []).append((to_us(created), state))

    def state_of(e: AuditEvent) -> str | None:
        attempt, candidate = e.detail.get("attempt"), str(e.detail.get("candidate"))
        if "job" in e.detail:
            return by_job.get((e.detail["job"], attempt, candidate))
        made = by_card.get((attempt, candidate), [])
        before = [state for at, state in made if at <= e.at]
        return before[-1] if before else (made[0][1] if made else None)

    return state_of
