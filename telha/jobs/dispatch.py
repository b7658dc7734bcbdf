"""Waking the job cluster when work becomes ready (called with `transaction.on_commit`)."""

import logging

from django.conf import settings

log = logging.getLogger(__name__)


def kick(kind: str) -> None:
    """Ask the django-q2 cluster to run the in-process worker for `kind` now, instead of at
    the next sweep. Does nothing when no in-process worker serves that kind or dispatch is
    off (`JOBS_DISPATCH=0`, the test default): the sweep schedule still picks the job up."""
    workers = getattr(settings, "JOB_WORKERS", {})
    served = any(kind.startswith(prefix) for prefix in workers)
    if not served or not getattr(settings, "JOBS_DISPATCH", True):
        return
    from django_q.tasks import async_task

    cluster = settings.JOB_CLUSTER_FOR_AUDIENCE.get(kind.partition(":")[0])
    options: dict[str, object] = {"group": "kick"}
    if cluster:
        options["cluster"] = cluster
    try:
        async_task("telha.jobs.tasks.work", kind, q_options=options)
    except Exception:  # the sweep schedule is the safety net; never fail the request
        log.exception("could not wake the worker for %s", kind)
