"""The routing job's lifecycle as seen by clarifications (spec §5 lifecycle; architecture
"The job that IS the delivery"): lease expiry after a send is the escalation window."""

import uuid
from typing import Any

from django.conf import settings

from common.codes import ATTEMPT_SKIPS, JobReason, SkipReason
from jobs.models import Job
from jobs.policies import KindPolicy

from .lifecycle import clarification_transition
from .models import CLOSED_STATES, AuditEvent, Clarification, State
from .services import audit_event_append

LEASE_TTL_SECONDS = 60


def clarify_job_policy() -> KindPolicy:
    """Backoff base = the escalation window, the cap lifted to match (so each candidate
    gets one window); max attempts come from the job (len(ranking) + 1)."""
    window = float(settings.CLARIFY["ESCALATION_WINDOW_HOURS"]) * 3600
    return KindPolicy(
        lease_ttl_seconds=LEASE_TTL_SECONDS,
        backoff_base_seconds=window,
        backoff_cap_seconds=window,
        max_attempts=4,
        on_retry=on_retry,
        on_lease=on_attempts_start,
        on_window_end=on_window_expired,
        on_dead=on_dead,
    )


def _clarification(job: Job) -> Clarification | None:
    cid = job.payload.get("clarificationId") if isinstance(job.payload, dict) else None
    if not cid:
        return None
    return Clarification.objects.select_for_update().filter(pk=cid, tenant=job.tenant_id).first()


def candidate_for_attempt(job: Job, attempt: int) -> str | None:
    """attempts indexes the ranking; the attempt after the last candidate is the steward's."""
    ranking = job.payload.get("ranking") or []
    return ranking[attempt] if 0 <= attempt < len(ranking) else None


def on_window_expired(job: Job) -> None:
    """The previous candidate's window ran out without an answer: audited once per
    attempt, and an `open` clarification is `expired` until the next attempt starts
    (richer states such as attested are kept)."""
    clar = _clarification(job)
    attempt = job.attempts - 1
    if clar is None or clar.state in (*CLOSED_STATES, State.DEAD_LETTERED):
        return
    if AuditEvent.objects.filter(
        clarification=clar, type="window_expired", detail__attempt=attempt
    ).exists():
        return
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="window_expired",
        detail={"attempt": attempt, "candidate": candidate_for_attempt(job, attempt)},
    )
    if clar.state == State.OPEN:
        clarification_transition(clar, State.EXPIRED)
        clar.save(update_fields=["state", "updated_at"])


def on_retry(job: Job) -> None:
    """A worker over HTTP reported a skip (`fail` with a skip reason code): audit it like
    the in-process worker's in-lease skips, so the digest lists every reason."""
    reason, _, detail = job.last_error.partition(":")
    if reason not in ATTEMPT_SKIPS:
        return
    clar = _clarification(job)
    attempt = job.attempts - 1
    if (
        clar is None
        or AuditEvent.objects.filter(
            clarification=clar, type__in=("skipped", "delivery_failed"), detail__attempt=attempt
        ).exists()
    ):
        return  # the in-process worker already audited this attempt
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="delivery_failed" if reason == SkipReason.DELIVERY_FAILED else "skipped",
        detail={
            "attempt": job.attempts - 1,
            "candidate": candidate_for_attempt(job, job.attempts - 1),
            "reason": reason,
            "via": "jobs protocol",
            "detail": detail.strip()[:300],
        },
    )


def _attempt_start(job: Job) -> None:
    """The next attempt of a job whose previous window's end the sweep may not have
    recorded yet: recorded now, and an expired clarification is open again."""
    on_window_expired(job)
    clar = _clarification(job)
    if clar is None or clar.state != State.EXPIRED:
        return
    clarification_transition(clar, State.OPEN, attempt=job.attempts)
    clar.save(update_fields=["state", "updated_at"])


def _window_ended(job: Job) -> bool:
    return job.attempts > 0 and job.last_error.startswith(JobReason.LEASE_EXPIRED)


def on_attempts_start(jobs: list[Job]) -> None:
    """The kind's lease hook: the next attempts of the jobs one lease took start. Their
    clarifications are locked in one statement, in id order; an expired one is open
    again. A job whose previous window's end is still to record goes through
    `_attempt_start` (its clarification already locked here)."""
    ids = {job.pk: _clarification_id(job) for job in jobs}
    locked = {
        str(c.pk): c
        for c in Clarification.objects.select_for_update()
        .filter(pk__in={cid for cid in ids.values() if cid})
        .order_by("pk")
    }
    for job in jobs:
        if _window_ended(job):
            _attempt_start(job)
            continue
        clar = locked.get(ids[job.pk])
        if clar is None or clar.tenant_id != job.tenant_id or clar.state != State.EXPIRED:
            continue
        clarification_transition(clar, State.OPEN, attempt=job.attempts)
        clar.save(update_fields=["state", "updated_at"])


def _clarification_id(job: Job) -> str:
    """The job's clarification id, or "" when its payload names none (or not a UUID)."""
    cid = job.payload.get("clarificationId") if isinstance(job.payload, dict) else None
    try:
        return str(uuid.UUID(str(cid))) if cid else ""
    except ValueError:
        return ""


SKIP_EVENT_TYPES = ("skipped", "delivery_failed", "digested")


def skip_reasons_by_clarification(clarification_ids: Any) -> dict[Any, list[dict[str, Any]]]:
    """`skip_reasons` for many clarifications in one query."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for e in AuditEvent.objects.filter(
        clarification_id__in=list(clarification_ids), type__in=SKIP_EVENT_TYPES
    ).order_by("at", "id"):
        out.setdefault(e.clarification_id, []).append(
            {
                "attempt": e.detail.get("attempt"),
                "candidate": e.detail.get("candidate"),
                "reason": e.detail.get("reason"),
            }
        )
    return out


def skip_reasons(clar: Clarification) -> list[dict[str, Any]]:
    """Every skip, failure and digest reason recorded for this clarification, in order:
    `skipped` (NO_READ_PERMISSION, NO_DELIVERY_ALIAS, …), `delivery_failed`
    (DELIVERY_FAILED) and `digested` (DIGESTED: the question went into a digest)."""
    return skip_reasons_by_clarification([clar.pk]).get(clar.pk, [])


def on_dead(job: Job) -> None:
    """Ranking exhausted (or a permanent failure): dead-lettered, into the steward digest
    with the per-candidate reason codes."""
    clar = _clarification(job)
    if clar is None or clar.state in CLOSED_STATES:
        return
    clarification_transition(clar, State.DEAD_LETTERED)
    clar.save(update_fields=["state", "updated_at"])
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="dead_lettered",
        detail={"lastError": job.last_error, "skipReasons": skip_reasons(clar)},
    )
