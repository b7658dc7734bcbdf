"""Two uploads are two documents (issue 28, item 1; CONTRACT §3.1b): files uploaded under
the same name are separate sources, each under its own ACL, whichever comes first — so a
finance-only person never reads the legal document's facts, and a legal person never
answers on the finance document. Naming an `externalId` makes an upload a new version of
that source, under the new ACL only once its job has applied it through the same checks
as a resubmission. The admin's text view finds a document's text by id, not by name."""

import dataclasses
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from clarify.models import Clarification, ResponseRecord
from graph.models import Node, Source
from ingest.models import Document
from jobs.models import Job, JobStatus

from .test_documents_api import media, run_ingest_worker, upload  # noqa: F401

pytestmark = pytest.mark.django_db

LEGAL = (
    "Cross-licence between the parties. It was signed by Alice Author on 12 June 2026 and\n"
    "countersigned by Bob Named on 19 June 2026. The licence is effective next quarter.\n"
)
FINANCE = "Supplier invoice terms. Signed on 1 July 2026. Payable within 30 days of signature.\n"
TEXT = {"legal": LEGAL, "finance": FINANCE}
# Who reads what: the workspace's groups (alice, bob and vera legal, olga finance, sam both).
READERS = {"alice": {"legal"}, "vera": {"legal"}, "olga": {"finance"}, "sam": {"legal", "finance"}}


def upload_as(client: Any, group: str, **fields: str) -> Any:
    response = upload(
        client, name="report.md", data=TEXT[group].encode(), acl=f"group:{group}", **fields
    )
    assert response.status_code == 202, response.content
    return response


def world() -> dict[str, dict[str, Any]]:
    """Each uploaded document's source, fact node ids and clarification ids, by group."""
    out: dict[str, dict[str, Any]] = {}
    for document in Document.objects.all():
        group = document.acl[0].removeprefix("group:")
        source = Source.objects.get(system="upload", external_id=document.external_id)
        out[group] = {
            "document": document,
            "source": source,
            "nodes": [
                str(pk) for pk in Node.objects.filter(source=source).values_list("pk", flat=True)
            ],
            "clarifications": [
                str(pk)
                for pk in Clarification.objects.filter(source_version__source=source).values_list(
                    "pk", flat=True
                )
            ],
        }
    return out


def assert_reader_view(client: Any, reads: set[str], docs: dict[str, dict[str, Any]]) -> None:
    """What one reader sees of every document: its facts, their history, the query, the
    clarifications (list and each one) — all of the groups they read, none of the others
    (another's is a 404, never a 403)."""
    for group, doc in docs.items():
        expected = 200 if group in reads else 404
        for node in doc["nodes"]:
            assert client.get(f"/v1/nodes/{node}").status_code == expected, (group, node)
            history = client.get(f"/v1/nodes/{node}/history")
            assert history.status_code == expected, (group, node)
        for clar in doc["clarifications"]:
            assert client.get(f"/v1/clarifications/{clar}").status_code == expected
    query = {"labels": ["DOCUMENT_TERM"], "validAt": "2027-01-01T00:00:00Z"}
    found = client.post("/v1/query", query, format="json").json()
    terms = {str(pk) for pk in Node.objects.filter(key="term").values_list("pk", flat=True)}
    assert {r["id"] for r in found["records"]} == {
        n for g in reads if g in docs for n in docs[g]["nodes"] if n in terms
    }
    listed = {c["id"] for c in client.get("/v1/clarifications").json()["results"]}
    assert listed == {c for g in reads if g in docs for c in docs[g]["clarifications"]}


@pytest.mark.parametrize("order", [("legal", "finance"), ("finance", "legal")])
def test_two_uploads_of_the_same_name_are_two_sources_each_under_its_own_acl(
    ingest_client, person_client, order
):
    first = upload_as(ingest_client, order[0])
    upload_as(ingest_client, order[1])
    assert run_ingest_worker() == 2
    docs = world()
    assert set(docs) == {"legal", "finance"}
    assert Source.objects.count() == 2
    for group, doc in docs.items():
        assert doc["source"].acl == [f"group:{group}"]
        assert doc["source"].external_id == str(doc["document"].pk)
        assert doc["source"].versions.get().text == TEXT[group]
        assert doc["document"].source_version == doc["source"].versions.get()
        assert doc["nodes"] and doc["clarifications"]
    job = Job.objects.get(pk=first.json()["jobId"])
    assert job.result["externalId"] == str(docs[order[0]]["document"].pk)

    for reader, reads in READERS.items():
        assert_reader_view(person_client(reader), reads, docs)

    # Answering: someone who may not read a document cannot answer on it, and nothing
    # is written; its own group's editor can.
    for group, other_reader, own_reader in (
        ("legal", "olga", "alice"),
        ("finance", "alice", "olga"),
    ):
        clar = docs[group]["clarifications"][0]
        before = ResponseRecord.objects.count()
        refused = person_client(other_reader).post(
            f"/v1/clarifications/{clar}/answer", {"answerIndex": 0}, format="json"
        )
        assert refused.status_code == 404 and refused.json()["code"] == "NOT_FOUND"
        assert ResponseRecord.objects.count() == before
        answered = person_client(own_reader).post(
            f"/v1/clarifications/{clar}/answer", {"answerIndex": 0}, format="json"
        )
        assert answered.status_code in (200, 202), answered.content
        assert ResponseRecord.objects.count() == before + 1


