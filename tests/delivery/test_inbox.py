"""The inbox channel: sign-in, the page of a person's open cards, the one-tap and
"Something else…" forms (CSRF-protected, same nonce and answer path), and escaping."""

import re

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from clarify.models import AuditEvent, BindingStatus, ResponseRecord, State
from delivery.models import Delivery, DeliveryStatus
from graph.models import NodeVersion

from .conftest import (
    JUN_2026,
    PASSWORD,
    SPAN_TEXT,
    day_us,
    deliveries,
    events,
    run_worker,
    snapshot_rows,
)

pytestmark = pytest.mark.usefixtures("inbox_only")


def signed_in(person, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    form = {"username": person.email, "password": PASSWORD}
    if csrf:
        form["csrfmiddlewaretoken"] = csrf_in(client.get("/accounts/login/").content.decode())
    resp = client.post("/accounts/login/", form)
    assert resp.status_code == 302, resp.content
    return client


def sections(page: str) -> dict[str, str]:
    """`{clarificationId: the card's HTML}` of an inbox page."""
    out = {}
    for match in re.finditer(
        r'<section class="card" data-clarification="([^"]+)">(.*?)</section>', page, re.S
    ):
        out[match.group(1)] = match.group(2)
    return out


def nonce_in(html: str) -> str:
    [nonce] = set(re.findall(r'name="nonce" value="([^"]+)"', html))
    return nonce


def csrf_in(html: str) -> str:
    return re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[0]


def page_of(client: Client) -> str:
    resp = client.get("/inbox/")
    assert resp.status_code == 200
    return resp.content.decode()


# --- sign-in ------------------------------------------------------------------------------


def test_sign_in_with_email_and_password_lands_on_the_inbox(people):
    people["alice"].user.set_password(PASSWORD)
    people["alice"].user.save()
    client = Client()
    resp = client.post("/accounts/login/", {"username": "alice@acme.test", "password": PASSWORD})
    assert resp.status_code == 302
    assert resp["Location"] == "/inbox/"
    page = page_of(client)
    assert "Your open questions" in page
    assert "alice@acme.test" in page
    # The steward's workspace-file password works too.
    steward = Client()
    assert (
        steward.post(
            "/accounts/login/", {"username": "sam@acme.test", "password": "steward-pass-1"}
        )["Location"]
        == "/inbox/"
    )


@pytest.mark.parametrize("password", ["", "x", PASSWORD, "!"])
def test_a_person_without_a_password_cannot_sign_in(people, password):
    assert not people["bob"].user.has_usable_password()
    client = Client()
    resp = client.post("/accounts/login/", {"username": "bob@acme.test", "password": password})
    assert resp.status_code == 200
    assert "_auth_user_id" not in client.session
    assert client.get("/inbox/").status_code == 302


def test_the_inbox_requires_sign_in(submit, with_passwords):
    clar = submit()
    run_worker()
    [d] = deliveries(clar)
    client = Client()
    resp = client.get("/inbox/")
    assert resp.status_code == 302
    assert resp["Location"] == "/accounts/login/?next=/inbox/"
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    resp = client.post(
        "/inbox/answer", {"clarification_id": str(clar.pk), "nonce": d.nonce, "answer_index": "1"}
    )
    assert resp.status_code == 302
    assert resp["Location"] == "/accounts/login/?next=/inbox/answer"
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before


# --- the page -----------------------------------------------------------------------------


def test_the_inbox_channel_reaches_only_people_who_can_sign_in(submit, people):
    # bob has no password, so no inbox address: skipped, alice (ranking[1]) is asked.
    people["alice"].user.set_password(PASSWORD)
    people["alice"].user.save()
    clar = submit(links=[("AUTHORED_BY", "bob"), ("MENTIONS", "alice")])
    run_worker()
    assert [e.detail["reason"] for e in events(clar, "skipped")] == ["NO_DELIVERY_ALIAS"]
    [d] = deliveries(clar)
    assert (d.person_id, d.channel, d.status) == (people["alice"].pk, "inbox", DeliveryStatus.SENT)
    assert d.message_ref == f"inbox:{people['alice'].pk}:{d.nonce}"


def test_the_inbox_lists_only_the_signed_in_persons_open_cards(submit, with_passwords):
    alice_q = submit(external_id="inbox/alice.docx", name="Alice term")
    bob_q = submit(
        external_id="inbox/bob.docx",
        name="Bob term",
        links=[("AUTHORED_BY", "bob"), ("MENTIONS", "alice")],
    )
    done_q = submit(external_id="inbox/done.docx", name="Done term")
    run_worker()
    alice = signed_in(with_passwords["alice"])
    cards = sections(page_of(alice))
    assert set(cards) == {str(alice_q.pk), str(done_q.pk)}
    card = cards[str(alice_q.pk)]
    assert re.findall(r'name="answer_index" value="(\d+)">([^<]+)</button>', card) == [
        ("0", "1 Oct 2026 (next quarter)"),
        ("1", "12 June (signature)"),
        ("2", "1 Jul 2026 (countersignature)"),
    ]
    assert "Something else…" in card
    assert 'type="date" name="valid_from"' in card and 'type="date" name="valid_to"' in card
    assert SPAN_TEXT in card
    assert "Alice term" in card and "Bob term" not in page_of(alice)
    assert nonce_in(card) == deliveries(alice_q)[0].nonce

    # Answered (here through the page) → no longer listed; bob sees only his own.
    resp = alice.post(
        "/inbox/answer",
        {
            "clarification_id": str(done_q.pk),
            "nonce": nonce_in(cards[str(done_q.pk)]),
            "answer_index": "1",
        },
    )
    assert resp.status_code == 302
    assert set(sections(page_of(alice))) == {str(alice_q.pk)}
    bob = signed_in(with_passwords["bob"])
    assert set(sections(page_of(bob))) == {str(bob_q.pk)}


def test_questions_carried_by_another_channel_appear_in_the_inbox(submit, channel, with_passwords):
    clar = submit()
    run_worker()
    assert deliveries(clar)[0].channel == "fake"
    cards = sections(page_of(signed_in(with_passwords["alice"])))
    assert list(cards) == [str(clar.pk)]
    assert nonce_in(cards[str(clar.pk)]) == channel.cards[0][1].nonce


def test_a_restricted_source_shows_no_excerpt_in_the_inbox(submit, with_passwords):
    clar = submit(restriction="privileged")
    run_worker()
    page = page_of(signed_in(with_passwords["alice"]))
    assert str(clar.pk) in page
    assert SPAN_TEXT not in page and 'class="excerpt"' not in page


def test_the_page_escapes_html_in_titles_names_and_labels(submit, with_passwords):
    clar = submit(
        title="<script>alert(1)</script>",
        name="<img src=x onerror=alert(2)>",
        candidates=[{"validFrom": JUN_2026, "validTo": None, "label": "<b>12 June</b>"}],
    )
    run_worker()
    page = page_of(signed_in(with_passwords["alice"]))
    assert str(clar.pk) in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "<b>12 June</b>" not in page and "&lt;b&gt;12 June&lt;/b&gt;" in page


# --- answering ----------------------------------------------------------------------------


def test_one_tap_binds_through_the_inbox(submit, with_passwords):
    clar = submit()
    run_worker()
    alice = signed_in(with_passwords["alice"])
    nonce = nonce_in(sections(page_of(alice))[str(clar.pk)])
    resp = alice.post(
        "/inbox/answer", {"clarification_id": str(clar.pk), "nonce": nonce, "answer_index": "1"}
    )
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.answer_index, record.binding_status) == (
        with_passwords["alice"].pk,
        "inbox",
        1,
        BindingStatus.BOUND,
    )
    assert record.message_ref == f"inbox:{nonce[:40]}"
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    page = page_of(alice)
    assert "✓ Recorded as evidence: 12 June (signature), confirmed by Alice" in page
    assert str(clar.pk) not in sections(page)


