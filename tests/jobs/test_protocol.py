"""The PollJobs protocol for outside workers (CONTRACT §3.4) over HTTP: the audience
fence, the lease response, ordering and batching, and the lease-token checks of
heartbeat / complete / fail."""

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from clarify.models import AuditEvent, State
from common.codes import ATTEMPT_SKIPS
from common.times import to_us
from jobs.models import Job, JobStatus
from jobs.services import (
    JobKindForbidden,
    job_advance,
    job_complete,
    job_fail,
    job_heartbeat,
    job_lease,
    jobs_reap,
)

from .conftest import (
    LEASED_JOB_KEYS,
    SLACK,
    UPPER_SNAKE,
    US,
    assert_error,
    expire_lease,
    job_rows,
    lease_http,
    make_runnable,
    now,
    now_us,
    post,
    random_token,
    row,
)

pytestmark = pytest.mark.django_db


def _lease_one(client, kinds, **extra):
    resp = lease_http(client, kinds, **extra)
    assert resp.status_code == 200, resp.content
    jobs = resp.json()["jobs"]
    assert len(jobs) == 1, jobs
    return jobs[0]


def _act(client, job_id, action, token, **body):
    return post(client, f"/v1/jobs/{job_id}/{action}", {"leaseToken": token, **body})


# ---------------------------------------------------------------------------------------
# The audience fence (spec §12 clarify_fence)


def test_clarify_fence(
    workspace,
    enqueue,
    open_clarification,
    ingest_client,
    clarify_client,
    person_client,
    plain_key_client,
    tenant_b_clarify_client,
):
    clarify_job = open_clarification().job
    [ingest_job] = enqueue("ingest:document")
    before = job_rows()
    assert {r["status"] for r in before} == {"pending"}

    refusals = [
        # An ingestion-worker token asking for clarify: jobs, alone or among its own kinds.
        (ingest_client, ["clarify:"]),
        (ingest_client, ["clarify:temporal"]),
        (ingest_client, ["ingest:", "clarify:"]),
        # A clarify token asking for ingest: jobs.
        (clarify_client, ["ingest:"]),
        (clarify_client, ["ingest:document"]),
        (clarify_client, ["clarify:", "ingest:document"]),
        # A kind that only looks like the audience is still outside the fence.
        (clarify_client, ["clarify"]),
        (clarify_client, ["clarifyx:temporal"]),
        (ingest_client, ["ingest"]),
        # Keys without an audience cannot lease anything at all.
        (person_client("sam"), ["clarify:"]),
        (person_client("alice"), ["ingest:"]),
        (plain_key_client, ["clarify:"]),
        (plain_key_client, ["ingest:"]),
    ]
    for client, kinds in refusals:
        resp = lease_http(client, kinds, max=10)
        assert_error(resp, 403, "JOB_KIND_FORBIDDEN")
        assert set(resp.json()) == {"code", "detail"}
        assert job_rows() == before, f"{kinds} changed a job"

    # Another tenant's clarify token sees no job of this tenant.
    resp = lease_http(tenant_b_clarify_client, ["clarify:"], max=10)
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"jobs": []}
    assert job_rows() == before

    # Inside the fence each token gets exactly its own audience's job.
    assert _lease_one(clarify_client, ["clarify:"], max=10)["id"] == clarify_job.pk
    assert _lease_one(ingest_client, ["ingest:"], max=10)["id"] == ingest_job.pk
    assert row(clarify_job).status == row(ingest_job).status == JobStatus.LEASED


def test_no_key_cannot_lease(client, enqueue):
    enqueue("clarify:temporal")
    before = job_rows()
    resp = client.post("/v1/jobs/lease", {"kinds": ["clarify:"]}, content_type="application/json")
    assert_error(resp, 401, "UNAUTHENTICATED")
    assert job_rows() == before


