"""The delivery worker: severity behaviour, the nonce lifecycle, card actions, delivery
failure, and jobs of answered or conflicted clarifications."""

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from clarify.models import AuditEvent, BindingStatus, Clarification, ResponseRecord, State
from delivery.actions import ANSWERED, DROPPED, MOVED, card_action_process
from delivery.cards import MOVED_ON
from delivery.models import Delivery, DeliveryStatus, NonceState
from graph.models import NodeVersion
from jobs.models import Job, JobStatus
from jobs.services import jobs_reap

from .conftest import (
    JOB_KIND,
    deliveries,
    event_types,
    events,
    expire_window,
    job_of,
    run_worker,
    snapshot_rows,
    written_counts,
)

QUORUM_NOTE = "This clarification affects a high-stakes date and requires two confirmations."


def answer_api(client, clar, index: int):
    return client.post(
        f"/v1/clarifications/{clar.pk}/answer", {"answerIndex": index}, format="json"
    )


def tap(delivery: Delivery, *, actor=None, index: int = 1, **overrides):
    kwargs = {
        "channel": "inbox",
        "actor": delivery.person if actor is None else actor,
        "clarification_id": str(delivery.clarification_id),
        "nonce": delivery.nonce,
        "answer_index": index,
    }
    kwargs.update(overrides)
    return card_action_process(**kwargs)


# --- severity behaviour (spec §5) --------------------------------------------------------


def test_low_severity_is_never_enqueued_so_never_delivered(submit, channel):
    clar = submit(severity_hint="low")
    assert clar.severity == "low"
    assert not Job.objects.filter(kind=JOB_KIND).exists()
    assert run_worker() == 0
    assert channel.cards == [] and channel.escalations == []
    assert not Delivery.objects.exists()
    assert event_types(clar) == ["opened"]


def test_normal_severity_card_goes_to_the_first_candidate(submit, channel, people):
    clar = submit()
    assert clar.severity == "normal"
    assert run_worker() == 1
    [(addr, card)] = channel.cards
    assert addr == f"fake:{people['alice'].pk}"
    assert card.note == ""
    assert "steward_notified" not in event_types(clar)
    [d] = deliveries(clar)
    assert (d.attempt, d.status, d.channel, d.nonce_state) == (
        0,
        DeliveryStatus.SENT,
        "fake",
        NonceState.ACTIVE,
    )
    assert d.message_ref == f"{addr}:card:{card.nonce}"
    assert d.sent_at is not None
    job = job_of(clar)
    # Sent: the lease is left to run out (no heartbeat); the job is neither done nor re-pended.
    assert job.status == JobStatus.LEASED and job.attempts == 0


def test_high_severity_goes_direct_and_notifies_the_steward(submit, channel, people):
    clar = submit(severity_hint="high")
    assert clar.severity == "high"
    run_worker()
    assert [c.clarification_id for _, c in channel.cards] == [str(clar.pk)]
    [notified] = events(clar, "steward_notified")
    assert notified.detail["reason"] == "high_severity"
    # The next candidate's attempt does not notify again.
    expire_window(clar)
    run_worker()
    assert len(channel.cards) == 2
    assert len(events(clar, "steward_notified")) == 1


def test_high_severity_notifies_the_steward_when_the_first_candidate_is_skipped(
    submit, channel, people
):
    # olga (finance) cannot read the legal-only source: bob, ranking[1], is asked first.
    clar = submit(severity_hint="high", links=[("AUTHORED_BY", "olga"), ("MENTIONS", "bob")])
    run_worker()
    assert [(d.attempt, d.person_id) for d in deliveries(clar, kind="question")] == [
        (1, people["bob"].pk)
    ]
    [notified] = events(clar, "steward_notified")
    assert notified.detail["reason"] == "high_severity"
    assert notified.detail["candidate"] == str(people["bob"].pk)


