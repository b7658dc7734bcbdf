"""Text and Markdown detection rules (spec §14 v0.8 PR-061, docling addendum): front
matter, role dates, conflicting role dates, anchored relative phrases, undated documents,
yearless dates, people — table-driven, with tricky negatives — and `to_submission` (a
valid Submission; ambiguities only with the capability flag)."""

from datetime import UTC, date, datetime

import pytest

from ingest.api.serializers import SubmissionInSerializer
from ingest.detection.build import FileInput, UnsupportedFile, detect, to_submission
from ingest.detection.model import day_us
from ingest.detection.temporal import tag
from ingest.detection.text import (
    detect_text,
    front_matter,
    month_start_after,
    quarter_start_after,
    role_dates,
    rule_conflicting_roles,
    rule_relative_phrase,
    rule_undated,
    rule_yearless_date,
    written_dates,
)
from ingest.services import submission_plan

SEP_1 = date(2026, 9, 1)


def find_dates(text: str):
    """The written calendar dates of a text, as `detect_text` gives its rules."""
    return written_dates(tag(text))


def run(text: str, file_date: date | None = None, names: dict[str, str] | None = None):
    return detect_text(text, filename="doc.md", file_date=file_date, people_by_name=names)


def findings_of(text: str, file_date: date | None = None):
    return [
        (
            f.rule,
            f.node_key,
            f.kind,
            [(c.label, c.valid_from) for c in f.candidates],
            f.detector_confidence,
            f.applied_candidate_confidence,
        )
        for f in run(text, file_date).findings
    ]


# --- front matter -------------------------------------------------------------------------

FRONT_MATTER = [
    (
        "all-fields",
        "---\ntitle: MSA\nauthor: alice@acme.test\nowner: Olga Owner\ndate: 2026-06-01\n"
        "acl: [group:legal, email:bob@acme.test]\nrestriction: privileged\n---\nBody.\n",
        {
            "title": "MSA",
            "author": "alice@acme.test",
            "owner": "Olga Owner",
            "date": date(2026, 6, 1),
            "acl": ["group:legal", "email:bob@acme.test"],
            "restriction": "privileged",
        },
        "Body.\n",
    ),
    ("textual-date", "---\ndate: 12 June 2026\n---\nB", {"date": "12 June 2026"}, "B"),
    ("closing-at-eof", "---\ntitle: T\n---", {"title": "T"}, ""),
    ("trailing-spaces", "--- \ntitle: T\n---  \nB", {"title": "T"}, "B"),
    ("crlf-normalised-elsewhere", "---\ntitle: T\n---\n\nB", {"title": "T"}, "\nB"),
]


@pytest.mark.parametrize(
    ("text", "meta", "body"),
    [c[1:] for c in FRONT_MATTER],
    ids=[c[0] for c in FRONT_MATTER],
)
def test_front_matter_read(text, meta, body):
    got, got_body, offset = front_matter(text)
    assert got == meta
    assert got_body == body
    assert text[offset:] == body


BROKEN_FRONT_MATTER = [
    ("unparseable-yaml", "---\ntitle: [broken\n---\nSigned 12 June 2026."),
    ("impossible-yaml-date", "---\ndate: 2026-02-31\n---\nSigned 12 June 2026."),
    ("not-a-mapping", "---\n- a\n- b\n---\nSigned 12 June 2026."),
    ("scalar", "---\njust words\n---\nSigned 12 June 2026."),
    ("never-closed", "---\ntitle: T\nSigned 12 June 2026."),
    ("not-at-the-start", "Intro\n---\ntitle: T\n---\nSigned 12 June 2026."),
    ("horizontal-rule", "----\ntitle: T\n----\nSigned 12 June 2026."),
    ("closing-rule-not-alone", "---\ntitle: T\n--- more\nSigned 12 June 2026."),
]


@pytest.mark.parametrize(
    "text", [c[1] for c in BROKEN_FRONT_MATTER], ids=[c[0] for c in BROKEN_FRONT_MATTER]
)
def test_broken_front_matter_is_ignored_not_an_error(text):
    assert front_matter(text) == ({}, text, 0)
    detection = run(text)
    assert detection.title == "doc.md"
    assert detection.acl == [] and detection.restriction is None
    [made] = [f for f in detection.facts if f.key == "date"]
    assert made.valid_from == date(2026, 6, 12)  # the body is still read


