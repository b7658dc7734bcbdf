"""`POST /v1/documents` (CONTRACT §3.1b) and the steward upload form: who may upload,
refusals that write nothing (403, 413, 415, 422), the `ingest:document` job with the
capability flag forced by the core, the worker leasing it over the jobs protocol (and
emitting ambiguities only when `options.clarify` is true), and the job's outcome in
`telha jobs ls` and the admin document list."""

import io
import json
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from clarify.models import Clarification
from graph.models import Node, Source
from ingest.detection.build import MAX_FILE_BYTES
from ingest.models import Document
from jobs.models import Job, JobStatus
from jobs.tasks import work

pytestmark = pytest.mark.django_db

CONTRACT = (
    "---\ntitle: MSA\nauthor: alice@acme.test\n---\n"
    "It was signed by Alice Author on 12 June 2026 and countersigned by Bob Named on\n"
    "19 June 2026. The services are effective next quarter.\n"
)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def upload(client, name="msa.md", data: bytes = CONTRACT.encode(), **fields):
    return client.post(
        "/v1/documents", {"file": SimpleUploadedFile(name, data), **fields}, format="multipart"
    )


def written() -> dict[str, int]:
    return {
        "Document": Document.objects.count(),
        "Job": Job.objects.count(),
        "Source": Source.objects.count(),
        "Clarification": Clarification.objects.count(),
    }