def test_critical_card_carries_the_quorum_note(submit, channel):
    clar = submit(severity_hint="critical")
    assert clar.severity == "critical" and clar.required_confirmations == 2
    run_worker()
    [(_, card)] = channel.cards
    assert card.note == QUORUM_NOTE
    assert card.severity == "critical"


# --- nonces ------------------------------------------------------------------------------


def test_nonce_is_stored_on_the_delivery_before_the_send(submit, channel):
    clar = submit()
    run_worker()
    [(_, card)] = channel.cards
    [row_at_send] = channel.rows_at_send
    assert row_at_send["nonce"] == card.nonce
    assert row_at_send["nonce_state"] == NonceState.ACTIVE
    assert row_at_send["sent_at"] is None and row_at_send["message_ref"] == ""
    assert card.action(1) == {
        "kind": "clarify_answer",
        "clarificationId": str(clar.pk),
        "answerIndex": 1,
        "nonce": card.nonce,
    }
    [d] = deliveries(clar)
    assert d.nonce == card.nonce and len(card.nonce) >= 24


def test_idempotent_resend_of_the_same_attempt_reuses_the_nonce(submit, channel):
    clar = submit()
    run_worker()
    # The same attempt is leased again (e.g. the worker died before the lease was given up).
    Job.objects.filter(pk=job_of(clar).pk).update(
        status=JobStatus.PENDING,
        lease_token=None,
        lease_expires_at=None,
        run_after=timezone.now() - timedelta(seconds=1),
    )
    run_worker()
    assert len(channel.cards) == 2
    first, second = (card for _, card in channel.cards)
    assert first.nonce == second.nonce
    [d] = deliveries(clar)
    assert d.nonce == first.nonce
    # The next attempt (another person) gets a fresh nonce.
    expire_window(clar)
    run_worker()
    later = deliveries(clar)
    assert [x.attempt for x in later] == [0, 1]
    assert later[1].nonce not in (first.nonce, "")


def test_nonces_close_when_the_clarification_is_answered_through_the_api(
    submit, channel, person_client, people
):
    clar = submit()
    run_worker()
    expire_window(clar)
    run_worker()
    assert [d.nonce_state for d in deliveries(clar)] == [NonceState.ACTIVE] * 2
    resp = answer_api(person_client("sam"), clar, 1)  # neither recipient answers
    assert resp.status_code == 200, resp.content
    assert [d.nonce_state for d in deliveries(clar)] == [NonceState.CLOSED] * 2
    assert job_of(clar).status == JobStatus.DONE


def test_late_tap_on_a_closed_nonce_has_moved_on_and_follows_the_conflict_rules(
    submit, channel, person_client, people
):
    clar = submit()
    run_worker()
    [d] = deliveries(clar)
    assert answer_api(person_client("bob"), clar, 1).status_code == 200
    d.refresh_from_db()
    assert d.nonce_state == NonceState.CLOSED
    bound_versions = NodeVersion.objects.count()
    records = ResponseRecord.objects.count()

    # Agreeing with the bound answer: moved on, nothing recorded.
    before = snapshot_rows()
    outcome = tap(d, index=1)
    assert outcome.status == MOVED
    assert outcome.text.startswith("This clarification has moved on.")
    assert snapshot_rows() == before

    # Disagreeing: moved on, recorded as a conflicting attestation, steward notified, the
    # bound correction untouched.
    outcome = tap(d, index=0)
    assert outcome.status == ANSWERED
    assert outcome.text.startswith(MOVED_ON)
    assert "conflicting attestation" in outcome.text
    assert ResponseRecord.objects.count() == records + 1
    late = ResponseRecord.objects.get(clarification=clar, responder=people["alice"].pk)
    assert (late.binding_status, late.channel, late.answer_index) == (
        BindingStatus.CONFLICTING,
        "inbox",
        0,
    )
    assert NodeVersion.objects.count() == bound_versions
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    assert events(clar, "steward_notified")[-1].detail["reason"] == "post_binding_conflict"


