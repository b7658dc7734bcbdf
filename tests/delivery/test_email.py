"""The email channel (issue 32 item 1, CONTRACT §3.10) against a real SMTP server on
this machine (aiosmtpd, one per module): the question's message (HTML and text parts, the
cards' copy, the passage only through the gate, one link per candidate and "Something
else…"), a link followed with the test client through sign-in → confirmation (a GET that
writes nothing) → the POST that answers with the card's nonce, the refusals (each writing
nothing), digests by email, and the steward's view of the sends."""

import email
import email.policy
import json
import logging
import re
import socket
from datetime import timedelta
from email.message import EmailMessage as Message
from io import StringIO
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from clarify.models import AuditEvent, ResponseRecord, State
from delivery.cards import SOMETHING_ELSE
from delivery.channels import DeliveryError
from delivery.digests import digests_flush
from delivery.email.channel import send
from delivery.email.render import question_message
from delivery.models import Delivery, DeliveryKind, DeliveryStatus, NonceState
from delivery.restriction import RESTRICTED_CARD_TEXT
from telha.settings import email_config

from .conftest import (
    CANDIDATES,
    PASSWORD,
    SPAN_TEXT,
    acl_set_unheard,
    closed_port,
    deliveries,
    events,
    run_worker,
    snapshot_rows,
    written_counts,
)

LINK = re.compile(r"https?://[^\s\"<>]+/email/answer/[^\s\"<>]+/")


