"""Reminders end to end (issue 32 item 2): one reminder job per card sent, due the
reminder delay after it; the card sent again on its channel with its nonce, marked as a
reminder, audited `reminded`; exactly once; never after an answer; not counted by the
daily cap; the escalation window unchanged; a reminderAfterHours at or above the window
refused with nothing written."""

import json
import re
from datetime import timedelta
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.utils import timezone

from clarify.admin import ClarifyPolicyForm
from clarify.models import AuditEvent, ClarifyPolicy
from clarify.policy import policy_for
from clarify.reports import clarification_detail
from clarify.stewardship import clarify_policy_update
from common.errors import InvalidInput
from delivery.actions import card_action_process
from delivery.models import Delivery
from delivery.reminders import REMINDER_KIND
from jobs.models import Job, JobStatus
from jobs.services import JobSpec, jobs_enqueue
from jobs.tasks import work

from .conftest import deliveries, events, job_of, run_worker


def reminders_due() -> int:
    """The reminder jobs' delay has passed; one pass of the worker over them."""
    Job.objects.filter(kind=REMINDER_KIND, status=JobStatus.PENDING).update(
        run_after=timezone.now() - timedelta(seconds=1)
    )
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(REMINDER_KIND, max_seconds=5)


@pytest.fixture
def reminding(clarify_settings):
    return clarify_settings(REMINDER_AFTER_HOURS=4.0)


def test_one_reminder_on_the_same_channel_with_the_same_nonce(reminding, submit, channel, people):
    clar = submit()
    run_worker()
    [row] = deliveries(clar)
    [job] = Job.objects.filter(kind=REMINDER_KIND)
    assert job.subject == str(row.pk) and job.status == JobStatus.PENDING
    assert job.run_after - row.sent_at == timedelta(hours=4)
    routing = job_of(clar)
    assert reminders_due() == 1
    [(first_to, first), (again_to, again)] = channel.cards
    assert again_to == first_to == f"fake:{people['alice'].pk}"
    assert again.nonce == first.nonce
    assert again.question == f"Reminder: {first.question}"
    [reminded] = events(clar, "reminded")
    assert reminded.detail["candidate"] == str(people["alice"].pk)
    assert reminded.detail["channel"] == "fake" and reminded.detail["job"] == routing.pk
    # No new card (the daily cap counts cards), and the routing job — the escalation
    # window — is as it was.
    assert deliveries(clar) == [row]
    assert Delivery.objects.get(pk=row.pk).reminded_at is not None
    after = job_of(clar)
    assert (after.status, after.attempts, after.lease_expires_at) == (
        routing.status,
        routing.attempts,
        routing.lease_expires_at,
    )
    # Exactly once: a second reminder job for the same card sends nothing.
    jobs_enqueue(
        tenant=clar.tenant,
        specs=[JobSpec(REMINDER_KIND, {"v": 1, "delivery": str(row.pk)}, subject="again")],
    )
    assert reminders_due() == 1
    assert len(channel.cards) == 2 and len(events(clar, "reminded")) == 1
    assert Job.objects.get(subject="again").result == {"skipped": "reminded already"}
    history = [h["outcome"] for h in clarification_detail(clar)["deliveryHistory"]]
    assert history == ["delivered", "reminded"]


def test_no_reminder_after_an_answer(reminding, submit, channel, people):
    clar = submit()
    run_worker()
    [row] = deliveries(clar)
    card_action_process(
        channel="inbox",
        actor=row.person,
        clarification_id=str(clar.pk),
        nonce=row.nonce,
        answer_index=0,
    )
    assert reminders_due() == 1
    assert len(channel.cards) == 1 and not events(clar, "reminded")


def test_a_reminder_is_not_counted_by_the_daily_cap(
    reminding, clarify_settings, submit, channel, people
):
    clarify_settings(PER_PERSON_DAILY_CAP=2)
    first = submit()
    run_worker()
    assert reminders_due() == 1
    # alice had one card and one reminder: her second card is still under the cap of 2.
    second = submit(external_id="contracts/second.docx")
    run_worker()
    assert not events(second, "skipped")
    assert [a for a, _ in channel.cards] == [f"fake:{people['alice'].pk}"] * 3
    assert len(events(first, "reminded")) == 1


def test_reminders_off_by_default(submit, channel):
    submit()
    run_worker()
    assert not Job.objects.filter(kind=REMINDER_KIND).exists()


def test_a_reminder_at_or_above_the_window_is_refused_and_nothing_written(
    workspace, people, clarify_settings, settings
):
    before = AuditEvent.objects.count()
    for hours in (48.0, 60.0, -1.0):
        with pytest.raises(InvalidInput) as refused:
            clarify_policy_update(tenant=workspace, actor=people["sam"], reminder_after_hours=hours)
        assert refused.value.extra == {"field": "reminderAfterHours"}
        if hours == 48.0:
            assert "escalation window (48 hours" in refused.value.detail
    form = ClarifyPolicyForm(data={"reminder_after_hours": "48"})
    assert not form.is_valid() and "escalation window" in str(form.errors)
    assert not ClarifyPolicy.objects.exists() and AuditEvent.objects.count() == before
    clarify_policy_update(tenant=workspace, actor=people["sam"], reminder_after_hours=12.0)
    assert policy_for(workspace).reminder_after_hours == 12.0
    # The environment's value is checked at start-up the same way.
    clarify_settings(REMINDER_AFTER_HOURS=48.0)
    with pytest.raises(SystemCheckError, match=r"clarify\.E001"):
        call_command("check")