def test_tap_on_an_active_nonce_binds_through_the_answer_service(submit, channel, people):
    clar = submit()
    run_worker()
    [d] = deliveries(clar)
    outcome = tap(d, index=1, message_ref="inbox:ref")
    assert outcome.status == ANSWERED
    assert outcome.text.startswith(
        "✓ Recorded as evidence: 12 June (signature), confirmed by Alice"
    )
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.answer_index, record.binding_status) == (
        people["alice"].pk,
        "inbox",
        1,
        BindingStatus.BOUND,
    )
    assert record.rights_at_answer_time == "editor"
    d.refresh_from_db()
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    assert d.nonce_state == NonceState.CLOSED
    assert job_of(clar).status == JobStatus.DONE


DROP_CASES = [
    "unknown",
    "missing",
    "none",
    "other_clarification",
    "not_recipient",
    "unmapped_identity",
    "revoked",
]


@pytest.mark.parametrize("case", DROP_CASES)
def test_invalid_card_actions_are_dropped_audited_and_write_nothing(case, submit, channel, people):
    first = submit(external_id="drops/one.docx")
    other = submit(external_id="drops/two.docx")
    run_worker()
    [d] = deliveries(first)
    assert deliveries(other)[0].person_id == d.person_id == people["alice"].pk
    if case == "revoked":
        Delivery.objects.filter(pk=d.pk).update(nonce_state=NonceState.REVOKED)
    kwargs = {
        "unknown": {"nonce": "not-a-nonce-" + "x" * 20},
        "missing": {"nonce": ""},
        "none": {"nonce": None},
        "other_clarification": {"clarification_id": str(other.pk)},
        "not_recipient": {"actor": people["bob"]},
        "unmapped_identity": {"actor": None},
        "revoked": {},
    }[case]
    expected_reason = {
        "unknown": "UNKNOWN_NONCE",
        "missing": "UNKNOWN_NONCE",
        "none": "UNKNOWN_NONCE",
        "other_clarification": "NONCE_CLARIFICATION_MISMATCH",
        "not_recipient": "NOT_RECIPIENT",
        "unmapped_identity": "NOT_RECIPIENT",
        "revoked": "STALE_NONCE",
    }[case]
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()

    if case == "unmapped_identity":
        outcome = card_action_process(
            channel="inbox",
            actor=None,
            clarification_id=str(first.pk),
            nonce=d.nonce,
            answer_index=1,
        )
    else:
        outcome = tap(d, index=1, **kwargs)

    assert outcome.status == DROPPED
    assert outcome.reason == expected_reason
    assert snapshot_rows() == before  # no response, no version, no state change
    new_events = list(AuditEvent.objects.order_by("id")[events_before:])
    if case in ("unknown", "missing", "none"):
        # No delivery, so no clarification: a tenant event (the signed-in actor's tenant).
        [dropped] = new_events
        assert dropped.type == "card_action_dropped"
        assert (dropped.clarification_id, dropped.tenant_id) == (None, d.tenant_id)
        assert dropped.detail["reason"] == "UNKNOWN_NONCE"
        assert dropped.detail["channel"] == "inbox"
        assert dropped.detail["claimedClarification"] == str(first.pk)
    else:
        [dropped] = new_events
        assert dropped.type == "card_action_dropped"
        assert dropped.clarification_id == first.pk
        assert dropped.detail["reason"] == expected_reason
        assert dropped.detail["channel"] == "inbox"
    first.refresh_from_db()
    assert first.state == State.OPEN


def test_an_exact_replay_of_a_channel_action_is_dropped(submit, channel, people):
    clar = submit()
    run_worker()
    [d] = deliveries(clar)
    assert tap(d, index=1, action_id="slack:A1").status == ANSWERED
    before = snapshot_rows()
    counts = written_counts()
    outcome = tap(d, index=0, action_id="slack:A1")
    assert (outcome.status, outcome.reason) == (DROPPED, "REPLAYED_ACTION")
    assert snapshot_rows() == before
    assert written_counts() == {**counts, "AuditEvent": counts["AuditEvent"] + 1}
    assert events(clar)[-1].type == "card_action_dropped"