class Inbox:
    """What the local SMTP server received: (recipients, parsed message) in order."""

    def __init__(self) -> None:
        self.received: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, Message)
        self.received.append((list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"

    def take(self) -> list[tuple[list[str], Message]]:
        out, self.received = self.received, []
        return out


@pytest.fixture(scope="module")
def smtp_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd's per-command log
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


@pytest.fixture
def mailbox(smtp_server, settings):
    """Email configured (EMAIL_URL to the local server) and the only channel besides the
    unconfigured chat ones and the inbox (which reaches only people with a password)."""
    inbox, port = smtp_server
    settings.EMAIL_URL = f"smtp://127.0.0.1:{port}"
    for name, value in email_config(settings.EMAIL_URL).items():
        setattr(settings, name, value)
    settings.DEFAULT_FROM_EMAIL = "Telha clarify <clarify@acme.test>"
    settings.SLACK_BOT_TOKEN = settings.SLACK_SIGNING_SECRET = ""
    settings.CLARIFY_CHANNELS = ["teams", "slack", "inbox", "email"]
    inbox.take()
    return inbox


def parts(message: Message) -> tuple[str, str]:
    """The text and HTML parts of a multipart/alternative message."""
    assert message.get_content_type() == "multipart/alternative"
    found = {p.get_content_type(): p.get_content() for p in message.iter_parts()}
    return found["text/plain"], found["text/html"]


def everything() -> tuple[dict[str, Any], dict[str, int]]:
    """The rows a refusal must leave alone, and the count of every table an answer or a
    refusal could write (audit events included)."""
    return snapshot_rows(), written_counts()


def subject(message: Message) -> str:
    return " ".join(str(message["Subject"]).split())


def links_of(text: str) -> list[str]:
    return LINK.findall(text)


def path_of(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[1].join(["/", ""])


def only_message(mailbox: Inbox, to: str) -> Message:
    [(rcpt, message)] = mailbox.take()
    assert rcpt == [to]
    return message


def signed_in(person) -> Client:
    client = Client()
    client.force_login(person.user)
    return client


def test_a_person_reached_only_by_email_answers_through_the_link(mailbox, submit, people):
    alice = people["alice"]  # no password, no chat configured: before, NO_DELIVERY_ALIAS
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    [row] = deliveries(clar)
    assert (row.person_id, row.channel, row.status) == (alice.pk, "email", DeliveryStatus.SENT)
    message = only_message(mailbox, "alice@acme.test")
    assert message["From"] == "Telha clarify <clarify@acme.test>"
    assert subject(message).startswith("When does “MSA term” take effect?")
    assert row.message_ref == f"email:{message['Message-ID']}"
    text, html = parts(message)
    for part in (text, html):
        assert SPAN_TEXT in part  # the gate lets this passage cross
        assert "Master services agreement" in part
        for candidate in CANDIDATES:
            assert str(candidate["label"]) in part
        assert SOMETHING_ELSE in part
    links = links_of(text)
    assert links == links_of(html) and len(links) == len(CANDIDATES) + 1
    assert all(row.nonce in link for link in links)

    # Signed out: to sign-in (the tenant named, so its single sign-on is offered) and back.
    browser = Client()
    first = path_of(links[0])
    resp = browser.get(first)
    assert resp.status_code == 302
    assert resp["Location"].startswith("/accounts/login/?tenant=acme&next=")
    alice.user.set_password(PASSWORD)
    alice.user.save()
    resp = browser.post(
        f"/accounts/login/?next={first}",
        {"username": alice.email, "password": PASSWORD, "next": first},
    )
    assert (resp.status_code, resp["Location"]) == (302, first)

    before = everything()
    page = browser.get(first)  # what a mail scanner's GET would do: nothing
    assert page.status_code == 200
    assert f"Confirm: {CANDIDATES[0]['label']}" in page.content.decode()
    assert everything() == before

    done = browser.post(first)
    assert done.status_code == 200, done.content
    assert "✓ Recorded as evidence: 1 Oct 2026 (next quarter)" in done.content.decode()
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.answer_index) == (alice.pk, "email", 0)
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED

    # The link answers once: again (or another of its links) is refused, writing nothing.
    before = everything()
    for link in (first, path_of(links[1])):
        for method in (browser.get, browser.post):
            again = method(link)
            assert again.status_code == 410
            assert "answered this question already" in again.content.decode()
    assert everything() == before

    # The steward sees the email send: the decide page's history and `telha clarify show`.
    out = StringIO()
    call_command("clarify", "show", str(clar.pk), "--json", stdout=out)
    history = json.loads(out.getvalue())["deliveryHistory"]
    assert [(h["outcome"], h["channel"]) for h in history] == [("delivered", "email")]
    out = StringIO()
    call_command("clarify", "show", str(clar.pk), stdout=out)
    assert f"attempt 0: {alice.pk} — delivered, nonce closed, via email" in out.getvalue()
    decide = signed_in(people["sam"]).get(f"/admin/clarify/clarification/{clar.pk}/change/")
    assert decide.status_code == 200
    # outcome, reason, channel (the away column, whom it was routed for, is the last)
    assert "<td>delivered</td><td></td><td>email</td>" in decide.content.decode()


def test_quorum_copy_and_something_else(mailbox, submit, people):
    alice = people["alice"]
    clar = submit(links=[("AUTHORED_BY", "alice")], severity_hint="critical")
    assert clar.required_confirmations == 2
    run_worker()
    message = next(m for rcpt, m in mailbox.take() if rcpt == ["alice@acme.test"])
    text, html = parts(message)
    note = "requires two confirmations"
    assert note in text and note in html
    other = path_of(links_of(text)[-1])
    assert other.endswith("/other/")
    browser = signed_in(alice)
    page = browser.get(other).content.decode()
    assert 'name="valid_from"' in page and note in page

    before = everything()
    bad = browser.post(other, {"valid_from": "2026-09-01", "valid_to": "2026-08-01"})
    assert bad.status_code == 400
    assert "The end date must be after the start date." in bad.content.decode()
    assert everything() == before

    done = browser.post(other, {"valid_from": "2026-09-01", "source_text": "from September"})
    assert done.status_code == 200, done.content
    assert "First confirmation recorded" in done.content.decode()
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.channel, record.answer_index) == ("email", None)
    # Still open, but this person's link has answered: used.
    before = everything()
    again = browser.post(path_of(links_of(text)[0]))
    assert again.status_code == 410
    assert "answered this question already" in again.content.decode()
    assert everything() == before


def only_audited(before: tuple[dict[str, Any], dict[str, int]], **reason: Any) -> AuditEvent:
    """A refused POST went through the tap pipeline: it wrote exactly the one audit event
    every channel writes for that refusal (`card_action_dropped` with the reason), and no
    other row. Returns the event."""
    rows, counts = before
    assert snapshot_rows() == rows
    assert written_counts() == {**counts, "AuditEvent": counts["AuditEvent"] + 1}
    event = AuditEvent.objects.order_by("-at", "-id").first()
    assert event is not None and event.type == "card_action_dropped"
    assert {**event.detail, **reason} == event.detail and event.detail["channel"] == "email"
    return event


def test_refusals_write_nothing_but_the_pipelines_audit(mailbox, submit, people):
    alice, bob = people["alice"], people["bob"]
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    link = path_of(links_of(parts(only_message(mailbox, "alice@acme.test"))[0])[1])
    unknown = link.replace("/answer/", "/answer/x")
    # The confirmation page (GET) writes nothing, whoever opens whatever.
    before = everything()
    for client, target, status, words in [
        (signed_in(bob), link, 403, "sent to someone else"),  # the wrong person signed in
        (signed_in(alice), unknown, 404, "does not work"),  # a nonce that names nothing
        (signed_in(alice), link.replace("/1/", "/9/"), 404, "does not work"),  # no such choice
    ]:
        resp = client.get(target)
        assert (resp.status_code, words in resp.content.decode()) == (status, True)
    assert signed_in(alice).post(link.replace("/1/", "/9/")).status_code == 404
    assert everything() == before

    # Its button (POST) goes through the tap pipeline: refused as on every channel.
    before = everything()
    resp = signed_in(bob).post(link)
    assert resp.status_code == 403 and "sent to someone else" in resp.content.decode()
    event = only_audited(before, reason="NOT_RECIPIENT", actor=str(bob.pk))
    assert event.clarification_id == clar.pk
    before = everything()
    resp = signed_in(alice).post(unknown)
    assert resp.status_code == 404 and "does not work" in resp.content.decode()
    event = only_audited(before, reason="UNKNOWN_NONCE")
    assert (event.clarification_id, event.tenant_id) == (None, alice.tenant_id)

    # A stale link: its card was revoked (a re-ask, a deprovisioning, an access change).
    Delivery.objects.filter(clarification=clar).update(nonce_state=NonceState.REVOKED)
    before = everything()
    assert signed_in(alice).get(link).status_code == 410
    assert everything() == before
    resp = signed_in(alice).post(link)
    assert resp.status_code == 410 and "has moved on" in resp.content.decode()
    only_audited(before, reason="STALE_NONCE")

    # Deprovisioned: their cards were withdrawn (nonce active here, to reach the check).
    Delivery.objects.filter(clarification=clar).update(nonce_state=NonceState.ACTIVE)
    type(alice).objects.filter(pk=alice.pk).update(deactivated_at=timezone.now())
    before = everything()
    assert signed_in(alice).get(link).status_code == 403
    assert everything() == before
    resp = signed_in(alice).post(link)
    assert resp.status_code == 403 and "no longer have access" in resp.content.decode()
    only_audited(before, reason="RESPONDER_NOT_AUTHORISED")
    assert not ResponseRecord.objects.filter(clarification=clar).exists()


def test_lost_access_is_the_answer_services_refusal(mailbox, submit, people):
    """The source became finance-only while the email waited: the page does not show the
    card (writes nothing); the button is refused by the answer service's read check, as
    a chat tap is — its `answer_refused` event, and the card revoked through the seam."""
    alice = people["alice"]
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    link = path_of(links_of(parts(only_message(mailbox, "alice@acme.test"))[0])[0])
    acl_set_unheard(clar.source_version.source, ["group:finance"])
    before = everything()
    resp = signed_in(alice).get(link)
    assert resp.status_code == 403 and "no longer have access" in resp.content.decode()
    assert everything() == before
    resp = signed_in(alice).post(link)
    assert resp.status_code == 403 and "no longer have access" in resp.content.decode()
    [refused] = events(clar, "answer_refused")
    assert refused.detail == {
        "reason": "NO_READ_PERMISSION",
        "responder": str(alice.pk),
        "channel": "email",
    }
    assert not ResponseRecord.objects.filter(clarification=clar).exists()
    assert [d.nonce_state for d in deliveries(clar)] == [NonceState.REVOKED]


def test_a_closed_link_follows_the_moved_on_rule_and_reads_its_delivery_once(
    mailbox, submit, people
):
    """A nonce closed since the email went out answers as a chat card's does (the tap
    pipeline's "moved on" rule: recorded, said first); the POST reads its delivery once."""
    alice = people["alice"]
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    link = path_of(links_of(parts(only_message(mailbox, "alice@acme.test"))[0])[0])
    Delivery.objects.filter(clarification=clar).update(nonce_state=NonceState.CLOSED)
    browser = signed_in(alice)
    assert browser.get(link).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        done = browser.post(link)
    assert done.status_code == 200, done.content
    assert "This clarification has moved on. ✓ Recorded" in done.content.decode()
    table = Delivery._meta.db_table
    reads = [
        q["sql"] for q in queries if q["sql"].startswith("SELECT") and f'FROM "{table}"' in q["sql"]
    ]
    by_nonce = [sql for sql in reads if '"nonce"' in sql.split(" WHERE ", 1)[-1]]
    assert len(by_nonce) == 1, reads
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel) == (alice.pk, "email")


