"""Spans on the extracted text (issue 21 item 3): the offsets index the text the job
stored as the source version's, so `spanExcerpt`, cards and the admin show the phrase as
extracted; the admin's document (and source) view shows that text with every span
highlighted and linked to its clarification."""

from datetime import datetime

import pytest
from django.test import Client
from django.urls import reverse

from clarify.models import Clarification
from graph.models import Source

from .docgen import docx_file, xlsx_file
from .test_documents_api import media, run_ingest_worker, upload  # noqa: F401

pytestmark = pytest.mark.django_db

SOW = docx_file(
    [
        "Statement of work <draft> & notes",
        [["Role", "Date"], ["Signed", "12th of June"]],
        "The services run from the start of next month.",
    ],
    created=datetime(2026, 3, 2, 9, 0),
    author="Alice Author",
)
PHRASE = "from the start of next month"


@pytest.fixture
def steward(workspace):
    client = Client()
    assert client.login(username="sam@acme.test", password="steward-pass-1")
    return client


@pytest.fixture
def ingested(ingest_client, settings):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": True}
    assert upload(ingest_client, name="sow.docx", data=SOW).status_code == 202
    run_ingest_worker()
    return {c.kind: c for c in Clarification.objects.all()}


def test_the_span_excerpt_is_the_phrase_as_extracted(ingested, clarify_client):
    clar = ingested["relative_date"]
    text = clar.source_version.text
    assert text[clar.span_start : clar.span_end] == PHRASE
    body = clarify_client.get(f"/v1/clarifications/{clar.pk}").json()
    assert PHRASE in body["spanExcerpt"]
    # The signature ("12th of June", its year from the creation date 2 March 2026) anchors.
    assert body["candidates"][0]["label"].startswith("1 July 2026")


def test_the_document_view_highlights_every_span_with_a_link(ingested, steward):
    from ingest.models import Document

    document = Document.objects.get()
    page = steward.get(reverse("admin:ingest_document_change", args=[document.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    for clar in ingested.values():
        link = reverse("admin:clarify_clarification_change", args=[clar.pk])
        phrase = clar.source_version.text[clar.span_start : clar.span_end]
        assert f'<a href="{link}" class="clarify-span"' in html
        assert f"<mark>{phrase}</mark>" in html
    assert "Statement of work &lt;draft&gt; &amp; notes" in html  # the text is escaped
    assert "<draft>" not in html
    source = Source.objects.get()
    page = steward.get(reverse("admin:graph_source_change", args=[source.pk]))
    assert f"<mark>{PHRASE}</mark>" in page.content.decode()


def test_a_document_not_yet_extracted_says_so(ingest_client, steward):
    from ingest.models import Document

    assert upload(ingest_client, name="sow.docx", data=SOW).status_code == 202
    document = Document.objects.get()
    page = steward.get(reverse("admin:ingest_document_change", args=[document.pk]))
    assert "Not extracted yet" in page.content.decode()


# A day-first/month-first cell ("03/04/2026": 3 April or 4 March) in a quoted, a plain
# and a comma-holding neighbour, so the span must skip the quoting to land on the cell.
ROWS = [
    ["id", "name", "effective_date", "owner"],
    ["P-1", "Travel policy, EMEA", "2026-01-01", "alice@acme.test"],
    ["P-2", 'Expenses "core" policy', "03/04/2026", "alice@acme.test"],
]


def _csv_bytes(rows: list[list[str]]) -> bytes:
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue().encode()


@pytest.mark.parametrize(
    ("name", "data"),
    [("policies.csv", _csv_bytes(ROWS)), ("policies.xlsx", xlsx_file({"Policies": ROWS}))],
)
def test_a_spreadsheet_finding_spans_its_cell(ingest_client, clarify_client, settings, name, data):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": True}
    assert upload(ingest_client, name=name, data=data).status_code == 202
    run_ingest_worker()
    clar = Clarification.objects.get()
    text = clar.source_version.text
    assert text[clar.span_start : clar.span_end] == "03/04/2026"
    body = clarify_client.get(f"/v1/clarifications/{clar.pk}").json()
    assert body["spanExcerpt"] == "03/04/2026"
    # Every row's fact spans its row in the stored text: first cell to last.
    spans = clar.source_version.spans.all()
    row = [s for s in spans if text[s.start : s.end].startswith("P-1")]
    assert [text[s.start : s.end] for s in row] == [
        'P-1,"Travel policy, EMEA",2026-01-01,alice@acme.test'
    ]
