"""Job handlers for the tests, registered for a test with the `job_kinds` fixture and in
the real clusters' processes by `tests.jobs.apps`. `ingest:slow` has a short lease
policy, registered with it in both, so the process that runs `slow_handler` (a real
django-q2 cluster in test_cluster.py) and the test process that reaps it agree on the
kind's TTL and backoff."""

import time

from jobs.policies import KindPolicy
from jobs.services import Lease, job_complete

SLOW_KIND = "ingest:slow"
SLOW_LEASE_SECONDS = 5
SLOW_BACKOFF_SECONDS = 0.5


def slow_policy() -> KindPolicy:
    return KindPolicy(
        lease_ttl_seconds=SLOW_LEASE_SECONDS,
        backoff_base_seconds=SLOW_BACKOFF_SECONDS,
        backoff_cap_seconds=SLOW_BACKOFF_SECONDS,
        max_attempts=3,
    )


SEEN: list[tuple[int, int]] = []


def slow_handler(lease: Lease) -> None:
    """Holds its lease far longer than the test lives (the test kills the process)."""
    time.sleep(120)


def complete_handler(lease: Lease) -> None:
    """Records (job id, attempts) and completes the job."""
    SEEN.append((lease.job.pk, lease.job.attempts))
    job_complete(tenant=None, job_id=lease.job.pk, token=lease.token, result={"by": "test"})


def failing_handler(lease: Lease) -> None:
    raise RuntimeError("handler bug")