def run_ingest_worker() -> int:
    """The in-process `ingest:` worker over the jobs protocol. Connection recycling is off
    (inside a test transaction it would close the test's connection)."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work("ingest:document", max_seconds=10)


# --- who may upload -----------------------------------------------------------------------


def test_an_ingest_key_uploads(ingest_client, workspace):
    before = written()
    response = upload(ingest_client, title="Master services agreement", acl="group:legal")
    assert response.status_code == 202, response.content
    body = response.json()
    assert set(body) == {"jobId", "kind"}
    assert body["kind"] == "ingest:document"
    job = Job.objects.get(pk=body["jobId"])
    document = Document.objects.get()
    assert (job.kind, job.audience, job.status, job.tenant_id) == (
        "ingest:document",
        "ingest",
        JobStatus.PENDING,
        workspace.pk,
    )
    payload = {k: job.payload.get(k) for k in ("v", "documentId", "options")}
    assert payload == {"v": 1, "documentId": str(document.pk), "options": {"clarify": True}}
    assert job.subject == str(document.pk)
    assert document.job_id == job.pk
    assert (document.filename, document.size, document.title, document.acl) == (
        "msa.md",
        len(CONTRACT.encode()),
        "Master services agreement",
        ["group:legal"],
    )
    assert document.uploaded_by.startswith("key:")
    with document.file.open("rb") as fh:
        assert fh.read() == CONTRACT.encode()
    after = written()
    assert (after["Document"], after["Job"]) == (before["Document"] + 1, before["Job"] + 1)
    assert after["Source"] == before["Source"]  # nothing ingested until the worker runs


def test_a_stewards_key_uploads(person_client):
    response = upload(person_client("sam"))
    assert response.status_code == 202
    assert Document.objects.get().uploaded_by.startswith("key:")


@pytest.mark.parametrize(
    "who",
    ["alice", "vera", "sam-as-editor"],
    ids=["editor", "viewer", "steward-key-with-editor-role"],
)
def test_other_person_keys_may_not_upload(person_client, who):
    client = person_client("sam", "editor") if who == "sam-as-editor" else person_client(who)
    before = written()
    response = upload(client)
    assert response.status_code == 403
    assert response.json()["code"] == "PERMISSION_DENIED"
    assert written() == before


def test_a_clarify_key_and_no_key_may_not_upload(clarify_client, workspace):
    before = written()
    assert upload(clarify_client).status_code == 403
    assert upload(Client()).status_code == 401
    assert written() == before


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["contract.pdf", "contract.docx", "contract", "contract.md.exe"])
def test_other_types_are_415(ingest_client, name):
    before = written()
    response = upload(ingest_client, name=name)
    assert response.status_code == 415
    assert response.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert written() == before


@pytest.mark.parametrize("name", ["a.txt", "a.md", "a.csv", "a.eml", "A.MD"])
def test_supported_types(ingest_client, name):
    assert upload(ingest_client, name=name, data=b"hello").status_code == 202


@pytest.mark.parametrize(
    "size",
    [MAX_FILE_BYTES + 1, MAX_FILE_BYTES + 200 * 1024],
    ids=["just-over", "well-over"],
)
def test_over_10_mb_is_413(ingest_client, size):
    before = written()
    response = upload(ingest_client, name="big.txt", data=b"x" * size)
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"
    assert written() == before


def test_exactly_10_mb_is_accepted(ingest_client):
    assert upload(ingest_client, name="big.txt", data=b"x" * MAX_FILE_BYTES).status_code == 202


@pytest.mark.parametrize("acl", ["legal", "group:", "user:alice", "group:legal,nope"])
def test_a_bad_acl_principal_is_422(ingest_client, acl):
    before = written()
    response = upload(ingest_client, acl=acl)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_INPUT"
    assert written() == before


def test_without_a_file_is_422(ingest_client):
    before = written()
    response = ingest_client.post("/v1/documents", {"title": "x"}, format="multipart")
    assert response.status_code == 422
    assert written() == before


def test_json_is_not_an_upload(ingest_client):
    before = written()
    response = ingest_client.post("/v1/documents", {"file": "x"}, format="json")
    assert response.status_code == 415
    assert written() == before


# --- the job and its worker (the capability flag is the real path) -----------------------


def test_the_worker_ingests_and_opens_clarifications(ingest_client, workspace):
    upload(
        ingest_client,
        title="Master services agreement",
        acl="group:legal",
        restriction="privileged",
    )
    assert run_ingest_worker() == 1
    job = Job.objects.get(kind="ingest:document")
    assert job.status == JobStatus.DONE
    document = Document.objects.get()
    assert job.result == {
        "file": "msa.md",
        "externalId": str(document.pk),  # its own source, not its file name
        "facts": 2,
        "ambiguities": {"conflicting_dates": 1, "relative_date": 1},
        "opened": 2,
        "deduplicated": 0,
        "error": "",
        "clarify": True,
    }
    source = Source.objects.get()
    assert (source.system, source.external_id, source.title) == (
        "upload",
        str(document.pk),
        "Master services agreement",
    )
    assert document.source_version == source.versions.get()
    assert (source.acl, source.restriction) == (["group:legal"], "privileged")
    assert sorted(Clarification.objects.values_list("kind", flat=True)) == [
        "conflicting_dates",
        "relative_date",
    ]
    assert run_ingest_worker() == 0  # nothing left


@pytest.mark.parametrize("enabled", [False, True], ids=["disabled", "enabled"])
def test_the_core_forces_the_capability_flag(ingest_client, settings, enabled):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": enabled}
    response = upload(ingest_client)
    assert Job.objects.get(pk=response.json()["jobId"]).payload["options"] == {"clarify": enabled}


def test_clarify_disabled_the_worker_writes_facts_but_opens_nothing(ingest_client, settings):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": False}
    upload(ingest_client)
    # The worker reads the job's flag, not the setting: flipping it now changes nothing.
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": True}
    assert run_ingest_worker() == 1
    job = Job.objects.get()
    assert job.status == JobStatus.DONE
    assert job.result["clarify"] is False
    assert job.result["facts"] == 2
    assert (job.result["ambiguities"], job.result["opened"]) == ({}, 0)
    assert Clarification.objects.count() == 0
    assert Node.objects.filter(source__isnull=False).count() == 2  # the facts are there
    assert Job.objects.filter(kind__startswith="clarify:").count() == 0


def test_clarify_enabled_the_worker_emits_ambiguities_and_clarifications_open(ingest_client):
    upload(ingest_client)  # enabled (the test default)
    assert run_ingest_worker() == 1
    job = Job.objects.get(kind="ingest:document")
    assert job.result["clarify"] is True
    assert job.result["ambiguities"] == {"conflicting_dates": 1, "relative_date": 1}
    assert job.result["opened"] == 2
    assert Clarification.objects.count() == 2
    assert Job.objects.filter(kind="clarify:temporal").count() == 2  # routing jobs


def test_the_core_still_decides_when_clarify_is_disabled_after_the_upload(ingest_client, settings):
    upload(ingest_client)  # the job says clarify: true…
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": False}  # …but the core is off now
    assert run_ingest_worker() == 1
    job = Job.objects.get(kind="ingest:document")
    assert job.result["ambiguities"] == {"conflicting_dates": 1, "relative_date": 1}
    assert job.result["opened"] == 0
    assert Clarification.objects.count() == 0


def test_a_worker_supplied_flag_cannot_override_the_core(workspace, settings):
    from jobs.services import job_enqueue

    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": False}
    job = job_enqueue(
        tenant=workspace,
        kind="ingest:document",
        payload={"v": 1, "documentId": "x", "options": {"clarify": True}},
    )
    assert job.payload["options"] == {"clarify": False}


def test_the_job_outcome_in_jobs_ls(ingest_client):
    upload(ingest_client)
    run_ingest_worker()
    out = io.StringIO()
    call_command("jobs", "ls", "--kind", "ingest:", "--json", stdout=out)
    [row] = json.loads(out.getvalue())
    assert (row["kind"], row["status"], row["tenant"]) == ("ingest:document", "done", "acme")
    assert row["result"]["opened"] == 2
    assert row["result"]["ambiguities"] == {"conflicting_dates": 1, "relative_date": 1}
    assert row["lastError"] == ""


def test_a_deleted_document_fails_its_job_for_good(ingest_client):
    upload(ingest_client)
    Document.objects.all().delete()
    assert run_ingest_worker() == 1
    job = Job.objects.get(kind="ingest:document")
    assert job.status == JobStatus.DEAD
    assert "DOCUMENT_MISSING" in job.last_error
    assert Source.objects.count() == 0


def test_reuploading_the_same_file_naming_its_source_deduplicates(ingest_client):
    upload(ingest_client, externalId="contracts/msa")
    run_ingest_worker()
    upload(ingest_client, externalId="contracts/msa")
    run_ingest_worker()
    second = Job.objects.filter(kind="ingest:document").order_by("-id").first()
    assert second.result["externalId"] == "contracts/msa"
    assert (second.result["opened"], second.result["deduplicated"]) == (0, 2)
    assert Clarification.objects.count() == 2
    assert Source.objects.get().external_id == "contracts/msa"
    # Both documents show the one version they share (the same content).
    assert {d.source_version_id for d in Document.objects.all()} == {
        Source.objects.get().versions.get().pk
    }


def test_reuploading_the_same_file_without_naming_its_source_is_a_new_source(ingest_client):
    upload(ingest_client)
    upload(ingest_client)
    assert run_ingest_worker() == 2
    assert Source.objects.count() == 2
    assert sorted(Source.objects.values_list("external_id", flat=True)) == sorted(
        str(pk) for pk in Document.objects.values_list("pk", flat=True)
    )
    assert Clarification.objects.count() == 4  # each source asks its own questions


@pytest.mark.parametrize("external_id", ["x" * 501, "a\x00b"], ids=["over-500-characters", "nul"])
def test_a_bad_external_id_is_422_and_writes_nothing(ingest_client, external_id):
    before = written()
    response = upload(ingest_client, externalId=external_id)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_INPUT"
    assert written() == before


def test_an_empty_external_id_is_no_external_id(ingest_client):
    upload(ingest_client, externalId="  ")
    document = Document.objects.get()
    assert document.external_id == str(document.pk)


# --- the steward admin ------------------------------------------------------------------


@pytest.fixture
def steward(workspace):
    client = Client()
    assert client.login(username="sam@acme.test", password="steward-pass-1")
    return client


def test_the_admin_upload_form(steward, workspace):
    page = steward.get("/admin/ingest/document/upload/")
    assert page.status_code == 200
    assert b'enctype="multipart/form-data"' in page.content
    assert (
        "A .txt, .md, .csv, .eml, .pdf, .docx, .xlsx, .html/.htm or .msg file of at most 10 MB."
        in page.content.decode()
    )
    response = steward.post(
        "/admin/ingest/document/upload/",
        {
            "file": SimpleUploadedFile("msa.md", CONTRACT.encode()),
            "title": "MSA",
            "acl": "group:legal",
            "restriction": "",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "/admin/ingest/document/"
    document = Document.objects.get()
    assert (document.tenant_id, document.title, document.acl) == (
        workspace.pk,
        "MSA",
        ["group:legal"],
    )
    assert document.uploaded_by.startswith("steward:")
    job = Job.objects.get(pk=document.job_id)
    assert job.payload["options"] == {"clarify": True}
    listing = steward.get("/admin/ingest/document/").content.decode()
    assert "msa.md" in listing and "waiting for the worker" in listing
    run_ingest_worker()
    listing = steward.get("/admin/ingest/document/").content.decode()
    assert f"#{job.pk} done" in listing
    # The kinds sorted by name on every database (jsonb does not keep key order).
    assert (
        "2 facts, ambiguities: conflicting_dates 1, relative_date 1, 2 opened, 0 deduplicated"
        in listing
    ), listing


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"file": ("setup.exe", b"MZ")},
            "Only .txt, .md, .csv, .eml, .pdf, .docx, .xlsx, .html/.htm and .msg files are "
            "accepted.",
        ),
        ({"file": ("scan.pdf", b"%PDF")}, "Refused: corrupt: the PDF cannot be read"),
        ({"file": ("msa.docx", b"plain text")}, "Refused: mismatch: the name says .docx"),
        ({"file": ("msa.md", b"x"), "acl": "legal"}, "Use group:NAME, email:ADDR or aad:OID."),
        ({"title": "no file"}, "This field is required."),
    ],
    ids=["exe", "corrupt-pdf", "mismatch", "bad-acl", "no-file"],
)
def test_the_admin_upload_form_refuses(steward, fields, error):
    before = written()
    data = {k: v for k, v in fields.items() if k != "file"}
    if "file" in fields:
        data["file"] = SimpleUploadedFile(*fields["file"])
    response = steward.post("/admin/ingest/document/upload/", data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert written() == before


def test_the_admin_shows_a_failed_job(steward, ingest_client):
    upload(ingest_client)
    Job.objects.update(status=JobStatus.DEAD, last_error="INGEST_FAILED: something")
    listing = steward.get("/admin/ingest/document/").content.decode()
    assert "INGEST_FAILED: something" in listing


def test_only_stewards_reach_the_upload_form(workspace, people):
    people["alice"].user.set_password("alice-pass-1")
    people["alice"].user.save()
    client = Client()
    client.login(username="alice@acme.test", password="alice-pass-1")
    response = client.get("/admin/ingest/document/upload/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