def test_front_matter_shapes_the_detection():
    text = (
        "---\ntitle: Supplier terms\nauthor: [alice@acme.test, Bob Named]\nowner: Olga Owner\n"
        "date: 2026-05-10\nacl: group:legal, group:finance\nrestriction: privileged\n---\n"
        "Payable within 30 days of signature.\n"
    )
    detection = run(text, names={"bob named": "bob@acme.test", "olga owner": "olga@acme.test"})
    assert detection.title == "Supplier terms"
    assert detection.acl == ["group:legal", "group:finance"]  # a comma string works too
    assert detection.restriction == "privileged"
    assert detection.text == text  # the canonical text keeps the front matter
    people = {(edge, p.email, p.name) for _, edge, p in detection.people}
    assert people == {
        ("AUTHORED_BY", "alice@acme.test", ""),
        ("AUTHORED_BY", "bob@acme.test", "Bob Named"),
        ("OWNED_BY", "olga@acme.test", "Olga Owner"),
    }
    # The document date anchors the relative phrase; spans point into the full text.
    [finding] = detection.findings
    assert finding.candidates[0].valid_from == date(2026, 6, 9)
    start, end = finding.span
    assert text[start:end] == "within 30 days of signature"


# --- role dates ---------------------------------------------------------------------------

ROLES = [
    ("signed", "Signed on 12 June 2026.", {"signature": "12 June 2026"}),
    ("signature-word", "Signature: 2026-06-12", {"signature": "2026-06-12"}),
    ("executed", "Executed on 1 July 2026.", {"signature": "1 July 2026"}),
    ("signing", "Date of signing: 1 July 2026", {"signature": "1 July 2026"}),
    ("countersigned", "Countersigned on 13 June 2026", {"countersignature": "13 June 2026"}),
    ("counter-signed", "Counter-signed on 13 June 2026", {"countersignature": "13 June 2026"}),
    ("countersignature", "Countersignature: 14 June 2026", {"countersignature": "14 June 2026"}),
    ("effective", "The effective date is 2026-07-01.", {"effective": "2026-07-01"}),
    ("commencement", "Commencement date: 3 July 2026", {"commencement": "3 July 2026"}),
    ("commences", "Work commences on 3 July 2026.", {"commencement": "3 July 2026"}),
    (
        "both-in-one-sentence",
        "It was signed by Alice Author on 12 June 2026 and countersigned by Ahmed on\n"
        "19 June 2026.",
        {"signature": "12 June 2026", "countersignature": "19 June 2026"},
    ),
    ("wrapped-line", "This agreement was signed\non 12 June 2026.", {"signature": "12 June 2026"}),
    (
        "wrapped-with-indent",
        "The parties executed this agreement in London\n   on 2 March 2026.",
        {"signature": "2 March 2026"},
    ),
    (
        "nearest-wins-effective",
        "Signed and effective on 12 June 2026.",
        {"effective": "12 June 2026"},
    ),
    ("nearest-wins-signed", "Effective as signed on 12 June 2026.", {"signature": "12 June 2026"}),
    (
        "first-date-of-a-role-wins",
        "Signed on 12 June 2026. Signed again on 14 June 2026.",
        {"signature": "12 June 2026"},
    ),
    (
        "decimal-point-is-not-a-sentence-end",
        "Signed for a fee of 1.5 million on 12 June 2026.",
        {"signature": "12 June 2026"},
    ),
    ("other-sentence", "Signed in London. The meeting is on 12 June 2026.", {}),
    ("semicolon-ends-it", "Signed in London; the meeting is on 12 June 2026.", {}),
    ("blank-line-ends-it", "Signed:\n\n12 June 2026", {}),
    ("too-far", "Signing ceremony " + "x" * 90 + " 12 June 2026", {}),
    ("role-after-the-date", "On 12 June 2026 it was signed.", {}),
    ("designed-is-not-signed", "Designed on 12 June 2026.", {}),
    ("no-role", "The meeting is on 12 June 2026.", {}),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in ROLES], ids=[c[0] for c in ROLES])
def test_role_dates(text, expected):
    roles = role_dates(text, find_dates(text))
    assert {role: d.text for role, d in roles.items()} == expected


# --- conflicting dates --------------------------------------------------------------------