def test_something_else_binds_a_custom_interval(submit, with_passwords):
    clar = submit()
    run_worker()
    alice = signed_in(with_passwords["alice"])
    nonce = nonce_in(sections(page_of(alice))[str(clar.pk)])
    resp = alice.post(
        "/inbox/answer",
        {
            "clarification_id": str(clar.pk),
            "nonce": nonce,
            "valid_from": "2026-06-15",
            "valid_to": "2027-06-15",
            "source_text": "the side letter",
        },
    )
    assert resp.status_code == 302
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert record.answer_index is None
    assert (record.interval_from, record.interval_to) == (
        day_us("2026-06-15"),
        day_us("2027-06-15"),
    )
    assert record.answer_custom["sourceText"] == "the side letter"
    assert (record.channel, record.binding_status) == ("inbox", BindingStatus.BOUND)
    current = NodeVersion.objects.get(node_id=clar.target_id, tx_to__isnull=True)
    assert (current.valid_from, current.valid_to) == (day_us("2026-06-15"), day_us("2027-06-15"))
    assert "confirmed by Alice" in page_of(alice)


@pytest.mark.parametrize(
    ("form", "message"),
    [
        # The "Something else…" checks every channel shares (delivery.actions).
        (
            {"valid_from": "2027-06-15", "valid_to": "2026-06-15"},
            "The end date must be after the start date.",
        ),
        (
            {"valid_from": "2026-06-15", "valid_to": "2026-06-15"},
            "The end date must be after the start date.",
        ),
        ({"valid_from": "15/06/2026", "valid_to": ""}, "Dates must look like 2026-06-12."),
        ({"valid_from": "", "valid_to": ""}, "a start date is required"),
        ({"valid_from": "", "valid_to": "2027-06-15"}, "a start date is required"),
        (
            {"valid_from": "2026-06-15", "source_text": "x" * 2001},
            "at most 2000 characters",
        ),
        ({"answer_index": "7"}, "answerIndex 7 is not a candidate."),
        ({"answer_index": "one"}, "is not a candidate"),
    ],
)
def test_an_invalid_answer_shows_an_error_and_writes_nothing(submit, with_passwords, form, message):
    clar = submit()
    run_worker()
    alice = signed_in(with_passwords["alice"])
    nonce = nonce_in(sections(page_of(alice))[str(clar.pk)])
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    resp = alice.post("/inbox/answer", {"clarification_id": str(clar.pk), "nonce": nonce, **form})
    assert resp.status_code == 302
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before
    page = page_of(alice)
    assert 'class="msg error"' in page and message in page
    assert str(clar.pk) in sections(page)  # still open


