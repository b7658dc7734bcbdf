"""Read models of a clarification for people (CLI and steward admin): names resolved,
answers described, and the delivery history joined from the routing job and its events."""

import uuid
from typing import Any

from telha.common.times import iso
from telha.graph.models import NodeVersion
from telha.jobs.models import Job
from telha.tenancy.models import Person

from .models import AuditEvent, Clarification, ResponseRecord

DELIVERY_EVENT_TYPES = ("delivered", "skipped", "escalated", "digested", "delivery_failed")


def target_name(clar: Clarification) -> str:
    version = NodeVersion.objects.filter(node_id=clar.target_id, tx_to__isnull=True).first()
    if version is None:
        return str(clar.target_id)
    return str(version.properties.get("name") or clar.target.key)


def clarification_row(clar: Clarification) -> dict[str, Any]:
    return {
        "id": str(clar.pk),
        "tenant": clar.tenant.slug,
        "target": str(clar.target_id),
        "targetName": target_name(clar),
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
    """Each job attempt → the candidate asked, send or skip with reason code, nonce state."""
    events = AuditEvent.objects.filter(clarification=clar, type__in=DELIVERY_EVENT_TYPES).order_by(
        "at", "id"
    )
    return [
        {
            "at": e.at,
            "attempt": e.detail.get("attempt"),
            "candidate": e.detail.get("candidate"),
            "channel": e.detail.get("channel"),
            "outcome": e.type,
            "reason": e.detail.get("reason"),
            "nonceState": e.detail.get("nonceState"),
        }
        for e in events
    ]


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
        "asked": [{"id": a, "name": names.get(_uuid(a), "(erased)")} for a in clar.asked],
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


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