CONFLICTS = [
    (
        "signature-vs-countersignature",
        "Signed on 12 June 2026 and countersigned on 19 June 2026.",
        "date",
        [
            ("12 June (signature)", date(2026, 6, 12)),
            ("19 June (countersignature)", date(2026, 6, 19)),
        ],
    ),
    (
        "effective-vs-commencement",
        "The agreement is effective 1 July 2026; commencement on 3 July 2026.",
        "term",
        [("1 July (effective)", date(2026, 7, 1)), ("3 July (commencement)", date(2026, 7, 3))],
    ),
    (
        "iso-and-textual",
        "Executed 2026-06-12. Counter-signed June 19, 2026.",
        "date",
        [
            ("12 June (signature)", date(2026, 6, 12)),
            ("19 June (countersignature)", date(2026, 6, 19)),
        ],
    ),
    (
        "countersignature-first-in-text",
        "Countersigned on 19 June 2026, having been signed on 12 June 2026.",
        "date",
        [
            ("12 June (signature)", date(2026, 6, 12)),
            ("19 June (countersignature)", date(2026, 6, 19)),
        ],
    ),
    (
        "wrapped",
        "It was signed by Alice Author on 12 June 2026 and countersigned by Ahmed Editor on\n"
        "19 June 2026.",
        "date",
        [
            ("12 June (signature)", date(2026, 6, 12)),
            ("19 June (countersignature)", date(2026, 6, 19)),
        ],
    ),
]


@pytest.mark.parametrize(
    ("text", "node", "candidates"), [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS]
)
def test_conflicting_role_dates(text, node, candidates):
    [finding] = [f for f in run(text).findings if f.kind == "conflicting_dates"]
    assert finding.rule == "conflicting_roles"
    assert finding.node_key == node
    assert [(c.label, c.valid_from) for c in finding.candidates] == candidates
    assert (finding.detector_confidence, finding.applied_candidate_confidence) == (0.9, 0.5)
    for cand in finding.candidates:  # each candidate points at its own date
        assert text[cand.span[0] : cand.span[1]] in {d.text for d in find_dates(text)}
        assert cand.valid_to is None


def test_both_conflicts_in_one_document_land_on_two_facts():
    text = (
        "Signed on 12 June 2026 and countersigned on 19 June 2026. "
        "The agreement is effective 1 July 2026; commencement on 3 July 2026."
    )
    detection = run(text)
    assert sorted(f.node_key for f in detection.findings) == ["date", "term"]
    assert {f.key: f.valid_from for f in detection.facts} == {
        "term": date(2026, 7, 1),
        "date": date(2026, 6, 12),
    }


NO_CONFLICT = [
    ("same-date", "Signed on 12 June 2026 and countersigned on 12 June 2026."),
    ("same-date-two-forms", "Signed on 12 June 2026 and countersigned on 2026-06-12."),
    ("one-role-only", "Signed on 12 June 2026 and dispatched on 19 June 2026."),
    ("signature-vs-effective-is-no-pair", "Signed on 12 June 2026, effective 1 July 2026."),
]


@pytest.mark.parametrize("text", [c[1] for c in NO_CONFLICT], ids=[c[0] for c in NO_CONFLICT])
def test_no_conflict(text):
    assert [f for f in run(text).findings if f.kind == "conflicting_dates"] == []
    assert rule_conflicting_roles(text, role_dates(text, find_dates(text)), None, 0) == []


def test_yearless_role_dates_take_the_document_year():
    text = "---\ndate: 2026-05-01\n---\nSigned on 12th of June and countersigned on 19th of June."
    [finding] = run(text).findings
    assert [(c.label, c.valid_from) for c in finding.candidates] == [
        ("12 June (signature)", date(2026, 6, 12)),
        ("19 June (countersignature)", date(2026, 6, 19)),
    ]


# --- relative phrases ---------------------------------------------------------------------

