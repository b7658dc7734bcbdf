"""The inbox in Debian's headless Chromium (tests/browser.py): a tap made after the
session expired survives the sign-in it leads to (issue 28 item 6); the card's document
link opens the passage for the person asked (item 7); the sign-in page is one card, and
axe-core audits every page shown (item 8)."""

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


def sign_in(page, person, a11y) -> None:
    """The sign-in page (audited, and one card: both ways to sign in inside it) filled in."""
    a11y.check(page)
    card = page.locator("section.card.signin")
    assert card.count() == 1
    box = card.bounding_box()
    for part in ("h1", "form.login", "form.sso-choice", "#id_tenant"):
        inner = card.locator(part).bounding_box()
        assert inner is not None and box is not None, part
        assert box["x"] <= inner["x"] and inner["x"] + inner["width"] <= box["x"] + box["width"]
        assert box["y"] <= inner["y"] and inner["y"] + inner["height"] <= box["y"] + box["height"]
    page.fill("#id_username", person.email)
    page.fill("#id_password", PASSWORD)
    page.locator("form.login [type=submit]").click()


def test_a_tap_after_the_session_expired_is_confirmed_after_sign_in(
    browser, live_server, submit, with_passwords, screenshots, a11y
):
    alice = with_passwords["alice"]
    clar = submit()
    assert run_worker() >= 1
    statuses: list[int] = []
    context = a11y.new_context(browser, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("response", lambda r: statuses.append(r.status))
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.screenshot(path=str(screenshots / "sign-in.png"), full_page=True)
        sign_in(page, alice, a11y)
        page.wait_for_url(f"{live_server.url}/inbox/")
        card = page.locator(f'section.card[data-clarification="{clar.pk}"]')
        assert SPAN_TEXT in card.inner_text()
        a11y.check(page)

        Session.objects.all().delete()  # the session expires while the page is open
        card.get_by_role("button", name="12 June (signature)").click()
        page.wait_for_url(re.compile(r"/accounts/login/\?next=/inbox/answer$"))
        assert not ResponseRecord.objects.filter(clarification=clar).exists()

        sign_in(page, alice, a11y)
        page.wait_for_url(f"{live_server.url}/inbox/answer")
        assert page.locator("h1").inner_text() == "Confirm your answer"
        kept = page.locator(f'section.card[data-clarification="{clar.pk}"]')
        assert kept.locator(".choice").inner_text() == "12 June (signature)"
        assert not ResponseRecord.objects.filter(clarification=clar).exists()
        a11y.check(page)
        page.screenshot(path=str(screenshots / "confirm-after-sign-in.png"), full_page=True)

        kept.get_by_role("button", name="Confirm: 12 June (signature)").click()
        page.wait_for_url(f"{live_server.url}/inbox/")
        message = page.locator(".msg.success")
        assert message.inner_text().startswith("✓ Recorded as evidence: 12 June (signature)")
        a11y.check(page)
        a11y.done()
    finally:
        context.close()
    assert 405 not in statuses and all(s < 400 for s in statuses), statuses
    [record] = ResponseRecord.objects.filter(clarification=clar)
    assert (record.responder, record.channel, record.answer_index) == (alice.pk, "inbox", 1)
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED


def test_the_cards_document_link_opens_the_passage_for_the_person_asked(
    browser, live_server, submit, with_passwords, screenshots, a11y
):
    vera = with_passwords["vera"]  # a viewer: the steward admin is not hers to enter
    clar = submit(links=[("AUTHORED_BY", "vera")])
    assert run_worker() >= 1
    context = a11y.new_context(browser, viewport={"width": 1100, "height": 700})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        sign_in(page, vera, a11y)
        page.wait_for_url(f"{live_server.url}/inbox/")
        a11y.check(page)
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
        a11y.check(page)
        page.screenshot(path=str(screenshots / "document.png"), full_page=True)
        a11y.done()
    finally:
        context.close()
