"""Email detection rules (spec §14 v0.8 PR-061, email addendum): envelope-date integrity
only — the Date header against the Received hops — and From → SENT_BY, To → TO,
Cc → CC."""

from datetime import UTC, date, datetime, timedelta

import pytest

from ingest.api.serializers import SubmissionInSerializer
from ingest.detection.build import FileInput, detect, to_submission
from ingest.detection.mail import (
    TOLERANCE,
    detect_email,
    received_times,
    rule_date_received_mismatch,
    rule_missing_date,
    rule_unparseable_date,
)
from ingest.detection.model import day_us
from ingest.services import submission_plan

RECEIVED = "Tue, 14 Jul 2026 09:12:44 +0000"


def eml(
    *,
    date_header: str | None = None,
    received: tuple[str, ...] = (RECEIVED,),
    to: str = "Bob Named <bob@acme.test>, olga@acme.test",
    cc: str | None = "Sam Steward <SAM@acme.test>",
    body: str = "Please confirm the notice date.",
) -> bytes:
    lines = [
        f"Received: from mx{i}.example by mail.acme.test with ESMTP; {stamp}"
        for i, stamp in enumerate(received)
    ]
    lines += ["From: Alice Author <alice@acme.test>", f"To: {to}"]
    if cc is not None:
        lines.append(f"Cc: {cc}")
    lines.append("Subject: Renewal notice")
    if date_header is not None:
        lines.append(f"Date: {date_header}")
    lines += ["Message-ID: <m1@acme.test>", "Content-Type: text/plain; charset=utf-8"]
    return ("\n".join(lines) + f"\n\n{body}\n").encode()


def summary(data: bytes):
    detection = detect_email(data, filename="m.eml")
    [finding] = detection.findings or [None]
    if finding is None:
        return None
    return (
        finding.rule,
        finding.kind,
        [(c.label, c.valid_from) for c in finding.candidates],
        finding.detector_confidence,
        finding.applied_candidate_confidence,
    )