SIGNED = "Signed on 12 June 2026. "
DOC_DATED = "---\ndate: 2026-05-10\n---\n"
RELATIVE = [
    # (id, text, file date, [(label, validFrom)], detector confidence)
    (
        "next-quarter-from-signature",
        SIGNED + "Services are effective next quarter.",
        None,
        [
            ("1 July 2026 (next quarter after signature)", date(2026, 7, 1)),
            ("1 October 2026 (the quarter after)", date(2026, 10, 1)),
        ],
        0.85,
    ),
    (
        "next-quarter-signature-and-document-date-differ",
        "---\ndate: 2026-03-20\n---\n" + SIGNED + "Services are effective next quarter.",
        None,
        [
            ("1 July 2026 (next quarter after signature)", date(2026, 7, 1)),
            ("1 April 2026 (next quarter after document date)", date(2026, 4, 1)),
            ("1 October 2026 (the quarter after)", date(2026, 10, 1)),
        ],
        0.85,
    ),
    (
        "next-quarter-from-document-date",
        DOC_DATED + "Services are effective next quarter.",
        None,
        [
            ("1 July 2026 (next quarter after document date)", date(2026, 7, 1)),
            ("1 October 2026 (the quarter after)", date(2026, 10, 1)),
        ],
        0.7,
    ),
    (
        "next-quarter-year-wrap",
        "---\ndate: 2026-11-15\n---\nPrices change from next quarter.",
        None,
        [
            ("1 January 2027 (next quarter after document date)", date(2027, 1, 1)),
            ("1 April 2027 (the quarter after)", date(2027, 4, 1)),
        ],
        0.7,
    ),
    (
        "starting-next-quarter-from-file-date",
        "The new rates apply starting next quarter.",
        SEP_1,
        [
            ("1 October 2026 (next quarter after file date)", date(2026, 10, 1)),
            ("1 January 2027 (the quarter after)", date(2027, 1, 1)),
        ],
        0.7,
    ),
    (
        "within-30-days-of-signature",
        "Payable within 30 days of signature. Signed on 1 July 2026.",
        None,
        [
            ("31 July 2026 (30 days after signature)", date(2026, 7, 31)),
            ("1 July 2026 (signature)", date(2026, 7, 1)),
        ],
        0.85,
    ),
    (
        "within-days-of-the-date-of-execution-document-date",
        DOC_DATED + "Deliver within 14 days of the date of execution.",
        None,
        [
            ("24 May 2026 (14 days after document date)", date(2026, 5, 24)),
            ("10 May 2026 (document date)", date(2026, 5, 10)),
        ],
        0.7,
    ),
    (
        "within-days-of-the-effective-date",
        SIGNED + "It is effective 1 July 2026. Notify within 10 days of the effective date.",
        None,
        [
            ("11 July 2026 (10 days after effective date)", date(2026, 7, 11)),
            ("1 July 2026 (effective date)", date(2026, 7, 1)),
        ],
        0.85,
    ),
    (
        "start-of-next-month-from-signature",
        "This NDA was signed on 3 March 2026. It applies from the start of next month.",
        None,
        [
            ("1 April 2026 (start of next month after signature)", date(2026, 4, 1)),
            ("3 March 2026 (signature)", date(2026, 3, 3)),
        ],
        0.85,
    ),
    (
        "first-day-of-next-month-december",
        "Applies from the first day of next month.",
        date(2026, 12, 15),
        [
            ("1 January 2027 (start of next month after file date)", date(2027, 1, 1)),
            ("15 December 2026 (file date)", date(2026, 12, 15)),
        ],
        0.7,
    ),
    (
        "document-date-beats-file-date",
        DOC_DATED + "Applies from the beginning of next month.",
        SEP_1,
        [
            ("1 June 2026 (start of next month after document date)", date(2026, 6, 1)),
            ("10 May 2026 (document date)", date(2026, 5, 10)),
        ],
        0.7,
    ),
    (
        "the-first-phrase-in-the-text-wins",
        SIGNED + "Fees apply from the start of next month; services are effective next quarter.",
        None,
        [
            ("1 July 2026 (start of next month after signature)", date(2026, 7, 1)),
            ("12 June 2026 (signature)", date(2026, 6, 12)),
        ],
        0.85,
    ),
]


@pytest.mark.parametrize(
    ("text", "file_date", "candidates", "detector"),
    [c[1:] for c in RELATIVE],
    ids=[c[0] for c in RELATIVE],
)
def test_relative_phrase(text, file_date, candidates, detector):
    [finding] = [f for f in run(text, file_date).findings if f.node_key == "term"]
    assert finding.kind == "relative_date"
    assert finding.rule.startswith("relative_phrase:")
    assert [(c.label, c.valid_from) for c in finding.candidates] == candidates
    assert finding.detector_confidence == detector
    assert finding.applied_candidate_confidence == 0.5
    phrase = text[finding.span[0] : finding.span[1]].lower()
    assert "next" in phrase or "within" in phrase


