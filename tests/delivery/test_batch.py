"""The delivery worker's batch form (`delivery.batch.handle_leases`): a round of leases
gives the same rows, events and sends as one lease at a time, the daily cap and the
digest threshold hold across a batch, one failing send leaves the others alone, a failed
transaction writes nothing, and the statements stay few per card."""

import dataclasses
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import delivery.batch
from clarify.models import AuditEvent, Clarification
from delivery.batch import handle_leases
from delivery.models import Delivery, DeliveryStatus
from telha.jobs.models import Job, JobStatus
from telha.jobs.services import job_lease

from .conftest import JOB_KIND, deliveries, events, job_of, run_worker

pytestmark = pytest.mark.django_db
RECORD = delivery.batch._record

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


def test_a_batch_does_what_one_lease_at_a_time_does(
    submit, channel, people, settings, clarify_settings
):
    clarify_settings(PER_PERSON_DAILY_CAP=3, DIGEST_THRESHOLD=2)
    channel.unreachable.add(str(people["bob"].pk))
    clars = submit_many(submit, MIXED)

    before = transaction.savepoint()
    settings.JOB_BATCH_WORKERS = {}
    assert run_worker() == len(clars)
    one_by_one = outcome(clars, channel)
    transaction.savepoint_rollback(before)
    channel.cards.clear()
    channel.escalations.clear()

    settings.JOB_BATCH_WORKERS = {JOB_KIND: "delivery.batch.handle_leases"}
    with mock.patch.object(delivery.batch, "_record", wraps=delivery.batch._record) as record:
        assert run_worker() == len(clars)
    [(asks,), _] = record.call_args
    assert len(asks) >= 3  # the batch itself sent cards, not only the per-lease handler
    assert outcome(clars, channel) == one_by_one
    # Alice: three cards counted by the cap (the third a digest), the fourth skipped.
    alice = Delivery.objects.filter(person=people["alice"], kind="question")
    assert sorted(alice.values_list("status", flat=True)) == ["queued_digest", "sent", "sent"]
    assert AuditEvent.objects.filter(type="skipped", detail__reason="DAILY_CAP_EXCEEDED").exists()


def test_the_daily_cap_holds_across_one_batch(submit, channel, people, clarify_settings):
    clarify_settings(PER_PERSON_DAILY_CAP=2)
    clars = submit_many(submit, [(None, "alice", "vera")] * 4)
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)
    assert len(leases) == 4

    left = handle_leases(leases)

    assert [lease.job.pk for lease in left] == [job_of(c).pk for c in clars[2:]]
    asked = [str(d.person_id) for c in clars[:2] for d in deliveries(c)]
    assert asked == [str(people["alice"].pk)] * 2
    assert not Delivery.objects.filter(clarification__in=clars[2:]).exists()
    # The leases left over are skipped by the per-lease handler: vera is asked instead.
    for lease in left:
        delivery.worker.handle_lease(lease)
    assert [str(d.person_id) for c in clars[2:] for d in deliveries(c)] == [
        str(people["vera"].pk)
    ] * 2
    assert Delivery.objects.filter(person=people["alice"]).count() == 2


def test_one_failing_send_leaves_the_rest_of_the_batch_alone(submit, channel, people):
    clars = submit_many(submit, [(None, "alice", "vera")] * 3)
    channel.fail_next = delivery.worker.SEND_RETRIES  # the first card's every try
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)

    assert handle_leases(leases) == []

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


def test_a_failed_transaction_writes_nothing_and_leaves_every_lease(submit, channel):
    clars = submit_many(submit, [(None, "alice", "vera"), (None, "vera", "alice")])
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)
    written = {m.__name__: m.objects.count() for m in (Delivery, AuditEvent, Job)}

    def fail_cards_issued(execute: Any, sql: str, *args: Any) -> Any:
        if sql.startswith('UPDATE "clarify_clarification" SET "cards_issued"'):
            raise DatabaseError("injected: the connection went away")
        return execute(sql, *args)

    with connection.execute_wrapper(fail_cards_issued):
        left = handle_leases(leases)

    assert left == leases  # all of them, to the per-lease handler
    assert {m.__name__: m.objects.count() for m in (Delivery, AuditEvent, Job)} == written
    assert not Clarification.objects.filter(pk__in=[c.pk for c in clars], cards_issued=True)
    assert channel.cards == []
    # The rows the INSERT made were rolled back with it: the batch runs again cleanly.
    assert handle_leases(leases) == []
    assert [len(deliveries(c)) for c in clars] == [1, 1]
    assert len(channel.cards) == 2


