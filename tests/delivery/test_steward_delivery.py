"""What stewards receive: the escalation in their inbox (whatever channel carried it), the
redacted FYI when a high-severity question goes direct, an escalation retried when every
send failed, and the delivery gate (with its audit event) on everything sent to them."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

import delivery.worker
from clarify.models import State
from clarify.routing import skip_reasons
from delivery.channels import DeliveryError
from delivery.models import Delivery, DeliveryKind, DeliveryStatus
from delivery.restriction import RESTRICTED_ESCALATION_TEXT
from jobs.models import Job, JobStatus
from tenancy.models import Rights

from .conftest import (
    PASSWORD,
    SPAN_TEXT,
    RecordingChannel,
    deliveries,
    events,
    expire_window,
    job_of,
    run_worker,
    window_passes,
)

REVIEW = "/admin/clarify/clarification/{}/change/"


def inbox_page(person) -> str:
    client = Client()
    assert client.login(username=person.email, password=PASSWORD)
    resp = client.get("/inbox/")
    assert resp.status_code == 200
    return resp.content.decode()


def steward_section(page: str) -> str:
    """The "Needs a steward" part of an inbox page ("" when there is none)."""
    start = page.find("<h1>Needs a steward</h1>")
    return "" if start < 0 else page[start : page.index("<h1>Your open questions</h1>")]


# --- the steward's inbox shows escalations addressed to them ----------------------------


@pytest.mark.usefixtures("inbox_only")
def test_a_steward_sees_an_escalation_in_the_inbox_and_a_non_steward_does_not(
    submit, with_passwords
):
    people = with_passwords
    sam, alice = people["sam"], people["alice"]
    # Normal severity, nobody may read it: the escalation goes to sam's inbox at once.
    clar = submit(acl=["group:finance"], links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")])
    run_worker()
    [row] = deliveries(clar, kind=DeliveryKind.ESCALATION)
    assert (row.person_id, row.channel, row.status) == (sam.pk, "inbox", DeliveryStatus.SENT)
    clar.refresh_from_db()
    assert clar.state == State.OPEN  # normal severity: not in the Needs-attention queue

    section = steward_section(inbox_page(sam))
    assert f'data-clarification="{clar.pk}"' in section
    assert "Escalated to you" in section
    assert "Master services agreement" in section
    assert REVIEW.format(clar.pk) in section
    assert "<code>NO_READ_PERMISSION</code>" in section
    assert SPAN_TEXT not in section and "ACME-CONFIDENTIAL" not in inbox_page(sam)

    # alice (an editor) sees no steward section, and no trace of the escalation.
    alice_page = inbox_page(alice)
    assert steward_section(alice_page) == ""
    assert str(clar.pk) not in alice_page

    # A steward who is demoted no longer sees it; once answered, nobody does.
    type(sam).objects.filter(pk=sam.pk).update(role=Rights.EDITOR)
    assert steward_section(inbox_page(sam)) == ""
    type(sam).objects.filter(pk=sam.pk).update(role=Rights.STEWARD)
    assert str(clar.pk) in steward_section(inbox_page(sam))
    type(clar).objects.filter(pk=clar.pk).update(state=State.ANSWERED)
    assert steward_section(inbox_page(sam)) == ""


def test_an_escalation_sent_on_a_chat_channel_also_shows_in_the_inbox(
    submit, channel, with_passwords
):
    sam = with_passwords["sam"]
    clar = submit(acl=["group:finance"], links=[("AUTHORED_BY", "alice")])
    run_worker()
    [(addr, _)] = channel.escalations
    assert addr == f"fake:{sam.pk}"
    assert str(clar.pk) in steward_section(inbox_page(sam))


# --- high severity: a real, redacted FYI to the stewards --------------------------------


def test_high_severity_sends_the_stewards_a_redacted_notice(submit, channel, with_passwords):
    people = with_passwords
    alice, sam = people["alice"], people["sam"]
    clar = submit(severity_hint="high")
    run_worker()

    [(card_addr, _)] = channel.cards
    assert card_addr == f"fake:{alice.pk}"
    [(addr, notice)] = channel.escalations
    assert addr == f"fake:{sam.pk}"
    assert notice.text.startswith("For your information")
    assert "Alice Author" in notice.text and "Master services agreement" in notice.text
    assert notice.review_url.endswith(REVIEW.format(clar.pk))
    assert SPAN_TEXT not in repr(notice)
    [row] = deliveries(clar, kind=DeliveryKind.ESCALATION)
    assert (row.person_id, row.attempt, row.redacted, row.status) == (
        sam.pk,
        0,
        True,
        DeliveryStatus.SENT,
    )
    [notified] = events(clar, "steward_notified")
    assert notified.detail["stewards"] == [str(sam.pk)]
    assert notified.detail["candidate"] == str(alice.pk)
    # The notice blocks nothing: alice's window runs as usual.
    assert job_of(clar).status == JobStatus.LEASED
    section = steward_section(inbox_page(sam))
    assert "For your information" in section and SPAN_TEXT not in section

    # The next candidate's attempt does not notify again.
    expire_window(clar)
    run_worker()
    assert len(channel.cards) == 2 and len(channel.escalations) == 1


def test_a_failed_steward_notice_never_blocks_the_question(submit, channel, monkeypatch):
    def down(self, *, address, escalation):
        raise DeliveryError("stewards' channel is down")

    monkeypatch.setattr(RecordingChannel, "send_escalation", down)
    clar = submit(severity_hint="high")
    run_worker()
    assert len(channel.cards) == 1
    [row] = deliveries(clar, kind=DeliveryKind.ESCALATION)
    assert row.status == DeliveryStatus.FAILED
    [failed] = events(clar, "steward_notice_failed")
    assert failed.detail["channel"] == "fake"
    assert events(clar, "delivery_failed") == []
    assert skip_reasons(clar) == []  # a notice failure is no candidate's skip reason
    [notified] = events(clar, "steward_notified")
    assert notified.detail["stewards"] == []
    assert job_of(clar).status == JobStatus.LEASED


def test_normal_severity_sends_no_steward_notice(submit, channel):
    clar = submit()
    run_worker()
    assert channel.escalations == []
    assert deliveries(clar, kind=DeliveryKind.ESCALATION) == []


# --- an escalation that failed on every steward is retried later ------------------------


def test_an_escalation_that_failed_on_every_steward_is_retried_after_a_window(
    submit, channel, people
):
    clar = submit(acl=["group:finance"], links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")])
    job = job_of(clar)
    max_attempts = job.max_attempts
    channel.fail_next = delivery.worker.SEND_RETRIES  # the connector is down
    run_worker()

    assert channel.escalations == []
    [escalated] = events(clar, "escalated")
    assert escalated.detail["reason"] == "DELIVERY_FAILED"
    assert escalated.detail["stewards"] == []
    job = job_of(clar)
    assert (job.status, job.attempts, job.max_attempts) == (
        JobStatus.PENDING,
        3,
        max_attempts + 1,
    )
    assert job.last_error.startswith("ESCALATION_RETRY")
    assert job.run_after > timezone.now() + timedelta(hours=1)  # later, not at once
    clar.refresh_from_db()
    assert clar.state != State.DEAD_LETTERED
    assert run_worker() == 0  # nothing before the window has passed

    # The connector is back: the next escalation goes out.
    window_passes(clar)
    run_worker()
    [(addr, escalation)] = channel.escalations
    assert addr == f"fake:{people['sam'].pk}"
    assert "NO_READ_PERMISSION" in escalation.text
    assert [e.detail["reason"] for e in events(clar, "escalated")] == ["DELIVERY_FAILED", None]
    assert [(d.attempt, d.status) for d in deliveries(clar, kind=DeliveryKind.ESCALATION)] == [
        (2, DeliveryStatus.FAILED),
        (3, DeliveryStatus.SENT),
    ]


def test_an_escalation_is_retried_a_bounded_number_of_times(submit, channel, monkeypatch):
    monkeypatch.setattr(delivery.worker, "ESCALATION_RETRIES", 1)
    clar = submit(acl=["group:finance"], links=[("AUTHORED_BY", "alice")])
    channel.fail_next = 100
    run_worker()
    assert job_of(clar).status == JobStatus.PENDING
    window_passes(clar)
    run_worker()
    job = job_of(clar)
    assert job.status == JobStatus.DEAD
    assert job.last_error.startswith("DELIVERY_FAILED")
    clar.refresh_from_db()
    assert clar.state == State.DEAD_LETTERED
    assert [e.detail["reason"] for e in events(clar, "escalated")] == ["DELIVERY_FAILED"] * 2


def test_no_reachable_steward_still_dead_letters_at_once(submit, channel, people):
    channel.unreachable.add(str(people["sam"].pk))
    clar = submit(acl=["group:finance"])
    run_worker()
    [escalated] = events(clar, "escalated")
    assert escalated.detail["reason"] == "NO_DELIVERY_ALIAS"
    assert job_of(clar).status == JobStatus.DEAD
    assert Job.objects.filter(pk=job_of(clar).pk, max_attempts=3).exists()  # not extended


# --- the same delivery gate (and audit) for steward messages ----------------------------


def test_an_escalation_about_a_restricted_source_is_gated_and_audited(submit, channel, people):
    clar = submit(
        acl=["group:finance"],
        links=[("AUTHORED_BY", "alice")],
        restriction="privileged",
        title="Privileged merger memo",
    )
    run_worker()
    [(_, escalation)] = channel.escalations
    assert escalation.text == RESTRICTED_ESCALATION_TEXT
    assert "Privileged merger memo" not in repr(escalation)
    [blocked] = events(clar, "restricted_content_blocked")
    assert blocked.detail == {
        "message": "escalation",
        "channel": "fake",
        "reason": "RESTRICTED_PROVENANCE",
        "attempt": 1,
    }
    # The inbox is not a chat channel: the steward's own page names the document.
    assert Delivery.objects.filter(clarification=clar, kind=DeliveryKind.ESCALATION).count() == 1


def test_an_escalation_quoting_a_restricted_excerpt_verbatim_is_gated(submit, channel, people):
    secret = "Project Nightjar closes on 3 March"
    text = f"Board minutes. {secret}, subject to approval."
    start = text.index(secret)
    submit(
        external_id="restricted/minutes.docx",
        text=text,
        span={"start": start, "end": start + len(secret)},
        restriction="privileged",
        acl=["group:finance"],
        links=[("AUTHORED_BY", "olga")],
    )
    # An unrestricted document whose title quotes the restricted excerpt (case and
    # whitespace differ): the source flag alone would let it through.
    clar = submit(
        external_id="plain/notes.docx",
        title="Notes: PROJECT   nightjar closes\non 3 March",
        acl=["group:finance"],
        links=[("AUTHORED_BY", "alice")],
    )
    run_worker()
    [(_, escalation)] = [
        (a, e) for a, e in channel.escalations if e.clarification_id == str(clar.pk)
    ]
    assert escalation.text == RESTRICTED_ESCALATION_TEXT
    assert "nightjar" not in repr(escalation).lower()
    [blocked] = events(clar, "restricted_content_blocked")
    assert (blocked.detail["message"], blocked.detail["reason"]) == (
        "escalation",
        "VERBATIM_RESTRICTED_EXCERPT",
    )


def test_a_high_severity_notice_about_a_restricted_source_is_gated(submit, channel, people):
    clar = submit(severity_hint="high", restriction="privileged", title="Privileged memo")
    run_worker()
    [(_, notice)] = channel.escalations
    assert notice.text == RESTRICTED_ESCALATION_TEXT
    assert "Privileged memo" not in repr(notice)
    assert sorted(e.detail["message"] for e in events(clar, "restricted_content_blocked")) == [
        "card",
        "notice",
    ]