RELATIVE_NEGATIVES = [
    ("q3-results", SIGNED + "The Q3 results were strong."),
    ("q3-2026-results", SIGNED + "Our Q3 2026 results are in."),
    ("results-next-quarter", SIGNED + "We expect better results next quarter."),
    ("next-quarters-results", SIGNED + "Next quarter's results will be published."),
    ("next-month-without-from-the-start", SIGNED + "We meet next month."),
    ("within-days-of-delivery", SIGNED + "Payable within 30 days of delivery."),
]


@pytest.mark.parametrize(
    "text", [c[1] for c in RELATIVE_NEGATIVES], ids=[c[0] for c in RELATIVE_NEGATIVES]
)
def test_not_a_validity_phrase(text):
    assert [f for f in run(text, SEP_1).findings if f.kind == "relative_date"] == []


def test_a_relative_phrase_without_any_anchor_is_not_guessed():
    text = "Services are effective next quarter."
    roles = role_dates(text, find_dates(text))
    assert rule_relative_phrase(text, roles, None, 0, None) is None
    # …and such a document is then simply undated when it looks dated.
    [finding] = run("This agreement is effective next quarter.").findings
    assert finding.kind == "undated"


@pytest.mark.parametrize(
    ("day", "quarter", "month"),
    [
        (date(2026, 1, 1), date(2026, 4, 1), date(2026, 2, 1)),
        (date(2026, 3, 31), date(2026, 4, 1), date(2026, 4, 1)),
        (date(2026, 4, 1), date(2026, 7, 1), date(2026, 5, 1)),
        (date(2026, 9, 30), date(2026, 10, 1), date(2026, 10, 1)),
        (date(2026, 12, 31), date(2027, 1, 1), date(2027, 1, 1)),
    ],
    ids=["jan", "end-q1", "start-q2", "end-q3", "new-year"],
)
def test_calendar_arithmetic(day, quarter, month):
    assert quarter_start_after(day) == quarter
    assert month_start_after(day) == month


# --- undated ------------------------------------------------------------------------------

UNDATED = [
    ("agreement", "This Agreement is made between Acme and Initech.", True),
    ("memorandum", "MEMORANDUM OF UNDERSTANDING\n\nThe parties agree to negotiate.", True),
    ("policy", "Travel policy: economy class for flights under six hours.", True),
    ("lease", "The lease of the north warehouse.", True),
    ("licence", "This licence grants the right to use the software.", True),
    ("shopping-note", "Shopping list: eggs, milk, bread.", False),
    ("meeting-note", "Notes from the meeting: we talked about the roadmap.", False),
    ("q3-results-note", "Q3 results: revenue up 4%.", False),
]


@pytest.mark.parametrize(("text", "flagged"), [c[1:] for c in UNDATED], ids=[c[0] for c in UNDATED])
def test_undated(text, flagged):
    found = findings_of(text, SEP_1)
    if flagged:
        assert found == [
            ("undated", "term", "undated", [("1 September 2026 (file date)", SEP_1)], 0.75, 0.3)
        ]
    else:
        assert found == []


def test_undated_without_a_file_date_offers_a_dateless_candidate():
    [finding] = run("This Agreement is made between Acme and Initech.").findings
    assert finding.kind == "undated"
    assert [(c.label, c.valid_from, c.valid_to) for c in finding.candidates] == [
        ("no date found in the document", None, None)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "---\ndate: 2026-05-01\n---\nThis Agreement is made between Acme and Initech.",
        "This Agreement is made on 1 May 2026.",
        "This Agreement is made on the 1st of May.",  # yearless: a weak date, not undated
    ],
    ids=["front-matter-date", "dated-body", "yearless-body"],
)
def test_a_document_with_a_date_is_not_undated(text):
    assert all(f.kind != "undated" for f in run(text, SEP_1).findings)
    assert rule_undated(text, find_dates(text), text.startswith("---"), SEP_1) is None


# --- yearless dates (weak extraction) -----------------------------------------------------

