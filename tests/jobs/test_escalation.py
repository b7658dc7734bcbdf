"""Escalation mechanics of the clarify:temporal routing job with a small escalation window
(spec §5 "Job": attempt N asks ranking[N], the last attempt is the steward's, exhaustion
dead-letters). The window really elapses: each test sleeps a few seconds."""

import pytest

from clarify.models import AuditEvent, State
from clarify.routing import candidate_for_attempt
from jobs.models import JobStatus
from jobs.services import jobs_reap, jobs_windows_ended

from .conftest import (
    assert_error,
    expire_lease,
    job_rows,
    lease_http,
    now,
    post,
    row,
    wait_until_runnable,
)

pytestmark = pytest.mark.django_db

WINDOW_HOURS = 0.0005  # 1.8 s
WINDOW = WINDOW_HOURS * 3600


@pytest.fixture(autouse=True)
def small_window(settings):
    settings.CLARIFY = {**settings.CLARIFY, "ESCALATION_WINDOW_HOURS": WINDOW_HOURS}


def _lease(client):
    resp = lease_http(client, ["clarify:"])
    assert resp.status_code == 200, resp.content
    return resp.json()["jobs"]


def _events(clar, type_):
    return list(AuditEvent.objects.filter(clarification=clar, type=type_).order_by("at", "id"))


def test_each_attempt_asks_the_next_candidate_then_the_steward_then_dead_letters(
    clarify_client, open_clarification
):
    opened = open_clarification()  # ranking: alice (author), bob (mentioned), olga (owner)
    ranking = opened.ranking
    assert len(ranking) == 3 and opened.job.max_attempts == 4

    for attempt in range(4):
        [leased] = _lease(clarify_client)
        assert leased["id"] == opened.job.pk
        assert leased["attempts"] == attempt
        assert leased["payload"]["ranking"] == ranking
        assert leased["maxAttempts"] == len(ranking) + 1
        expected = ranking[attempt] if attempt < len(ranking) else None  # None: the steward
        assert candidate_for_attempt(row(opened.job), leased["attempts"]) == expected
        if attempt == len(ranking):
            # The final attempt is the steward's: past the end of the ranking.
            assert leased["attempts"] == len(leased["payload"]["ranking"])
            assert leased["attempts"] == leased["maxAttempts"] - 1

        # The worker delivered and stopped heartbeating: the lease runs out, the reaper
        # advances the job, and the candidate's window starts.
        expire_lease(opened.job)
        start = now()
        assert jobs_reap() == 1
        end = now()
        db = row(opened.job)
        opened.clar.refresh_from_db()

        if attempt < len(ranking):
            assert (db.status, db.attempts) == (JobStatus.PENDING, attempt + 1)
            waited = (db.run_after - start).total_seconds()
            # Exactly one window (no jitter shortens it; the database clock rounds to ms).
            assert WINDOW - 0.05 <= waited <= WINDOW + (end - start).total_seconds() + 0.05
            # The window is running: the clarification is still open …
            assert opened.clar.state == State.OPEN
            assert jobs_windows_ended() == 0
            # … nobody is asked again before the window has run out …
            assert _lease(clarify_client) == []
            # … and once it has, the clarification is expired until the next attempt.
            wait_until_runnable(opened.job)
            assert jobs_windows_ended() == 1
            assert jobs_windows_ended() == 1  # idempotent: no second event
            opened.clar.refresh_from_db()
            assert opened.clar.state == State.EXPIRED
            window_events = _events(opened.clar, "window_expired")
            assert len(window_events) == attempt + 1
            assert window_events[-1].detail == {"attempt": attempt, "candidate": expected}
        else:
            assert (db.status, db.attempts) == (JobStatus.DEAD, 4)

    assert opened.clar.state == State.DEAD_LETTERED
    transitions = [
        (e.detail["from"], e.detail["to"]) for e in _events(opened.clar, "state_changed")
    ]
    # Each window's end expires the clarification; each next attempt opens it again.
    assert transitions == [("open", "expired"), ("expired", "open")] * 3 + [
        ("open", "dead_lettered")
    ]
    [dead] = _events(opened.clar, "dead_lettered")
    assert dead.detail["lastError"].startswith("LEASE_EXPIRED")
    assert dead.detail["skipReasons"] == []
    # Dead is final: nothing is leased or reaped any more.
    assert _lease(clarify_client) == []
    assert jobs_reap() == 0


