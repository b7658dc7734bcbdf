"""The document formats (issue 21): each reader over files its library writes, the
detection on what they extract (document dates anchoring relative phrases, typed
spreadsheet dates, envelope rules for Outlook mail, scans without a text layer), and
the metadata authors routed as AUTHORED_BY / LAST_MODIFIED_BY people."""

from datetime import UTC, date, datetime
from types import SimpleNamespace

import pytest

from clarify.models import Clarification
from clarify.ranking import rank_candidates
from delivery.cards import build_card
from delivery.restriction import excerpt_for_chat
from graph.models import Edge, Node, SourceVersion
from ingest.detection.build import FileInput, detect
from ingest.documents import ingest_file, people_by_name
from ingest.formats import extract, ocr
from tenancy.models import AliasKind, PersonAlias
from tests.debian import debian_program

from .docgen import docx_file, html_file, msg_file, pdf_file, scanned_pdf, xlsx_file

MARCH_2 = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
SOW = "Statement of work. The services run from the start of next month."


def detect_bytes(name: str, data: bytes, names: dict[str, str] | None = None):
    return detect(FileInput(name=name, data=data), people_by_name=names or {})


# --- PDF ----------------------------------------------------------------------------------


def test_a_pdf_is_read_page_by_page_with_its_information():
    data = pdf_file(
        ["First page: the agreement.", "Second page: signed 12 June 2026."],
        author="Alice Author",
        title="Master agreement",
        created=MARCH_2,
    )
    got = extract(data, "msa.pdf")
    assert got.text == "First page: the agreement.\n\nSecond page: signed 12 June 2026."
    assert got.pages == 2
    assert got.title == "Master agreement"
    assert got.metadata.authors == ["Alice Author"]
    assert got.metadata.created == MARCH_2
    assert not got.scanned


def test_the_pdf_creation_date_anchors_a_relative_phrase():
    detection = detect_bytes("sow.pdf", pdf_file([SOW], created=MARCH_2, title="SOW"))
    [finding] = detection.findings
    assert finding.kind == "relative_date"
    assert finding.candidates[0].valid_from == date(2026, 4, 1)
    assert "start of next month after document date" in finding.candidates[0].label
    assert detection.title == "SOW"
    start, end = finding.span
    assert detection.text[start:end] == "from the start of next month"


def test_a_scan_without_ocr_is_undated_with_no_span(monkeypatch):
    monkeypatch.setattr(ocr, "shutil", SimpleNamespace(which=lambda name: None))
    data = scanned_pdf(created=MARCH_2)
    got = extract(data, "scan.pdf")
    assert got.scanned and got.text == "" and not got.ocr
    detection = detect_bytes("scan.pdf", data)
    [finding] = detection.findings
    assert finding.kind == "undated" and finding.span is None
    assert finding.detector_confidence == 0.8
    assert [c.label for c in finding.candidates] == ["2 March 2026 (PDF creation date)"]


def test_a_scan_is_read_by_tesseract():
    debian_program("tesseract", ["tesseract-ocr", "tesseract-ocr-eng"])
    got = extract(scanned_pdf(), "scan.pdf")
    assert got.ocr and not got.scanned
    assert "AGREEMENT" in got.text.upper()


def test_ocr_hands_each_page_image_to_tesseract(monkeypatch):
    """The OCR path without Tesseract installed: the page's image reaches the program."""
    seen = []
    monkeypatch.setattr(ocr, "shutil", SimpleNamespace(which=lambda name: "/usr/bin/tesseract"))
    monkeypatch.setattr(
        ocr, "ocr_image", lambda png, timeout: seen.append(png[:8]) or "Signed 1 May 2026"
    )
    got = extract(scanned_pdf(), "scan.pdf")
    assert seen == [b"\x89PNG\r\n\x1a\n"]
    assert got.ocr and got.text == "Signed 1 May 2026"


