"""Writes of the lease queue (architecture "The lease queue is ours; django-q2 executes it").

The Job table is the single source of truth. Leases use the database clock; heartbeat,
complete and fail work only for the current lease token (`LEASE_LOST` otherwise, and
nothing changes) and, like leasing, only behind the caller's audience fence
(`JOB_KIND_FORBIDDEN`; the cluster's own workers pass `Fence.OFF`). On PostgreSQL
leasing is `SELECT … FOR UPDATE SKIP LOCKED`; on SQLite the IMMEDIATE transaction makes
the lease the only writer.
"""

import uuid
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Literal, NoReturn

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from common.codes import ATTEMPT_SKIPS, ErrorCode, JobReason
from common.errors import Conflict, InvalidInput, PermissionDeniedError
from common.observability import current_request_id
from tenancy.models import Tenant

from .models import Job, JobStatus
from .policies import backoff_seconds, policy_for_kind, registered_kinds
from .sql import jobs_finish

MAX_LEASE_SECONDS = 3600
MAX_BATCH = 100


class JobKindForbidden(PermissionDeniedError):
    code = ErrorCode.JOB_KIND_FORBIDDEN
    default_detail = "This credential may not lease jobs of that kind."


class LeaseLost(Conflict):
    code = ErrorCode.LEASE_LOST
    default_detail = "The lease is no longer held with this token; nothing was changed."


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue (`jobs_enqueue`)."""

    kind: str
    payload: dict[str, Any]
    priority: int = 2
    max_attempts: int | None = None
    subject: str = ""
    run_after: datetime | None = None  # None: ready now (the database clock)


def job_enqueue(
    *,
    tenant: Tenant,
    kind: str,
    payload: dict[str, Any],
    priority: int = 2,
    max_attempts: int | None = None,
    subject: str = "",
) -> Job:
    """Add a pending job, ready now. Call inside the transaction that makes it necessary
    (the row commits with it); wake workers with `transaction.on_commit(dispatch.kick)`."""
    spec = JobSpec(kind, payload, priority, max_attempts, subject)
    return jobs_enqueue(tenant=tenant, specs=[spec])[0]


def jobs_enqueue(*, tenant: Tenant, specs: list[JobSpec]) -> list[Job]:
    """`job_enqueue` of several jobs in one INSERT (same checks, same rows)."""
    jobs = []
    for spec in specs:
        audience, sep, _ = spec.kind.partition(":")
        if not sep or not audience:
            raise ValueError(f"job kind must look like 'audience:name', got {spec.kind!r}")
        payload = spec.payload
        if audience == "ingest":
            # Capability flag (spec §6): core wins over any worker-supplied value.
            options = dict(payload.get("options") or {})
            options["clarify"] = bool(settings.CLARIFY["ENABLED"])
            payload = {**payload, "options": options}
        jobs.append(
            Job(
                tenant=tenant,
                kind=spec.kind,
                audience=audience,
                priority=spec.priority,
                payload=payload,
                max_attempts=spec.max_attempts or policy_for_kind(spec.kind).max_attempts,
                subject=spec.subject,
                run_after=spec.run_after or Now(),
                # The request that made the job necessary: restored around its handler.
                request_id=current_request_id(),
            )
        )
    if len(jobs) == 1:
        jobs[0].save(force_insert=True)
    elif jobs:
        Job.objects.bulk_create(jobs)
    return jobs


def check_kinds(*, audience: str | None, kinds: list[str]) -> None:
    """The audience fence: a token leases only kinds under its own audience prefix."""
    if audience is None:
        raise JobKindForbidden("This key has no audience and cannot lease jobs.")
    if not kinds:
        raise InvalidInput("kinds must name at least one kind or prefix.")
    for kind in kinds:
        if not kind.startswith(f"{audience}:"):
            raise JobKindForbidden(f"A {audience!r} token may lease only '{audience}:' jobs.")


@dataclass(frozen=True)
class Lease:
    job: Job
    token: uuid.UUID
    expires_at: datetime


def job_lease(
    *,
    tenant: Tenant | None,
    audience: str | None,
    kinds: list[str],
    max_jobs: int = 1,
    lease_seconds: int | None = None,
    holder: str = "",
) -> list[Lease]:
    """Lease up to `max_jobs` ready jobs of the allowed kinds, ordered by
    (priority, run_after, id). One token per batch; the expiry comes from the DB clock."""
    check_kinds(audience=audience, kinds=kinds)
    max_jobs = max(1, min(MAX_BATCH, max_jobs))
    prefix_filter = Q()
    for kind in kinds:
        prefix_filter |= Q(kind__startswith=kind)
    with transaction.atomic():
        ready = Job.objects.filter(
            prefix_filter, status=JobStatus.PENDING, audience=audience, run_after__lte=Now()
        )
        if tenant is not None:
            ready = ready.filter(tenant=tenant)
        ready = ready.order_by("priority", "run_after", "id").annotate(db_now=Now())
        if connection.vendor == "postgresql":
            ready = ready.select_for_update(skip_locked=True, of=("self",))
        jobs = list(ready[:max_jobs])
        if not jobs:
            return []
        db_now = jobs[0].db_now
        token = uuid.uuid4()
        leases = []
        by_ttl: dict[int, list[int]] = {}
        for job in jobs:
            ttl = min(
                MAX_LEASE_SECONDS, lease_seconds or policy_for_kind(job.kind).lease_ttl_seconds
            )
            by_ttl.setdefault(ttl, []).append(job.pk)
            job.status, job.lease_token, job.lease_holder = JobStatus.LEASED, token, holder[:200]
            job.lease_expires_at = db_now + timedelta(seconds=ttl)
            leases.append(Lease(job=job, token=token, expires_at=job.lease_expires_at))
        for ttl, ids in by_ttl.items():
            Job.objects.filter(pk__in=ids).update(
                status=JobStatus.LEASED,
                lease_token=token,
                lease_holder=holder[:200],
                lease_expires_at=db_now + timedelta(seconds=ttl),
                updated_at=db_now,
            )
        _on_lease(jobs)
    return leases


def _on_lease(jobs: Iterable[Job]) -> None:
    """Each kind's lease hook, once with the kind's jobs of this lease."""
    by_kind: dict[str, list[Job]] = {}
    for job in jobs:
        by_kind.setdefault(job.kind, []).append(job)
    for kind, of_kind in by_kind.items():
        hook = policy_for_kind(kind).on_lease
        if hook is not None:
            hook(of_kind)


class Fence(Enum):
    """`audience=Fence.OFF`: the caller is the cluster's own worker acting on a job it leased
    itself (no key, so no audience to fence)."""

    OFF = "off"


AudienceArg = str | None | Literal[Fence.OFF]


def _held(job_id: Any, token: Any, tenant: Tenant | None, audience: AudienceArg) -> QuerySet[Job]:
    """The job, if `token` holds its lease — restricted to the caller's tenant and behind
    the caller's audience fence. A key without an audience is refused before anything is
    read; a job outside the fence is refused by `_refuse` when nothing matched."""
    if audience is None:
        raise JobKindForbidden("This key has no audience and cannot work on jobs.")
    try:
        token_uuid = uuid.UUID(str(token))
    except (ValueError, TypeError):
        _refuse(job_id, tenant, audience)
    qs = Job.objects.filter(pk=job_id, lease_token=token_uuid, status=JobStatus.LEASED)
    if tenant is not None:
        qs = qs.filter(tenant=tenant)
    if audience is not Fence.OFF:
        qs = qs.filter(audience=audience)
    return qs


def _refuse(job_id: Any, tenant: Tenant | None, audience: AudienceArg) -> NoReturn:
    """Why nothing matched: a job of the caller's tenant under another audience is outside
    the fence (`JOB_KIND_FORBIDDEN`); anything else — unknown id, other tenant, a stale or
    wrong token — is `LEASE_LOST`. Either way nothing was changed."""
    if audience is not Fence.OFF and audience is not None:
        other = Job.objects.filter(pk=job_id).exclude(audience=audience)
        if tenant is not None:
            other = other.filter(tenant=tenant)
        if other.exists():
            raise JobKindForbidden(f"A {audience!r} token may work only on '{audience}:' jobs.")
    raise LeaseLost()


def leases_lock(leases: Iterable[Lease]) -> set[Any]:
    """The ids of the jobs `leases` still hold (leased, with the lease's token), their rows
    locked in id order until the caller's transaction ends — before the rows they are
    about, the order leasing, reaping and a re-ask lock in. While it lasts nobody else
    completes, fails, reaps or supersedes them: the fence of everything a worker writes
    for a round of leases at once. Call inside a transaction."""
    tokens = {lease.job.pk: lease.token for lease in leases}
    if not tokens:
        return set()
    rows = (
        Job.objects.select_for_update()
        .filter(pk__in=list(tokens), status=JobStatus.LEASED)
        .order_by("pk")
        .values_list("pk", "lease_token")
    )
    return {pk for pk, token in rows if token == tokens[pk]}


def lease_renew(lease: Lease) -> bool:
    """Whether `lease` is still held, extended first when more than half of it is spent
    (a lease that waited behind others of its round). False: lost, its new holder has it."""
    remaining = (lease.expires_at - timezone.now()).total_seconds()
    if remaining > policy_for_kind(lease.job.kind).lease_ttl_seconds / 2:
        return True
    try:
        job_heartbeat(tenant=None, job_id=lease.job.pk, token=lease.token)
    except LeaseLost:
        return False
    return True


def lease_attempt_add(lease: Lease) -> None:
    """One more attempt for the leased job (a retried steward escalation); `LeaseLost`
    and nothing changed unless the lease is still held."""
    held = _held(lease.job.pk, lease.token, None, Fence.OFF)
    if not held.update(max_attempts=F("max_attempts") + 1):
        raise LeaseLost()


def job_heartbeat(
    *,
    tenant: Tenant | None,
    job_id: Any,
    token: Any,
    lease_seconds: int | None = None,
    audience: AudienceArg = Fence.OFF,
) -> datetime:
    """Extend the lease from now (DB clock). Only the current token works, behind the
    caller's audience fence."""
    with transaction.atomic():
        held = _held(job_id, token, tenant, audience)
        job = held.select_for_update().annotate(db_now=Now()).first()
        if job is None:
            _refuse(job_id, tenant, audience)
        ttl = min(MAX_LEASE_SECONDS, lease_seconds or policy_for_kind(job.kind).lease_ttl_seconds)
        expires: datetime = job.db_now + timedelta(seconds=ttl)
        Job.objects.filter(pk=job.pk).update(lease_expires_at=expires)
    return expires


def job_complete(
    *,
    tenant: Tenant | None,
    job_id: Any,
    token: Any,
    result: dict[str, Any] | None = None,
    audience: AudienceArg = Fence.OFF,
) -> None:
    """Mark the job done. Only the current token works, behind the caller's audience fence."""
    updated = _held(job_id, token, tenant, audience).update(
        status=JobStatus.DONE,
        lease_token=None,
        lease_expires_at=None,
        result=result,
        updated_at=Now(),
    )
    if not updated:
        _refuse(job_id, tenant, audience)


def jobs_complete_batch(*, tenant: Tenant | None, leases: Iterable[Lease]) -> int:
    """Mark a finished batch done: one UPDATE per lease token (a `job_lease` batch has
    one). Only jobs still held with their token change — a job re-leased by someone else
    or already finished is left alone. Returns how many jobs were completed; a caller
    that needs to know which leases were lost compares it with `len(leases)` or uses
    `job_complete` per job. No per-job results (use `job_complete` for those)."""
    by_token: dict[uuid.UUID, list[Any]] = {}
    for lease in leases:
        by_token.setdefault(lease.token, []).append(lease.job.pk)
    completed = 0
    with transaction.atomic() if len(by_token) > 1 else nullcontext():
        for token, ids in by_token.items():
            held = Job.objects.filter(pk__in=ids, lease_token=token, status=JobStatus.LEASED)
            if tenant is not None:
                held = held.filter(tenant=tenant)
            completed += held.update(
                status=JobStatus.DONE,
                lease_token=None,
                lease_expires_at=None,
                result=None,
                updated_at=Now(),
            )
    return completed


@transaction.atomic
def job_fail(
    *,
    tenant: Tenant | None,
    job_id: Any,
    token: Any,
    retryable: bool,
    reason: str = "",
    detail: str = "",
    audience: AudienceArg = Fence.OFF,
) -> Job:
    """Fail the current attempt. Retryable: `attempts + 1` and back to pending — at once
    for a skip reason code, else after the kind's backoff — or dead once attempts are
    exhausted. Not retryable: dead. Only the current token works, behind the caller's
    audience fence."""
    job = _held(job_id, token, tenant, audience).select_for_update().first()
    if job is None:
        _refuse(job_id, tenant, audience)
    _retry_or_bury(job, retryable=retryable, reason=reason, detail=detail)
    return job


def _retry_or_bury(job: Job, *, retryable: bool, reason: str, detail: str) -> None:
    policy = policy_for_kind(job.kind)
    job.attempts += 1
    job.last_error = _error_text(reason, detail)
    job.lease_token = None
    job.lease_expires_at = None
    job.lease_holder = ""
    if not retryable or job.attempts >= job.max_attempts:
        job.status = JobStatus.DEAD
        job.save()
        if policy.on_dead is not None:
            policy.on_dead(job)
        return
    delay = 0.0 if reason in ATTEMPT_SKIPS else backoff_seconds(job.kind, job.attempts)
    job.status = JobStatus.PENDING
    job.run_after = Now() + timedelta(seconds=delay)
    job.save()
    if policy.on_retry is not None:
        policy.on_retry(job)


def _error_text(reason: str, detail: str) -> str:
    return f"{reason}: {detail}".strip(": ")[:2000]


def jobs_finish_for_subject(*, kind: str, subject: str, reason: str) -> int:
    """Complete the pending and leased jobs of `kind` about `subject` (`done`, lease
    cleared, `last_error` = `reason`), skipping any row another transaction holds (SKIP
    LOCKED on PostgreSQL; SQLite has one writer at a time). Returns how many finished.

    One literal statement (`jobs.sql.jobs_finish`): the answer runs it on every
    binding, and compiling the ORM's query it replaces cost four times what running it
    does."""
    return jobs_finish(kind=kind, subject=subject, reason=reason)


def jobs_reap(*, limit: int = 500) -> int:
    """Expired leases go back to pending with `attempts + 1` after the kind's backoff (the
    escalation window for clarify:temporal), or to dead once attempts are exhausted."""
    reaped = 0
    while True:
        with transaction.atomic():
            expired = Job.objects.filter(status=JobStatus.LEASED, lease_expires_at__lt=Now())
            if connection.vendor == "postgresql":
                expired = expired.select_for_update(skip_locked=True)
            batch = list(expired.order_by("lease_expires_at")[:limit])
            for job in batch:
                policy = policy_for_kind(job.kind)
                if policy.on_expired is not None:
                    policy.on_expired(job)
                _retry_or_bury(
                    job, retryable=True, reason=JobReason.LEASE_EXPIRED, detail=job.lease_holder
                )
        reaped += len(batch)
        if len(batch) < limit:
            return reaped


def jobs_windows_ended() -> int:
    """Tell each kind's `on_window_end` hook about reaped jobs whose backoff ran out and
    that wait for their next attempt (the hook must be idempotent)."""
    seen = 0
    for kind in registered_kinds():
        hook = policy_for_kind(kind).on_window_end
        if hook is None:
            continue
        waiting = Job.objects.filter(
            kind=kind,
            status=JobStatus.PENDING,
            attempts__gt=0,
            run_after__lte=Now(),
            last_error__startswith=JobReason.LEASE_EXPIRED,
        )
        for job in waiting.iterator():
            with transaction.atomic():
                hook(job)
            seen += 1
    return seen


def ready_kinds() -> list[str]:
    """Kinds with jobs ready to lease now."""
    return list(
        Job.objects.filter(status=JobStatus.PENDING, run_after__lte=Now())
        .order_by()  # the model's default ordering would defeat DISTINCT
        .values_list("kind", flat=True)
        .distinct()
    )


def jobs_sweep() -> dict[str, Any]:
    """One reaper/kick pass: reap expired leases, then wake the in-process worker of every
    kind that has ready jobs."""
    from . import dispatch

    reaped = jobs_reap()
    jobs_windows_ended()
    kinds = ready_kinds()
    for kind in kinds:
        dispatch.kick(kind)
    return {"reaped": reaped, "kicked": kinds}


@transaction.atomic
def job_attempt_skip(*, job_id: Any, attempt: int, reason: str, detail: str = "") -> bool:
    """The candidate of `attempt` turned out not askable after all (e.g. a digest item
    dropped at send because they lost read access): like an in-lease skip, it burns no
    escalation window, so the next attempt becomes leasable at once. `reason` is a skip
    reason code (`common.codes.ATTEMPT_SKIPS`).

    - Still leased at that attempt (its lease not yet run out): failed with `reason`,
      exactly as the worker would have (`attempts + 1`, pending now; dead when that was
      the last attempt).
    - Already reaped into that attempt's window (`attempts` = attempt + 1, pending,
      LEASE_EXPIRED): runnable now, its `last_error` the skip (so no "window expired").
    - Anything else (moved on, finished, or another transaction holds the row — a lease
      starting the next attempt anyway): left alone.

    Returns whether the job moved. The row is locked with SKIP LOCKED, never waited for:
    callers hold clarification and delivery locks, which leasing takes after the job's."""
    if reason not in ATTEMPT_SKIPS:
        raise ValueError(f"job_attempt_skip: {reason!r} is not a skip reason code")
    job = Job.objects.select_for_update(skip_locked=True).filter(pk=job_id).first()
    if job is None:
        return False
    if job.status == JobStatus.LEASED and job.attempts == attempt:
        _retry_or_bury(job, retryable=True, reason=reason, detail=detail)
        return True
    if (
        job.status == JobStatus.PENDING
        and job.attempts == attempt + 1
        and job.last_error.startswith(JobReason.LEASE_EXPIRED)
    ):
        Job.objects.filter(pk=job.pk).update(
            run_after=Now(), last_error=_error_text(reason, detail), updated_at=Now()
        )
        return True
    return False


@transaction.atomic
def job_advance(
    *, tenant: Tenant | None, job_id: Any, token: Any, audience: AudienceArg = Fence.OFF
) -> Job:
    """Move a leased job to its next attempt while keeping the lease (an in-lease skip:
    the skipped candidate burns no escalation window). Only the current token works,
    behind the caller's audience fence."""
    job = _held(job_id, token, tenant, audience).select_for_update().first()
    if job is None:
        _refuse(job_id, tenant, audience)
    if job.attempts + 1 >= job.max_attempts:
        _retry_or_bury(job, retryable=False, reason=JobReason.ATTEMPTS_EXHAUSTED, detail="")
        return job
    job.attempts += 1
    Job.objects.filter(pk=job.pk).update(attempts=job.attempts, updated_at=Now())
    return job


def lease_postpone(lease: Lease, *, run_after: datetime, reason: str, detail: str = "") -> bool:
    """Give a leased job back unattempted, ready again at `run_after` (its attempts
    unchanged: it waited, it did not fail) — e.g. a message waiting for an earlier one of
    its stream. Only the current token works; returns whether it was still held."""
    return bool(
        _held(lease.job.pk, lease.token, None, Fence.OFF).update(
            status=JobStatus.PENDING,
            lease_token=None,
            lease_expires_at=None,
            lease_holder="",
            run_after=run_after,
            last_error=_error_text(reason, detail),
            updated_at=Now(),
        )
    )