YEARLESS = [
    (
        "ordinal-of-file-year",
        "Meeting on the 12th of June about the roadmap.",
        SEP_1,
        [("12 June 2026", date(2026, 6, 12)), ("12 June 2027", date(2027, 6, 12))],
    ),
    (
        "document-year",
        "---\ndate: 2025-01-05\n---\nThe review is due by March 3.",
        SEP_1,
        [("3 March 2025", date(2025, 3, 3)), ("3 March 2026", date(2026, 3, 3))],
    ),
    (
        "leap-day-only-in-leap-years",
        "---\ndate: 2028-01-05\n---\nReview on 29 February.",
        None,
        [("29 February 2028", date(2028, 2, 29))],
    ),
]


@pytest.mark.parametrize(
    ("text", "file_date", "candidates"), [c[1:] for c in YEARLESS], ids=[c[0] for c in YEARLESS]
)
def test_yearless_date_is_a_weak_extraction(text, file_date, candidates):
    [finding] = run(text, file_date).findings
    assert (finding.rule, finding.node_key, finding.kind) == (
        "yearless_date",
        "term",
        "low_confidence_extraction",
    )
    assert [(c.label, c.valid_from) for c in finding.candidates] == candidates
    assert (finding.detector_confidence, finding.applied_candidate_confidence) == (0.6, 0.4)


def test_a_yearless_signature_date_is_flagged_on_the_date_fact():
    text = "Signed on the 12th of June. Services are effective next quarter."
    detection = run(text, SEP_1)
    by_node = {f.node_key: f for f in detection.findings}
    assert by_node["date"].kind == "low_confidence_extraction"
    assert by_node["date"].candidates[0].valid_from == date(2026, 6, 12)
    assert by_node["term"].kind == "relative_date"  # anchored on the (weak) signature
    assert by_node["term"].candidates[0].valid_from == date(2026, 7, 1)


def test_a_dated_document_needs_no_year_guess():
    assert findings_of("Signed on 12 June 2026.", SEP_1) == []
    used = {0}
    dates = find_dates("12th of June")
    assert rule_yearless_date(dates, used, SEP_1, 0) is None


# --- people -------------------------------------------------------------------------------


def test_people_named_in_the_text():
    text = (
        "---\nauthor: alice@acme.test\nowner: Olga Owner\n---\n"
        "Signed by Bob Named on 12 June 2026, countersigned by Unknown Person.\n"
        "Questions to legal@acme.test.\n"
    )
    detection = run(text, names={"olga owner": "olga@acme.test", "bob named": "bob@acme.test"})
    assert {(fact, edge, p.name, p.email) for fact, edge, p in detection.people} == {
        ("*", "AUTHORED_BY", "", "alice@acme.test"),
        ("*", "OWNED_BY", "Olga Owner", "olga@acme.test"),
        ("*", "NAMES", "Bob Named", "bob@acme.test"),
        ("*", "NAMES", "Unknown Person", ""),
        ("*", "MENTIONS", "", "legal@acme.test"),
    }


# --- to_submission ------------------------------------------------------------------------

TEXT_FIXTURES = {
    "conflict": "Signed on 12 June 2026 and countersigned on 19 June 2026.",
    "both-conflicts": (
        "Signed on 12 June 2026 and countersigned on 19 June 2026. "
        "The agreement is effective 1 July 2026; commencement on 3 July 2026."
    ),
    "relative": (
        "---\ntitle: MSA\nauthor: alice@acme.test\nacl: [group:legal]\n---\n"
        "It was signed by Alice Author on 12 June 2026. Services are effective next quarter."
    ),
    "undated": "This Agreement is made between Acme and Initech.",
    "undated-no-file-date": "This Agreement is made between Acme and Initech.",
    "yearless": "Meeting on the 12th of June about the roadmap. Ask bob@acme.test.",
    "plain": "Shopping list: eggs, milk, bread.",
    "broken-front-matter": "---\ntitle: [oops\n---\nSigned on 12 June 2026.",
}


def submission_for(name: str, clarify: bool) -> dict:
    modified = None if name == "undated-no-file-date" else datetime(2026, 9, 1, tzinfo=UTC)
    detection = detect(
        FileInput(name=f"{name}.md", data=TEXT_FIXTURES[name].encode(), modified=modified)
    )
    return to_submission(detection, system="files", external_id=f"{name}.md", clarify=clarify)


