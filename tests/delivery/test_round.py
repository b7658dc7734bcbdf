"""The delivery worker takes each leased round whole (`delivery.worker.handle_leases`):
a round gives the same rows, events and sends as rounds of one lease, the daily cap and
the digest threshold hold across a round, one failing send leaves the others alone, a
failed transaction writes nothing (and the round is run again lease by lease), and the
statements stay few per card."""

import dataclasses
from typing import Any
from unittest import mock

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import delivery.worker
import jobs.tasks
from clarify.models import AuditEvent, Clarification
from delivery.models import Delivery, DeliveryStatus
from delivery.plan import Step
from delivery.worker import handle_leases
from jobs.models import Job, JobStatus
from jobs.services import job_lease

from .conftest import JOB_KIND, deliveries, events, job_of, run_worker

pytestmark = pytest.mark.django_db
RECORD = delivery.worker._record

# (severity hint, first candidate, second candidate) of the mixed batch: alice four
# times (cap 3, digest threshold 2), bob unreachable, olga unable to read the source,
# one high-severity card (the stewards' FYI), one critical.
MIXED = [
    (None, "alice", "bob"),
    (None, "alice", "vera"),
    ("critical", "alice", "bob"),
    (None, "bob", "alice"),
    ("high", "vera", "alice"),
    (None, "olga", "vera"),
    (None, "alice", "vera"),
]


def submit_many(submit: Any, specs: list[tuple[str | None, str, str]]) -> list[Clarification]:
    return [
        submit(
            external_id=f"contracts/batch-{i}.docx",
            severity_hint=hint,
            links=[("AUTHORED_BY", first), ("MENTIONS", second)],
        )
        for i, (hint, first, second) in enumerate(specs)
    ]


def outcome(clars: list[Clarification], channel: Any) -> dict[str, Any]:
    """What the worker did, without what is random (ids, nonces, times)."""
    index = {str(c.pk): i for i, c in enumerate(clars)}
    rows = sorted(
        (index[str(d.clarification_id)], d.attempt, d.kind, str(d.person_id), d.status, d.channel)
        for c in clars
        for d in deliveries(c)
    )
    trail = [
        (i, e.type, {k: v for k, v in e.detail.items() if k != "messageRef"})
        for i, c in enumerate(clars)
        for e in events(c)
    ]
    jobs = [(j.status, j.attempts, j.last_error) for j in (job_of(c) for c in clars)]
    sends = sorted((address, index[card.clarification_id]) for address, card in channel.cards)
    escalations = sorted(address for address, _ in channel.escalations)
    issued = [c.cards_issued for c in Clarification.objects.filter(pk__in=[c.pk for c in clars])]
    return {
        "rows": rows,
        "events": trail,
        "jobs": jobs,
        "sends": sends,
        "escalations": escalations,
        "issued": sorted(issued),
    }


def test_a_round_does_what_rounds_of_one_lease_do(
    submit, channel, people, monkeypatch, clarify_settings
):
    clarify_settings(PER_PERSON_DAILY_CAP=3, DIGEST_THRESHOLD=2)
    channel.unreachable.add(str(people["bob"].pk))
    clars = submit_many(submit, MIXED)

    before = transaction.savepoint()
    with monkeypatch.context() as one_at_a_time:
        one_at_a_time.setattr(jobs.tasks, "ROUND_LEASES", 1)
        assert run_worker() == len(clars)
    one_by_one = outcome(clars, channel)
    transaction.savepoint_rollback(before)
    channel.cards.clear()
    channel.escalations.clear()

    with mock.patch.object(delivery.worker, "_record", wraps=RECORD) as record:
        assert run_worker() == len(clars)
    (_, planned), _ = record.call_args_list[0]
    cards = [i for i in planned if i.plan.step in (Step.ASK, Step.DIGEST)]
    assert len(planned) == len(clars) and len(cards) >= 3  # one round planned them all
    assert outcome(clars, channel) == one_by_one
    # Alice: three cards counted by the cap (the third a digest), the fourth skipped.
    alice = Delivery.objects.filter(person=people["alice"], kind="question")
    assert sorted(alice.values_list("status", flat=True)) == ["queued_digest", "sent", "sent"]
    assert AuditEvent.objects.filter(type="skipped", detail__reason="DAILY_CAP_EXCEEDED").exists()


