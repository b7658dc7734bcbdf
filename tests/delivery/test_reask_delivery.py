"""A steward re-ask that asks the same person at the same attempt number as before: the
new routing job makes its own delivery with a fresh, active nonce (the superseded one
stays revoked), the new card binds, the old one is dropped as stale, a worker still
holding the superseded lease sends nothing, and the delivery history (`telha clarify show
--json`) lists both cards with their nonce states as they stand now."""

import importlib
import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import Client

from clarify import selectors
from clarify.models import BindingStatus, Clarification, ResponseRecord, State
from clarify.stewardship import clarification_reask
from delivery import worker
from delivery.actions import ANSWERED, DROPPED, card_action_process
from delivery.models import Delivery, DeliveryKind, DeliveryStatus, NonceState
from jobs.models import Job, JobStatus
from jobs.services import job_lease

from .conftest import (
    JOB_KIND,
    deliveries,
    events,
    expire_window,
    lapse_lease,
    run_worker,
    snapshot_rows,
    written_counts,
)
from .test_inbox import nonce_in, page_of, sections, signed_in


def routing_jobs(clar: Clarification) -> list[Job]:
    """The clarification's routing jobs, oldest first (a re-ask adds one)."""
    return list(selectors.routing_jobs(clar))


def test_the_routing_jobs_of_a_clarification_are_its_own_and_a_reask_s(submit, people):
    alice, sam = people["alice"], people["sam"]
    clar, other = submit(), submit(external_id="contracts/other.docx")
    [first] = routing_jobs(clar)
    assert list(selectors.routing_jobs(clar, active=True)) == [first]

    second = reask(clar, alice, actor=sam)

    assert routing_jobs(clar) == [first, second]  # oldest first: the latest is the last
    assert list(selectors.routing_jobs(clar, active=True)) == [second]
    assert {j.kind for j in routing_jobs(clar)} == {JOB_KIND}
    assert first.pk not in {j.pk for j in routing_jobs(other)}


def by_job(clar: Clarification) -> list[Delivery]:
    """Its question deliveries, the oldest routing job's first."""
    return sorted(deliveries(clar, kind=DeliveryKind.QUESTION), key=lambda d: d.job_id or 0)


def reask(clar: Clarification, *ranking: Any, actor: Any) -> Job:
    """The steward service the admin's re-ask action calls, in its own transaction."""
    with transaction.atomic():
        return clarification_reask(clarification=clar, ranking=list(ranking), actor=actor)


def tap_action(action: dict[str, Any], actor: Any, channel: str = "fake") -> Any:
    """Process a card action payload (CONTRACT §3.5) as a channel hook does."""
    assert action["kind"] == "clarify_answer"
    return card_action_process(
        channel=channel,
        actor=actor,
        clarification_id=action["clarificationId"],
        nonce=action["nonce"],
        answer_index=action["answerIndex"],
    )


def show_json(clar: Clarification) -> dict[str, Any]:
    """`telha clarify show ID --json`."""
    out = StringIO()
    call_command("clarify", "show", str(clar.pk), "--json", stdout=out)
    return dict(json.loads(out.getvalue()))


def history(clar: Clarification) -> list[tuple[Any, ...]]:
    return [
        (h["job"], h["attempt"], h["candidate"], h["outcome"], h["nonceState"])
        for h in show_json(clar)["deliveryHistory"]
    ]