def test_a_batch_of_twenty_cards_costs_few_statements(submit, channel, clarify_settings):
    clarify_settings(PER_PERSON_DAILY_CAP=100, DIGEST_THRESHOLD=100)
    clars = submit_many(submit, [(None, "alice", "vera"), (None, "vera", "alice")] * 10)

    with CaptureQueriesContext(connection) as queries:
        assert run_worker() == 20

    assert [len(deliveries(c)) for c in clars] == [1] * 20
    assert len(channel.cards) == 20
    # At most 6 statements a card (issue 22), and in fact far fewer: the recording
    # channel reads each card's row at its send (one SELECT a card, not the worker's), the
    # read-permission floor is one query per source (here each card has its own), and the
    # rest is per round: the lease and its hook (3), the batch's reads (7), its
    # transaction (5, savepoints included), the target names, the restricted-excerpt
    # check, the sent rows and the events (4), the empty last round (3).
    assert len(queries) <= 6 * 20
    worker_statements = len(queries) - len(channel.rows_at_send)
    assert worker_statements <= 20 + 25, [q["sql"][:90] for q in queries]


def test_a_lease_lost_before_its_send_is_not_sent(submit, channel):
    clars = submit_many(submit, [(None, "alice", "vera")] * 3)
    leases = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], max_jobs=50)
    lost = leases[0].job.pk
    # Another worker took the first job over while the batch was sending, and by the
    # time of its send its lease was more than half spent (so it is checked).
    leases[0] = dataclasses.replace(leases[0], expires_at=timezone.now())
    Job.objects.filter(pk=lost).update(lease_token=None, status=JobStatus.PENDING)

    with mock.patch.object(
        delivery.batch, "_record", side_effect=lambda asks: _recorded(asks, lost)
    ):
        assert handle_leases(leases) == []

    [gone] = [c for c in clars if str(c.pk) == leases[0].job.subject]
    assert sorted(card.clarification_id for _, card in channel.cards) == sorted(
        str(c.pk) for c in clars if c != gone
    )
    assert Job.objects.get(pk=lost).status == JobStatus.PENDING  # left to its new holder
    assert not events(gone, "delivered") and not events(gone, "delivery_failed")


def _recorded(asks: Any, lost: int) -> Any:
    """`_record` as if the lease of job `lost` had still been held when the rows were
    made (it was lost after, before the send)."""
    Job.objects.filter(pk=lost).update(status=JobStatus.LEASED, lease_token=asks[0].lease.token)
    made = RECORD(asks)
    Job.objects.filter(pk=lost).update(lease_token=None, status=JobStatus.PENDING)
    return made


def test_the_sent_rows_update_writes_what_bulk_update_writes(submit, channel, clarify_settings):
    clarify_settings(PER_PERSON_DAILY_CAP=100, DIGEST_THRESHOLD=100)
    clars = submit_many(submit, [(None, "alice", "vera"), (None, "vera", "alice")] * 2)
    assert run_worker() == 4
    rows = [d for c in clars for d in deliveries(c)]
    assert len(rows) == 4
    fields = ["status", "message_ref", "sent_at"]

    def written() -> list[tuple[Any, ...]]:
        return list(
            Delivery.objects.filter(pk__in=[d.pk for d in rows])
            .order_by("pk")
            .values_list("pk", *fields)
        )

    sent_at = timezone.now().replace(microsecond=123456)
    for i, d in enumerate(rows):
        d.status, d.message_ref = DeliveryStatus.SENT, f"ref-{i}"
        d.sent_at = sent_at + timedelta(seconds=i)
    Delivery.objects.bulk_update(rows, fields)
    by_orm = written()
    Delivery.objects.filter(pk__in=[d.pk for d in rows]).update(
        status=DeliveryStatus.FAILED, message_ref="", sent_at=None
    )
    assert written() != by_orm
    with CaptureQueriesContext(connection) as queries:
        delivery.batch.sent_rows_write(rows)
    assert written() == by_orm
    assert sum("UPDATE" in q["sql"] for q in queries) == 1  # one executemany