@pytest.mark.parametrize(("budget", "images_read"), [(0, 0), (5, 1)])
def test_ocr_over_its_budget_per_document_reads_as_no_text(
    monkeypatch, caplog, budget, images_read
):
    """The document's OCR budget (`ocr_total_seconds`): none (0: no image is read) or
    5 s with an image that takes 10 s (the clock is the test's) — the scan is read as
    having no text found, `undated` with the detector's confidence, and the log says why."""
    clock = [1000.0]
    seen: list[float] = []

    def slow_tesseract(png: bytes, timeout: float) -> str:
        seen.append(timeout)
        clock[0] += 10
        return "Signed 1 May 2026"

    monkeypatch.setattr(ocr, "shutil", SimpleNamespace(which=lambda name: "/usr/bin/tesseract"))
    monkeypatch.setattr(ocr, "_clock", lambda: clock[0])
    monkeypatch.setattr(ocr, "ocr_image", slow_tesseract)
    monkeypatch.setattr(ocr, "LIMITS", ocr.LIMITS.__class__(ocr_total_seconds=budget))
    got = extract(scanned_pdf(), "scan.pdf")
    assert len(seen) == images_read and all(t <= budget for t in seen)
    assert got.scanned and not got.ocr and got.text == ""
    assert "OCR stopped: over the budget of" in caplog.text
    [finding] = detect_bytes("scan.pdf", scanned_pdf()).findings
    assert (finding.kind, finding.detector_confidence) == ("undated", 0.8)


# --- DOCX ---------------------------------------------------------------------------------


def test_docx_paragraphs_and_tables_in_document_order():
    data = docx_file(
        [
            "Consulting agreement",
            [["Role", "Date"], ["Signed", "12 June 2026"], ["Countersigned", "19 June 2026"]],
            "The services are effective next quarter.",
        ],
        author="Alice Author",
        last_modified_by="bob@acme.test",
        created=datetime(2026, 3, 2, 9, 0),
        title="Consulting",
    )
    got = extract(data, "c.docx")
    assert got.text == (
        "Consulting agreement\n\nRole | Date\nSigned | 12 June 2026\n"
        "Countersigned | 19 June 2026\n\nThe services are effective next quarter."
    )
    assert got.title == "Consulting"
    assert got.metadata.authors == ["Alice Author"]
    assert got.metadata.last_modified_by == ["bob@acme.test"]
    assert got.metadata.created == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    kinds = {f.kind for f in detect_bytes("c.docx", data).findings}
    assert kinds == {"conflicting_dates", "relative_date"}


# --- XLSX ---------------------------------------------------------------------------------


def test_a_typed_date_cell_is_a_date_and_a_text_cell_has_two_readings():
    data = xlsx_file(
        {
            "Policies": [
                ["id", "name", "valid_from", "valid_to"],
                ["P1", "Travel", date(2026, 3, 4), date(2026, 12, 31)],
                ["P2", "Retention", "03/04/2026", None],
                ["P3", "Procurement", "sometime in Q3", None],
            ]
        }
    )
    detection = detect_bytes("policies.xlsx", data)
    facts = {f.key: f for f in detection.facts}
    assert (facts["row-P1"].valid_from, facts["row-P1"].valid_to) == (
        date(2026, 3, 4),
        date(2026, 12, 31),
    )
    findings = {f.node_key: f for f in detection.findings}
    assert set(findings) == {"row-P2", "row-P3"}
    assert findings["row-P2"].kind == "conflicting_dates"
    assert [c.valid_from for c in findings["row-P2"].candidates] == [
        date(2026, 4, 3),
        date(2026, 3, 4),
    ]
    assert findings["row-P3"].kind == "low_confidence_extraction"
    assert detection.text.startswith("# sheet: Policies\nid,name,valid_from,valid_to\n")
    assert "P1,Travel,2026-03-04,2026-12-31" in detection.text


def test_every_sheet_is_a_table_of_its_own():
    data = xlsx_file(
        {
            "2026": [["id", "valid_from"], ["A", date(2026, 1, 1)]],
            "2027": [["ref", "effective_date"], ["A", "05/06/2027"]],
            "Empty": [],
        }
    )
    detection = detect_bytes("registers.xlsx", data)
    assert [f.key for f in detection.facts] == ["2026/row-A", "2027/row-A"]
    [finding] = detection.findings
    assert finding.node_key == "2027/row-A" and finding.kind == "conflicting_dates"


# --- HTML ---------------------------------------------------------------------------------


