"""The steward's browser journey, driven by Playwright in Debian's headless Chromium: sign
in, open the Needs-attention queue, open a conflicted clarification, resolve it by
override, and see the fact's new version; the upload, documents and digest pages too.
axe-core audits every page it shows (no serious or critical violation: tests/browser.py).
Screenshots go to a temporary folder (`make screenshots`: docs/screenshots/).

Chromium and Playwright come from tests/browser.py (Debian's Chromium, the pinned
Playwright; never a downloaded browser build); where they cannot be had, the test is
skipped with the reason.
"""

import re

import pytest

from clarify.models import Clarification, State
from graph.models import NodeVersion

from .conftest import JUN_2026, STEWARD_PASSWORD, submit_with

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_steward_resolves_a_conflicted_clarification_in_the_browser(
    browser, live_server, ingest_client, person_client, screenshots, a11y
):
    clar = submit_with(ingest_client, severity_hint="critical")
    alice, bob = person_client("alice"), person_client("bob")
    for client, index in ((alice, 1), (bob, 2)):
        resp = client.post(
            f"/v1/clarifications/{clar.pk}/answer", {"answerIndex": index}, format="json"
        )
        assert resp.status_code == 202, resp.content
    # A quieter one, which the queue must not list.
    quiet = submit_with(ingest_client, external_id="contracts/quiet.docx", name="Quiet term")
    clar.refresh_from_db()
    assert clar.state == State.CONFLICTED

    context = a11y.new_context(browser, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto(f"{live_server.url}/admin/login/?next=/admin/")
        a11y.check(page)
        page.fill("#id_username", "sam@acme.test")
        page.fill("#id_password", STEWARD_PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url(f"{live_server.url}/admin/")
        assert "Steward review" in page.content()
        a11y.check(page)

        page.click("text=Needs attention")
        page.wait_for_url(re.compile(r"/admin/clarify/clarification/\?attention=yes$"))
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == 1
        assert "MSA term" in rows.first.inner_text()
        assert "conflicted" in rows.first.inner_text()
        assert "Quiet term" not in page.content()
        a11y.check(page)
        page.screenshot(path=str(screenshots / "queue.png"), full_page=True)

        rows.first.locator("a", has_text="MSA term").click()
        page.wait_for_url(re.compile(rf"/admin/clarify/clarification/{clar.pk}/change/"))
        assert page.locator("h1", has_text="MSA term").count() == 1
        assert "Bind this answer" in page.content()
        timeline = page.locator("svg.fact-timeline")
        assert timeline.count() == 1 and timeline.is_visible()
        assert timeline.locator("g.version-pending").count() == 1  # the best guess
        box = timeline.locator("g.version-pending rect").bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0
        a11y.check(page)
        page.screenshot(path=str(screenshots / "decide.png"), full_page=True)

        page.select_option("select[name=answer_index]", "1")
        page.fill("input[name=reason]", "The countersigned copy is dated 12 June.")
        page.click("text=Bind this answer")
        page.wait_for_selector("text=Override recorded: bound.")
        bound_row = page.locator("tr.bound")
        assert bound_row.count() == 1
        assert "2026-06-12 00:00:00 UTC" in bound_row.inner_text()
        assert "steward_override" in bound_row.inner_text()
        # The picture: the superseded best guess above the bound correction, drawn left of
        # it (12 June is earlier in valid time than the guessed 1 October).
        superseded = page.locator("svg.fact-timeline g.version-superseded rect").bounding_box()
        corrected = page.locator("svg.fact-timeline g.version-bound rect").bounding_box()
        assert superseded is not None and corrected is not None
        assert corrected["y"] > superseded["y"] and corrected["x"] < superseded["x"]
        a11y.check(page)
        trail = page.locator("table.trail").inner_text()
        assert "steward override" in trail and "Sam Steward" in trail
        assert "{" not in trail and str(clar.pk) not in trail
        page.screenshot(path=str(screenshots / "after-override.png"), full_page=True)

        # The new version in the NodeVersion admin, too.
        page.goto(
            f"{live_server.url}/admin/graph/nodeversion/?evidence_class__exact=steward_override"
        )
        assert page.locator("#result_list tbody tr").count() == 1
        a11y.check(page)

        # The other pages of the steward's admin: upload (one heading), documents, digest.
        page.goto(f"{live_server.url}/admin/")
        a11y.check(page)
        page.click("text=Upload a document")
        page.wait_for_url(re.compile(r"/admin/ingest/document/upload/$"))
        assert page.locator("h1").all_inner_texts() == ["Upload a document"]
        a11y.check(page)
        for path in ("/admin/ingest/document/", "/admin/clarify/clarification/digest/"):
            page.goto(f"{live_server.url}{path}")
            a11y.check(page)
        a11y.done()
    finally:
        context.close()

    clar = Clarification.objects.get(pk=clar.pk)
    assert clar.state == State.ANSWERED and clar.binding.evidence_class == "steward_override"
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.evidence_class) == (JUN_2026, "steward_override")
    # ...and through the API.
    history = alice.get(f"/v1/nodes/{clar.target_id}/history").json()["records"]
    assert (history[-1]["validFrom"], history[-1]["evidenceClass"]) == (
        JUN_2026,
        "steward_override",
    )
    assert Clarification.objects.get(pk=quiet.pk).state == State.OPEN
    for name in ("queue.png", "decide.png", "after-override.png"):
        assert (screenshots / name).stat().st_size > 10_000, name
