"""django-q2 executes the lease queue: the in-process worker loop (`jobs.tasks.work`),
and a real `qcluster` process killed with SIGKILL mid-lease loses no job."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.utils import timezone

from jobs import dispatch, tasks
from jobs.models import Job, JobStatus
from jobs.services import job_lease, jobs_reap

from . import handlers
from .conftest import now, postgres_only, row, wait_until_runnable

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------
# The in-process worker loop (any database). `work` starts each round with
# `close_old_connections()`, as a django-q2 worker must, so these tests run outside the
# per-test transaction.

work_db = pytest.mark.django_db(transaction=True)


@work_db
def test_work_leases_and_handles_every_ready_job(job_kinds, enqueue):
    job_kinds("ingest:rec", handler=handlers.complete_handler)
    handlers.SEEN.clear()
    jobs = enqueue("ingest:rec", n=12)
    [other] = enqueue("ingest:other")

    assert tasks.work("ingest:rec") == 12

    assert sorted(handlers.SEEN) == sorted((j.pk, 0) for j in jobs)
    assert set(Job.objects.filter(kind="ingest:rec").values_list("status", flat=True)) == {"done"}
    assert row(jobs[0]).result == {"by": "test"}
    assert row(jobs[0]).lease_holder.startswith("cluster:")
    assert row(other).status == JobStatus.PENDING
    assert tasks.work("ingest:rec") == 0


@work_db
def test_work_without_a_handler_leaves_jobs_alone(job_kinds, enqueue):
    job_kinds("ingest:rec")  # a policy, no in-process handler: external workers only
    [job] = enqueue("ingest:rec")
    assert tasks.work("ingest:rec") == 0
    assert row(job).status == JobStatus.PENDING


@work_db
def test_a_handler_bug_fails_the_attempt_for_a_later_retry(job_kinds, enqueue):
    job_kinds("ingest:bug", handler=handlers.failing_handler)
    [job] = enqueue("ingest:bug")
    start = now()
    assert tasks.work("ingest:bug") == 1
    db = row(job)
    assert (db.status, db.attempts, db.lease_token) == (JobStatus.PENDING, 1, None)
    assert db.last_error.startswith("WORKER_ERROR: RuntimeError: handler bug")
    assert db.run_after > start + timedelta(seconds=4)  # the default 5 s backoff
    assert tasks.work("ingest:bug") == 0  # not before the backoff ran out


@pytest.mark.django_db
def test_kick_queues_the_worker_only_for_served_kinds(settings, job_kinds):
    from django_q.models import OrmQ

    job_kinds("ingest:rec", handler=handlers.complete_handler)
    settings.JOBS_DISPATCH = True
    settings.JOB_CLUSTER_FOR_AUDIENCE = {"ingest": "telha-ingest"}
    dispatch.kick("ingest:unserved")
    assert OrmQ.objects.count() == 0
    dispatch.kick("ingest:rec")
    [queued] = OrmQ.objects.all()
    assert queued.key == "telha-ingest"
    assert (queued.task["func"], queued.task["args"]) == ("jobs.tasks.work", ("ingest:rec",))
    settings.JOBS_DISPATCH = False
    dispatch.kick("ingest:rec")
    assert OrmQ.objects.count() == 1


# ---------------------------------------------------------------------------------------
# A real cluster, killed mid-lease (PostgreSQL: the cluster and the test share the test DB)


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = s["HOST"] or "127.0.0.1"
    port = s["PORT"] or 5432
    return f"postgres://{auth}@{host}:{port}/{quote(s['NAME'], safe='')}"


def _wait_for(predicate, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}; cluster log:\n{log.read_text()[-4000:]}")


@pytest.mark.postgres
@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_cluster_killed_mid_lease_loses_no_job(settings, job_kinds, enqueue):
    job_kinds(handlers.SLOW_KIND, handlers.slow_policy, handler=handlers.slow_handler)
    settings.JOBS_DISPATCH = True
    [job] = enqueue(handlers.SLOW_KIND, payload={"n": 1})

    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "DJANGO_SETTINGS_MODULE": "tests.jobs.cluster_settings",
        "JOBS_DISPATCH": "1",
        "PYTHONPATH": str(ROOT),
    }
    log = Path(tempfile.mkstemp(prefix="telha-qcluster-", suffix=".log")[1])
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # Wake the worker for the kind (what job_enqueue's on_commit kick does).
        dispatch.kick(handlers.SLOW_KIND)
        _wait_for(lambda: row(job).status == JobStatus.LEASED, 45, "the cluster to lease", log)
        leased = row(job)
        assert leased.lease_holder.startswith("cluster:")
        assert leased.attempts == 0
        assert proc.poll() is None

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

        # The job is still there, still leased by the dead process: nothing was lost …
        assert row(job).status == JobStatus.LEASED
        assert row(job).lease_token == leased.lease_token
        # … and before the TTL runs out nobody can take it over.
        assert jobs_reap() == 0
        assert job_lease(tenant=None, audience="ingest", kinds=[handlers.SLOW_KIND]) == []

        wait = (leased.lease_expires_at - timezone.now()).total_seconds() + 0.2
        assert wait < handlers.SLOW_LEASE_SECONDS + 1
        time.sleep(max(0.0, wait))
        assert jobs_reap() == 1
        reaped = row(job)
        assert (reaped.status, reaped.attempts, reaped.lease_token) == (JobStatus.PENDING, 1, None)
        assert reaped.last_error.startswith("LEASE_EXPIRED")
        assert reaped.run_after <= timezone.now() + timedelta(seconds=handlers.SLOW_BACKOFF_SECONDS)

        wait_until_runnable(job)
        [again] = job_lease(tenant=None, audience="ingest", kinds=[handlers.SLOW_KIND])
        assert (again.job.pk, again.job.attempts) == (job.pk, 1)
        assert again.job.payload == job.payload
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.unlink(missing_ok=True)