def test_other_tenant_cannot_touch_a_leased_job(clarify_client, tenant_b_clarify_client, enqueue):
    """Even with the right lease token, tenant B's key cannot heartbeat, complete or fail
    tenant A's job: it is as if the job did not exist (LEASE_LOST), and nothing changes."""
    [job] = enqueue("clarify:temporal", payload={"v": 1})
    leased = _lease_one(clarify_client, ["clarify:"])
    before = job_rows()
    for action, extra in [("heartbeat", {}), ("complete", {}), ("fail", {"retryable": False})]:
        resp = _act(tenant_b_clarify_client, job.pk, action, leased["leaseToken"], **extra)
        assert_error(resp, 409, "LEASE_LOST")
        assert job_rows() == before


def test_the_fence_guards_heartbeat_complete_and_fail(
    clarify_client, ingest_client, person_client, plain_key_client, enqueue
):
    """Knowing a lease token is not enough: the caller's audience must be the job's, as for
    leasing. A key of the other audience or without one, in the same tenant, gets
    `403 JOB_KIND_FORBIDDEN` — with the right token or a wrong one — and nothing changes."""
    [job] = enqueue("clarify:temporal", payload={"v": 1, "ranking": ["a", "b"]}, max_attempts=3)
    [ingest_job] = enqueue("ingest:document")
    leased = _lease_one(clarify_client, ["clarify:"])
    ingest_leased = _lease_one(ingest_client, ["ingest:"])
    before = job_rows()

    outsiders = [ingest_client, person_client("sam"), person_client("alice"), plain_key_client]
    actions = [
        ("heartbeat", {"leaseSeconds": 600}),
        ("complete", {"result": {"stolen": True}}),
        ("fail", {"retryable": False, "reason": "BROKEN"}),
        ("fail", {"retryable": True, "reason": "NO_READ_PERMISSION"}),
    ]
    for client in outsiders:
        for token in (leased["leaseToken"], random_token(), "not-a-token"):
            for action, extra in actions:
                resp = _act(client, job.pk, action, token, **extra)
                assert_error(resp, 403, "JOB_KIND_FORBIDDEN")
                assert job_rows() == before, (action, token)
    # … and the reverse: a clarify token cannot touch an ingest job it knows the token of.
    for action, extra in actions:
        resp = _act(clarify_client, ingest_job.pk, action, ingest_leased["leaseToken"], **extra)
        assert_error(resp, 403, "JOB_KIND_FORBIDDEN")
        assert job_rows() == before

    # Inside the fence the same tokens work.
    resp = _act(clarify_client, job.pk, "heartbeat", leased["leaseToken"], leaseSeconds=600)
    assert resp.status_code == 200, resp.content
    resp = _act(ingest_client, ingest_job.pk, "complete", ingest_leased["leaseToken"])
    assert resp.status_code == 200, resp.content
    assert row(ingest_job).status == JobStatus.DONE


def test_the_service_fence_for_in_process_callers(workspace, enqueue):
    """The services take the caller's audience too; the cluster's own worker passes none
    (`Fence.OFF`) and acts on what it leased."""
    [job] = enqueue("clarify:temporal", payload={"v": 1})
    [lease] = job_lease(tenant=workspace, audience="clarify", kinds=["clarify:"])
    before = job_rows()
    calls = [
        lambda aud: job_heartbeat(tenant=workspace, job_id=job.pk, token=lease.token, audience=aud),
        lambda aud: job_advance(tenant=workspace, job_id=job.pk, token=lease.token, audience=aud),
        lambda aud: job_fail(
            tenant=workspace, job_id=job.pk, token=lease.token, retryable=False, audience=aud
        ),
        lambda aud: job_complete(tenant=workspace, job_id=job.pk, token=lease.token, audience=aud),
    ]
    for call in calls:
        for audience in ("ingest", None):
            with pytest.raises(JobKindForbidden):
                call(audience)
            assert job_rows() == before
    job_heartbeat(tenant=None, job_id=job.pk, token=lease.token)  # Fence.OFF
    job_complete(tenant=workspace, job_id=job.pk, token=lease.token, audience="clarify")
    assert row(job).status == JobStatus.DONE


# ---------------------------------------------------------------------------------------
# The lease response