def test_a_reask_to_the_same_first_candidate_sends_a_fresh_nonce_that_binds(
    submit, channel, people
):
    alice, bob, sam = people["alice"], people["bob"], people["sam"]
    clar = submit()
    assert run_worker() == 1
    [(_, old_card)] = channel.cards
    [old_job] = routing_jobs(clar)

    new_job = reask(clar, alice, bob, actor=sam)
    assert run_worker() == 1
    assert len(channel.cards) == 2
    address, new_card = channel.cards[1]
    assert address == f"fake:{alice.pk}"
    # The card sent is the new job's, with a nonce stored active before the send.
    assert new_card.nonce != old_card.nonce
    assert channel.rows_at_send[1]["nonce"] == new_card.nonce
    assert channel.rows_at_send[1]["nonce_state"] == NonceState.ACTIVE
    rows = by_job(clar)
    assert [(d.job_id, d.attempt, d.person_id, d.nonce, d.nonce_state) for d in rows] == [
        (old_job.pk, 0, alice.pk, old_card.nonce, NonceState.REVOKED),
        (new_job.pk, 0, alice.pk, new_card.nonce, NonceState.ACTIVE),
    ]
    assert {d.status for d in rows} == {DeliveryStatus.SENT}
    assert [e.detail["job"] for e in events(clar, "delivered")] == [old_job.pk, new_job.pk]

    # Both cards are in the history, each with its own nonce state.
    assert history(clar) == [
        (old_job.pk, 0, str(alice.pk), "delivered", "revoked"),
        (new_job.pk, 0, str(alice.pk), "delivered", "active"),
    ]
    # The plain-text report and the decide page tell the two attempts 0 apart by job.
    out = StringIO()
    call_command("clarify", "show", str(clar.pk), stdout=out)
    text = out.getvalue()
    assert f"job #{old_job.pk} attempt 0: {alice.pk} — delivered, nonce revoked" in text
    assert f"job #{new_job.pk} attempt 0: {alice.pk} — delivered, nonce active" in text
    staff = Client()
    staff.force_login(sam.user)
    page = staff.get(f"/admin/clarify/clarification/{clar.pk}/change/").content.decode()
    assert f"<td>#{old_job.pk}</td><td>0</td>" in page
    assert f"<td>#{new_job.pk}</td><td>0</td>" in page

    # The old card's tap is dropped as stale and writes nothing but its audit event.
    before, counts = snapshot_rows(), written_counts()
    stale = tap_action(old_card.action(1), alice)
    assert (stale.status, stale.reason) == (DROPPED, "STALE_NONCE")
    assert snapshot_rows() == before
    assert written_counts() == {**counts, "AuditEvent": counts["AuditEvent"] + 1}
    assert events(clar)[-1].type == "card_action_dropped"

    # The new card's tap binds through the answer service.
    outcome = tap_action(new_card.action(1), alice)
    assert outcome.status == ANSWERED, outcome
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.answer_index, record.binding_status) == (
        alice.pk,
        1,
        BindingStatus.BOUND,
    )
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    assert Job.objects.get(pk=new_job.pk).status == JobStatus.DONE
    assert history(clar) == [
        (old_job.pk, 0, str(alice.pk), "delivered", "revoked"),
        (new_job.pk, 0, str(alice.pk), "delivered", "closed"),
    ]


def test_a_reasked_card_binds_through_the_inbox(submit, inbox_only, with_passwords):
    alice, sam = with_passwords["alice"], with_passwords["sam"]
    clar = submit()
    assert run_worker() == 1
    client = signed_in(alice)
    old_nonce = nonce_in(sections(page_of(client))[str(clar.pk)])

    reask(clar, alice, actor=sam)
    assert str(clar.pk) not in sections(page_of(client))  # the revoked card is gone
    assert run_worker() == 1
    new_nonce = nonce_in(sections(page_of(client))[str(clar.pk)])
    assert new_nonce != old_nonce

    before = snapshot_rows()
    resp = client.post(
        "/inbox/answer",
        {"clarification_id": str(clar.pk), "nonce": old_nonce, "answer_index": "1"},
    )
    assert resp.status_code == 302
    assert snapshot_rows() == before
    assert events(clar)[-1].detail["reason"] == "STALE_NONCE"

    resp = client.post(
        "/inbox/answer",
        {"clarification_id": str(clar.pk), "nonce": new_nonce, "answer_index": "1"},
    )
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.binding_status) == (
        alice.pk,
        "inbox",
        BindingStatus.BOUND,
    )
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    assert [d.nonce_state for d in by_job(clar)] == [NonceState.REVOKED, NonceState.CLOSED]


def test_a_reask_of_a_dead_lettered_clarification_escalates_with_a_fresh_nonce(
    submit, channel, people
):
    """The same bug on the steward escalation: attempt 1 of the new job escalates to the
    same steward as attempt 1 of the old one."""
    bob, sam = people["bob"], people["sam"]
    clar = submit(links=[("AUTHORED_BY", "bob")])
    channel.unreachable.add(str(bob.pk))
    assert run_worker() == 1  # bob skipped, the escalation reaches sam
    [old_job] = routing_jobs(clar)
    assert lapse_lease(clar).status == JobStatus.DEAD
    [(_, first)] = channel.escalations

    new_job = reask(clar, bob, actor=sam)
    assert run_worker() == 1
    assert len(channel.escalations) == 2 and channel.escalations[1][0] == f"fake:{sam.pk}"
    rows = Delivery.objects.filter(clarification=clar, kind=DeliveryKind.ESCALATION)
    assert sorted((d.job_id, d.attempt, d.person_id, d.nonce_state) for d in rows) == [
        (old_job.pk, 1, sam.pk, NonceState.REVOKED),
        (new_job.pk, 1, sam.pk, NonceState.ACTIVE),
    ]
    assert first.clarification_id == str(clar.pk)