def test_the_answer_form_is_csrf_protected(submit, with_passwords):
    clar = submit()
    run_worker()
    alice = signed_in(with_passwords["alice"], csrf=True)
    page = page_of(alice)
    nonce = nonce_in(sections(page)[str(clar.pk)])
    form = {"clarification_id": str(clar.pk), "nonce": nonce, "answer_index": "1"}
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()

    resp = alice.post("/inbox/answer", form)
    assert resp.status_code == 403
    resp = alice.post("/inbox/answer", {**form, "csrfmiddlewaretoken": "x" * 64})
    assert resp.status_code == 403
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before

    resp = alice.post("/inbox/answer", {**form, "csrfmiddlewaretoken": csrf_in(page)})
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert record.channel == "inbox"


def test_the_login_form_is_csrf_protected(with_passwords):
    client = Client(enforce_csrf_checks=True)
    resp = client.post("/accounts/login/", {"username": "alice@acme.test", "password": PASSWORD})
    assert resp.status_code == 403
    page = client.get("/accounts/login/").content.decode()
    resp = client.post(
        "/accounts/login/",
        {"username": "alice@acme.test", "password": PASSWORD, "csrfmiddlewaretoken": csrf_in(page)},
    )
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")


def test_another_persons_nonce_is_dropped(submit, with_passwords):
    alice_p, bob_p = with_passwords["alice"], with_passwords["bob"]
    clar = submit()
    run_worker()
    [d] = deliveries(clar)
    assert d.person_id == alice_p.pk
    bob = signed_in(bob_p)
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    resp = bob.post(
        "/inbox/answer", {"clarification_id": str(clar.pk), "nonce": d.nonce, "answer_index": "1"}
    )
    assert resp.status_code == 302
    assert snapshot_rows() == before
    [dropped] = AuditEvent.objects.order_by("id")[events_before:]
    assert (dropped.type, dropped.detail["reason"]) == ("card_action_dropped", "NOT_RECIPIENT")
    assert dropped.detail["identity"] == f"user:{bob_p.user.pk}"
    page = page_of(bob)
    assert "This card can no longer be used." in page
    assert str(clar.pk) not in page
    assert Delivery.objects.get(pk=d.pk).nonce_state == "active"