def test_lease_response_has_exactly_the_contract_keys(clarify_client, open_clarification):
    opened = open_clarification()
    start = now_us()
    resp = lease_http(clarify_client, ["clarify:"], leaseSeconds=90)
    end = now_us()

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert set(body) == {"jobs"}
    [job] = body["jobs"]
    assert set(job) == LEASED_JOB_KEYS
    db = row(opened.job)
    assert job["id"] == opened.job.pk
    assert job["kind"] == "clarify:temporal"
    assert job["attempts"] == 0
    assert job["maxAttempts"] == len(opened.ranking) + 1 == 4
    assert job["payload"] == {
        "v": 1,
        "clarificationId": str(opened.clar.pk),
        "ranking": opened.ranking,
    }
    assert uuid.UUID(job["leaseToken"]) == db.lease_token
    assert isinstance(job["leaseExpiresAt"], int)
    assert job["leaseExpiresAt"] == to_us(db.lease_expires_at)
    slack = SLACK.total_seconds() * US
    assert start + 90 * US - slack <= job["leaseExpiresAt"] <= end + 90 * US + slack
    assert db.status == JobStatus.LEASED
    assert db.lease_holder.startswith("key:")


def test_lease_defaults_to_the_kinds_ttl_and_one_job(clarify_client, enqueue):
    enqueue("clarify:temporal", n=3, payload={"v": 1})
    start = now_us()
    resp = lease_http(clarify_client, ["clarify:"])
    assert resp.status_code == 200, resp.content
    [job] = resp.json()["jobs"]
    # clarify:temporal leases for 60 s unless the worker asks otherwise.
    assert abs(job["leaseExpiresAt"] - (start + 60 * US)) < 2 * US
    assert Job.objects.filter(status=JobStatus.PENDING).count() == 2


def test_lease_order_is_priority_then_run_after_then_id(ingest_client, enqueue):
    base = timezone.now() - timedelta(hours=1)
    normal_late = enqueue("ingest:a", priority=2)[0]
    normal_early = enqueue("ingest:b", priority=2)[0]
    normal_tie_1, normal_tie_2 = enqueue("ingest:a", n=2, priority=2)
    critical = enqueue("ingest:a", priority=0)[0]
    high = enqueue("ingest:a", priority=1)[0]
    future_critical = enqueue("ingest:a", priority=0)[0]
    done_critical = enqueue("ingest:a", priority=0)[0]
    dead_critical = enqueue("ingest:a", priority=0)[0]
    for job, offset in [
        (normal_late, 30),
        (normal_early, 10),
        (normal_tie_1, 20),
        (normal_tie_2, 20),
        (critical, 50),
        (high, 40),
    ]:
        Job.objects.filter(pk=job.pk).update(run_after=base + timedelta(minutes=offset))
    Job.objects.filter(pk=future_critical.pk).update(run_after=timezone.now() + timedelta(hours=1))
    Job.objects.filter(pk=done_critical.pk).update(status=JobStatus.DONE)
    Job.objects.filter(pk=dead_critical.pk).update(status=JobStatus.DEAD)

    resp = lease_http(ingest_client, ["ingest:"], max=100)

    assert resp.status_code == 200, resp.content
    assert [j["id"] for j in resp.json()["jobs"]] == [
        critical.pk,
        high.pk,
        normal_early.pk,
        normal_tie_1.pk,
        normal_tie_2.pk,
        normal_late.pk,
    ]
    assert row(future_critical).status == JobStatus.PENDING
    assert row(done_critical).status == JobStatus.DONE
    assert row(dead_critical).status == JobStatus.DEAD


def test_a_critical_clarification_is_leased_before_a_normal_one(clarify_client, open_clarification):
    normal = open_clarification()
    critical = open_clarification(severity_hint="critical")
    high = open_clarification(severity_hint="high")
    ids = [j["id"] for j in lease_http(clarify_client, ["clarify:"], max=3).json()["jobs"]]
    assert ids == [critical.job.pk, high.job.pk, normal.job.pk]


def test_kind_prefixes_select_kinds(ingest_client, enqueue):
    [doc] = enqueue("ingest:document")
    enqueue("ingest:other")
    jobs = lease_http(ingest_client, ["ingest:document"], max=10).json()["jobs"]
    assert [j["id"] for j in jobs] == [doc.pk]