def test_a_worker_holding_the_superseded_lease_sends_nothing(submit, channel, people):
    """A worker leased the job, then a steward re-asked before it sent: the delivery row
    is made only while the lease is still held, so the superseded job sends no card."""
    alice, sam = people["alice"], people["sam"]
    clar = submit()
    [lease] = job_lease(tenant=None, audience="clarify", kinds=["clarify:"])
    reask(clar, alice, actor=sam)
    before = snapshot_rows()
    worker.handle_leases([lease])
    assert channel.cards == []
    assert snapshot_rows() == before
    assert run_worker() == 1  # the re-ask's job asks alice
    [(_, card)] = channel.cards
    [d] = deliveries(clar)
    assert (d.job_id, d.nonce, d.nonce_state) == (
        routing_jobs(clar)[1].pk,
        card.nonce,
        NonceState.ACTIVE,
    )


@pytest.mark.parametrize("state", [NonceState.REVOKED, NonceState.CLOSED])
def test_a_withdrawn_nonce_of_the_same_attempt_is_never_sent_again(state, submit, channel, people):
    """The same job re-leased at the same attempt after its card was revoked (or closed):
    the card is not sent again, neither with the dead nonce nor with a new one; the
    withholding is audited and the lease runs out to the next candidate."""
    clar = submit()
    assert run_worker() == 1
    [d] = deliveries(clar)
    Delivery.objects.filter(pk=d.pk).update(nonce_state=state)
    job = routing_jobs(clar)[0]
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.PENDING, lease_token=None, lease_expires_at=None
    )
    before = snapshot_rows()
    assert run_worker() == 1
    assert len(channel.cards) == 1  # only the first send
    [withheld] = events(clar, "resend_withheld")
    assert withheld.detail == {
        "attempt": 0,
        "candidate": str(people["alice"].pk),
        "job": job.pk,
        "nonceState": state,
    }
    after = snapshot_rows()
    assert after["Delivery"] == before["Delivery"]
    [leased] = after["Job"]
    assert (leased["status"], leased["attempts"]) == (JobStatus.LEASED, 0)
    # The lease runs out: the next candidate (bob) is asked with his own nonce.
    expire_window(clar)
    assert run_worker() == 1
    assert channel.cards[-1][0] == f"fake:{people['bob'].pk}"
    assert channel.cards[-1][1].nonce not in (d.nonce, "")


def test_the_migration_gives_legacy_rows_the_routing_job_current_when_they_were_made(
    submit, channel, people
):
    """`0004_delivery_keyed_by_routing_job` backfills `job_id` on rows made before the
    worker stored it: the clarification's latest routing job created no later than the
    row, else its earliest; a clarification without routing jobs keeps null."""
    from datetime import timedelta

    from django.apps import apps

    migration = importlib.import_module("delivery.migrations.0004_delivery_keyed_by_routing_job")
    alice, bob, sam = people["alice"], people["bob"], people["sam"]
    clar = submit()
    assert run_worker() == 1
    reask(clar, alice, actor=sam)
    assert run_worker() == 1
    old_job, new_job = routing_jobs(clar)
    old_row, new_row = by_job(clar)
    start = old_job.created_at
    Job.objects.filter(pk=new_job.pk).update(created_at=start + timedelta(minutes=10))
    Delivery.objects.filter(pk=old_row.pk).update(created_at=start + timedelta(minutes=1))
    Delivery.objects.filter(pk=new_row.pk).update(created_at=start + timedelta(minutes=11))
    # A row older than every job of its clarification gets the earliest one.
    early = Delivery.objects.create(
        tenant=clar.tenant,
        clarification=clar,
        person=bob,
        attempt=1,
        kind=DeliveryKind.QUESTION,
        channel="fake",
        status=DeliveryStatus.SENT,
        nonce="legacy-early-" + "x" * 20,
    )
    Delivery.objects.filter(pk=early.pk).update(created_at=start - timedelta(days=1))
    # A clarification whose routing jobs are gone keeps null.
    orphan_clar = submit(external_id="contracts/orphan.docx")
    Job.objects.filter(subject=str(orphan_clar.pk)).delete()
    orphan = Delivery.objects.create(
        tenant=clar.tenant,
        clarification=orphan_clar,
        person=alice,
        kind=DeliveryKind.QUESTION,
        channel="fake",
        status=DeliveryStatus.SENT,
        nonce="legacy-orphan-" + "x" * 20,
    )
    Delivery.objects.filter(clarification=clar).update(job_id=None)

    migration.backfill_job_ids(apps, None)

    got = dict(Delivery.objects.values_list("pk", "job_id"))
    assert got == {
        old_row.pk: old_job.pk,
        new_row.pk: new_job.pk,
        early.pk: old_job.pk,
        orphan.pk: None,
    }
    # Run twice, it changes nothing.
    migration.backfill_job_ids(apps, None)
    assert dict(Delivery.objects.values_list("pk", "job_id")) == got
