"""The README's walkthrough, driven in Debian's headless Chromium on the demo workspace:
what `make run` shows, and the screenshots the README links (`make screenshots`).

The demo is loaded (`demo_setup`, as `make run` does) and the delivery worker runs once;
then Alice signs in to the inbox, sees the demo questions and taps an answer on the NDA's
relative-date card (normal severity: one tap binds); Sarah, the steward, signs in to the
admin, opens the Needs-attention queue and the answered clarification's page with the bound
version; finally `POST /v1/query` shows the bound interval with no pending caveat.
axe-core audits every page the walk shows (no serious or critical violation).

The screenshots go to a temporary folder; `make screenshots` writes them to
docs/screenshots/ instead (tests/browser.py). Chromium and Playwright come from
tests/browser.py (Debian's /usr/bin/chromium, the pinned Playwright; never a downloaded
browser build), and the test is skipped with the reason where they cannot be had.
"""

import json
import re
import urllib.request
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command

from clarify.models import Clarification, State
from common.times import to_us
from jobs.tasks import work
from tenancy.models import Person
from tenancy.services import api_key_create

ALICE = ("alice@acme.test", "demo-alice-2026")
SARAH = ("sarah@acme.test", "demo-sarah-2026")
NDA_TITLE = "Mutual NDA — Acme / Initech"
NDA_FACT = f"{NDA_TITLE} — effective period"
# "signed … on 3 March 2026 … apply from the start of next month": the reading Alice taps.
NDA_ANSWER = "1 April 2026 (start of next month after signature)"
APR_2026 = to_us(datetime(2026, 4, 1, tzinfo=UTC))

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def run_delivery_worker() -> int:
    """One pass of the delivery worker. As in tests/delivery/conftest.py, the per-loop
    connection recycling is off: inside the test it would close the test's connection."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work("clarify:temporal", max_seconds=10)


def query(base_url: str, key: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """`POST /v1/query` over HTTP against the live server."""
    request = urllib.request.Request(
        f"{base_url}/v1/query",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=15) as resp:
        assert resp.status == 200
        return json.load(resp)["records"]


def nda_record(base_url: str, key: str) -> dict[str, Any]:
    records = query(base_url, key, {"text": "Initech"})
    [record] = [r for r in records if r["properties"].get("name") == NDA_FACT]
    return record


def sign_in(page: Any, url: str, email: str, password: str, a11y: Any) -> None:
    page.goto(url)
    a11y.check(page)
    page.fill("#id_username", email)
    page.fill("#id_password", password)
    # The password form (the sign-in page also has a single sign-on form above it).
    page.locator("form:has(#id_password) [type=submit]").click()


def test_walkthrough_on_the_demo_workspace(browser, live_server, settings, screenshots, a11y):
    # Only the built-in inbox: no chat credentials are configured for the demo.
    settings.CLARIFY_CHANNELS = ["inbox"]
    call_command("demo_setup")
    assert run_delivery_worker() > 0

    alice = Person.objects.get(email=ALICE[0])
    _, alice_key = api_key_create(tenant=alice.tenant, person=alice)
    before = nda_record(live_server.url, alice_key)
    assert before["evidenceClass"] == "system_extraction"
    assert before["pendingClarification"]["state"] == "open"
    clar = Clarification.objects.get(pk=before["pendingClarification"]["id"])
    assert (clar.kind, clar.severity) == ("relative_date", "normal")

    # --- Alice answers in her inbox ---------------------------------------------------
    context = a11y.new_context(browser, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        sign_in(page, f"{live_server.url}/accounts/login/", *ALICE, a11y)
        page.wait_for_url(f"{live_server.url}/inbox/")
        cards = page.locator("section.card")
        titles = cards.locator("h2").all_inner_texts()
        assert len(titles) >= 3, titles
        assert any(NDA_FACT in t for t in titles), titles
        assert any("Master services agreement" in t for t in titles), titles
        a11y.check(page)
        page.screenshot(path=str(screenshots / "inbox.png"), full_page=True)

        nda_card = page.locator(f'section.card[data-clarification="{clar.pk}"]')
        assert NDA_FACT in nda_card.locator("h2").inner_text()
        nda_card.get_by_role("button", name=NDA_ANSWER).click()
        message = page.locator(".msg.success")
        message.wait_for()
        assert message.inner_text().startswith(
            f"✓ Recorded as evidence: {NDA_ANSWER}, confirmed by Alice"
        ), message.inner_text()
        # The answered card has left the inbox; the others are still there.
        assert page.locator(f'section.card[data-clarification="{clar.pk}"]').count() == 0
        assert page.locator("section.card").count() == len(titles) - 1
        a11y.check(page)
        page.screenshot(path=str(screenshots / "answered.png"), full_page=True)
    finally:
        context.close()

    clar.refresh_from_db()
    assert clar.state == State.ANSWERED

    # --- Sarah reviews in the steward admin ---------------------------------------------
    context = a11y.new_context(browser, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        sign_in(page, f"{live_server.url}/admin/login/?next=/admin/", *SARAH, a11y)
        page.wait_for_url(f"{live_server.url}/admin/")
        assert "Steward review" in page.content()
        a11y.check(page)

        page.click("text=Needs attention")
        page.wait_for_url(re.compile(r"/admin/clarify/clarification/\?attention=yes$"))
        rows = page.locator("#result_list tbody tr")
        queue = rows.all_inner_texts()
        assert queue, "the demo's critical signature conflicts need the steward"
        assert all("critical" in row for row in queue), queue
        assert not any(NDA_FACT in row for row in queue), queue
        a11y.check(page)
        page.screenshot(path=str(screenshots / "steward-queue.png"), full_page=True)

        page.goto(f"{live_server.url}/admin/clarify/clarification/?state__exact=answered")
        a11y.check(page)
        page.locator("#result_list a", has_text=NDA_FACT).click()
        page.wait_for_url(re.compile(rf"/admin/clarify/clarification/{clar.pk}/change/"))
        assert page.locator("h1", has_text=NDA_FACT).count() == 1
        bound = page.locator("tr.bound")
        assert bound.count() == 1
        assert "human_clarification" in bound.inner_text()
        assert "bound by this clarification" in bound.inner_text()
        assert "2026-04-01" in bound.inner_text()
        assert "best guess (pending)" in page.content()  # the old belief stays readable
        responses = page.locator("section").filter(has=page.locator("h2", has_text="Responses"))
        assert "Alice Author" in responses.inner_text()
        a11y.check(page)
        page.screenshot(path=str(screenshots / "steward-decide.png"), full_page=True)
        a11y.done()
    finally:
        context.close()

    # --- and through the API --------------------------------------------------------------
    after = nda_record(live_server.url, alice_key)
    assert (after["validFrom"], after["validTo"]) == (APR_2026, None)
    assert after["pendingClarification"] is None
    assert after["evidenceClass"] == "human_clarification"
    assert after["confidence"] > before["confidence"]
    assert after["txFrom"] > before["txFrom"]
    assert after["provenance"]["clarification"] == str(clar.pk)
    for name in ("inbox.png", "answered.png", "steward-queue.png", "steward-decide.png"):
        assert (screenshots / name).stat().st_size > 10_000, name
