"""django-q2 tasks: the sweep schedule and the in-process worker loop.

django-q2 only executes; the Job table holds all state. These tasks are safe to run twice:
leasing is atomic, and a duplicate worker simply finds nothing ready.
"""

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections

from common.codes import JobReason
from common.observability import request_id_var

from . import dispatch
from .policies import handler_for
from .services import Lease, job_fail, job_lease, jobs_sweep, lease_renew

log = logging.getLogger(__name__)
WORK_LOOP_SECONDS = 50
# Leases per round: a round handler (`register_kind(..., rounds=True)`) gets up to
# ROUND_LEASES at once, a per-lease handler LEASES_PER_ROUND one by one.
LEASES_PER_ROUND = 10
ROUND_LEASES = 50


def sweep() -> dict[str, Any]:
    """The once-a-minute schedule: reap expired leases, kick ready kinds."""
    return jobs_sweep()


def work(kind: str, max_seconds: float = WORK_LOOP_SECONDS) -> int:
    """Lease and process ready jobs of `kind` with its audience until none are ready (or
    the time budget is spent). Returns how many leases were processed. A round handler
    gets up to ROUND_LEASES leases a round at once; a per-lease handler gets them one by
    one, each still held (extended first when more than half spent). A cluster runs only
    the audiences routed to it (`dispatch.serves`); for any other kind it does nothing."""
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
    rounds = handler.rounds
    deadline = time.monotonic() + max_seconds
    done = 0
    holder = f"cluster:{dispatch.this_cluster()}"
    while time.monotonic() < deadline:
        close_old_connections()
        leases = job_lease(
            tenant=None,
            audience=audience,
            kinds=[kind],
            max_jobs=ROUND_LEASES if rounds else LEASES_PER_ROUND,
            holder=holder,
        )
        if not leases:
            break
        done += len(leases)
        if rounds:
            _run_round(handler.handle, leases)
            continue
        for lease in leases:
            if lease_renew(lease):
                _run_one(handler.handle, lease)
    return done


def _run_round(handler: Callable[[list[Lease]], None], leases: list[Lease]) -> None:
    """The round through its handler. One that raised (before it wrote or sent anything)
    is run again a lease at a time, so one bad lease fails alone; a round of one that
    raises fails its job as a per-lease handler's bug does. Each lease's request id is
    the handler's to restore around what it writes for that lease (a round of one runs
    under it already)."""
    alone = len(leases) == 1
    token = request_id_var.set(leases[0].job.request_id) if alone else None
    try:
        handler(leases)
        return
    except Exception as exc:
        if alone:
            log.exception("job %s failed in its handler", leases[0].job.pk)
            fail_after_bug(leases[0], exc)
            return
        log.exception("a round of %d jobs failed in its handler; one by one now", len(leases))
    finally:
        if token is not None:
            request_id_var.reset(token)
    for lease in leases:
        if lease_renew(lease):
            _run_round(handler, [lease])


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
