"""Read models of a clarification for people (CLI and steward admin): names resolved,
answers described, and the delivery history joined from the routing job and its events."""

import uuid
from collections.abc import Callable
from typing import Any

from delivery.models import Delivery, DeliveryKind
from telha.common.times import iso, to_us
from telha.graph.models import NodeVersion
from telha.jobs.models import Job
from telha.tenancy.models import Person

from .models import AuditEvent, Clarification, ResponseRecord

DELIVERY_EVENT_TYPES = ("delivered", "skipped", "escalated", "digested", "delivery_failed")


def target_name(clar: Clarification) -> str:
    return target_names([clar])[clar.target_id]


def target_names(clars: list[Clarification]) -> dict[uuid.UUID, str]:
    """Each target's display name (its current version's `name`, else the node key, else
    its id), for many clarifications in one query."""
    current = dict(
        NodeVersion.objects.filter(
            node_id__in={c.target_id for c in clars}, tx_to__isnull=True
        ).values_list("node_id", "properties")
    )
    return {
        c.target_id: str(
            current[c.target_id].get("name") or c.target.key
            if c.target_id in current
            else c.target_id
        )
        for c in clars
    }


def clarification_row(clar: Clarification, name: str | None = None) -> dict[str, Any]:
    """A list row; `name`: the target's name when already known (`target_names`)."""
    return {
        "id": str(clar.pk),
        "tenant": clar.tenant.slug,
        "target": str(clar.target_id),
        "targetName": target_name(clar) if name is None else name,
        "kind": clar.kind,
        "severity": clar.severity,
        "state": clar.state,
        "quorumState": clar.quorum_state,
        "createdAt": clar.created_at.isoformat(),
    }


def describe_answer(clar: Clarification, r: ResponseRecord) -> str:
    if r.answer_index is not None and 0 <= r.answer_index < len(clar.candidates):
        return str(clar.candidates[r.answer_index].get("label") or f"candidate {r.answer_index}")
    return f"{iso(r.interval_from)} → {iso(r.interval_to)}"


def delivery_history(clar: Clarification) -> list[dict[str, Any]]:
    """Each job attempt → the routing job, the candidate asked, send or skip with reason
    code, and the card's nonce state as it stands now (from its delivery row: a re-ask
    revokes it, a binding closes it), not as it was at send time. None where no card was
    made (a skip, the steward escalation) or its record was erased. A re-ask asking the
    same person at the same attempt number again shows both cards, each with its own."""
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


def clarification_detail(clar: Clarification) -> dict[str, Any]:
    responses = list(ResponseRecord.objects.filter(clarification=clar).order_by("seq"))
    names: dict[uuid.UUID | None, str] = {
        p.pk: p.name
        for p in Person.objects.filter(pk__in=[r.responder for r in responses] + clar.asked)
    }
    # The latest routing job (a re-ask supersedes the earlier one).
    job = Job.objects.filter(subject=str(clar.pk), kind="clarify:temporal").order_by("-id").first()
    return {
        **clarification_row(clar),
        "quorumPolicy": clar.quorum_policy,
        "candidates": clar.candidates,
        "asked": [{"id": a, "name": names.get(uuid_or_none(a), "(erased)")} for a in clar.asked],
        "detectorConfidence": clar.detector_confidence,
        "appliedCandidateConfidence": clar.applied_candidate_confidence,
        "factVersionTx": clar.fact_version_tx,
        "responses": [
            {
                "responseId": str(r.pk),
                "responder": str(r.responder),
                "responderName": names.get(r.responder, "(erased)"),
                "rightsAtAnswerTime": r.rights_at_answer_time,
                "answer": describe_answer(clar, r),
                "channel": r.channel,
                "responseTx": r.response_tx,
                "bindingStatus": r.binding_status,
            }
            for r in responses
        ],
        "job": (
            {
                "id": job.pk,
                "status": job.status,
                "attempts": job.attempts,
                "maxAttempts": job.max_attempts,
            }
            if job
            else None
        ),
        "deliveryHistory": delivery_history(clar),
        "events": [
            {"at": e.at, "type": e.type, "detail": e.detail}
            for e in clar.events.order_by("at", "id")
        ],
    }


def uuid_or_none(value: Any) -> uuid.UUID | None:
    """`value` as a UUID, or None when it is not one."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