def test_max_batches_and_each_job_is_leased_once(ingest_client, enqueue):
    jobs = enqueue("ingest:document", n=5)
    batches = []
    for _ in range(4):
        resp = lease_http(ingest_client, ["ingest:"], max=2)
        assert resp.status_code == 200, resp.content
        batches.append([j["id"] for j in resp.json()["jobs"]])
    assert [len(b) for b in batches] == [2, 2, 1, 0]
    leased = [i for b in batches for i in b]
    assert sorted(leased) == sorted(j.pk for j in jobs)
    assert Job.objects.filter(status=JobStatus.LEASED).count() == 5


# ---------------------------------------------------------------------------------------
# Heartbeat / complete / fail: only the current lease token works


def test_only_the_current_token_works(clarify_client, enqueue):
    job_a, job_b = enqueue("clarify:temporal", n=2, payload={"v": 1})
    lease_a = _lease_one(clarify_client, ["clarify:"])
    lease_b = _lease_one(clarify_client, ["clarify:"])
    assert (lease_a["id"], lease_b["id"]) == (job_a.pk, job_b.pk)
    assert lease_a["leaseToken"] != lease_b["leaseToken"]
    before = job_rows()

    stale_tokens = [random_token(), lease_b["leaseToken"], "not-a-token", ""]
    for token in stale_tokens:
        for action, extra in [
            ("heartbeat", {"leaseSeconds": 600}),
            ("complete", {}),
            ("fail", {"retryable": False, "reason": "BROKEN"}),
            ("fail", {"retryable": True, "reason": "NO_READ_PERMISSION"}),
        ]:
            resp = _act(clarify_client, job_a.pk, action, token, **extra)
            if token == "":
                assert resp.status_code == 422, resp.content  # a missing token is an invalid body
            else:
                assert_error(resp, 409, "LEASE_LOST")
            assert job_rows() == before, (token, action)

    # Unknown and malformed job ids are LEASE_LOST too (and change nothing).
    for job_id in [999_999_999, "abc", "1e3"]:
        resp = _act(clarify_client, job_id, "complete", lease_a["leaseToken"])
        assert_error(resp, 409, "LEASE_LOST")
    assert job_rows() == before

    # The current token works.
    start = now_us()
    resp = _act(clarify_client, job_a.pk, "heartbeat", lease_a["leaseToken"], leaseSeconds=600)
    assert resp.status_code == 200, resp.content
    expires = resp.json()["leaseExpiresAt"]
    assert abs(expires - (start + 600 * US)) < 2 * US
    assert to_us(row(job_a).lease_expires_at) == expires
    assert row(job_a).status == JobStatus.LEASED

    resp = _act(clarify_client, job_a.pk, "complete", lease_a["leaseToken"])
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"status": "done"}
    done = row(job_a)
    assert (done.status, done.lease_token, done.lease_expires_at) == (JobStatus.DONE, None, None)
    assert done.attempts == 0

    # A finished job's token is spent: nothing more changes it.
    before = job_rows()
    for action in ("heartbeat", "complete", "fail"):
        assert_error(
            _act(clarify_client, job_a.pk, action, lease_a["leaseToken"]), 409, "LEASE_LOST"
        )
    assert job_rows() == before
    # The other lease was never disturbed.
    assert row(job_b).status == JobStatus.LEASED
    assert str(row(job_b).lease_token) == lease_b["leaseToken"]


def test_an_expired_and_re_leased_jobs_old_token_is_lost(ingest_client, enqueue):
    [job] = enqueue("ingest:document")
    old = _lease_one(ingest_client, ["ingest:"])
    expire_lease(job)
    assert jobs_reap() == 1
    make_runnable(job)
    new = _lease_one(ingest_client, ["ingest:"])
    assert new["id"] == job.pk and new["attempts"] == 1
    assert new["leaseToken"] != old["leaseToken"]
    before = job_rows()

    for action, extra in [
        ("heartbeat", {}),
        ("complete", {}),
        ("fail", {"retryable": True, "reason": "NO_READ_PERMISSION"}),
        ("fail", {"retryable": False}),
    ]:
        assert_error(
            _act(ingest_client, job.pk, action, old["leaseToken"], **extra), 409, "LEASE_LOST"
        )
        assert job_rows() == before

    assert _act(ingest_client, job.pk, "complete", new["leaseToken"]).status_code == 200
    assert row(job).status == JobStatus.DONE