def test_a_restricted_passage_never_crosses_into_the_email(mailbox, submit, people):
    clar = submit(links=[("AUTHORED_BY", "alice")], restriction="privileged")
    run_worker()
    text, html = parts(only_message(mailbox, "alice@acme.test"))
    for part in (text, html):
        assert SPAN_TEXT not in part and "Master services agreement" not in part
        assert RESTRICTED_CARD_TEXT in part
    assert links_of(text) == [] and links_of(html) == []
    [blocked] = events(clar, "restricted_content_blocked")
    assert blocked.detail["channel"] == "email"


def test_a_digest_goes_out_as_one_email(mailbox, submit, people, clarify_settings):
    clarify_settings(DIGEST_THRESHOLD=1)
    submit(external_id="dg/0.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    mailbox.take()
    queued = [
        submit(external_id=f"dg/{i}.docx", title=f"Queued {i}", links=[("AUTHORED_BY", "alice")])
        for i in (1, 2)
    ]
    run_worker()
    assert mailbox.take() == []
    assert {d.status for q in queued for d in deliveries(q)} == {DeliveryStatus.QUEUED_DIGEST}

    assert digests_flush(now=timezone.now() + timedelta(minutes=31)) == 1
    message = only_message(mailbox, "alice@acme.test")
    assert subject(message) == "2 questions about dates are waiting for you"
    text, html = parts(message)
    assert "Queued 1" in text and "Queued 2" in html
    links = links_of(text)
    assert len(links) == 2 * (len(CANDIDATES) + 1)
    rows = [d for q in queued for d in deliveries(q, kind=DeliveryKind.QUESTION)]
    assert {d.status for d in rows} == {DeliveryStatus.SENT}
    assert all(any(d.nonce in link for link in links) for d in rows)
    # A digest's link answers its own question.
    done = signed_in(people["alice"]).post(path_of(links[len(CANDIDATES) + 1 + 2]))
    assert done.status_code == 200
    [record] = ResponseRecord.objects.filter(clarification=queued[1])
    assert (record.channel, record.answer_index) == ("email", 2)


def test_email_settings_and_a_server_that_is_down(settings, submit, people):
    assert email_config("smtp://user:pass@mail.acme.test:587?tls=1") == {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "mail.acme.test",
        "EMAIL_PORT": 587,
        "EMAIL_HOST_USER": "user",
        "EMAIL_HOST_PASSWORD": "pass",
        "EMAIL_FILE_PATH": "",
        "EMAIL_USE_TLS": True,
    }
    assert email_config("consolemail://")["EMAIL_BACKEND"].endswith("console.EmailBackend")
    settings.EMAIL_URL = f"smtp://127.0.0.1:{closed_port()}"
    for name, value in email_config(settings.EMAIL_URL).items():
        setattr(settings, name, value)
    from delivery.cards import build_card

    clar = submit(links=[("AUTHORED_BY", "alice")])
    with pytest.raises(DeliveryError) as failed:
        send(question_message("alice@acme.test", build_card(clar, "n" * 32, "")))
    assert failed.value.retryable


def test_a_steward_reached_by_email_gets_the_redacted_escalation(mailbox, settings, submit):
    settings.CLARIFY_CHANNELS = ["email"]
    clar = submit(links=[("AUTHORED_BY", "olga")])  # finance only: may not read the source
    run_worker()
    message = only_message(mailbox, "sam@acme.test")
    assert subject(message) == "Steward review: Master services agreement"
    text, html = parts(message)
    review = f"/admin/clarify/clarification/{clar.pk}/change/"
    for part in (text, html):
        assert SPAN_TEXT not in part
        assert "NO_READ_PERMISSION" in part and review in part
        assert links_of(part) == []
    [row] = deliveries(clar, kind=DeliveryKind.ESCALATION)
    assert (row.channel, row.status, row.redacted) == ("email", DeliveryStatus.SENT, True)


def test_a_link_signed_out_offers_the_tenants_single_sign_on_back_to_it(mailbox, submit):
    from identity.models import SsoProvider

    clar = submit(links=[("AUTHORED_BY", "alice")])
    SsoProvider.objects.create(
        tenant=clar.tenant, issuer="https://idp.acme.test", client_id="c", client_secret="s"
    )
    run_worker()
    link = path_of(links_of(parts(only_message(mailbox, "alice@acme.test"))[0])[0])
    browser = Client()
    to_login = browser.get(link)["Location"]
    page = browser.get(to_login).content.decode()
    assert f'href="/sso/acme/login/?next={link.replace("/", "%2F")}"' in page


def test_a_hostile_title_is_escaped_in_html_and_cannot_add_a_header(mailbox, submit):
    submit(links=[("AUTHORED_BY", "alice")], title='<img src=x onerror="go()">\nBcc: eve@evil.test')
    run_worker()
    [(rcpt, message)] = mailbox.take()
    assert rcpt == ["alice@acme.test"] and message["Bcc"] is None
    assert "\n" not in subject(message)
    text, html = parts(message)
    assert "<img" not in html and "&lt;img src=x onerror=&quot;go()&quot;&gt;" in html
    assert '<img src=x onerror="go()">' in text  # plain text is not markup


def test_a_reminder_and_a_delegate_s_question_by_email(mailbox, submit, people, clarify_settings):
    """Reminders (issue 32 item 2) on the email channel: the same links (same nonce) again,
    marked; and a delegate asked by email on an away person's behalf (item 3)."""
    from tenancy.services import person_away_set

    from .test_reminders import reminders_due

    clarify_settings(REMINDER_AFTER_HOURS=2.0)
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    first = only_message(mailbox, "alice@acme.test")
    assert reminders_due() == 1
    again = only_message(mailbox, "alice@acme.test")
    assert "Reminder" in subject(again) or "Reminder:" in parts(again)[0]
    assert links_of(parts(again)[0]) == links_of(parts(first)[0])
    assert [row.reminded_at is not None for row in deliveries(clar)] == [True]
    until = timezone.now().date() + timedelta(days=2)
    person_away_set(person=people["alice"], until=until, delegate=people["bob"], by=None, via="t")
    submit(external_id="contracts/while-away.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    delegated = only_message(mailbox, "bob@acme.test")
    assert "on behalf of Alice Author" in parts(delegated)[0]
