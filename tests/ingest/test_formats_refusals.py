"""Refused documents (issue 21 item 4) say why and write nothing — in `POST /v1/documents`
(415 / 422 / 413 with the contract codes), the admin upload form, `telha ingest`'s
summary and `--json` `errors` — and the rest of a folder is still ingested. Then every
format uploads (202) and the detection job, not the request, extracts it."""

import contextlib
import dataclasses
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import msoffcrypto.format.ooxml
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from pypdf import PdfReader

from graph.models import Edge, Node, Source, SourceVersion
from ingest.detection.build import FileInput
from ingest.documents import ingest_file
from ingest.formats import LIMITS, pdf, sniff
from ingest.models import Document
from jobs.models import Job, JobStatus

from .docgen import (
    docx_file,
    encrypted_pdf,
    html_file,
    msg_file,
    pdf_file,
    self_repeating_pdf,
    xlsx_file,
)
from .test_documents_api import media, run_ingest_worker, upload, written  # noqa: F401

pytestmark = pytest.mark.django_db

GOOD_DOCX = docx_file(["Lease signed 12 June 2026 and countersigned 19 June 2026."])


def encrypted_docx() -> bytes:
    out = io.BytesIO()
    msoffcrypto.format.ooxml.OOXMLFile(io.BytesIO(GOOD_DOCX)).encrypt("s3cret", out)
    return out.getvalue()