def test_two_admin_uploads_of_the_same_name_are_two_sources(workspace, person_client):
    steward = Client()
    assert steward.login(username="sam@acme.test", password="steward-pass-1")
    for group in ("legal", "finance"):
        response = steward.post(
            "/admin/ingest/document/upload/",
            {
                "file": SimpleUploadedFile("report.md", TEXT[group].encode()),
                "acl": f"group:{group}",
            },
        )
        assert response.status_code == 302
    assert run_ingest_worker() == 2
    docs = world()
    assert {g: d["source"].acl for g, d in docs.items()} == {
        "legal": ["group:legal"],
        "finance": ["group:finance"],
    }
    for reader, reads in READERS.items():
        assert_reader_view(person_client(reader), reads, docs)
    # Each document's page shows its own text, found by id (not the other's by name).
    for group, doc in docs.items():
        page = steward.get(f"/admin/ingest/document/{doc['document'].pk}/change/")
        html = page.content.decode()
        other = "finance" if group == "legal" else "legal"
        assert TEXT[group].split(".")[0] in html
        assert TEXT[other].split(".")[0] not in html


# --- naming the source: a new version of it ---------------------------------------------


def test_naming_an_external_id_makes_a_new_version_under_the_new_acl(ingest_client, person_client):
    upload_as(ingest_client, "legal", externalId="reports/q3")
    run_ingest_worker()
    legal = world()["legal"]
    assert legal["source"].external_id == "reports/q3"
    upload_as(ingest_client, "finance", externalId="reports/q3")
    # Until its job has applied it, the source keeps the ACL it had.
    assert_reader_view(person_client("alice"), {"legal"}, {"legal": legal})
    run_ingest_worker()
    source = Source.objects.get()
    assert source.acl == ["group:finance"]
    assert [v.text for v in source.versions.order_by("tx")] == [LEGAL, FINANCE]
    second = Document.objects.get(acl=["group:finance"])
    assert second.source_version == source.versions.order_by("tx").last()
    facts = [str(pk) for pk in Node.objects.filter(source=source).values_list("pk", flat=True)]
    for node in facts:
        assert person_client("alice").get(f"/v1/nodes/{node}").status_code == 404
        assert person_client("olga").get(f"/v1/nodes/{node}").status_code == 200
    for clar in legal["clarifications"]:  # the old version's questions: legal may not answer
        before = ResponseRecord.objects.count()
        response = person_client("alice").post(
            f"/v1/clarifications/{clar}/answer", {"answerIndex": 0}, format="json"
        )
        assert response.status_code == 404
        assert ResponseRecord.objects.count() == before
    # The admin's pages: each document its own version's text.
    steward = Client()
    assert steward.login(username="sam@acme.test", password="steward-pass-1")
    first = Document.objects.get(acl=["group:legal"])
    html = steward.get(f"/admin/ingest/document/{first.pk}/change/").content.decode()
    assert "Cross-licence" in html and "Supplier invoice" not in html


def test_a_new_version_refused_by_its_job_leaves_the_source_and_its_acl(
    ingest_client, person_client, monkeypatch
):
    from ingest import formats

    upload_as(ingest_client, "legal", externalId="reports/q3")
    run_ingest_worker()
    source = Source.objects.get()
    versions = list(source.versions.values_list("pk", flat=True))
    monkeypatch.setattr(formats, "LIMITS", dataclasses.replace(formats.LIMITS, text_chars=20))
    html = b"<html><body><p>" + FINANCE.encode() + b"</p></body></html>"
    response = upload(
        ingest_client, name="report.html", data=html, acl="group:finance", externalId="reports/q3"
    )
    assert response.status_code == 202
    run_ingest_worker()
    assert Job.objects.get(pk=response.json()["jobId"]).status == JobStatus.DEAD
    source.refresh_from_db()
    assert source.acl == ["group:legal"]
    assert list(source.versions.values_list("pk", flat=True)) == versions
    node = Node.objects.filter(source=source).first()
    assert person_client("alice").get(f"/v1/nodes/{node.pk}").status_code == 200
    assert person_client("olga").get(f"/v1/nodes/{node.pk}").status_code == 404


def test_a_new_version_never_lifts_a_restriction(ingest_client):
    upload_as(ingest_client, "legal", externalId="reports/q3", restriction="privileged")
    run_ingest_worker()
    upload_as(ingest_client, "legal", externalId="reports/q3")
    run_ingest_worker()
    assert Source.objects.get().restriction == "privileged"
