"""The inbox in Debian's headless Chromium (tests/browser.py): a tap made after the
session expired survives the sign-in it leads to (issue 28 item 6)."""

import re

import pytest
from django.contrib.sessions.models import Session

from clarify.models import ResponseRecord, State

from .conftest import PASSWORD, SPAN_TEXT, run_worker

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("inbox_only"),
]


def sign_in(page, person) -> None:
    page.fill("#id_username", person.email)
    page.fill("#id_password", PASSWORD)
    page.locator("form.login [type=submit]").click()


def test_a_tap_after_the_session_expired_is_confirmed_after_sign_in(
    browser, live_server, submit, with_passwords, screenshots
):
    alice = with_passwords["alice"]
    clar = submit()
    assert run_worker() >= 1
    statuses: list[int] = []
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("response", lambda r: statuses.append(r.status))
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        sign_in(page, alice)
        page.wait_for_url(f"{live_server.url}/inbox/")
        card = page.locator(f'section.card[data-clarification="{clar.pk}"]')
        assert SPAN_TEXT in card.inner_text()

        Session.objects.all().delete()  # the session expires while the page is open
        card.get_by_role("button", name="12 June (signature)").click()
        page.wait_for_url(re.compile(r"/accounts/login/\?next=/inbox/answer$"))
        assert not ResponseRecord.objects.filter(clarification=clar).exists()

        sign_in(page, alice)
        page.wait_for_url(f"{live_server.url}/inbox/answer")
        assert page.locator("h1").inner_text() == "Confirm your answer"
        kept = page.locator(f'section.card[data-clarification="{clar.pk}"]')
        assert kept.locator(".choice").inner_text() == "12 June (signature)"
        assert not ResponseRecord.objects.filter(clarification=clar).exists()
        page.screenshot(path=str(screenshots / "confirm-after-sign-in.png"), full_page=True)

        kept.get_by_role("button", name="Confirm: 12 June (signature)").click()
        page.wait_for_url(f"{live_server.url}/inbox/")
        message = page.locator(".msg.success")
        assert message.inner_text().startswith("✓ Recorded as evidence: 12 June (signature)")
    finally:
        context.close()
    assert 405 not in statuses and all(s < 400 for s in statuses), statuses
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.answer_index) == (alice.pk, "inbox", 1)
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED


def test_the_cards_document_link_opens_the_passage_for_the_person_asked(
    browser, live_server, submit, with_passwords, screenshots
):
    vera = with_passwords["vera"]  # a viewer: the steward admin is not hers to enter
    clar = submit(links=[("AUTHORED_BY", "vera")])
    assert run_worker() >= 1
    context = browser.new_context(viewport={"width": 1100, "height": 700})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        sign_in(page, vera)
        page.wait_for_url(f"{live_server.url}/inbox/")
        card = page.locator(f'section.card[data-clarification="{clar.pk}"]')
        card.get_by_role("link", name="Master services agreement").click()
        source_id = clar.source_version.source_id
        page.wait_for_url(
            f"{live_server.url}/inbox/documents/{source_id}/?clarification={clar.pk}#passage"
        )
        assert page.locator("h1").inner_text() == "Master services agreement"
        passage = page.locator("mark#passage")
        assert passage.inner_text() == SPAN_TEXT
        assert passage.is_visible()
        box, viewport = passage.bounding_box(), page.viewport_size
        assert box is not None and viewport is not None
        assert 0 <= box["y"] < viewport["height"]  # scrolled to
        page.screenshot(path=str(screenshots / "document.png"), full_page=True)
    finally:
        context.close()
