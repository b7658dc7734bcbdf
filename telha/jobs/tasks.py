"""django-q2 tasks: the sweep schedule and the in-process worker loop.

django-q2 only executes; the Job table holds all state. These tasks are safe to run twice:
leasing is atomic, and a duplicate worker simply finds nothing ready.
"""

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from django.utils.module_loading import import_string

from telha.common.codes import JobReason
from telha.common.observability import request_id_var

from . import dispatch
from .policies import policy_for_kind
from .services import Lease, LeaseLost, job_fail, job_heartbeat, job_lease, jobs_sweep

log = logging.getLogger(__name__)
WORK_LOOP_SECONDS = 50
# Leases per round: a kind with a batch handler gets up to BATCH_LEASES at once.
LEASES_PER_ROUND = 10
BATCH_LEASES = 50


def sweep() -> dict[str, Any]:
    """The once-a-minute schedule: reap expired leases, kick ready kinds."""
    return jobs_sweep()


def handler_for(kind: str) -> Callable[[Lease], None] | None:
    for prefix, path in getattr(settings, "JOB_WORKERS", {}).items():
        if kind.startswith(prefix):
            return import_string(path)
    return None


def batch_handler_for(kind: str) -> Callable[[list[Lease]], list[Lease]] | None:
    """The kind's batch handler (`settings.JOB_BATCH_WORKERS`), if it has one: it gets a
    round's leases at once and returns those it leaves to the per-lease handler. It may
    raise only before it wrote or sent anything (every lease then goes to the per-lease
    handler); after that it fails the jobs it could not finish itself."""
    for prefix, path in getattr(settings, "JOB_BATCH_WORKERS", {}).items():
        if kind.startswith(prefix):
            return import_string(path)
    return None


def still_held(lease: Lease) -> bool:
    """Later jobs of a batch wait for earlier ones: extend a lease that is more than half
    spent before handling it; a lease already lost is skipped (its new holder has it)."""
    remaining = (lease.expires_at - timezone.now()).total_seconds()
    ttl = policy_for_kind(lease.job.kind).lease_ttl_seconds
    if remaining > ttl / 2:
        return True
    try:
        job_heartbeat(tenant=None, job_id=lease.job.pk, token=lease.token)
    except LeaseLost:
        return False
    return True


def work(kind: str, max_seconds: float = WORK_LOOP_SECONDS) -> int:
    """Lease and process ready jobs of `kind` with its audience until none are ready (or
    the time budget is spent). Returns how many leases were processed. A kind with a
    batch handler leases up to BATCH_LEASES a round and hands them to it first; the
    leases it leaves go to the per-lease handler, one by one as before. A cluster runs
    only the audiences routed to it (`dispatch.serves`); for any other kind it does
    nothing."""
    handler = handler_for(kind)
    if handler is None:
        return 0
    if not dispatch.serves(kind):
        # A kick routed by a process with another JOB_CLUSTER_FOR_AUDIENCE: this cluster
        # does not run that audience. The cluster that does picks the job up (its kicks,
        # the sweep), so nothing is lost by leaving it.
        log.warning(
            "cluster %r does not serve %s (routed to %r); not leasing it",
            dispatch.this_cluster(),
            kind,
            dispatch.cluster_for(kind),
        )
        return 0
    audience = dispatch.audience_of(kind)
    batch = batch_handler_for(kind)
    deadline = time.monotonic() + max_seconds
    done = 0
    holder = f"cluster:{dispatch.this_cluster()}"
    while time.monotonic() < deadline:
        close_old_connections()
        leases = job_lease(
            tenant=None,
            audience=audience,
            kinds=[kind],
            max_jobs=BATCH_LEASES if batch is not None else LEASES_PER_ROUND,
            holder=holder,
        )
        if not leases:
            break
        done += len(leases)
        left = _run_batch(batch, leases) if batch is not None else leases
        for lease in left:
            if still_held(lease):
                _run_one(handler, lease)
    return done


def _run_batch(batch: Callable[[list[Lease]], list[Lease]], leases: list[Lease]) -> list[Lease]:
    """The leases the batch handler left to the per-lease handler (all of them when it
    raised: it raises only before it wrote or sent anything). Each lease's request id is
    the batch handler's to restore around what it writes for that lease."""
    try:
        return batch(leases)
    except Exception:
        log.exception("a batch of %d jobs failed in its handler; one by one now", len(leases))
        return leases


def _run_one(handler: Callable[[Lease], None], lease: Lease) -> None:
    # The id of the request that enqueued the job follows it into the handler.
    token = request_id_var.set(lease.job.request_id)
    try:
        handler(lease)
    except Exception as exc:  # a handler bug must not lose the job: retry it later
        log.exception("job %s failed in its handler", lease.job.pk)
        fail_after_bug(lease, exc)
    finally:
        request_id_var.reset(token)


def fail_after_bug(lease: Lease, exc: BaseException) -> None:
    """Fail a job whose handler raised, retryable (`WORKER_ERROR`): the job is not lost."""
    try:
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=True,
            reason=JobReason.WORKER_ERROR,
            detail=f"{type(exc).__name__}: {exc}"[:500],
        )
    except Exception:
        log.exception("could not fail job %s", lease.job.pk)
