"""The labelled detection corpus (issue 21 item 7): documents of every format, written
for this by the format libraries (tests/ingest/docgen.py), each labelled with the
ambiguities a careful reader finds in it — the kind and the candidate intervals that
should be offered — including negatives (nothing to ask), tables, scans and documents
whose only author is in their metadata.

    .venv/bin/python bench/corpus.py        # (re)writes tests/fixtures/corpus/

`score(folder)` runs the detection worker's reading and rules (`detect`, no database) over
every file and returns precision and recall of the kinds and of the candidate dates;
`bench/bench_formats.py` reports them and tests/ingest/test_corpus.py holds them to the
targets (≥ 0.9 each). A candidate is written `FROM..TO` (ISO days, empty for open)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.ingest import docgen as g  # noqa: E402

FOLDER = REPO / "tests" / "fixtures" / "corpus"
LABELS = "labels.json"


def when(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(hour=9, tzinfo=UTC)


def msg(**fields: Any) -> bytes:
    base: dict[str, Any] = {
        "subject": "Renewal notice",
        "sender": "Alice Author",
        "sender_email": "alice@acme.test",
        "to": [("Bob Named", "bob@acme.test")],
        "body": "Please confirm the renewal.",
    }
    return g.msg_file(**{**base, **fields})


def html(body: str, published: str = "", title: str = "Intranet page") -> bytes:
    nav = "<nav><a href='/'>Home</a> <a href='/news'>News of 1 January 2020</a></nav>"
    script = "<script>var signed = 'signed 1 January 2020';</script>"
    return g.html_file(title=title, body=nav + script + body, published=published)


CONFLICT = (
    "It was signed by Alice Author on 12 June 2026 and countersigned by Bob Named on 19 June 2026."
)
EFFECTIVE = (
    "The agreement is effective 1 July 2026; commencement of the services is on 3 July 2026."
)
Doc = tuple[str, Callable[[], bytes], list[tuple[str, list[str]]]]

DOCS: list[Doc] = [
    # --- PDF ------------------------------------------------------------------------------
    (
        "pdf/sow-relative.pdf",
        lambda: g.pdf_file(
            ["Statement of work. The services run from the start of next month."],
            created=when("2026-03-02"),
        ),
        [("relative_date", ["2026-04-01..", "2026-03-02.."])],
    ),
    (
        "pdf/msa-conflict.pdf",
        lambda: g.pdf_file(["Master services agreement.", CONFLICT]),
        [("conflicting_dates", ["2026-06-12..", "2026-06-19.."])],
    ),
    (
        "pdf/effective-commencement.pdf",
        lambda: g.pdf_file([EFFECTIVE]),
        [("conflicting_dates", ["2026-07-01..", "2026-07-03.."])],
    ),
    (
        "pdf/scan-lease.pdf",
        lambda: g.scanned_pdf(created=when("2026-01-15"), words="LEASE AGREEMENT (scanned copy)"),
        [("undated", ["2026-01-15.."])],
    ),
    (
        "pdf/scan-blank.pdf",
        lambda: g.scanned_pdf(created=when("2026-02-11"), words=""),
        [("undated", ["2026-02-11.."])],
    ),
    (
        "pdf/minutes.pdf",
        lambda: g.pdf_file(
            ["Minutes, 4 May 2026. The Q3 results were strong and nobody objected."]
        ),
        [],
    ),
    (
        "pdf/order-two-pages.pdf",
        lambda: g.pdf_file(
            [
                "Order form, general terms.",
                "Signed on 2 March 2026. The services are effective next quarter.",
            ],
            created=when("2026-02-10"),
        ),
        [("relative_date", ["2026-04-01..", "2026-07-01.."])],
    ),
    (
        "pdf/payment-terms.pdf",
        lambda: g.pdf_file(
            ["Executed on 1 July 2026. Invoices are payable within 30 days of signature."]
        ),
        [("relative_date", ["2026-07-31..", "2026-07-01.."])],
    ),
    (
        "pdf/lease-undated.pdf",
        lambda: g.pdf_file(
            ["LEASE AGREEMENT between Acme and Northwind for the north warehouse."],
            created=when("2026-02-20"),
        ),
        [("undated", ["2026-02-20.."])],
    ),
    (
        "pdf/review-yearless.pdf",
        lambda: g.pdf_file(
            ["Meeting note: the review is on the 12th of June."], created=when("2026-01-05")
        ),
        [("low_confidence_extraction", ["2026-06-12..", "2027-06-12.."])],
    ),
    (
        "pdf/blank-date-line.pdf",
        lambda: g.pdf_file(
            ["SERVICE AGREEMENT\nDate: ____________\nSignature: ____________"],
            created=when("2026-04-01"),
        ),
        [("undated", ["2026-04-01.."])],
    ),
    (
        "pdf/menu.pdf",
        lambda: g.pdf_file(["Cafeteria menu for the week: soup, salad and bread."]),
        [],
    ),
    # --- DOCX -----------------------------------------------------------------------------
    (
        "docx/signature-table.docx",
        lambda: g.docx_file(
            [
                "Consulting agreement",
                [["Role", "Date"], ["Signed", "12 June 2026"], ["Countersigned", "19 June 2026"]],
            ]
        ),
        [("conflicting_dates", ["2026-06-12..", "2026-06-19.."])],
    ),
    (
        "docx/sow-relative.docx",
        lambda: g.docx_file(
            ["Statement of work.", "The services run from the start of next month."],
            created=when("2026-03-02"),
            author="Alice Author",
        ),
        [("relative_date", ["2026-04-01..", "2026-03-02.."])],
    ),
    (
        "docx/notes-author-only.docx",
        lambda: g.docx_file(
            ["Budget discussion: headcount and travel."],
            author="Alice Author",
            last_modified_by="bob@acme.test",
        ),
        [],
    ),
    (
        "docx/retention-policy.docx",
        lambda: g.docx_file(
            ["Data retention policy.", "Records are kept for seven years."],
            created=when("2026-05-04"),
        ),
        [("undated", ["2026-05-04.."])],
    ),
    (
        "docx/next-quarter.docx",
        lambda: g.docx_file(
            ["Supplier terms. The new prices are effective next quarter."],
            created=when("2026-08-15"),
        ),
        [("relative_date", ["2026-10-01..", "2027-01-01.."])],
    ),
    (
        "docx/minutes-dated.docx",
        lambda: g.docx_file(["Minutes of 4 May 2026.", "Nobody objected."]),
        [],
    ),
    (
        "docx/effective-commencement.docx",
        lambda: g.docx_file(["Services agreement.", EFFECTIVE]),
        [("conflicting_dates", ["2026-07-01..", "2026-07-03.."])],
    ),
    (
        "docx/within-days-effective.docx",
        lambda: g.docx_file(
            [
                "The agreement is effective 1 March 2026.",
                "Onboarding completes within 14 days of the effective date.",
            ]
        ),
        [("relative_date", ["2026-03-15..", "2026-03-01.."])],
    ),
    (
        "docx/yearless-table.docx",
        lambda: g.docx_file(
            ["Review schedule", [["Item", "When"], ["Renewal review", "3rd of September"]]],
            created=when("2026-01-20"),
        ),
        [("low_confidence_extraction", ["2026-09-03..", "2027-09-03.."])],
    ),
    (
        "docx/us-dates-conflict.docx",
        lambda: g.docx_file(
            ["Supply agreement.", "Signed June 12, 2026 and countersigned June 19, 2026."]
        ),
        [("conflicting_dates", ["2026-06-12..", "2026-06-19.."])],
    ),
    ("docx/plain.docx", lambda: g.docx_file(["Shopping list: eggs, milk, bread."]), []),
    # --- XLSX -----------------------------------------------------------------------------
    (
        "xlsx/typed-dates.xlsx",
        lambda: g.xlsx_file(
            {
                "Policies": [
                    ["id", "name", "valid_from", "valid_to"],
                    ["P1", "Travel", date(2026, 3, 4), date(2026, 12, 31)],
                    ["P2", "Expenses", date(2026, 4, 3), None],
                ]
            }
        ),
        [],
    ),
    (
        "xlsx/text-date.xlsx",
        lambda: g.xlsx_file(
            {"Policies": [["id", "name", "valid_from"], ["P1", "Retention", "03/04/2026"]]}
        ),
        [("conflicting_dates", ["2026-04-03..", "2026-03-04.."])],
    ),
    (
        "xlsx/unreadable.xlsx",
        lambda: g.xlsx_file(
            {"Policies": [["id", "name", "valid_from"], ["P3", "Procurement", "sometime in Q3"]]}
        ),
        [("low_confidence_extraction", [])],
    ),
    (
        "xlsx/two-sheets.xlsx",
        lambda: g.xlsx_file(
            {
                "2026": [["id", "effective_date"], ["A", "05/06/2026"]],
                "2027": [["ref", "start_date"], ["B", "07/08/2027"]],
            }
        ),
        [
            ("conflicting_dates", ["2026-06-05..", "2026-05-06.."]),
            ("conflicting_dates", ["2027-08-07..", "2027-07-08.."]),
        ],
    ),
    (
        "xlsx/end-column.xlsx",
        lambda: g.xlsx_file(
            {
                "Contracts": [
                    ["id", "valid_from", "valid_to"],
                    ["C1", date(2026, 1, 1), "05/06/2026"],
                ]
            }
        ),
        [("conflicting_dates", ["2026-01-01..2026-06-05", "2026-01-01..2026-05-06"])],
    ),
    (
        "xlsx/day-over-twelve.xlsx",
        lambda: g.xlsx_file(
            {"S": [["id", "valid_from"], ["1", "13/04/2026"], ["2", "04/04/2026"]]}
        ),
        [],
    ),
    (
        "xlsx/mixed-rows.xlsx",
        lambda: g.xlsx_file(
            {
                "Register": [
                    ["id", "name", "owner", "valid_from", "valid_to"],
                    ["R1", "Lease", "olga@acme.test", date(2026, 2, 1), date(2027, 1, 31)],
                    ["R2", "Licence", "Olga Owner", "02/03/2026", None],
                    ["R3", "Permit", "", None, None],
                ]
            },
            creator="Olga Owner",
        ),
        [("conflicting_dates", ["2026-03-02..", "2026-02-03.."])],
    ),
    (
        "xlsx/iso-text.xlsx",
        lambda: g.xlsx_file({"S": [["id", "valid_from"], ["1", "2026-05-06"]]}),
        [],
    ),
    (
        "xlsx/no-date-columns.xlsx",
        lambda: g.xlsx_file({"Staff": [["name", "team"], ["Alice", "Legal"], ["Bob", "Finance"]]}),
        [],
    ),
    # --- HTML -----------------------------------------------------------------------------
    (
        "html/travel-policy.html",
        lambda: html(
            "<h1>Travel policy</h1><p>This policy is effective next quarter.</p>",
            published="2026-03-02",
        ),
        [("relative_date", ["2026-04-01..", "2026-07-01.."])],
    ),
    ("html/welcome.html", lambda: html("<h1>Welcome</h1><p>Welcome to the intranet.</p>"), []),
    (
        "html/msa.htm",
        lambda: html(f"<h1>MSA</h1><p>{CONFLICT}</p>"),
        [("conflicting_dates", ["2026-06-12..", "2026-06-19.."])],
    ),
    (
        "html/lease-undated.html",
        lambda: html("<h1>Lease agreement</h1><p>Acme leases the north warehouse.</p>"),
        [("undated", [])],
    ),
    (
        "html/review-yearless.html",
        lambda: html("<p>The review is on the 12th of June.</p>", published="2026-01-05"),
        [("low_confidence_extraction", ["2026-06-12..", "2027-06-12.."])],
    ),
    (
        "html/first-day-next-month.html",
        lambda: html(
            "<p>The tariff applies from the first day of next month.</p>", published="2026-05-20"
        ),
        [("relative_date", ["2026-06-01..", "2026-05-20.."])],
    ),
    ("html/news.html", lambda: html("<p>News, 4 May 2026: the canteen reopened.</p>"), []),
    (
        "html/effective-table.html",
        lambda: html(
            "<table><tr><td>Effective</td><td>1 July 2026</td></tr>"
            "<tr><td>Commencement</td><td>3 July 2026</td></tr></table>"
        ),
        [("conflicting_dates", ["2026-07-01..", "2026-07-03.."])],
    ),
    (
        "html/payment.html",
        lambda: html(
            "<p>Executed on 1 July 2026.</p>"
            "<p>Invoices are payable within 30 days of signature.</p>"
        ),
        [("relative_date", ["2026-07-31..", "2026-07-01.."])],
    ),
    # --- Outlook .msg ---------------------------------------------------------------------
    (
        "msg/sent-delivered-apart.msg",
        lambda: msg(sent=when("2026-07-09"), delivered=when("2026-07-14")),
        [("conflicting_dates", ["2026-07-09..", "2026-07-14.."])],
    ),
    ("msg/unsent.msg", lambda: msg(delivered=when("2026-07-14")), [("undated", ["2026-07-14.."])]),
    ("msg/agree.msg", lambda: msg(sent=when("2026-07-09"), delivered=when("2026-07-09")), []),
    (
        "msg/headers-agree.msg",
        lambda: msg(
            headers="Received: from mx by mail.acme.test; Tue, 14 Jul 2026 09:12:44 +0000\r\n"
            "From: Alice Author <alice@acme.test>\r\n"
            "To: bob@acme.test\r\n"
            "Subject: Renewal\r\n"
            "Date: Tue, 14 Jul 2026 08:00:00 +0000\r\n"
            "\r\n"
        ),
        [],
    ),
    (
        "msg/headers-bad-date.msg",
        lambda: msg(
            headers="Received: from mx by mail.acme.test; Tue, 14 Jul 2026 09:12:44 +0000\r\n"
            "From: Alice Author <alice@acme.test>\r\n"
            "Subject: Renewal\r\n"
            "Date: sometime on Tuesday\r\n"
            "\r\n"
        ),
        [("low_confidence_extraction", ["2026-07-14.."])],
    ),
    ("msg/sent-only.msg", lambda: msg(sent=when("2026-07-09")), []),
    # --- text formats ---------------------------------------------------------------------
    (
        "text/nda.md",
        lambda: (
            b"---\ntitle: NDA\ndate: 2026-03-03\n---\n"
            b"The obligations apply from the start of next month.\n"
        ),
        [("relative_date", ["2026-04-01..", "2026-03-03.."])],
    ),
    (
        "text/msa.txt",
        lambda: CONFLICT.encode(),
        [("conflicting_dates", ["2026-06-12..", "2026-06-19.."])],
    ),
    (
        "text/policies.csv",
        lambda: b"id,name,valid_from\nP1,Travel,2026-01-01\nP2,Retention,03/04/2026\n",
        [("conflicting_dates", ["2026-04-03..", "2026-03-04.."])],
    ),
    (
        "text/notice.eml",
        lambda: (
            b"Received: from mx by mail.acme.test; Tue, 14 Jul 2026 09:12:44 +0000\n"
            b"From: Alice <alice@acme.test>\n"
            b"Subject: Renewal\n"
            b"Date: Thu, 9 Jul 2026 16:03:10 +0000\n"
            b"\n"
            b"Please confirm.\n"
        ),
        [("conflicting_dates", ["2026-07-09..", "2026-07-14.."])],
    ),
    ("text/list.txt", lambda: b"Shopping list: eggs, milk, bread.\n", []),
    (
        "text/mou.md",
        lambda: (
            b"MEMORANDUM OF UNDERSTANDING\n\n"
            b"The parties agree to negotiate a lease in good faith.\n"
        ),
        [("undated", [])],
    ),
]


def generate(folder: Path = FOLDER) -> int:
    """Write every document and `labels.json`; returns the number of documents."""
    labels: dict[str, list[dict[str, Any]]] = {}
    for name, make, expected in DOCS:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(make())
        labels[name] = [{"kind": kind, "candidates": cands} for kind, cands in expected]
    (folder / LABELS).write_text(json.dumps(labels, indent=1, sort_keys=True) + "\n")
    return len(DOCS)


def _key(valid_from: date | None, valid_to: date | None) -> str:
    start = valid_from.isoformat() if valid_from else ""
    end = valid_to.isoformat() if valid_to else ""
    return f"{start}..{end}"


def predicted(path: Path, name: str) -> list[dict[str, Any]]:
    """What the detection worker finds in one file (its reading and rules, no database)."""
    from ingest.detection.build import FileInput, detect

    detection = detect(FileInput(name=name, data=path.read_bytes()))
    return [
        {
            "kind": f.kind,
            "candidates": [
                _key(c.valid_from, c.valid_to) for c in f.candidates if c.valid_from or c.valid_to
            ],
        }
        for f in detection.findings
    ]


def _ratio(hit: int, total: int) -> float:
    return round(hit / total, 3) if total else 1.0


def score(folder: Path = FOLDER) -> dict[str, Any]:
    """Precision and recall of kinds (a multiset per file) and of candidate dates (the
    set of (kind, interval) per file), over every labelled file; the misses by file."""
    labels = json.loads((folder / LABELS).read_text())
    counts = Counter()
    misses: dict[str, Any] = {}
    by_format: Counter = Counter()
    for name, expected in sorted(labels.items()):
        by_format[Path(name).suffix] += 1
        got = predicted(folder / name, name)
        want_kinds, got_kinds = (
            Counter(e["kind"] for e in expected),
            Counter(p["kind"] for p in got),
        )
        want_dates = {(e["kind"], c) for e in expected for c in e["candidates"]}
        got_dates = {(p["kind"], c) for p in got for c in p["candidates"]}
        counts["kind_hit"] += sum((want_kinds & got_kinds).values())
        counts["kind_want"] += sum(want_kinds.values())
        counts["kind_got"] += sum(got_kinds.values())
        counts["date_hit"] += len(want_dates & got_dates)
        counts["date_want"] += len(want_dates)
        counts["date_got"] += len(got_dates)
        if want_kinds != got_kinds or want_dates != got_dates:
            misses[name] = {"expected": expected, "found": got}
    return {
        "documents": len(labels),
        "by_format": dict(sorted(by_format.items())),
        "kinds": {
            "precision": _ratio(counts["kind_hit"], counts["kind_got"]),
            "recall": _ratio(counts["kind_hit"], counts["kind_want"]),
        },
        "candidate_dates": {
            "precision": _ratio(counts["date_hit"], counts["date_got"]),
            "recall": _ratio(counts["date_hit"], counts["date_want"]),
        },
        "misses": misses,
    }


if __name__ == "__main__":
    print(f"wrote {generate()} documents to {FOLDER.relative_to(REPO)}")
    print(json.dumps(score(), indent=1))
