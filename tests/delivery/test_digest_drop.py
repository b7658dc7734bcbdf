"""A digest item dropped at send (its recipient lost read access while it waited) is a
skipped candidate: like any skip it burns no escalation window, so the routing job moves
on to the next candidate at once (spec §6). And a digest being sent while one of its
questions is answered through its card cannot deadlock with that answer: both lock the
clarification before its deliveries."""

import threading
import time
import traceback
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

import delivery.digests
from clarify.models import State
from delivery.actions import ANSWERED, card_action_process
from delivery.digests import digests_flush
from delivery.models import DeliveryStatus, NonceState
from jobs.models import Job, JobStatus
from jobs.services import job_attempt_skip, jobs_sweep

from .conftest import (
    acl_set_unheard,
    deliveries,
    event_types,
    events,
    job_of,
    lapse_lease,
    run_worker,
)

LATER = timedelta(minutes=31)
# b's ranking: alice (the author, in legal), then olga (named, in finance).
ALICE_THEN_OLGA = [("AUTHORED_BY", "alice"), ("MENTIONS", "olga")]


def queue_two(submit, clarify_settings):
    """alice gets one card directly, then two questions queued for her digest; b's next
    candidate is olga."""
    clarify_settings(DIGEST_THRESHOLD=1)
    submit(external_id="dd/0.docx")
    run_worker()
    a = submit(external_id="dd/1.docx", title="First queued")
    b = submit(external_id="dd/2.docx", title="Second queued", links=ALICE_THEN_OLGA)
    run_worker()
    assert [deliveries(q)[0].status for q in (a, b)] == [DeliveryStatus.QUEUED_DIGEST] * 2
    return a, b


def move_to_finance(clar):
    """alice may no longer read the clarification's source; olga now may — by a change
    the read-access seam does not hear of (its hooks unset), so her queued items are
    still there for the digest's own check to drop (tests/delivery/test_read_access.py
    covers the seam's revocation)."""
    acl_set_unheard(clar.source_version.source, ["group:finance"])


def olga_asked_now(channel, people, clar) -> None:
    """The next worker pass asks olga (attempt 1) without any window having passed."""
    assert run_worker() >= 1
    [addr] = [a for a, c in channel.cards if c.clarification_id == str(clar.pk)]
    assert addr == f"fake:{people['olga'].pk}"
    [delivered] = events(clar, "delivered")
    assert delivered.detail["attempt"] == 1
    assert "window_expired" not in event_types(clar)
    clar.refresh_from_db()
    assert clar.state == State.OPEN


def test_a_dropped_digest_item_moves_its_leased_job_to_the_next_candidate_at_once(
    submit, channel, people, clarify_settings
):
    a, b = queue_two(submit, clarify_settings)
    job = job_of(b)
    assert (job.status, job.attempts) == (JobStatus.LEASED, 0)
    move_to_finance(b)

    assert digests_flush(now=timezone.now() + LATER) == 1
    job = job_of(b)
    assert (job.status, job.attempts, job.lease_token) == (JobStatus.PENDING, 1, None)
    assert job.run_after <= timezone.now()
    assert job.last_error == "NO_READ_PERMISSION: dropped from the digest"
    # One skip recorded for the attempt (the digest's), not a second one by the job hook.
    [skipped] = events(b, "skipped")
    assert skipped.detail["attempt"] == 0 and skipped.detail["digest"] is True
    assert job_of(a).status == JobStatus.LEASED  # the item still sent keeps its window
    olga_asked_now(channel, people, b)


def test_a_dropped_digest_item_ends_the_escalation_window_it_was_waiting_out(
    submit, channel, people, clarify_settings
):
    _, b = queue_two(submit, clarify_settings)
    # The usual case: the digest window (30 min) outlasts the lease (60 s), so the job was
    # reaped into alice's escalation window (48 h) before the digest goes out.
    waiting = lapse_lease(b)
    assert (waiting.status, waiting.attempts) == (JobStatus.PENDING, 1)
    assert waiting.run_after > timezone.now() + timedelta(hours=47)
    move_to_finance(b)

    assert digests_flush(now=timezone.now() + LATER) == 1
    job = job_of(b)
    assert (job.status, job.attempts) == (JobStatus.PENDING, 1)
    assert job.run_after <= timezone.now()
    assert job.last_error == "NO_READ_PERMISSION: dropped from the digest"
    # The window did not run out: no `window_expired`, the clarification stays open.
    jobs_sweep()
    assert "window_expired" not in event_types(b)
    olga_asked_now(channel, people, b)