JUL_14 = date(2026, 7, 14)
CASES = [
    (
        "missing-date",
        eml(),
        ("missing_date", "undated", [("14 July 2026 (received)", JUL_14)], 0.9, 0.6),
    ),
    (
        "missing-date-earliest-hop",
        eml(received=(RECEIVED, "Mon, 13 Jul 2026 23:59:00 +0000")),
        ("missing_date", "undated", [("13 July 2026 (received)", date(2026, 7, 13))], 0.9, 0.6),
    ),
    ("missing-date-and-no-received", eml(received=()), None),
    (
        "unparseable-date",
        eml(date_header="sometime last week"),
        (
            "unparseable_date",
            "low_confidence_extraction",
            [("14 July 2026 (received)", JUL_14)],
            0.85,
            0.4,
        ),
    ),
    (
        "unparseable-date-no-received",
        eml(date_header="garbage", received=()),
        (
            "unparseable_date",
            "low_confidence_extraction",
            [("unreadable Date header: 'garbage'", None)],
            0.85,
            0.4,
        ),
    ),
    (
        "days-apart",
        eml(date_header="Thu, 9 Jul 2026 16:03:10 +0000"),
        (
            "date_received_mismatch",
            "conflicting_dates",
            [("9 July 2026 (sent)", date(2026, 7, 9)), ("14 July 2026 (received)", JUL_14)],
            0.85,
            0.5,
        ),
    ),
    (
        "one-second-beyond-24h",
        eml(date_header="Mon, 13 Jul 2026 09:12:43 +0000"),
        (
            "date_received_mismatch",
            "conflicting_dates",
            [("13 July 2026 (sent)", date(2026, 7, 13)), ("14 July 2026 (received)", JUL_14)],
            0.85,
            0.5,
        ),
    ),
    (
        "date-after-received",
        eml(date_header="Sat, 18 Jul 2026 09:00:00 +0000"),
        (
            "date_received_mismatch",
            "conflicting_dates",
            [("18 July 2026 (sent)", date(2026, 7, 18)), ("14 July 2026 (received)", JUL_14)],
            0.85,
            0.5,
        ),
    ),
    ("exactly-24h", eml(date_header="Mon, 13 Jul 2026 09:12:44 +0000"), None),
    ("minutes-apart", eml(date_header="Tue, 14 Jul 2026 09:10:00 +0000"), None),
    ("other-timezone-same-instant", eml(date_header="Tue, 14 Jul 2026 11:12:44 +0200"), None),
    (
        "first-hop-is-the-earliest",
        eml(
            date_header="Thu, 9 Jul 2026 16:03:10 +0000",
            received=(RECEIVED, "Thu, 9 Jul 2026 16:05:00 +0000"),
        ),
        None,
    ),
    ("date-and-no-received", eml(date_header="Thu, 9 Jul 2026 16:03:10 +0000", received=()), None),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_envelope_date_rules(data, expected):
    assert summary(data) == expected


def test_tolerance_is_24_hours():
    assert timedelta(hours=24) == TOLERANCE
    sent = datetime(2026, 7, 13, 9, 0, tzinfo=UTC)
    assert rule_date_received_mismatch(sent, [sent + TOLERANCE], None) is None
    assert rule_date_received_mismatch(sent, [sent + TOLERANCE + timedelta(seconds=1)], None)
    assert rule_date_received_mismatch(None, [sent], None) is None
    assert rule_date_received_mismatch(sent, [], None) is None


def test_rules_stand_alone():
    hop = datetime(2026, 7, 14, 9, 12, tzinfo=UTC)
    assert rule_missing_date("Tue, 14 Jul 2026 09:12:44 +0000", [hop]) is None
    assert rule_missing_date(None, []) is None
    assert rule_missing_date(None, [hop]).kind == "undated"
    assert rule_unparseable_date(None, None, [hop], None) is None
    assert rule_unparseable_date("ok", hop, [hop], None) is None  # it parsed
    assert rule_unparseable_date("bad", None, [hop], None).kind == "low_confidence_extraction"


def test_received_times_ignore_hops_without_a_stamp():
    from email import policy
    from email.parser import BytesParser

    raw = (
        b"Received: from a by b; Tue, 14 Jul 2026 09:12:44 +0000\n"
        b"Received: from c by d with no stamp\n"
        b"Received: from e by f; not a date\n"
        b"Received: from g by h; Mon, 13 Jul 2026 08:00:00 +0000\n"
        b"Subject: x\n\nbody\n"
    )
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert received_times(message) == [
        datetime(2026, 7, 13, 8, 0, tzinfo=UTC),
        datetime(2026, 7, 14, 9, 12, 44, tzinfo=UTC),
    ]


def test_the_finding_points_at_the_date_line():
    for data in (
        eml(),
        eml(date_header="garbage"),
        eml(date_header="Thu, 9 Jul 2026 16:03:10 +0000"),
    ):
        detection = detect_email(data, filename="m.eml")
        [finding] = detection.findings
        start, end = finding.span
        assert detection.text[start:end].startswith("Date: ")


def test_the_message_fact():
    detection = detect_email(eml(date_header="Thu, 9 Jul 2026 16:03:10 +0000"), filename="m.eml")
    [fact] = detection.facts
    assert (fact.key, fact.labels, fact.valid_from) == ("message", ["EMAIL"], date(2026, 7, 9))
    assert fact.properties == {"name": "Renewal notice", "subject": "Renewal notice"}
    assert detection.title == "Renewal notice"
    assert "Please confirm the notice date." in detection.text
    assert "Date: Thu, 09 Jul 2026 16:03:10 +0000" in detection.text  # as parsed


def test_from_to_cc_become_people():
    detection = detect_email(eml(), filename="m.eml")
    assert [(edge, p.name, p.email) for _, edge, p in detection.people] == [
        ("SENT_BY", "Alice Author", "alice@acme.test"),
        ("TO", "Bob Named", "bob@acme.test"),
        ("TO", "", "olga@acme.test"),
        ("CC", "Sam Steward", "sam@acme.test"),  # addresses are lower-cased
    ]
    assert {fact for fact, _, _ in detection.people} == {"message"}
    no_cc = detect_email(eml(cc=None, to="undisclosed-recipients:;"), filename="m.eml")
    assert [edge for _, edge, _ in no_cc.people] == ["SENT_BY"]


def test_people_become_person_nodes_and_edges():
    detection = detect_email(eml(), filename="m.eml")
    data = to_submission(detection, system="mail", external_id="m.eml", clarify=True)
    by_ref = {n["ref"]: n for n in data["nodes"]}
    edges = sorted((e["type"], by_ref[e["to"]]["properties"]["email"]) for e in data["edges"])
    assert edges == [
        ("CC", "sam@acme.test"),
        ("SENT_BY", "alice@acme.test"),
        ("TO", "bob@acme.test"),
        ("TO", "olga@acme.test"),
    ]
    assert all(by_ref[e["from"]]["key"] == "message" for e in data["edges"])


# --- to_submission ------------------------------------------------------------------------

EML_FIXTURES = {name: data for name, data, _ in CASES}


@pytest.mark.parametrize("name", list(EML_FIXTURES))
@pytest.mark.parametrize("clarify", [True, False], ids=["clarify", "no-clarify"])
def test_to_submission_is_a_valid_submission(name, clarify):
    detection = detect(FileInput(name=f"{name}.eml", data=EML_FIXTURES[name]))
    data = to_submission(detection, system="mail", external_id=f"{name}.eml", clarify=clarify)
    shape = SubmissionInSerializer(data=data)
    assert shape.is_valid(), shape.errors
    plan = submission_plan(shape.validated_data)
    expected = len(detection.findings) if clarify else 0
    assert len(data["ambiguities"]) == len(plan.ambiguities) == expected


def test_to_submission_of_a_mismatch():
    detection = detect(FileInput(name="m.eml", data=EML_FIXTURES["days-apart"]))
    data = to_submission(detection, system="mail", external_id="m.eml", clarify=True)
    [amb] = data["ambiguities"]
    assert data["nodes"][amb["nodeRef"]]["validFrom"] == day_us(date(2026, 7, 9))
    assert [(c["label"], c["validFrom"]) for c in amb["candidates"]] == [
        ("9 July 2026 (sent)", day_us(date(2026, 7, 9))),
        ("14 July 2026 (received)", day_us(JUL_14)),
    ]
    assert (
        to_submission(detection, system="mail", external_id="m.eml", clarify=False)["ambiguities"]
        == []
    )