def test_the_daily_cap_holds_across_one_round(submit, channel, people, clarify_settings):
    clarify_settings(PER_PERSON_DAILY_CAP=2)
    clars = submit_many(submit, [(None, "alice", "vera")] * 4)
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)
    assert len(leases) == 4

    handle_leases(leases)

    asked = [str(d.person_id) for c in clars[:2] for d in deliveries(c)]
    assert asked == [str(people["alice"].pk)] * 2
    # Alice's cap is spent by the round's first two cards: the other two skip her (in
    # the same lease, counted in the same round) and ask vera instead.
    assert [str(d.person_id) for c in clars[2:] for d in deliveries(c)] == [
        str(people["vera"].pk)
    ] * 2
    for clar in clars[2:]:
        [skipped] = events(clar, "skipped")
        assert (skipped.detail["candidate"], skipped.detail["reason"]) == (
            str(people["alice"].pk),
            "DAILY_CAP_EXCEEDED",
        )
    assert Delivery.objects.filter(person=people["alice"]).count() == 2


def test_one_failing_send_leaves_the_rest_of_the_round_alone(submit, channel, people):
    clars = submit_many(submit, [(None, "alice", "vera")] * 3)
    channel.fail_next = delivery.worker.SEND_RETRIES  # the first card's every try
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)

    handle_leases(leases)

    [failed] = deliveries(clars[0])
    assert failed.status == DeliveryStatus.FAILED
    [event] = events(clars[0], "delivery_failed")
    assert event.detail["reason"] == "DELIVERY_FAILED"
    first = job_of(clars[0])
    assert (first.status, first.attempts) == (JobStatus.PENDING, 1)
    assert first.last_error.startswith("DELIVERY_FAILED")
    for clar in clars[1:]:
        [row] = deliveries(clar)
        assert row.status == DeliveryStatus.SENT and row.message_ref.endswith(row.nonce)
        assert [e.type for e in events(clar)][-1] == "delivered"
        assert job_of(clar).status == JobStatus.LEASED
    assert sorted(card.clarification_id for _, card in channel.cards) == sorted(
        str(c.pk) for c in clars[1:]
    )


def fail_cards_issued(times: int) -> Any:
    """A database wrapper failing the round's `cards_issued` UPDATE `times` times."""
    left = [times]

    def execute(run: Any, sql: str, *args: Any) -> Any:
        if sql.startswith('UPDATE "clarify_clarification" SET "cards_issued"') and left[0]:
            left[0] -= 1
            raise DatabaseError("injected: the connection went away")
        return run(sql, *args)

    return execute


def test_a_failed_transaction_writes_nothing_and_raises(submit, channel):
    clars = submit_many(submit, [(None, "alice", "vera"), (None, "vera", "alice")])
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)
    written = {m.__name__: m.objects.count() for m in (Delivery, AuditEvent, Job)}

    with connection.execute_wrapper(fail_cards_issued(1)), pytest.raises(DatabaseError):
        handle_leases(leases)  # raises before anything was written or sent

    assert {m.__name__: m.objects.count() for m in (Delivery, AuditEvent, Job)} == written
    assert not Clarification.objects.filter(pk__in=[c.pk for c in clars], cards_issued=True)
    assert channel.cards == []
    # The rows the INSERT made were rolled back with it: the round runs again cleanly.
    handle_leases(leases)
    assert [len(deliveries(c)) for c in clars] == [1, 1]
    assert len(channel.cards) == 2