def test_a_skipped_candidate_burns_no_window_and_is_listed_when_dead_lettered(
    clarify_client, open_clarification
):
    opened = open_clarification(links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")])
    ranking = opened.ranking

    # Attempt 0: alice cannot read the source. An outside worker fails the attempt with
    # the reason code; the core audits the skip itself (as for in-lease skips).
    [leased] = _lease(clarify_client)
    assert leased["attempts"] == 0
    resp = post(
        clarify_client,
        f"/v1/jobs/{leased['id']}/fail",
        {
            "leaseToken": leased["leaseToken"],
            "retryable": True,
            "reason": "NO_READ_PERMISSION",
        },
    )
    assert resp.json() == {"status": "pending", "attempts": 1}
    skipped = AuditEvent.objects.get(clarification=opened.clar, type="skipped")
    assert skipped.detail["reason"] == "NO_READ_PERMISSION"
    assert skipped.detail["candidate"] == ranking[0] and skipped.detail["attempt"] == 0

    # Attempt 1 (bob) is runnable at once: a skip never burns a window.
    [leased] = _lease(clarify_client)
    assert leased["attempts"] == 1
    assert candidate_for_attempt(row(opened.job), 1) == ranking[1]
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.OPEN
    expire_lease(opened.job)
    jobs_reap()
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.OPEN  # bob's window is running
    wait_until_runnable(opened.job)
    jobs_windows_ended()
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.EXPIRED  # … and ran out

    # Attempt 2 is the steward escalation; its delivery fails for good.
    [leased] = _lease(clarify_client)
    assert leased["attempts"] == 2 == len(ranking)
    assert candidate_for_attempt(row(opened.job), 2) is None
    resp = post(
        clarify_client,
        f"/v1/jobs/{leased['id']}/fail",
        {
            "leaseToken": leased["leaseToken"],
            "retryable": True,
            "reason": "DELIVERY_FAILED",
            "detail": "steward unreachable",
        },
    )
    assert resp.json() == {"status": "dead", "attempts": 3}

    opened.clar.refresh_from_db()
    assert opened.clar.state == State.DEAD_LETTERED
    [dead] = _events(opened.clar, "dead_lettered")
    assert dead.detail["lastError"] == "DELIVERY_FAILED: steward unreachable"
    assert dead.detail["skipReasons"] == [
        {"attempt": 0, "candidate": ranking[0], "reason": "NO_READ_PERMISSION"}
    ]


def test_an_answered_clarification_is_never_leased_again(
    clarify_client, person_client, open_clarification
):
    opened = open_clarification()
    [leased] = _lease(clarify_client)

    resp = post(
        person_client("alice"), f"/v1/clarifications/{opened.clar.pk}/answer", {"answerIndex": 1}
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["state"] == "answered"

    db = row(opened.job)
    assert (db.status, db.lease_token, db.lease_expires_at) == (JobStatus.DONE, None, None)
    before = job_rows()
    # The worker still holding the lease can no longer act on it …
    for action in ("heartbeat", "complete", "fail"):
        resp = post(
            clarify_client,
            f"/v1/jobs/{leased['id']}/{action}",
            {"leaseToken": leased["leaseToken"]},
        )
        assert_error(resp, 409, "LEASE_LOST")
    # … the reaper has nothing to do, and no one is asked again.
    assert jobs_reap() == 0
    assert _lease(clarify_client) == []
    assert job_rows() == before
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.ANSWERED
    assert _events(opened.clar, "window_expired") == []


def test_an_answer_while_the_window_runs_stops_the_escalation(
    clarify_client, person_client, open_clarification
):
    opened = open_clarification()
    _lease(clarify_client)
    expire_lease(opened.job)
    jobs_reap()
    assert row(opened.job).status == JobStatus.PENDING

    resp = post(
        person_client("alice"), f"/v1/clarifications/{opened.clar.pk}/answer", {"answerIndex": 0}
    )
    assert resp.status_code == 200, resp.content

    assert row(opened.job).status == JobStatus.DONE
    wait_until_runnable(opened.job)
    assert _lease(clarify_client) == []
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.ANSWERED


def test_the_window_does_not_overwrite_a_richer_state(
    clarify_client, person_client, open_clarification
):
    """Only an `open` clarification becomes `expired`; an attested one stays attested, and
    exhaustion still dead-letters it."""
    opened = open_clarification(links=[("AUTHORED_BY", "alice")])
    [leased] = _lease(clarify_client)
    resp = post(
        person_client("vera"), f"/v1/clarifications/{opened.clar.pk}/answer", {"answerIndex": 1}
    )
    assert resp.status_code == 202, resp.content
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.ATTESTED

    expire_lease(opened.job)
    jobs_reap()
    wait_until_runnable(opened.job)
    jobs_windows_ended()
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.ATTESTED
    assert len(_events(opened.clar, "window_expired")) == 1

    [leased] = _lease(clarify_client)
    assert leased["attempts"] == 1 == len(leased["payload"]["ranking"])  # the steward's
    expire_lease(opened.job)
    jobs_reap()
    opened.clar.refresh_from_db()
    assert opened.clar.state == State.DEAD_LETTERED
    transitions = [
        (e.detail["from"], e.detail["to"]) for e in _events(opened.clar, "state_changed")
    ]
    assert transitions[-1] == ("attested", "dead_lettered")
