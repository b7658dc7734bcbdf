"""System checks for the job cluster set-up (run by `telha qcluster` before it starts)."""

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from . import dispatch


@register("jobs")
def check_cluster_routing(**kwargs: Any) -> list[CheckMessage]:
    """A cluster started with `Q_CLUSTER_NAME=<queue>` must have an audience routed to it:
    otherwise it would sit idle while every kick goes elsewhere (the usual cause is
    `JOB_CLUSTER_FOR_AUDIENCE` set on the web processes only)."""
    queue = dispatch.this_cluster()
    routes = getattr(settings, "JOB_CLUSTER_FOR_AUDIENCE", {})
    if queue == dispatch.default_cluster() or queue in routes.values():
        return []
    listed = ", ".join(f"{a}={q}" for a, q in routes.items()) or "empty"
    return [
        Error(
            f"Q_CLUSTER_NAME={queue!r} names a queue no audience is routed to "
            f"(JOB_CLUSTER_FOR_AUDIENCE: {listed}).",
            hint=(
                "Set the same JOB_CLUSTER_FOR_AUDIENCE on every process, web and clusters, "
                f"e.g. JOB_CLUSTER_FOR_AUDIENCE=clarify={queue}."
            ),
            id="jobs.E001",
        )
    ]
