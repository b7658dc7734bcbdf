"""Settings for the real per-audience django-q2 clusters started by test_cluster_routing.py:
the test settings plus an in-process worker for `clarify:rec` and `ingest:rec`.
`JOB_CLUSTER_FOR_AUDIENCE` and `Q_CLUSTER_NAME` come from the environment, as in production."""

from telha.test_settings import *  # noqa: F403
from telha.test_settings import INSTALLED_APPS, Q_CLUSTER

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jobs.apps.RoutingClusterKinds"]
JOBS_DISPATCH = True
Q_CLUSTER = {**Q_CLUSTER, "workers": 1, "poll": 0.2}