def test_html_visible_body_text_and_title():
    page = html_file(
        title="Travel policy",
        body=(
            "<nav><a href='/'>Home</a> <a href='/hr'>Effective next quarter menu</a></nav>"
            "<h1>Travel policy</h1><script>var effective = 'next quarter';</script>"
            "<style>p { color: red }</style><p>This policy is   effective\n next quarter.</p>"
            "<div hidden>signed 1 January 2020</div><footer>Intranet</footer>"
        ),
        author="Olga Owner",
        published="2026-03-02",
    )
    got = extract(page, "travel.html")
    assert got.title == "Travel policy"
    assert got.text == "Travel policy\nThis policy is effective next quarter."  # no footer
    assert got.metadata.authors == ["Olga Owner"]
    assert got.metadata.created == datetime(2026, 3, 2)
    [finding] = detect_bytes("travel.htm", page).findings
    assert finding.kind == "relative_date"
    assert finding.candidates[0].valid_from == date(2026, 4, 1)


def test_html_drops_hidden_elements_and_site_chrome():
    page = html_file(
        title="Leave policy",
        body=(
            "<header><a href='/'>Intranet</a> effective next quarter banner</header>"
            "<aside>Related: signed 1 January 2020</aside>"
            "<div aria-hidden='true'>expires 31 December 2020</div>"
            "<div aria-hidden='false'>Kept: visible to screen readers.</div>"
            "<p style='color: grey; display : none'>effective 1 March 2019</p>"
            "<span style='VISIBILITY:hidden'>valid from 2 May 2018</span>"
            "<p style='display: block'>Styled but shown.</p>"
            "<article><header><h1>Leave policy</h1><p>Published 2 March 2026</p></header>"
            "<p>This policy is effective from 1 April 2026.</p>"
            "<footer>Owner: Olga Owner</footer></article>"
            "<footer>© Acme intranet — effective immediately</footer>"
        ),
    )
    got = extract(page, "leave.html")
    assert got.text == (
        "Kept: visible to screen readers.\nStyled but shown.\nLeave policy\n"
        "Published 2 March 2026\nThis policy is effective from 1 April 2026.\n"
        "Owner: Olga Owner"
    )


# --- Outlook .msg -------------------------------------------------------------------------


def _msg(**overrides):
    fields = {
        "subject": "Renewal notice",
        "sender": "Alice Author",
        "sender_email": "alice@acme.test",
        "to": [("Bob Named", "bob@acme.test")],
        "body": "Please confirm the renewal.\r\n",
        "sent": datetime(2026, 7, 9, 16, 3, tzinfo=UTC),
        "delivered": datetime(2026, 7, 14, 9, 12, tzinfo=UTC),
    }
    return msg_file(**{**fields, **overrides})


def test_an_outlook_message_sent_and_delivered_days_apart_conflicts():
    detection = detect_bytes("notice.msg", _msg())
    [finding] = detection.findings
    assert finding.kind == "conflicting_dates"
    assert [c.label for c in finding.candidates] == [
        "9 July 2026 (sent)",
        "14 July 2026 (received)",
    ]
    assert detection.title == "Renewal notice"
    assert detection.facts[0].valid_from == date(2026, 7, 9)
    start, end = finding.span
    assert detection.text[start:end] == "Date: Thu, 09 Jul 2026 16:03:00 +0000"
    edges = {(edge, ref.email) for _, edge, ref in detection.people}
    assert edges == {("SENT_BY", "alice@acme.test"), ("TO", "bob@acme.test")}


def test_an_unsent_outlook_message_is_undated_by_its_delivery_time():
    [finding] = detect_bytes("draft.msg", _msg(sent=None)).findings
    assert finding.kind == "undated"
    assert [c.label for c in finding.candidates] == ["14 July 2026 (received)"]


def test_an_outlook_message_with_transport_headers_reads_them():
    headers = (
        "Received: from mx by mail.acme.test; Tue, 14 Jul 2026 09:12:44 +0000\r\n"
        "From: Alice Author <alice@acme.test>\r\nTo: bob@acme.test\r\n"
        "Subject: Renewal notice\r\nDate: Tue, 14 Jul 2026 08:00:00 +0000\r\n\r\n"
    )
    detection = detect_bytes("notice.msg", _msg(headers=headers))
    assert detection.findings == []  # Date and Received agree within a day
    assert detection.facts[0].valid_from == date(2026, 7, 14)


# --- metadata people routing --------------------------------------------------------------


pytestmark = pytest.mark.django_db