# --- a tap after the session expired (issue 28 item 6) --------------------------------------


def expire_sessions() -> None:
    """Every session ends, as when it expires: the browser still sends its cookies (the
    session's, no longer known, and the CSRF token's, still valid)."""
    Session.objects.all().delete()


def sign_in_again(client: Client, person) -> str:
    """The sign-in form posted as the login page shows it after the redirect; where it
    sends the browser."""
    page = client.get("/accounts/login/?next=/inbox/answer").content.decode()
    assert 'name="next" value="/inbox/answer"' in page
    resp = client.post(
        "/accounts/login/",
        {
            "username": person.email,
            "password": PASSWORD,
            "next": "/inbox/answer",
            "csrfmiddlewaretoken": csrf_in(page),
        },
    )
    assert resp.status_code == 302, resp.content
    return resp["Location"]


def expired_tap(submit, person, form: dict[str, str]) -> tuple[Client, object, str]:
    """Alice's inbox open, her session expired, then a tap on her card: the tap is kept
    and she is sent to sign in; nothing written. The client, clarification and nonce."""
    clar = submit()
    run_worker()
    client = signed_in(person, csrf=True)
    page = page_of(client)
    nonce = nonce_in(sections(page)[str(clar.pk)])
    expire_sessions()
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    resp = client.post(
        "/inbox/answer",
        {"clarification_id": str(clar.pk), "nonce": nonce, "csrfmiddlewaretoken": csrf_in(page)}
        | form,
    )
    assert (resp.status_code, resp["Location"]) == (302, "/accounts/login/?next=/inbox/answer")
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before
    return client, clar, nonce


def test_a_tap_after_the_session_expired_waits_at_its_card_to_be_confirmed(submit, with_passwords):
    alice_p = with_passwords["alice"]
    client, clar, nonce = expired_tap(submit, alice_p, {"answer_index": "1"})
    assert sign_in_again(client, alice_p) == "/inbox/answer"

    before = snapshot_rows()
    resp = client.get("/inbox/answer")  # where sign-in lands: never a 405
    assert resp.status_code == 200
    page = resp.content.decode()
    assert "Confirm your answer" in page and "nothing is recorded yet" in page
    card = sections(page)[str(clar.pk)]
    assert "When does “MSA term” take effect?" in card and SPAN_TEXT in card
    assert 'Your answer: <strong class="choice">12 June (signature)</strong>' in card
    assert nonce_in(card) == nonce
    assert 'name="answer_index" value="1"' in card
    assert snapshot_rows() == before  # a GET never answers

    # Confirmed: the one tap pipeline records it as Alice's inbox answer.
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', card))
    resp = client.post("/inbox/answer", {**fields, "csrfmiddlewaretoken": csrf_in(page)})
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.answer_index) == (alice_p.pk, "inbox", 1)
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    assert 'class="msg success"' in page_of(client)
    # Kept once: the confirmation page is gone, the inbox is where /inbox/answer leads.
    resp = client.get("/inbox/answer")
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")


def test_a_something_else_tap_is_kept_across_sign_in_too(submit, with_passwords):
    alice_p = with_passwords["alice"]
    form = {
        "answer_index": "",
        "valid_from": "2026-06-15",
        "valid_to": "",
        "source_text": "the side letter",
    }
    client, clar, _ = expired_tap(submit, alice_p, form)
    sign_in_again(client, alice_p)
    page = client.get("/inbox/answer").content.decode()
    card = sections(page)[str(clar.pk)]
    assert "Something else: 2026-06-15 → open-ended" in card
    assert "the side letter" in card
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', card))
    client.post("/inbox/answer", {**fields, "csrfmiddlewaretoken": csrf_in(page)})
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.answer_index, record.interval_from, record.interval_to) == (
        None,
        day_us("2026-06-15"),
        None,
    )
    assert record.answer_custom["sourceText"] == "the side letter"


