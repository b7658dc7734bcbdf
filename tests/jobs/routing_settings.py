"""Settings for the real per-audience django-q2 clusters started by test_cluster_routing.py:
the test settings plus an in-process worker for `clarify:rec` and `ingest:rec`.
`JOB_CLUSTER_FOR_AUDIENCE` and `Q_CLUSTER_NAME` come from the environment, as in production."""

from telha.test_settings import *  # noqa: F403
from telha.test_settings import Q_CLUSTER

JOB_WORKERS = {
    "clarify:rec": "tests.jobs.handlers.complete_handler",
    "ingest:rec": "tests.jobs.handlers.complete_handler",
}
JOBS_DISPATCH = True
Q_CLUSTER = {**Q_CLUSTER, "workers": 1, "poll": 0.2}
