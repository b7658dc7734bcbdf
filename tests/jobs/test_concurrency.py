"""Real concurrency on PostgreSQL (`SELECT … FOR UPDATE SKIP LOCKED`): many workers
leasing at once never share a job, and a holder whose lease was taken over is refused."""

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from jobs.models import Job, JobStatus
from jobs.services import (
    LeaseLost,
    job_complete,
    job_enqueue,
    job_fail,
    job_heartbeat,
    job_lease,
    jobs_reap,
)

from .conftest import expire_lease, job_rows, make_runnable, postgres_only, row

pytestmark = [
    pytest.mark.postgres,
    postgres_only,
    pytest.mark.django_db(transaction=True),
]

KIND = "ingest:bulk"
THREADS = 8
JOBS = 1000


def _run_threads(target: Callable[[int], Any], n: int = THREADS) -> list[Any]:
    """Run `target(i)` in n threads started together; each closes its DB connection.
    Re-raises the first exception of any thread."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = target(i)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    if errors:
        raise errors[0]
    return results


def _bulk_jobs(tenant: Any, n: int) -> set[int]:
    jobs = [job_enqueue(tenant=tenant, kind=KIND, payload={"i": i}) for i in range(n)]
    return {j.pk for j in jobs}


def test_eight_workers_lease_a_thousand_jobs_each_exactly_once(workspace):
    ids = _bulk_jobs(workspace, JOBS)

    def worker(i: int) -> list[tuple[int, str]]:
        got: list[tuple[int, str]] = []
        while True:
            leases = job_lease(
                tenant=None, audience="ingest", kinds=["ingest:"], max_jobs=7, holder=f"w{i}"
            )
            if not leases:
                return got
            assert len(leases) <= 7
            got.extend((lease.job.pk, str(lease.token)) for lease in leases)

    per_thread = _run_threads(worker)

    leased = [pk for got in per_thread for pk, _ in got]
    duplicates = [pk for pk, n in Counter(leased).items() if n > 1]
    assert duplicates == []
    assert len(leased) == JOBS
    assert set(leased) == ids
    # Every row is leased with the token of the one lease that returned it.
    tokens = {pk: token for got in per_thread for pk, token in got}
    holders = {pk: f"w{i}" for i, got in enumerate(per_thread) for pk, _ in got}
    rows = Job.objects.filter(pk__in=ids).values_list("pk", "status", "lease_token", "lease_holder")
    for pk, status, token, holder in rows:
        assert status == JobStatus.LEASED
        assert str(token) == tokens[pk]
        assert holder == holders[pk]
    assert job_lease(tenant=None, audience="ingest", kinds=["ingest:"], max_jobs=100) == []


def test_a_holder_whose_lease_was_taken_over_gets_lease_lost(workspace):
    [job_id] = _bulk_jobs(workspace, 1)
    shared: dict[str, Any] = {}
    stale_results: list[str] = []
    step = [threading.Event() for _ in range(3)]

    def stale_holder(_: int) -> None:
        [lease] = job_lease(tenant=None, audience="ingest", kinds=[KIND], holder="stale")
        shared["stale"] = lease.token
        step[0].set()
        assert step[1].wait(30)  # meanwhile: the lease expires, is reaped and re-leased
        for action in (
            lambda: job_heartbeat(tenant=None, job_id=job_id, token=lease.token),
            lambda: job_complete(tenant=None, job_id=job_id, token=lease.token),
            lambda: job_fail(
                tenant=None,
                job_id=job_id,
                token=lease.token,
                retryable=True,
                reason="NO_READ_PERMISSION",
            ),
            lambda: job_fail(tenant=None, job_id=job_id, token=lease.token, retryable=False),
        ):
            try:
                action()
                stale_results.append("changed")
            except LeaseLost as exc:
                stale_results.append(exc.code)
        step[2].set()

    def new_holder(_: int) -> None:
        assert step[0].wait(30)
        expire_lease(job_id)
        assert jobs_reap() == 1
        make_runnable(job_id)
        [lease] = job_lease(tenant=None, audience="ingest", kinds=[KIND], holder="new")
        shared["new"] = lease.token
        shared["before"] = job_rows()
        step[1].set()
        assert step[2].wait(30)
        shared["after"] = job_rows()
        job_complete(tenant=None, job_id=job_id, token=lease.token)

    _run_threads(lambda i: (stale_holder if i == 0 else new_holder)(i), n=2)

    assert stale_results == ["LEASE_LOST"] * 4
    assert shared["after"] == shared["before"]
    assert shared["before"][0]["lease_token"] == shared["new"] != shared["stale"]
    assert shared["before"][0]["attempts"] == 1
    assert row(job_id).status == JobStatus.DONE


def test_reaper_and_completing_holders_race_one_outcome_per_job(workspace):
    """Holders complete while the reaper reaps the same expired leases: each job ends up
    either done (the holder won) or pending with attempts+1 (the reaper won, and the holder
    got LEASE_LOST) — never both, never neither."""
    ids = sorted(_bulk_jobs(workspace, 200))
    leases = job_lease(tenant=None, audience="ingest", kinds=[KIND], max_jobs=100)
    leases += job_lease(tenant=None, audience="ingest", kinds=[KIND], max_jobs=100)
    assert sorted(lease.job.pk for lease in leases) == ids
    Job.objects.filter(pk__in=ids).update(lease_expires_at=row(ids[0]).created_at)
    completed: dict[int, bool] = {}
    reaped: list[int] = []

    def racer(i: int) -> None:
        if i == 0:
            reaped.append(jobs_reap(limit=7))
            return
        for lease in leases[i - 1 :: THREADS - 1]:
            try:
                job_complete(tenant=None, job_id=lease.job.pk, token=lease.token)
                completed[lease.job.pk] = True
            except LeaseLost:
                completed[lease.job.pk] = False

    _run_threads(racer)

    states = {
        pk: (status, attempts)
        for pk, status, attempts in Job.objects.filter(pk__in=ids).values_list(
            "pk", "status", "attempts"
        )
    }
    assert len(completed) == len(ids)
    for pk in ids:
        if completed[pk]:
            assert states[pk] == (JobStatus.DONE, 0), pk
        else:
            assert states[pk] == (JobStatus.PENDING, 1), pk
    assert reaped == [sum(1 for ok in completed.values() if not ok)]
