"""The reaper and the per-kind backoff: expired leases go back to pending after an
exponential, capped, jittered backoff (exactly the escalation window for clarify:temporal), or to
dead once attempts are exhausted; `telha jobs sweep|ls` and the sweep schedule."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from jobs.apps_schedule import ensure_sweep_schedule
from jobs.models import Job, JobStatus
from jobs.policies import backoff_seconds, policy_for_kind
from jobs.services import job_fail, job_lease, jobs_reap, jobs_sweep

from .conftest import SLACK, expire_lease, job_rows, make_runnable, now, register_test_kind, row
from .handlers import complete_handler

pytestmark = pytest.mark.django_db

KIND = "ingest:backoff"


def _lease(kind: str = KIND, **kwargs):
    audience = kind.partition(":")[0]
    return job_lease(tenant=None, audience=audience, kinds=[kind], holder="test", **kwargs)


def _reap_and_measure(job):
    """Expire the job's lease, reap it, and return (row, earliest, latest) where the
    backoff must lie in [run_after - latest, run_after - earliest]."""
    expire_lease(job)
    start = now()
    assert jobs_reap() == 1
    end = now()
    return row(job), start, end


def _assert_backoff(db, start, end, low: float, high: float) -> None:
    assert start + timedelta(seconds=low) - SLACK <= db.run_after, (db.run_after, start, low)
    assert db.run_after <= end + timedelta(seconds=high) + SLACK, (db.run_after, end, high)


class _FixedRandom:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_backoff_is_exponential_from_the_base_with_upward_jitter_never_above_the_cap(
    monkeypatch,
):
    register_test_kind(
        monkeypatch, KIND, backoff_base_seconds=10, backoff_cap_seconds=50, max_attempts=9
    )
    # attempt: (the wait without jitter, the longest wait with it)
    expected = {1: (10, 11), 2: (20, 22), 3: (40, 44), 4: (50, 50), 5: (50, 50), 40: (50, 50)}
    for attempt, (delay, longest) in expected.items():
        assert backoff_seconds(KIND, attempt, _FixedRandom(0.0)) == delay
        assert backoff_seconds(KIND, attempt, _FixedRandom(0.999999)) == pytest.approx(
            longest, rel=1e-5
        )
        for _ in range(50):
            # Jitter never shortens a wait, and the cap is a hard ceiling.
            assert delay <= backoff_seconds(KIND, attempt) <= longest


def test_an_expired_lease_goes_back_to_pending_after_the_backoff(workspace, enqueue, monkeypatch):
    register_test_kind(
        monkeypatch, KIND, backoff_base_seconds=10, backoff_cap_seconds=50, max_attempts=9
    )
    [job] = enqueue(KIND)
    [still_held] = enqueue(KIND)
    [waiting] = enqueue(KIND)
    _lease(max_jobs=2)
    expire_lease(job)
    untouched = [r for r in job_rows() if r["id"] != job.pk]

    start = now()
    assert jobs_reap() == 1
    end = now()

    db = row(job)
    assert db.status == JobStatus.PENDING
    assert db.attempts == 1
    assert (db.lease_token, db.lease_expires_at, db.lease_holder) == (None, None, "")
    assert db.last_error.startswith("LEASE_EXPIRED")
    _assert_backoff(db, start, end, 10.0, 11.0)
    # A lease still in force and a pending job are not the reaper's business.
    assert [r for r in job_rows() if r["id"] != job.pk] == untouched
    assert row(still_held).status == JobStatus.LEASED
    assert row(waiting).status == JobStatus.PENDING
    assert jobs_reap() == 0


def test_each_reap_doubles_the_wait_up_to_the_cap_then_dead(workspace, enqueue, monkeypatch):
    register_test_kind(
        monkeypatch, KIND, backoff_base_seconds=10, backoff_cap_seconds=50, max_attempts=9
    )
    [job] = enqueue(KIND, max_attempts=6)
    waits = [10, 20, 40, 50, 50]
    for attempt, wait in enumerate(waits):
        [lease] = _lease()
        assert lease.job.pk == job.pk and lease.job.attempts == attempt
        db, start, end = _reap_and_measure(job)
        assert (db.status, db.attempts) == (JobStatus.PENDING, attempt + 1)
        _assert_backoff(db, start, end, wait, min(50, 1.1 * wait))
        assert _lease() == [], "leased before its backoff ran out"
        make_runnable(job)

    [lease] = _lease()
    assert lease.job.attempts == 5
    expire_lease(job)
    assert jobs_reap() == 1
    db = row(job)
    assert (db.status, db.attempts, db.lease_token) == (JobStatus.DEAD, 6, None)
    make_runnable(job)
    assert _lease() == []
    assert jobs_reap() == 0


def test_the_kind_default_max_attempts_applies(workspace, enqueue, monkeypatch):
    register_test_kind(monkeypatch, KIND, backoff_base_seconds=1, max_attempts=2)
    [job] = enqueue(KIND)
    assert job.max_attempts == 2
    for _ in range(2):
        make_runnable(job)
        assert len(_lease()) == 1
        expire_lease(job)
        jobs_reap()
    assert (row(job).status, row(job).attempts) == (JobStatus.DEAD, 2)


def test_fail_uses_the_same_backoff(workspace, enqueue, monkeypatch):
    register_test_kind(
        monkeypatch, KIND, backoff_base_seconds=10, backoff_cap_seconds=50, max_attempts=9
    )
    [job] = enqueue(KIND)
    for attempt, wait in enumerate([10, 20, 40]):
        make_runnable(job)
        [lease] = _lease()
        start = now()
        job_fail(tenant=None, job_id=job.pk, token=lease.token, retryable=True, reason="BOOM")
        end = now()
        db = row(job)
        assert (db.status, db.attempts) == (JobStatus.PENDING, attempt + 1)
        _assert_backoff(db, start, end, wait, min(50, 1.1 * wait))


def test_clarify_temporal_backoff_is_the_escalation_window(
    settings, clarify_client, open_clarification
):
    settings.CLARIFY = {**settings.CLARIFY, "ESCALATION_WINDOW_HOURS": 2.0}
    policy = policy_for_kind("clarify:temporal")
    assert policy.backoff_base_seconds == policy.backoff_cap_seconds == 7200
    # Each candidate has exactly the window (README "how long each candidate has"): jitter
    # never shortens a wait and the cap (= the base) forbids a longer one.
    for attempt in (1, 2, 3, 7):
        for draw in (0.0, 0.5, 0.999999):
            assert backoff_seconds("clarify:temporal", attempt, _FixedRandom(draw)) == 7200
        assert backoff_seconds("clarify:temporal", attempt) == 7200

    opened = open_clarification()
    for attempt in range(2):
        make_runnable(opened.job)
        [lease] = _lease("clarify:temporal")
        assert lease.job.attempts == attempt
        db, start, end = _reap_and_measure(opened.job)
        assert (db.status, db.attempts) == (JobStatus.PENDING, attempt + 1)
        # Every candidate gets one whole window, not a growing one: the cap is the base.
        _assert_backoff(db, start, end, 7200, 7200)

    settings.CLARIFY = {**settings.CLARIFY, "ESCALATION_WINDOW_HOURS": 0.5}
    assert policy_for_kind("clarify:temporal").backoff_base_seconds == 1800


def test_clarify_job_max_attempts_is_ranking_plus_one(open_clarification):
    for links in (
        [("AUTHORED_BY", "alice")],
        [("AUTHORED_BY", "alice"), ("MENTIONS", "bob")],
        [("AUTHORED_BY", "alice"), ("MENTIONS", "bob"), ("OWNED_BY", "olga")],
    ):
        opened = open_clarification(links=links)
        assert opened.job.payload["ranking"] == opened.ranking
        assert opened.job.max_attempts == len(links) + 1


def test_a_clarification_without_candidates_still_gets_the_steward_attempt(open_clarification):
    opened = open_clarification(links=[])
    assert opened.job.payload["ranking"] == []
    assert opened.job.max_attempts == 1


# ---------------------------------------------------------------------------------------
# `telha jobs sweep`, `telha jobs ls`, the schedule


def test_jobs_sweep_command_reaps(workspace, enqueue):
    [job] = enqueue(KIND)
    _lease()
    expire_lease(job)
    out = io.StringIO()
    call_command("jobs", "sweep", stdout=out)
    assert "Reaped 1 expired lease(s)" in out.getvalue()
    db = row(job)
    assert (db.status, db.attempts) == (JobStatus.PENDING, 1)
    out = io.StringIO()
    call_command("jobs", "sweep", stdout=out)
    assert "Reaped 0 expired lease(s)" in out.getvalue()


def test_sweep_kicks_the_worker_of_each_ready_kind(settings, job_kinds, workspace, enqueue):
    job_kinds("ingest:kick", handler=complete_handler)
    settings.JOBS_DISPATCH = True
    enqueue("ingest:kick", n=2)
    enqueue("ingest:nobody-serves-me")
    [later] = enqueue("ingest:later")
    Job.objects.filter(pk=later.pk).update(run_after=timezone.now() + timedelta(hours=1))
    queued = OrmQ.objects.count()

    result = jobs_sweep()

    assert result["reaped"] == 0
    assert sorted(result["kicked"]) == ["ingest:kick", "ingest:nobody-serves-me"]
    # Only the served kind woke a django-q2 task: jobs.tasks.work("ingest:kick").
    tasks = [q.task for q in OrmQ.objects.order_by("id")][queued:]
    assert [(t["func"], t["args"]) for t in tasks] == [("jobs.tasks.work", ("ingest:kick",))]


def test_sweep_kicks_nothing_when_dispatch_is_off(settings, job_kinds, workspace, enqueue):
    job_kinds("ingest:kick", handler=complete_handler)
    settings.JOBS_DISPATCH = False
    enqueue("ingest:kick")
    queued = OrmQ.objects.count()
    assert jobs_sweep()["kicked"] == ["ingest:kick"]
    assert OrmQ.objects.count() == queued


def test_jobs_ls_json(workspace, tenant_b, enqueue):
    dead, leased, done, pending = enqueue("ingest:document", n=4)
    [other] = enqueue("clarify:temporal", tenant=tenant_b, payload={"v": 1})
    assert len(_lease("ingest:document", max_jobs=3)) == 3
    Job.objects.filter(pk=done.pk).update(
        status=JobStatus.DONE, lease_token=None, lease_expires_at=None, result={"ok": 1}
    )
    Job.objects.filter(pk=dead.pk).update(
        status=JobStatus.DEAD, lease_token=None, lease_expires_at=None, last_error="X: y"
    )

    def ls(*args):
        out = io.StringIO()
        call_command("jobs", "ls", "--json", *args, stdout=out)
        return json.loads(out.getvalue())

    rows = ls()
    assert [r["id"] for r in rows] == [other.pk, pending.pk, done.pk, leased.pk, dead.pk]
    keys = {
        "id",
        "tenant",
        "kind",
        "status",
        "priority",
        "attempts",
        "maxAttempts",
        "runAfter",
        "leaseExpiresAt",
        "subject",
        "lastError",
        "result",
    }
    assert all(set(r) == keys for r in rows)
    by_id = {r["id"]: r for r in rows}
    assert by_id[other.pk]["tenant"] == "beta"
    assert by_id[pending.pk]["tenant"] == "acme"
    assert by_id[other.pk]["kind"] == "clarify:temporal"
    assert by_id[other.pk]["maxAttempts"] == 4  # the clarify:temporal default
    assert {r["id"]: r["status"] for r in rows} == {
        other.pk: "pending",
        pending.pk: "pending",
        done.pk: "done",
        leased.pk: "leased",
        dead.pk: "dead",
    }
    assert by_id[dead.pk]["lastError"] == "X: y"
    assert by_id[done.pk]["result"] == {"ok": 1}
    assert by_id[leased.pk]["leaseExpiresAt"] is not None
    assert by_id[pending.pk]["leaseExpiresAt"] is None

    assert [r["id"] for r in ls("--status", "dead")] == [dead.pk]
    assert [r["id"] for r in ls("--status", "leased")] == [leased.pk]
    assert [r["id"] for r in ls("--status", "pending")] == [other.pk, pending.pk]
    assert [r["id"] for r in ls("--kind", "clarify:")] == [other.pk]
    assert [r["id"] for r in ls("--limit", "2")] == [other.pk, pending.pk]


def test_jobs_ls_plain_text(workspace, enqueue):
    [job] = enqueue("ingest:document")
    out = io.StringIO()
    call_command("jobs", "ls", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["ID", "KIND", "STATUS"]
    assert lines[1].split()[:3] == [str(job.pk), "ingest:document", "pending"]


def test_the_sweep_schedule_exists_after_migrations(db):
    schedule = Schedule.objects.get(name="telha-jobs-sweep")
    assert schedule.func == "jobs.tasks.sweep"
    assert schedule.schedule_type == Schedule.MINUTES
    assert schedule.minutes == 1
    assert schedule.repeats == -1
    # Idempotent: migrating again leaves one schedule.
    ensure_sweep_schedule()
    assert Schedule.objects.filter(name="telha-jobs-sweep").count() == 1
