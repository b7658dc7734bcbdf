"""Waking the job cluster when work becomes ready (called with `transaction.on_commit`).

Routing (README "Running in production"): every process — web and clusters — carries the
same `JOB_CLUSTER_FOR_AUDIENCE`, so a kick for `clarify:…` lands in the same queue whoever
sends it (a web request, the sweep, `telha jobs sweep`). An audience not in the map goes to
the site's default queue (`Q_CLUSTER["name"]`, the cluster that also runs the schedules).
A cluster runs only the audiences routed to it (`serves`, checked by the worker task).
"""

import logging

from django.conf import settings

from .policies import handler_for

log = logging.getLogger(__name__)


def audience_of(kind: str) -> str:
    return kind.partition(":")[0]


def default_cluster() -> str:
    """The site's default queue: django-q2's PREFIX (`Q_CLUSTER["name"]`), which is also
    the salt every process signs task payloads with."""
    from django_q.conf import Conf

    return str(Conf.PREFIX)


def this_cluster() -> str:
    """The queue this process's cluster consumes: `Q_CLUSTER_NAME` (read by django-q2
    itself) or, without it, the default queue."""
    from django_q.conf import Conf

    return str(Conf.CLUSTER_NAME)


def cluster_for(kind: str) -> str:
    """The queue whose cluster runs the in-process worker for `kind`."""
    routed = getattr(settings, "JOB_CLUSTER_FOR_AUDIENCE", {}).get(audience_of(kind))
    return str(routed) if routed else default_cluster()


def serves(kind: str) -> bool:
    """Whether this process's cluster runs `kind`'s audience."""
    return cluster_for(kind) == this_cluster()


def kick(kind: str) -> None:
    """Ask the django-q2 cluster that serves `kind`'s audience to run the in-process worker
    for `kind` now, instead of at the next sweep. Does nothing when no in-process worker
    serves that kind or dispatch is off (`JOBS_DISPATCH=0`, the test default): the sweep
    schedule still picks the job up."""
    if handler_for(kind) is None or not getattr(settings, "JOBS_DISPATCH", True):
        return
    from django_q.tasks import async_task

    # Always name the queue: without it django-q2 would use this process's own queue, and
    # a kick sent from the clarify cluster would wake ingest work there.
    options: dict[str, object] = {"group": "kick", "cluster": cluster_for(kind)}
    try:
        async_task("jobs.tasks.work", kind, q_options=options)
    except Exception:  # the sweep schedule is the safety net; never fail the request
        log.exception("could not wake the worker for %s", kind)