def bomb_docx() -> bytes:
    """A real Word document with one extra part that inflates 5 MB of zeros."""
    out = io.BytesIO(GOOD_DOCX)
    with zipfile.ZipFile(out, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/bomb.bin", b"\x00" * (5 * 1024 * 1024))
    return out.getvalue()


def plain_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.txt", "signed 1 June 2026")
    return out.getvalue()


REFUSALS = [
    (
        "locked.pdf",
        encrypted_pdf,
        422,
        "DOCUMENT_UNREADABLE",
        "encrypted: the PDF needs a password",
    ),
    ("locked.docx", encrypted_docx, 422, "DOCUMENT_UNREADABLE", "encrypted: the .docx file is"),
    ("broken.pdf", lambda: b"%PDF-1.7\n1 0 obj <<", 422, "DOCUMENT_UNREADABLE", "corrupt: the PDF"),
    ("cut.docx", lambda: GOOD_DOCX[: len(GOOD_DOCX) // 2], 422, "DOCUMENT_UNREADABLE", "corrupt: "),
    (
        "notes.pdf",
        lambda: b"just some text, signed 1 June",
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "mismatch: the name says .pdf but the content is text",
    ),
    (
        "sheet.xlsx",
        lambda: GOOD_DOCX,
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "mismatch: the name says .xlsx but the content is docx",
    ),
    (
        "archive.docx",
        plain_zip,
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "mismatch: the name says .docx but the content is zip",
    ),
    (
        "page.txt",
        lambda: pdf_file(["x"]),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "mismatch: the name says .txt but the content is pdf",
    ),
    ("mail.msg", lambda: GOOD_DOCX, 415, "UNSUPPORTED_MEDIA_TYPE", "mismatch: the name says .msg"),
    ("bomb.docx", bomb_docx, 413, "PAYLOAD_TOO_LARGE", "too large: word/media/bomb.bin inflates"),
]
IDS = [r[0] for r in REFUSALS]


@pytest.mark.parametrize(("name", "make", "status", "code", "reason"), REFUSALS, ids=IDS)
def test_the_upload_api_refuses_with_the_reason_and_writes_nothing(
    ingest_client, name, make, status, code, reason
):
    before = written()
    response = upload(ingest_client, name=name, data=make())
    assert response.status_code == status, response.json()
    assert response.json()["code"] == code
    assert response.json()["detail"].startswith(reason)
    assert written() == before


@pytest.mark.parametrize(("name", "make", "status", "code", "reason"), REFUSALS, ids=IDS)
def test_the_admin_upload_form_refuses_with_the_reason(workspace, name, make, status, code, reason):
    steward = Client()
    assert steward.login(username="sam@acme.test", password="steward-pass-1")
    before = written()
    response = steward.post(
        "/admin/ingest/document/upload/", {"file": SimpleUploadedFile(name, make())}
    )
    assert response.status_code == 200
    assert f"Refused: {reason}" in response.content.decode()
    assert written() == before


def test_too_many_pages_is_413(ingest_client, monkeypatch):
    monkeypatch.setattr(pdf, "LIMITS", dataclasses.replace(LIMITS, pages=2))
    before = written()
    response = upload(ingest_client, name="long.pdf", data=pdf_file(["one", "two", "three"]))
    assert response.status_code == 413
    assert response.json() == {
        "code": "PAYLOAD_TOO_LARGE",
        "detail": "too large: 3 pages (limit 2)",
    }
    assert written() == before


@contextlib.contextmanager
def pdf_work() -> Iterator[dict[str, int]]:
    """How many PDF objects pypdf resolves and page-tree nodes it visits meanwhile: the
    work a PDF costs, counted rather than timed (time is for bench/)."""
    seen = {"objects": 0, "tree": 0}
    resolve, flatten_next = PdfReader.get_object, PdfReader._pop_next_page_tree_kid

    def counted_resolve(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen["objects"] += 1
        return resolve(self, *args, **kwargs)

    def counted_next(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen["tree"] += 1
        return flatten_next(self, *args, **kwargs)

    with (
        mock.patch.object(PdfReader, "get_object", counted_resolve),
        mock.patch.object(PdfReader, "_pop_next_page_tree_kid", counted_next),
    ):
        yield seen


def test_a_self_repeating_page_tree_costs_the_request_a_few_objects(ingest_client):
    """2.4 KB whose page tree lists each node twice, 22 deep (4 million pages): walking it
    to count the pages took 1-3 s of a web worker. The request reads the count the tree's
    root declares — a few objects, the tree never walked — and refuses it."""
    data = self_repeating_pdf(22)
    assert len(data) < 2600
    before = written()
    with pdf_work() as work:
        response = upload(ingest_client, name="loop.pdf", data=data)
    assert response.status_code == 413
    assert response.json() == {
        "code": "PAYLOAD_TOO_LARGE",
        "detail": "too large: 4194304 pages (limit 500)",
    }
    assert work["tree"] == 0 and work["objects"] <= 5, work
    assert written() == before


def test_a_self_repeating_page_tree_that_hides_its_size_is_refused_by_the_job_in_bounds(
    ingest_client, settings
):
    """The same tree declaring one page: the request accepts it after reading a few
    objects; the job walks the tree within pypdf's page-tree bound (2 x the page limit +
    64 nodes, not pypdf's default 100,000) and refuses it, writing nothing."""
    data = self_repeating_pdf(22, declared=1)
    with pdf_work() as work:
        response = upload(ingest_client, name="loop.pdf", data=data)
    assert response.status_code == 202
    assert work["tree"] == 0 and work["objects"] <= 5, work
    before = graph_counts()
    with pdf_work() as work:
        assert run_ingest_worker() == 1
    entries = 2 * LIMITS.pages + 64
    assert work["tree"] <= entries + 64, work
    job = Job.objects.get(pk=response.json()["jobId"])
    assert job.status == JobStatus.DEAD
    assert job.last_error == f"INGEST_FAILED: too large: the page tree has over {entries} entries"
    assert graph_counts() == before
    assert Document.objects.get().refused.startswith("too large: the page tree")


def test_a_folder_with_a_self_repeating_page_tree_ingests_the_rest(workspace, tmp_path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "good.docx").write_bytes(GOOD_DOCX)
    (folder / "loop.pdf").write_bytes(self_repeating_pdf(22, declared=1))
    out = io.StringIO()
    call_command(
        "ingest", str(folder), "--tenant", "acme", "--root", str(tmp_path), "--json", stdout=out
    )
    data = json.loads(out.getvalue())
    [error] = data["errors"]
    assert error["error"].startswith("too large: the page tree has over ")
    assert list(Source.objects.values_list("external_id", flat=True)) == ["inbox/good.docx"]


def test_too_much_uncompressed_is_413(ingest_client, monkeypatch):
    monkeypatch.setattr(sniff, "LIMITS", dataclasses.replace(LIMITS, uncompressed_bytes=1000))
    before = written()
    response = upload(ingest_client, name="lease.docx", data=GOOD_DOCX)
    assert response.status_code == 413
    assert response.json()["detail"].startswith("too large: ")
    assert "bytes uncompressed (limit 1000)" in response.json()["detail"]
    assert written() == before


def graph_counts() -> dict[str, int]:
    return {
        "Source": Source.objects.count(),
        "SourceVersion": SourceVersion.objects.count(),
        "Node": Node.objects.count(),
        "Edge": Edge.objects.count(),
    }


def test_too_many_extracted_characters_is_refused_by_the_worker(
    ingest_client, monkeypatch, workspace
):
    """The character count is known only once the text is extracted: in the job."""
    from ingest import formats

    monkeypatch.setattr(formats, "LIMITS", dataclasses.replace(LIMITS, text_chars=20))
    before = graph_counts()
    assert upload(ingest_client, name="lease.docx", data=GOOD_DOCX).status_code == 202
    run_ingest_worker()
    job = Job.objects.get(kind="ingest:document")
    assert job.status == JobStatus.DEAD
    assert "too large: 57 characters of text (limit 20)" in job.last_error
    assert graph_counts() == before


def _stored_files(root: str) -> list[str]:
    return [str(p) for p in Path(root).rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("lease.docx", GOOD_DOCX, "too large: 57 characters of text (limit 20)"),
        ("lease.html", html_file(title="Lease", body="<p>" + "Lease " * 10 + "</p>"), "too "),
    ],
)
def test_a_file_the_job_refuses_leaves_only_the_refusal_record(
    ingest_client, monkeypatch, workspace, settings, name, data, reason
):
    """Refused in the job, not the request: the stored file is deleted and nothing is
    written to the graph; the Document row is the refusal record, with the reason, and
    the job (`telha jobs ls`) and the admin's document list say it."""
    from ingest import formats

    monkeypatch.setattr(formats, "LIMITS", dataclasses.replace(LIMITS, text_chars=20))
    before = graph_counts()
    assert upload(ingest_client, name=name, data=data).status_code == 202
    assert len(_stored_files(settings.MEDIA_ROOT)) == 1
    run_ingest_worker()
    assert _stored_files(settings.MEDIA_ROOT) == []
    assert graph_counts() == before
    document = Document.objects.get()
    assert document.refused.startswith(reason) and not document.file
    job = Job.objects.get(kind="ingest:document")
    assert job.status == JobStatus.DEAD and job.last_error.startswith("INGEST_FAILED")
    assert reason in job.last_error
    steward = Client()
    assert steward.login(username="sam@acme.test", password="steward-pass-1")
    page = steward.get("/admin/ingest/document/").content.decode()
    assert f"Refused: {reason}" in page


def test_a_folder_reports_each_refused_file_and_ingests_the_rest(workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the root: files are named and identified as inbox/…
    folder = Path("inbox")
    folder.mkdir()
    (folder / "good.docx").write_bytes(GOOD_DOCX)
    for name, make, *_ in REFUSALS:
        (folder / name).write_bytes(make())
    out = io.StringIO()
    call_command("ingest", str(folder), "--tenant", "acme", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["files"] == len(REFUSALS) + 1
    errors = {e["file"]: e["error"] for e in data["errors"]}
    assert set(errors) == {f"inbox/{name}" for name in IDS}
    for name, _make, _status, _code, reason in REFUSALS:
        assert errors[f"inbox/{name}"].startswith(reason), (name, errors[f"inbox/{name}"])
    assert list(Source.objects.values_list("external_id", flat=True)) == ["inbox/good.docx"]
    assert data["opened"] == 1
    table = io.StringIO()
    call_command(
        "ingest",
        str(folder / "locked.pdf"),
        str(folder / "good.docx"),
        "--tenant",
        "acme",
        stdout=table,
    )
    assert "  ! inbox/locked.pdf: encrypted: the PDF needs a password to open" in table.getvalue()


def test_a_refused_file_writes_nothing_through_ingest_file(workspace):
    before = graph_counts()
    for name, make, *_ in REFUSALS:
        outcome = ingest_file(tenant=workspace, file=FileInput(name=name, data=make()))
        assert outcome.error and outcome.facts == 0
    assert graph_counts() == before


UPLOADS = {
    "msa.pdf": pdf_file(["Agreement signed 12 June 2026 and countersigned 19 June 2026."]),
    "lease.docx": GOOD_DOCX,
    "register.xlsx": xlsx_file({"S": [["id", "valid_from"], ["1", "03/04/2026"]]}),
    "policy.html": html_file(
        title="Travel policy", body="<p>Signed 1 June and countersigned 3 July 2026.</p>"
    ),
    "notice.msg": msg_file(
        subject="Renewal",
        sender="Alice Author",
        sender_email="alice@acme.test",
        to=[("Bob Named", "bob@acme.test")],
        body="Please confirm.",
    ),
}


def test_every_format_uploads_and_the_job_extracts_it(ingest_client, settings):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": True}
    for name, data in UPLOADS.items():
        response = upload(ingest_client, name=name, data=data)
        assert response.status_code == 202, (name, response.json())
    assert Source.objects.count() == 0  # the request stored the files; nothing parsed yet
    run_ingest_worker()
    jobs = Job.objects.filter(kind="ingest:document")
    assert {j.status for j in jobs} == {JobStatus.DONE}, [j.last_error for j in jobs]
    names = dict(Document.objects.values_list("external_id", "filename"))
    texts = {
        names[v.source.external_id]: v.text for v in SourceVersion.objects.select_related("source")
    }
    assert set(texts) == set(UPLOADS)
    assert texts["policy.html"] == "Signed 1 June and countersigned 3 July 2026."
    assert texts["register.xlsx"].startswith("# sheet: S\n")
    assert "Please confirm." in texts["notice.msg"]
    assert all(j.result["facts"] >= 1 for j in jobs)