def test_a_reaped_holder_cannot_finish_before_the_re_lease(ingest_client, enqueue):
    [job] = enqueue("ingest:document")
    old = _lease_one(ingest_client, ["ingest:"])
    expire_lease(job)
    jobs_reap()
    before = job_rows()
    assert before[0]["status"] == JobStatus.PENDING
    assert_error(_act(ingest_client, job.pk, "complete", old["leaseToken"]), 409, "LEASE_LOST")
    assert_error(_act(ingest_client, job.pk, "heartbeat", old["leaseToken"]), 409, "LEASE_LOST")
    assert job_rows() == before


@pytest.mark.parametrize("reason", sorted(ATTEMPT_SKIPS))
def test_fail_with_a_skip_reason_moves_on_at_once(clarify_client, enqueue, reason):
    [job] = enqueue("clarify:temporal", payload={"v": 1, "ranking": ["a", "b"]}, max_attempts=3)
    leased = _lease_one(clarify_client, ["clarify:"])

    resp = _act(
        clarify_client,
        job.pk,
        "fail",
        leased["leaseToken"],
        retryable=True,
        reason=reason,
        detail="candidate skipped",
    )

    assert resp.status_code == 200, resp.content
    assert resp.json() == {"status": "pending", "attempts": 1}
    db = row(job)
    assert (db.status, db.attempts, db.lease_token, db.lease_expires_at) == (
        JobStatus.PENDING,
        1,
        None,
        None,
    )
    assert reason in db.last_error and "candidate skipped" in db.last_error
    assert db.run_after <= now() + SLACK
    # Runnable at once: the next attempt is leased straight away.
    again = _lease_one(clarify_client, ["clarify:"])
    assert (again["id"], again["attempts"]) == (job.pk, 1)


def test_fail_with_another_reason_backs_off(ingest_client, enqueue):
    [job] = enqueue("ingest:document")
    leased = _lease_one(ingest_client, ["ingest:"])
    start = now()
    resp = _act(
        ingest_client,
        job.pk,
        "fail",
        leased["leaseToken"],
        retryable=True,
        reason="CONNECTOR_TIMEOUT",
        detail="connector timed out",
    )
    end = now()

    assert resp.status_code == 200, resp.content
    assert resp.json() == {"status": "pending", "attempts": 1}
    db = row(job)
    assert (db.status, db.attempts, db.lease_token) == (JobStatus.PENDING, 1, None)
    assert db.last_error == "CONNECTOR_TIMEOUT: connector timed out"
    # The default policy: base 5 s, attempt 1 waits base * [1.0 .. 1.1].
    assert (
        start + timedelta(seconds=5) - SLACK <= db.run_after <= end + timedelta(seconds=5.5) + SLACK
    )
    assert lease_http(ingest_client, ["ingest:"]).json() == {"jobs": []}


def test_fail_not_retryable_is_dead(ingest_client, enqueue):
    [job] = enqueue("ingest:document")
    leased = _lease_one(ingest_client, ["ingest:"])
    resp = _act(
        ingest_client,
        job.pk,
        "fail",
        leased["leaseToken"],
        retryable=False,
        reason="UNSUPPORTED",
        detail="no parser",
    )
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"status": "dead", "attempts": 1}
    db = row(job)
    assert (db.status, db.lease_token, db.last_error) == (
        JobStatus.DEAD,
        None,
        "UNSUPPORTED: no parser",
    )
    make_runnable(job)
    assert lease_http(ingest_client, ["ingest:"]).json() == {"jobs": []}
    assert jobs_reap() == 0
    assert row(job).status == JobStatus.DEAD


