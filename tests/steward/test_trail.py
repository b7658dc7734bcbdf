"""The decide page for people (issue 28 item 8): the audit trail shows names and dates,
never raw JSON or ids; the badges are legible; the upload page has one heading; the
erase control is labelled."""

import re
import uuid

from clarify.admin import SEVERITY_COLOURS, STATE_COLOURS
from clarify.models import Clarification
from clarify.trail import ERASED, NOT_SHOWN, TrailNames, label
from common.times import iso

from .conftest import JUN_2026, change_url
from .test_admin import act, page

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def trail_of(html: str) -> str:
    return html.split("<h2>Audit trail</h2>", 1)[1].split("</section>", 1)[0]


def test_the_audit_trail_shows_names_and_dates_not_json_or_ids(conflicted, steward_client, people):
    clar = conflicted()
    act(steward_client, clar, action="override", answer_index="1", reason="Signed copy.")
    trail = trail_of(page(steward_client, change_url(clar)))
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>(.*?)</td></tr>", trail)
    assert len(rows) == clar.events.count() >= 8
    for at, _, _ in rows:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", at), at
    types = [t for _, t, _ in rows]
    assert "opened" in types and "state changed" in types and "steward override" in types
    assert not UUID.search(trail), UUID.search(trail)
    assert "{" not in trail and "&quot;" not in trail
    assert not re.search(r"(?<![\w-])1\d{15}(?![\w-])", trail)
    details = dict(
        (t, d) for _, t, d in rows if t in ("opened", "steward override", "conflict entered")
    )
    assert "ranking: Alice Author, Bob Named" in details["opened"]
    assert re.search(r"quorum policy: [^<]*required confirmations: 2", details["opened"])
    assert "responder: Sam Steward" in details["steward override"]
    assert iso(JUN_2026) in details["conflict entered"]  # an interval's start, as a date
    assert "by: Sam Steward" in trail


def test_people_erased_and_unknown_ids_are_not_shown_as_ids(conflicted, people):
    clar = Clarification.objects.get(pk=conflicted().pk)
    alice, bob = people["alice"], people["bob"]
    gone = uuid.uuid4()
    response = clar.responses.get(responder=bob.pk)
    events = [{"detail": {"by": str(alice.pk), "ranking": [str(bob.pk), str(gone)]}}]
    events.append({"detail": {"responseId": str(response.pk), "claimed": str(uuid.uuid4())}})
    names = TrailNames(clar, events)
    assert names.value("ranking", [str(bob.pk), str(gone)]) == f"Bob Named, {ERASED}"
    assert names.value("responseId", str(response.pk)) == f"#{response.seq} (Bob Named)"
    assert names.value("claimed", str(uuid.uuid4())) == NOT_SHOWN
    assert names.value("pending", False) == "no"
    assert names.value("validTo", None) == "—"
    assert names.value("skipReasons", []) == "none"
    assert names.value("reason", "NO_READ_PERMISSION") == "NO_READ_PERMISSION"
    assert names.value("at", JUN_2026) == iso(JUN_2026)
    assert names.value("job", 42) == "42"
    assert [label(k) for k in ("bindingStatus", "responseId", "skip_reasons", "by")] == [
        "binding status",
        "response",
        "skip reasons",
        "by",
    ]


def _contrast_with_white(colour: str) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)


def test_every_badge_is_legible_white_on_its_colour():
    for colour in [*STATE_COLOURS.values(), *SEVERITY_COLOURS.values()]:
        assert _contrast_with_white(colour) >= 4.5, colour  # WCAG AA, small text
    assert _contrast_with_white("#16a34a") < 4.5  # the check can fail: the old green did


def test_the_upload_page_has_one_heading_and_the_erase_control_a_label(conflicted, steward_client):
    upload = page(steward_client, "/admin/ingest/document/upload/")
    assert upload.count("<h1") == 1
    decide = page(steward_client, change_url(conflicted()))
    assert '<label for="erase_person_id">Person</label>' in decide
    assert '<select name="person_id" id="erase_person_id">' in decide