def test_a_round_that_failed_is_run_again_lease_by_lease(submit, channel):
    """The worker loop runs a round that raised (before writing anything) again, each
    lease a round of its own: here the round's transaction fails once, and each card
    still goes out exactly once."""
    clars = submit_many(submit, [(None, "alice", "vera"), (None, "vera", "alice")])

    with connection.execute_wrapper(fail_cards_issued(1)):
        assert run_worker() == 2

    assert [len(deliveries(c)) for c in clars] == [1, 1]
    assert sorted(card.clarification_id for _, card in channel.cards) == sorted(
        str(c.pk) for c in clars
    )
    assert [job_of(c).status for c in clars] == [JobStatus.LEASED] * 2


def test_a_round_of_one_that_fails_fails_its_job_for_a_retry(submit, channel):
    [clar] = submit_many(submit, [(None, "alice", "vera")])

    with connection.execute_wrapper(fail_cards_issued(1)):
        assert run_worker() == 1

    assert deliveries(clar) == [] and channel.cards == []
    job = job_of(clar)
    assert (job.status, job.attempts) == (JobStatus.PENDING, 1)
    assert job.last_error.startswith("WORKER_ERROR: DatabaseError")


def test_a_round_of_twenty_cards_costs_few_statements(submit, channel, clarify_settings):
    clarify_settings(PER_PERSON_DAILY_CAP=100, DIGEST_THRESHOLD=100)
    clars = submit_many(submit, [(None, "alice", "vera"), (None, "vera", "alice")] * 10)

    with CaptureQueriesContext(connection) as queries:
        assert run_worker() == 20

    assert [len(deliveries(c)) for c in clars] == [1] * 20
    assert len(channel.cards) == 20
    # At most 6 statements a card (issue 22), and in fact far fewer: the recording
    # channel reads each card's row at its send (one SELECT a card, not the worker's), the
    # read-permission floor is one query per source (here each card has its own), and the
    # rest is per round: the lease and its hook (3), the round's reads (7), its
    # transaction (5, savepoints included), the target names, the restricted-excerpt
    # check, the sent rows, their reminder jobs and the events in one transaction (5: the
    # clarifications locked first, and 2 for the audit chain's head: locked and read,
    # then moved; here, inside the test's transaction, 2 more for its savepoint), the
    # empty last round (3).
    assert len(queries) <= 6 * 20
    worker_statements = len(queries) - len(channel.rows_at_send)
    assert worker_statements <= 20 + 30, [q["sql"][:90] for q in queries]


def test_a_lease_lost_before_its_send_is_not_sent(submit, channel):
    clars = submit_many(submit, [(None, "alice", "vera")] * 3)
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)
    lost = leases[0].job.pk
    # Another worker took the first job over while the batch was sending, and by the
    # time of its send its lease was more than half spent (so it is checked).
    leases[0] = dataclasses.replace(leases[0], expires_at=timezone.now())
    Job.objects.filter(pk=lost).update(lease_token=None, status=JobStatus.PENDING)

    with mock.patch.object(
        delivery.worker, "_record", side_effect=lambda *args: _recorded(lost, *args)
    ):
        handle_leases(leases)

    [gone] = [c for c in clars if str(c.pk) == leases[0].job.subject]
    assert sorted(card.clarification_id for _, card in channel.cards) == sorted(
        str(c.pk) for c in clars if c != gone
    )
    assert Job.objects.get(pk=lost).status == JobStatus.PENDING  # left to its new holder
    assert not events(gone, "delivered") and not events(gone, "delivery_failed")


def _recorded(lost: int, *args: Any) -> Any:
    """`_record` as if the lease of job `lost` had still been held when the rows were
    made (it was lost after, before the send)."""
    token = args[1][0].lease.token
    Job.objects.filter(pk=lost).update(status=JobStatus.LEASED, lease_token=token)
    made = RECORD(*args)
    Job.objects.filter(pk=lost).update(lease_token=None, status=JobStatus.PENDING)
    return made
