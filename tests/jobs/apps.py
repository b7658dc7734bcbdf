"""The job kinds of the real django-q2 clusters the tests start (added to INSTALLED_APPS by
their settings modules): registered as an app registers its kinds, in `ready`."""

from django.apps import AppConfig


class SlowClusterKinds(AppConfig):
    """test_cluster.py's cluster: `ingest:slow` only."""

    name = "tests.jobs"
    label = "tests_jobs"

    def ready(self) -> None:
        from jobs.policies import register_kind

        from .handlers import SLOW_KIND, slow_handler, slow_policy

        register_kind(SLOW_KIND, slow_policy, handler=slow_handler)


class RoutingClusterKinds(AppConfig):
    """test_cluster_routing.py's clusters: `clarify:rec` and `ingest:rec`."""

    name = "tests.jobs"
    label = "tests_jobs"

    def ready(self) -> None:
        from jobs.policies import register_kind

        from .handlers import complete_handler

        for kind in ("clarify:rec", "ingest:rec"):
            register_kind(kind, handler=complete_handler)