def test_over_slack_the_reminder_and_a_delegate_s_card_are_real_messages(
    reminding, slack_settings, slack_stub, submit, people
):
    """Through the real Slack client against the local stub: alice's card and its
    reminder (the same nonce in the buttons); bob asked on alice's behalf while she is
    away, the message saying so."""
    from tenancy.services import person_away_set

    first = submit()
    run_worker()
    assert reminders_due() == 1
    card, reminder = slack_stub.of("chat.postMessage")
    assert card.body["channel"] == reminder.body["channel"] == "U0ALICE"
    [row] = deliveries(first)
    assert row.nonce in json.dumps(reminder.body["blocks"])
    assert "Reminder: " in reminder.body["text"] and "Reminder" not in card.body["text"]
    until = timezone.now().date() + timedelta(days=3)
    person_away_set(person=people["alice"], until=until, delegate=people["bob"], by=None, via="t")
    # bob is not ranked on this one (a ranked delegate is asked in his own right only).
    submit(external_id="contracts/while-away.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    delegated = slack_stub.of("chat.postMessage")[-1]
    assert delegated.body["channel"] == "U0BOB"
    assert "on behalf of Alice Author" in json.dumps(delegated.body["blocks"])


def test_a_card_sent_in_a_digest_gets_its_reminder_too(
    reminding, clarify_settings, submit, channel
):
    """A digest's cards each get their one reminder job when the digest goes out: the
    card itself again, alone, on the digest's channel with its nonce."""
    from delivery.digests import digests_flush

    clarify_settings(DIGEST_THRESHOLD=1)
    submit(external_id="remind/alone.docx")
    run_worker()
    listed = [submit(external_id=f"remind/listed-{i}.docx") for i in range(2)]
    run_worker()
    rows = [deliveries(q)[0] for q in listed]
    assert not Job.objects.filter(kind=REMINDER_KIND, subject__in=[str(r.pk) for r in rows])
    assert digests_flush(now=timezone.now() + timedelta(minutes=31)) == 1
    [(_, digest)] = channel.digests
    jobs = Job.objects.filter(kind=REMINDER_KIND, subject__in=[str(r.pk) for r in rows])
    assert jobs.count() == 2
    assert reminders_due() == 3  # the card sent alone, and the two listed
    again = {card.nonce: card for _, card in channel.cards[1:]}
    for row, listed_card in zip(rows, digest, strict=True):
        assert again[row.nonce].question == f"Reminder: {listed_card.question}"
    for q in listed:
        [reminded] = events(q, "reminded")
        assert reminded.detail["channel"] == "fake"


def test_a_card_is_never_recorded_sent_without_its_reminder_job(
    reminding, submit, channel, monkeypatch
):
    """The reminder job is written in the transaction of the sent row and its
    `delivered` event: every card recorded sent has one; when the job cannot be
    written, neither is the send (the round's job failed, as after any bug)."""
    import delivery.reminders

    done = [submit(external_id=f"remind/sent-{i}.docx") for i in range(2)]
    run_worker()
    sent = Delivery.objects.filter(clarification__in=done, sent_at__isnull=False)
    assert sent.count() == 2
    subjects = set(Job.objects.filter(kind=REMINDER_KIND).values_list("subject", flat=True))
    assert {str(r.pk) for r in sent} == subjects

    def refused(**kwargs):
        raise RuntimeError("the job table refused the insert")

    monkeypatch.setattr(delivery.reminders, "jobs_enqueue", refused)
    lost = submit(external_id="remind/lost.docx")
    run_worker()
    [row] = deliveries(lost)
    assert row.sent_at is None and not events(lost, "delivered")
    assert Job.objects.filter(kind=REMINDER_KIND).count() == 2
    assert job_of(lost).status != JobStatus.DONE


@pytest.mark.usefixtures("inbox_only")
def test_the_inbox_marks_a_reminded_card_and_lists_it_first(reminding, submit, with_passwords):
    alice = with_passwords["alice"]
    older = submit(external_id="remind/inbox-older.docx", name="Older term")
    run_worker()
    assert reminders_due() == 1
    newer = submit(external_id="remind/inbox-newer.docx", name="Newer term")
    run_worker()
    [reminded] = events(older, "reminded")
    assert reminded.detail["channel"] == "inbox"
    client = Client()
    client.force_login(alice.user)
    page = client.get("/inbox/").content.decode()
    found = re.findall(r'<section class="card( reminded)?" data-clarification="([^"]+)">', page)
    assert found == [(" reminded", str(older.pk)), ("", str(newer.pk))]
    first, second = page.split("<section", 2)[1:]
    assert '<span class="badge reminder">Reminder</span>' in first and "Older term" in first
    assert "Reminder" not in second and "Newer term" in second
