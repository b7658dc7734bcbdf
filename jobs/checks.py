"""System checks for the job cluster set-up (run by `telha qcluster` before it starts)."""

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from . import dispatch, policies


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


@register("jobs")
def check_kind_handlers(**kwargs: Any) -> list[CheckMessage]:
    """Every registered kind has its in-process handler, registered with it in one place
    (`register_kind(kind, policy, handler=...)`). A kind without one is only leased by
    external workers over `/v1/jobs`: nothing wakes for it here, which is rarely meant."""
    return [
        Warning(
            f"Job kind {kind!r} is registered without an in-process handler: only external "
            "workers (/v1/jobs) lease its jobs.",
            hint=f"Register it with its handler: register_kind({kind!r}, ..., handler=...).",
            id="jobs.W001",
        )
        for kind in policies.registered_kinds()
        if policies.handler_for(kind) is None
    ]
