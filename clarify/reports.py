"""Read models of a clarification for people (CLI and steward admin): names resolved,
answers described, the routing job and the events. A higher layer adds its own sections
to the detail through `DETAIL_SECTIONS` (delivery: `deliveryHistory`)."""

import uuid
from collections.abc import Callable
from typing import Any

from common.times import iso
from graph.models import NodeVersion
from tenancy.models import Person

from .models import Clarification, ResponseRecord
from .selectors import routing_jobs

# Sections of `clarification_detail` that a higher layer owns, by key, in the order shown
# (after the routing job, before the events): delivery appends `deliveryHistory`
# (`delivery.history.delivery_history`) in `DeliveryConfig.ready`.
DETAIL_SECTIONS: list[tuple[str, Callable[[Clarification], Any]]] = []


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


def clarification_detail(clar: Clarification) -> dict[str, Any]:
    responses = list(ResponseRecord.objects.filter(clarification=clar).order_by("seq"))
    names: dict[uuid.UUID | None, str] = {
        p.pk: p.name
        for p in Person.objects.filter(pk__in=[r.responder for r in responses] + clar.asked)
    }
    job = routing_jobs(clar).last()  # a re-ask supersedes the earlier one
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
        **{key: section(clar) for key, section in DETAIL_SECTIONS},
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