def test_a_kept_tap_is_shown_to_nobody_but_its_recipient(submit, with_passwords):
    alice_p, bob_p = with_passwords["alice"], with_passwords["bob"]
    client, clar, _ = expired_tap(submit, alice_p, {"answer_index": "1"})
    assert sign_in_again(client, bob_p) == "/inbox/answer"  # someone else signs in
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    resp = client.get("/inbox/answer")
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    page = page_of(client)
    assert "was not recorded: that card is no longer open to you" in page
    assert str(clar.pk) not in page and SPAN_TEXT not in page
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before


def test_a_kept_tap_on_a_card_that_moved_on_is_not_offered(submit, with_passwords, person_client):
    alice_p = with_passwords["alice"]
    client, clar, _ = expired_tap(submit, alice_p, {"answer_index": "1"})
    resp = person_client("bob").post(
        f"/v1/clarifications/{clar.pk}/answer", {"answerIndex": 0}, format="json"
    )
    assert resp.status_code == 200  # answered meanwhile: Alice's card closed
    sign_in_again(client, alice_p)
    before = snapshot_rows()
    resp = client.get("/inbox/answer")
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    assert "that card is no longer open to you" in page_of(client)
    assert snapshot_rows() == before


def test_get_on_the_answer_address_with_nothing_kept_is_the_inbox(with_passwords):
    client = signed_in(with_passwords["alice"])
    resp = client.get("/inbox/answer")
    assert (resp.status_code, resp["Location"]) == (302, "/inbox/")
    resp = Client().get("/inbox/answer")
    assert (resp.status_code, resp["Location"]) == (302, "/accounts/login/?next=/inbox/answer")


# --- how an outcome is shown -------------------------------------------------------------


def test_a_stale_cards_conflicting_answer_is_a_warning_not_a_success(
    submit, with_passwords, person_client
):
    clar = submit()
    run_worker()
    alice = signed_in(with_passwords["alice"])
    nonce = nonce_in(sections(page_of(alice))[str(clar.pk)])  # her page, now stale
    resp = person_client("bob").post(
        f"/v1/clarifications/{clar.pk}/answer", {"answerIndex": 1}, format="json"
    )
    assert resp.status_code == 200
    alice.post(
        "/inbox/answer", {"clarification_id": str(clar.pk), "nonce": nonce, "answer_index": "0"}
    )
    page = page_of(alice)
    [shown] = re.findall(r'<div class="msg (\w+)">([^<]*)</div>', page)
    assert shown[0] == "warning", shown
    assert "conflicting attestation" in shown[1]
    late = ResponseRecord.objects.get(clarification=clar, responder=with_passwords["alice"].pk)
    assert late.binding_status == BindingStatus.CONFLICTING


def test_a_first_confirmation_of_two_is_information(submit, with_passwords):
    clar = submit(severity_hint="critical")
    run_worker()
    [d] = deliveries(clar)
    person = next(p for p in with_passwords.values() if p.pk == d.person_id)
    client = signed_in(person)
    nonce = nonce_in(sections(page_of(client))[str(clar.pk)])
    client.post(
        "/inbox/answer", {"clarification_id": str(clar.pk), "nonce": nonce, "answer_index": "1"}
    )
    [shown] = re.findall(r'<div class="msg (\w+)">([^<]*)</div>', page_of(client))
    assert shown[0] == "info" and shown[1].startswith("First confirmation recorded"), shown


def test_the_sign_in_page_is_one_card_with_both_ways_to_sign_in():
    page = Client().get("/accounts/login/?next=/inbox/answer").content.decode()
    assert page.count('class="card') == 1
    card = page.split('<section class="card signin">', 1)[1].split("</section>", 1)[0]
    assert "<h1>Sign in</h1>" in card
    assert '<form method="post" class="login">' in card  # email and password
    assert '<form method="get" class="sso-choice">' in card  # single sign-on
    assert 'name="next" value="/inbox/answer"' in card
