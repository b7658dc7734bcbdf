"""Settings for the real django-q2 cluster started by test_cluster.py: the test settings
plus one in-process worker, for the test kind `ingest:slow` only."""

from telha.test_settings import *  # noqa: F403
from telha.test_settings import INSTALLED_APPS, Q_CLUSTER

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jobs.apps.SlowClusterKinds"]
JOBS_DISPATCH = True
Q_CLUSTER = {**Q_CLUSTER, "workers": 2, "poll": 0.2}