# --- delivery failure --------------------------------------------------------------------


def test_delivery_failure_is_retried_within_the_lease_then_skipped_at_once(submit, channel, people):
    alice, bob = people["alice"], people["bob"]
    clar = submit()
    channel.fail_next = 3
    run_worker()
    # Three tries inside the one lease, then fail(retryable, DELIVERY_FAILED) — a skip code
    # of the jobs protocol, so the next attempt is leasable at once and the worker asks
    # the next candidate straight away: no escalation window is burnt.
    assert channel.send_calls == 4
    [(addr, _)] = channel.cards
    assert addr == f"fake:{bob.pk}"
    [failed] = events(clar, "delivery_failed")
    assert failed.detail["reason"] == "DELIVERY_FAILED"
    assert failed.detail["candidate"] == str(alice.pk)
    [delivered] = events(clar, "delivered")
    assert delivered.detail["candidate"] == str(bob.pk)
    job = job_of(clar)
    assert (job.status, job.attempts) == (JobStatus.LEASED, 1)
    assert job.last_error.startswith("DELIVERY_FAILED")
    assert [(x.attempt, x.person_id, x.status) for x in deliveries(clar)] == [
        (0, alice.pk, DeliveryStatus.FAILED),
        (1, bob.pk, DeliveryStatus.SENT),
    ]
    expire_window(clar)
    run_worker()
    [(_, escalation)] = channel.escalations
    assert [(r["attempt"], r["candidate"], r["reason"]) for r in escalation.skip_reasons] == [
        (0, str(alice.pk), "DELIVERY_FAILED")
    ]


def test_a_send_that_succeeds_on_a_retry_is_one_delivery(submit, channel):
    clar = submit()
    channel.fail_next = 2
    run_worker()
    assert channel.send_calls == 3
    assert len(channel.cards) == 1
    [d] = deliveries(clar)
    assert d.status == DeliveryStatus.SENT
    assert "delivery_failed" not in event_types(clar)
    assert job_of(clar).status == JobStatus.LEASED


def test_a_permanent_delivery_failure_is_not_retried(submit, channel, people):
    clar = submit()
    channel.fail_next, channel.fail_retryable = 1, False
    run_worker()
    assert channel.send_calls == 2  # one try for alice, then bob at once
    assert [e.detail["reason"] for e in events(clar, "delivery_failed")] == ["DELIVERY_FAILED"]
    assert [a for a, _ in channel.cards] == [f"fake:{people['bob'].pk}"]
    job = job_of(clar)
    assert (job.status, job.attempts) == (JobStatus.LEASED, 1)


# --- jobs of answered / conflicted clarifications ----------------------------------------


def test_an_answered_clarification_is_never_asked_again(submit, channel, person_client):
    clar = submit()
    run_worker()
    assert answer_api(person_client("alice"), clar, 1).status_code == 200
    job = job_of(clar)
    assert job.status == JobStatus.DONE
    Job.objects.filter(pk=job.pk).update(lease_expires_at=None)
    assert jobs_reap() == 0
    assert run_worker() == 0
    # Even a job that somehow became ready again is completed without a send.
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.PENDING, run_after=timezone.now() - timedelta(seconds=1), attempts=1
    )
    assert run_worker() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.result == {"skipped": "clarification answered"}
    assert len(channel.cards) == 1 and channel.escalations == []
    assert Delivery.objects.filter(clarification=clar).count() == 1