def test_fail_retryable_on_the_last_attempt_is_dead(ingest_client, enqueue):
    [job] = enqueue("ingest:document", max_attempts=2)
    for attempt in range(2):
        leased = _lease_one(ingest_client, ["ingest:"])
        assert leased["attempts"] == attempt
        resp = _act(ingest_client, job.pk, "fail", leased["leaseToken"], reason="NO_DELIVERY_ALIAS")
        assert resp.status_code == 200, resp.content
    assert resp.json() == {"status": "dead", "attempts": 2}
    assert lease_http(ingest_client, ["ingest:"]).json() == {"jobs": []}


def test_fail_not_retryable_dead_letters_the_clarification(clarify_client, open_clarification):
    opened = open_clarification()
    leased = _lease_one(clarify_client, ["clarify:"])
    resp = _act(
        clarify_client,
        opened.job.pk,
        "fail",
        leased["leaseToken"],
        retryable=False,
        reason="NO_DELIVERY_ALIAS",
        detail="nobody reachable",
    )
    assert resp.json() == {"status": "dead", "attempts": 1}
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.DEAD_LETTERED
    event = AuditEvent.objects.get(clarification=opened.clar, type="dead_lettered")
    assert event.detail["lastError"] == "NO_DELIVERY_ALIAS: nobody reachable"
    assert event.detail["skipReasons"] == []


# ---------------------------------------------------------------------------------------
# Invalid bodies: a contract-shaped 4xx, and nothing changes

INVALID_LEASES = [
    {},
    {"kinds": []},
    {"kinds": "clarify:"},
    {"kinds": [""]},
    {"kinds": [None]},
    {"kinds": ["clarify:"], "max": 0},
    {"kinds": ["clarify:"], "max": 101},
    {"kinds": ["clarify:"], "max": "many"},
    {"kinds": ["clarify:"], "leaseSeconds": 0},
    {"kinds": ["clarify:"], "leaseSeconds": 3601},
    {"kinds": ["clarify:"], "leaseSecs": 30},
    ["clarify:"],
]


@pytest.mark.parametrize("body", INVALID_LEASES)
def test_invalid_lease_bodies(clarify_client, enqueue, body):
    enqueue("clarify:temporal", payload={"v": 1})
    before = job_rows()
    resp = post(clarify_client, "/v1/jobs/lease", body)
    assert 400 <= resp.status_code < 500 and resp.status_code != 403, resp.content
    error = resp.json()
    assert re.match(UPPER_SNAKE, error["code"]), error
    assert isinstance(error["detail"], str) and error["detail"]
    assert job_rows() == before


def test_malformed_json_is_a_contract_error(clarify_client, enqueue):
    enqueue("clarify:temporal", payload={"v": 1})
    before = job_rows()
    resp = clarify_client.post("/v1/jobs/lease", "{not json", content_type="application/json")
    assert_error(resp, 400, "MALFORMED_REQUEST")
    assert job_rows() == before


INVALID_ACTIONS = [
    ("heartbeat", {}),
    ("heartbeat", {"leaseSeconds": 0}),
    ("heartbeat", {"leaseSeconds": 3601}),
    ("heartbeat", {"leaseSeconds": 30, "extra": 1}),
    ("complete", {"token": "x"}),
    ("fail", {"reason": "lower_case"}),
    ("fail", {"retryable": "perhaps"}),
    ("fail", {"reason": "X" * 65}),
]


@pytest.mark.parametrize(("action", "body"), INVALID_ACTIONS)
def test_invalid_action_bodies(clarify_client, enqueue, action, body):
    [job] = enqueue("clarify:temporal", payload={"v": 1})
    leased = _lease_one(clarify_client, ["clarify:"])
    if action != "complete" and "token" not in body and body:
        body = {"leaseToken": leased["leaseToken"], **body}
    before = job_rows()
    resp = post(clarify_client, f"/v1/jobs/{job.pk}/{action}", body)
    assert 400 <= resp.status_code < 500, resp.content
    error = resp.json()
    assert re.match(UPPER_SNAKE, error["code"]), error
    assert error["code"] != "LEASE_LOST"
    assert isinstance(error["detail"], str) and error["detail"]
    assert job_rows() == before
