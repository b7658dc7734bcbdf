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

from telha.common.observability import request_id_var

from . import dispatch
from .policies import policy_for_kind
from .services import Lease, LeaseLost, job_fail, job_heartbeat, job_lease, jobs_sweep

log = logging.getLogger(__name__)
WORK_LOOP_SECONDS = 50


def sweep() -> dict[str, Any]:
    """The once-a-minute schedule: reap expired leases, kick ready kinds."""
    return jobs_sweep()


def handler_for(kind: str) -> Callable[[Lease], None] | None:
    for prefix, path in getattr(settings, "JOB_WORKERS", {}).items():
        if kind.startswith(prefix):
            return import_string(path)
    return None


def _still_held(lease: Lease) -> bool:
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
    the time budget is spent). Returns how many leases were processed. A cluster runs
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
    deadline = time.monotonic() + max_seconds
    done = 0
    holder = f"cluster:{dispatch.this_cluster()}"
    while time.monotonic() < deadline:
        close_old_connections()
        leases = job_lease(tenant=None, audience=audience, kinds=[kind], max_jobs=10, holder=holder)
        if not leases:
            break
        for lease in leases:
            if not _still_held(lease):
                continue
            # The id of the request that enqueued the job follows it into the handler.
            token = request_id_var.set(lease.job.request_id)
            try:
                handler(lease)
            except Exception as exc:  # a handler bug must not lose the job: retry it later
                log.exception("job %s failed in its handler", lease.job.pk)
                try:
                    job_fail(
                        tenant=None,
                        job_id=lease.job.pk,
                        token=lease.token,
                        retryable=True,
                        reason="WORKER_ERROR",
                        detail=f"{type(exc).__name__}: {exc}"[:500],
                    )
                except Exception:
                    log.exception("could not fail job %s", lease.job.pk)
            finally:
                request_id_var.reset(token)
            done += 1
    return done