def test_a_dropped_digest_item_leaves_a_job_that_has_moved_on_alone(
    submit, channel, people, clarify_settings
):
    _, b = queue_two(submit, clarify_settings)
    lapse_lease(b)
    move_to_finance(b)
    # Before the digest goes out, alice's window runs out and olga is asked.
    Job.objects.filter(pk=job_of(b).pk).update(run_after=timezone.now())
    run_worker()
    before = Job.objects.filter(pk=job_of(b).pk).values().get()
    assert (before["status"], before["attempts"]) == (JobStatus.LEASED, 1)

    assert digests_flush(now=timezone.now() + LATER) == 1
    assert Job.objects.filter(pk=before["id"]).values().get() == before
    [dropped] = deliveries(b, person=people["alice"])
    assert (dropped.status, dropped.nonce_state) == (DeliveryStatus.FAILED, NonceState.REVOKED)


def test_job_attempt_skip_refuses_a_reason_that_is_not_a_skip_and_writes_nothing(
    submit, channel, clarify_settings
):
    _, b = queue_two(submit, clarify_settings)
    before = list(Job.objects.values())
    with pytest.raises(ValueError, match="not a skip reason"):
        job_attempt_skip(job_id=job_of(b).pk, attempt=0, reason="LEASE_EXPIRED")
    assert list(Job.objects.values()) == before


# --- digest vs answer: lock order (PostgreSQL) ---------------------------------------------


def _race_digest_and_answer(a, monkeypatch) -> dict[str, Any]:
    """Flush the digest in one thread; once it holds its locks (inside the ACL re-check),
    answer `a` through its card in another and give that answer time to block; then let
    the flush finish. Returns each side's outcome."""
    locked, outcomes = threading.Event(), {}
    readable = delivery.digests._readable

    def held_readable(items):
        kept = readable(items)
        locked.set()
        time.sleep(0.5)  # the answer starts now and must wait for this transaction
        return kept

    monkeypatch.setattr(delivery.digests, "_readable", held_readable)
    card = deliveries(a)[0]

    def flush() -> None:
        try:
            outcomes["flush"] = digests_flush(now=timezone.now() + LATER)
        except BaseException:
            outcomes["flush"] = traceback.format_exc()
        finally:
            connection.close()

    def answer() -> None:
        try:
            assert locked.wait(timeout=30)
            outcomes["answer"] = card_action_process(
                channel="inbox",
                actor=card.person,
                clarification_id=str(a.pk),
                nonce=card.nonce,
                answer_index=1,
            ).status
        except BaseException:
            outcomes["answer"] = traceback.format_exc()
        finally:
            connection.close()

    threads = [threading.Thread(target=flush), threading.Thread(target=answer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a racer hung"
    return outcomes


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL")
@pytest.mark.parametrize("round_no", range(3))
def test_a_digest_sent_while_its_question_is_answered_does_not_deadlock(
    submit, channel, people, clarify_settings, monkeypatch, round_no
):
    a, b = queue_two(submit, clarify_settings)
    outcomes = _race_digest_and_answer(a, monkeypatch)
    # The answer waited for the digest (which locked a's clarification first), then bound.
    assert outcomes == {"flush": 1, "answer": ANSWERED}, outcomes
    [(_, cards)] = channel.digests
    assert {c.clarification_id for c in cards} == {str(a.pk), str(b.pk)}
    a.refresh_from_db()
    assert a.state == State.ANSWERED
    # Its card was sent, then closed by the answer that came after.
    assert [(d.status, d.nonce_state) for d in deliveries(a)] == [
        (DeliveryStatus.SENT, NonceState.CLOSED)
    ]