def test_metadata_author_and_editor_are_edges_to_the_tenant_people(workspace):
    olga = workspace.people.get(email="olga@acme.test")
    PersonAlias.objects.create(
        tenant=workspace, person=olga, kind=AliasKind.UPN, value="olga.o@corp.acme.test"
    )
    data = docx_file(
        [SOW], author="Alice Author", last_modified_by="OLGA.O@corp.acme.test", created=MARCH_2
    )
    outcome = ingest_file(tenant=workspace, file=FileInput(name="sow.docx", data=data))
    assert outcome.error == "" and outcome.opened == 1
    term = Node.objects.get(tenant=workspace, key="term")
    edges = {
        (e.type, e.to_node.person.email)
        for e in Edge.objects.filter(from_node=term).select_related("to_node__person")
    }
    assert edges == {("AUTHORED_BY", "alice@acme.test"), ("LAST_MODIFIED_BY", "olga@acme.test")}
    alice = workspace.people.get(email="alice@acme.test")
    assert rank_candidates(target=term, max_candidates=3)[0] == alice.pk  # the author first
    clar = Clarification.objects.get()
    assert clar.kind == "relative_date"
    version = SourceVersion.objects.get()
    assert version.text == SOW  # the spans index the extracted text as stored
    assert version.text[clar.span_start : clar.span_end] == "from the start of next month"


def test_a_metadata_author_who_is_nobody_of_the_tenant_adds_no_person(workspace):
    data = docx_file([SOW], author="Zed Outsider", last_modified_by="zed@elsewhere.test")
    nodes_before = Node.objects.count()
    outcome = ingest_file(tenant=workspace, file=FileInput(name="sow.docx", data=data))
    assert outcome.error == ""
    assert Node.objects.count() == nodes_before + 2  # the term and the date, no person
    assert not Edge.objects.filter(type__in=["AUTHORED_BY", "LAST_MODIFIED_BY"]).exists()


def test_the_directory_knows_names_emails_and_upns(workspace):
    olga = workspace.people.get(email="olga@acme.test")
    PersonAlias.objects.create(
        tenant=workspace, person=olga, kind=AliasKind.UPN, value="o@corp.test"
    )
    names = people_by_name(workspace)
    assert names["olga owner"] == names["olga@acme.test"] == names["o@corp.test"] == olga.email


def test_a_scanned_pdf_opens_an_undated_clarification(workspace, monkeypatch):
    monkeypatch.setattr(ocr, "shutil", SimpleNamespace(which=lambda name: None))
    data = scanned_pdf(created=MARCH_2, author="Alice Author")
    outcome = ingest_file(tenant=workspace, file=FileInput(name="scan.pdf", data=data))
    assert outcome.error == "" and dict(outcome.ambiguities) == {"undated": 1}
    clar = Clarification.objects.get()
    assert clar.kind == "undated"
    assert clar.detector_confidence == 0.8
    term = Node.objects.get(tenant=workspace, key="term")
    assert Edge.objects.filter(from_node=term, type="AUTHORED_BY").count() == 1
    # The question is the redacted one: the document's link, no span text to quote.
    assert clar.span_start is None and excerpt_for_chat(clar) == ""
    card = build_card(clar, "nonce", excerpt_for_chat(clar))
    assert card.excerpt == "" and card.question.startswith("What date applies to")
    # No address in a source system: the card links this server's document page.
    assert card.document_url.endswith(
        f"/inbox/documents/{clar.source_version.source_id}/?clarification={clar.pk}#passage"
    )
    assert [c["label"] for c in clar.candidates] == ["2 March 2026 (PDF creation date)"]


def test_every_format_ingests_through_one_path(workspace):
    files = {
        "a.pdf": pdf_file(["Agreement signed 12 June 2026 and countersigned 19 June 2026."]),
        "b.docx": docx_file(["Lease effective next quarter."], created=MARCH_2),
        "c.xlsx": xlsx_file({"S": [["id", "valid_from"], ["1", "03/04/2026"]]}),
        "d.html": html_file(
            title="Policy", body="<p>Policy effective next quarter.</p>", published="2026-03-02"
        ),
        "e.msg": _msg(),
    }
    for name, data in files.items():
        outcome = ingest_file(tenant=workspace, file=FileInput(name=name, data=data))
        assert outcome.error == "", (name, outcome.error)
        assert outcome.opened == 1, name