def assert_valid_submission(data: dict) -> None:
    shape = SubmissionInSerializer(data=data)
    assert shape.is_valid(), shape.errors
    submission_plan(shape.validated_data)  # raises SubmissionInvalid on any bad reference


@pytest.mark.parametrize("name", list(TEXT_FIXTURES))
@pytest.mark.parametrize("clarify", [True, False], ids=["clarify", "no-clarify"])
def test_to_submission_is_a_valid_submission(name, clarify):
    assert_valid_submission(submission_for(name, clarify))


@pytest.mark.parametrize("name", list(TEXT_FIXTURES))
def test_ambiguities_only_with_the_capability_flag(name):
    on, off = submission_for(name, True), submission_for(name, False)
    assert off["ambiguities"] == []
    detection = detect(
        FileInput(
            name=f"{name}.md",
            data=TEXT_FIXTURES[name].encode(),
            modified=datetime(2026, 9, 1, tzinfo=UTC),
        )
    )
    if name != "undated-no-file-date":
        assert len(on["ambiguities"]) == len(detection.findings)
    # The facts, people and edges are the same either way.
    assert [n["key"] for n in on["nodes"]] == [n["key"] for n in off["nodes"]]
    assert on["edges"] == off["edges"]
    assert on["source"] == off["source"]


def test_to_submission_shape_of_a_conflict():
    data = submission_for("conflict", True)
    text = data["source"]["text"]
    assert data["source"] == {
        "system": "files",
        "externalId": "conflict.md",
        "title": "conflict.md",
        "uri": "",
        "text": text,
        "acl": [],
        "restriction": None,
    }
    [amb] = data["ambiguities"]
    node = data["nodes"][amb["nodeRef"]]
    assert node["key"] == "date" and node["labels"] == ["DOCUMENT_DATE"]
    assert node["validFrom"] == day_us(date(2026, 6, 12))
    assert amb["kind"] == "conflicting_dates"
    assert [(c["label"], c["validFrom"], c["validTo"]) for c in amb["candidates"]] == [
        ("12 June (signature)", day_us(date(2026, 6, 12)), None),
        ("19 June (countersignature)", day_us(date(2026, 6, 19)), None),
    ]
    assert (amb["detectorConfidence"], amb["appliedCandidateConfidence"]) == (0.9, 0.5)
    spans = [data["spans"][c["spanRef"]] for c in amb["candidates"]]
    assert [text[s["start"] : s["end"]] for s in spans] == ["12 June 2026", "19 June 2026"]


def test_to_submission_people_become_person_nodes_with_edges():
    data = submission_for("relative", True)
    people = [n for n in data["nodes"] if n["labels"] == ["PERSON"]]
    assert [p["properties"] for p in people] == [
        {"email": "alice@acme.test"},
        {"name": "Alice Author"},
    ]
    facts = {n["ref"]: n["key"] for n in data["nodes"] if n["labels"] != ["PERSON"]}
    assert sorted(facts.values()) == ["date", "term"]
    edges = {(facts[e["from"]], e["type"], e["to"]) for e in data["edges"]}
    alice, named = people[0]["ref"], people[1]["ref"]
    assert edges == {
        ("term", "AUTHORED_BY", alice),
        ("date", "AUTHORED_BY", alice),
        ("term", "NAMES", named),
        ("date", "NAMES", named),
    }
    assert data["source"]["acl"] == ["group:legal"] and data["source"]["title"] == "MSA"


def test_to_submission_overrides():
    detection = detect(FileInput(name="a.md", data=TEXT_FIXTURES["relative"].encode()))
    data = to_submission(
        detection,
        system="upload",
        external_id="up/a.md",
        clarify=True,
        acl=["group:finance"],
        restriction="privileged",
        title="Uploaded",
    )
    assert (data["source"]["acl"], data["source"]["restriction"], data["source"]["title"]) == (
        ["group:finance"],
        "privileged",
        "Uploaded",
    )
    assert_valid_submission(data)


@pytest.mark.parametrize("name", ["a.pdf", "a.docx", "a", "a.md.exe"])
def test_only_supported_files_are_detected(name):
    with pytest.raises(UnsupportedFile):
        detect(FileInput(name=name, data=b"Signed on 12 June 2026."))