def test_a_conflicted_critical_clarification_completes_its_job(submit, channel, person_client):
    clar = submit(severity_hint="critical")
    run_worker()
    assert answer_api(person_client("alice"), clar, 0).status_code == 202
    job = job_of(clar)
    assert job.status == JobStatus.LEASED  # partially confirmed: still routing
    assert answer_api(person_client("bob"), clar, 1).status_code == 202
    clar.refresh_from_db()
    assert clar.state == State.CONFLICTED
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert run_worker() == 0
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.PENDING, run_after=timezone.now() - timedelta(seconds=1), attempts=1
    )
    assert run_worker() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.result == {"skipped": "clarification conflicted"}
    assert len(channel.cards) == 1


# --- escalation and digest edge cases ----------------------------------------------------


def test_no_reachable_steward_dead_letters_at_once(submit, channel, people):
    channel.unreachable.add(str(people["sam"].pk))
    clar = submit(acl=["group:finance"])  # alice and bob cannot read it
    run_worker()
    assert channel.cards == [] and channel.escalations == []
    [escalated] = events(clar, "escalated")
    assert escalated.detail["stewards"] == []
    assert escalated.detail["reason"] == "NO_DELIVERY_ALIAS"
    assert [r["reason"] for r in escalated.detail["skipReasons"]] == ["NO_READ_PERMISSION"] * 2
    clar.refresh_from_db()
    assert clar.state == State.DEAD_LETTERED
    assert job_of(clar).status == JobStatus.DEAD
    [dead] = events(clar, "dead_lettered")
    assert [r["reason"] for r in dead.detail["skipReasons"]] == ["NO_READ_PERMISSION"] * 2


def test_a_digest_lists_only_the_questions_still_open(submit, channel, people, clarify_settings):
    from delivery.digests import digests_flush

    clarify_settings(DIGEST_THRESHOLD=1)
    submit(external_id="dg/0.docx")
    run_worker()
    a, b = submit(external_id="dg/1.docx"), submit(external_id="dg/2.docx")
    run_worker()
    assert [deliveries(q)[0].status for q in (a, b)] == [DeliveryStatus.QUEUED_DIGEST] * 2
    # a is answered through its card before the digest goes out.
    assert tap(deliveries(a)[0], index=1).status == ANSWERED
    later = timezone.now() + timedelta(minutes=31)
    assert digests_flush(now=later) == 1
    [(addr, cards)] = channel.digests
    assert addr == f"fake:{people['alice'].pk}"
    assert [c.clarification_id for c in cards] == [str(b.pk)]
    assert [deliveries(q)[0].status for q in (a, b)] == [DeliveryStatus.SENT] * 2
    assert "delivered" not in event_types(a)


# --- cards_issued: binding closes nonces only where a card was issued ----------------------


def test_the_first_card_marks_its_clarification_as_having_cards(submit, channel):
    clar = submit()
    assert not clar.cards_issued
    run_worker()
    assert len(deliveries(clar)) == 1
    clar.refresh_from_db()
    assert clar.cards_issued


def test_binding_without_a_card_runs_no_delivery_statement(submit, person_client):
    clar = submit()  # its routing job never ran: no card, no nonce
    with CaptureQueriesContext(connection) as captured:
        assert answer_api(person_client("sam"), clar, 1).status_code == 200
    assert not [q["sql"] for q in captured.captured_queries if "delivery_delivery" in q["sql"]]
    clar.refresh_from_db()
    assert (clar.state, clar.cards_issued) == (State.ANSWERED, False)
    assert job_of(clar).status == JobStatus.DONE


def test_the_migration_marks_clarifications_that_have_cards(submit, channel):
    carded = submit()
    run_worker()
    uncarded = submit(external_id="contracts/other.docx")
    Clarification.objects.update(cards_issued=False)
    migration = importlib.import_module("delivery.migrations.0005_clarification_cards_issued")
    migration.mark_issued(apps, None)
    assert list(
        Clarification.objects.filter(pk__in=[carded.pk, uncarded.pk])
        .order_by("created_at")
        .values_list("cards_issued", flat=True)
    ) == [True, False]
