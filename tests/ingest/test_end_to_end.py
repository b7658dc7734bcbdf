"""The whole loop (issue 7): a document is uploaded → the `ingest:document` worker detects
an anchored relative phrase and a clarification opens → the `clarify:temporal` worker
routes the card to the author's inbox → the author taps the other candidate → the fact
query shows the corrected interval with no caveat."""

import re
from datetime import UTC, datetime
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from clarify.models import Clarification, State
from delivery.models import Delivery
from jobs.models import Job, JobStatus
from jobs.tasks import work

pytestmark = pytest.mark.django_db

PASSWORD = "e2e-pass-" + "x" * 12
DOCUMENT = (
    "---\ntitle: Master services agreement\nauthor: alice@acme.test\nowner: Olga Owner\n"
    "acl: [group:legal]\n---\n"
    "This agreement was signed on 12 June 2026. The services are effective next quarter.\n"
)
JUL_1 = int(datetime(2026, 7, 1, tzinfo=UTC).timestamp()) * 1_000_000
OCT_1 = int(datetime(2026, 10, 1, tzinfo=UTC).timestamp()) * 1_000_000
VALID_AT = int(datetime(2027, 1, 15, tzinfo=UTC).timestamp()) * 1_000_000


@pytest.fixture(autouse=True)
def inbox_only(settings, tmp_path):
    settings.CLARIFY_CHANNELS = ["inbox"]
    settings.MEDIA_ROOT = str(tmp_path / "media")


def run(kind: str) -> int:
    """The in-process worker of `kind` over the jobs protocol (connection recycling off:
    inside a test transaction it would close the test's connection)."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(kind, max_seconds=10)


def signed_in(email: str) -> Client:
    client = Client()
    assert client.login(username=email, password=PASSWORD)
    return client


def cards(client: Client) -> dict[str, str]:
    page = client.get("/inbox/")
    assert page.status_code == 200
    return {
        m.group(1): m.group(2)
        for m in re.finditer(
            r'<section class="card" data-clarification="([^"]+)">(.*?)</section>',
            page.content.decode(),
            re.S,
        )
    }


def term_record(client) -> dict:
    response = client.post(
        "/v1/query", {"labels": ["DOCUMENT_TERM"], "validAt": VALID_AT}, format="json"
    )
    assert response.status_code == 200, response.content
    [record] = response.json()["records"]
    return record


def test_document_to_inbox_to_bound_fact(ingest_client, person_client, people):
    for name in ("alice", "bob", "olga"):
        people[name].user.set_password(PASSWORD)
        people[name].user.save()

    # 1. Upload: a 202 and an ingest:document job carrying the capability flag.
    response = ingest_client.post(
        "/v1/documents",
        {"file": SimpleUploadedFile("msa.md", DOCUMENT.encode())},
        format="multipart",
    )
    assert response.status_code == 202
    ingest_job = Job.objects.get(pk=response.json()["jobId"])
    assert ingest_job.payload["options"] == {"clarify": True}

    # 2. The ingest worker leases it: a relative_date clarification opens, best guess applied.
    assert run("ingest:document") == 1
    ingest_job.refresh_from_db()
    assert ingest_job.status == JobStatus.DONE
    assert ingest_job.result["opened"] == 1
    clar = Clarification.objects.get()
    assert (clar.kind, clar.state) == ("relative_date", State.OPEN)
    assert [(c["label"], c["validFrom"]) for c in clar.candidates] == [
        ("1 July 2026 (next quarter after signature)", JUL_1),
        ("1 October 2026 (the quarter after)", OCT_1),
    ]
    alice_api = person_client("alice")
    before = term_record(alice_api)
    assert (before["validFrom"], before["validTo"]) == (JUL_1, None)
    assert before["pendingClarification"] is not None
    assert before["pendingClarification"]["id"] == str(clar.pk)

    # 3. The delivery worker routes the card: the author (alice) ranks first.
    assert run("clarify:temporal") >= 1
    [delivery] = Delivery.objects.filter(clarification=clar)
    assert delivery.person == people["alice"]
    assert delivery.channel == "inbox"
    alice = signed_in("alice@acme.test")
    inbox = cards(alice)
    assert list(inbox) == [str(clar.pk)]
    card = inbox[str(clar.pk)]
    assert "When does “Master services agreement — effective period” take effect?" in card
    assert "1 October 2026 (the quarter after)" in card
    for other in ("olga@acme.test", "bob@acme.test"):  # the right person, and only her
        assert cards(signed_in(other)) == {}
    [nonce] = set(re.findall(r'name="nonce" value="([^"]+)"', card))

    # 4. The tap: the second candidate.
    response = alice.post(
        "/inbox/answer",
        {"clarification_id": str(clar.pk), "nonce": nonce, "answer_index": "1"},
    )
    assert response.status_code == 302 and response["Location"] == "/inbox/"
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    assert cards(alice) == {}

    # 5. The query shows the corrected interval and no caveat.
    after = term_record(alice_api)
    assert (after["validFrom"], after["validTo"]) == (OCT_1, None)
    assert after["pendingClarification"] is None
    assert after["provenance"]["clarification"] == str(clar.pk)
    assert after["id"] == before["id"]
    # The same through the ingest key (a service sees the whole tenant).
    assert term_record(ingest_client)["validFrom"] == OCT_1


def test_with_clarify_disabled_nobody_is_asked(ingest_client, person_client, people, settings):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": False}
    people["alice"].user.set_password(PASSWORD)
    people["alice"].user.save()
    ingest_client.post(
        "/v1/documents",
        {"file": SimpleUploadedFile("msa.md", DOCUMENT.encode())},
        format="multipart",
    )
    assert run("ingest:document") == 1
    assert Clarification.objects.count() == 0
    assert run("clarify:temporal") == 0
    assert cards(signed_in("alice@acme.test")) == {}
    record = term_record(person_client("alice"))
    # No ambiguity emitted: the relative phrase leaves the term open, and nothing pending.
    assert (record["validFrom"], record["pendingClarification"]) == (None, None)
