"""The card's document link works for the person asked (issue 28 item 7): the read-only
document page outside the admin (`/inbox/documents/<source id>/`) for whoever may read the
source — the extracted text, the question's span highlighted — and a 404 for everyone
else (the one read rule); the cards link to it; it writes nothing."""

import re
import uuid

import pytest
from django.test import Client

from clarify.models import AuditEvent, Clarification
from delivery.cards import build_card, build_escalation
from delivery.restriction import excerpt_for_chat

from .conftest import (
    PASSWORD,
    SPAN_TEXT,
    TEXT,
    build_submission,
    deliveries,
    run_worker,
    snapshot_rows,
    submit_with,
)
from .test_inbox import page_of, sections, signed_in

pytestmark = pytest.mark.usefixtures("inbox_only")

PASSAGE = f'<mark id="passage" class="passage">{SPAN_TEXT}</mark>'


def submit_without_uri(client, **kwargs) -> Clarification:
    """A submission whose source has no address in its system (an upload, a file ingested
    from disk): the card can link only to this server's document page."""
    body = build_submission(**kwargs)
    body["source"]["uri"] = ""
    resp = client.post("/v1/submissions", body, format="json")
    assert resp.status_code == 201, resp.content
    [clar] = resp.json()["clarifications"]
    return Clarification.objects.get(pk=clar["id"])


def path_of(clar: Clarification) -> str:
    source_id = clar.source_version.source_id
    return f"/inbox/documents/{source_id}/?clarification={clar.pk}"


def test_the_card_links_to_the_document_page_for_its_question(ingest_client, settings):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8100"
    clar = submit_without_uri(ingest_client)
    card = build_card(clar, "nonce", excerpt_for_chat(clar))
    assert card.passage_path == path_of(clar) + "#passage"
    assert card.document_url == "http://127.0.0.1:8100" + card.passage_path
    assert card.original_url == ""
    assert "/admin/" not in card.document_url
    escalation = build_escalation(clar, [])
    assert (escalation.passage_path, escalation.document_url) == (
        card.passage_path,
        card.document_url,
    )
    # With an address in its source system, chat messages link the original; the inbox
    # links both.
    other = submit_with(ingest_client, external_id="contracts/other.docx")
    card = build_card(other, "nonce", excerpt_for_chat(other))
    assert card.document_url == card.original_url == "https://example.test/contracts/other.docx"
    assert card.passage_path == path_of(other) + "#passage"


def test_the_person_asked_opens_the_document_from_the_inbox(ingest_client, with_passwords):
    clar = submit_without_uri(ingest_client)
    run_worker()
    [d] = deliveries(clar)
    asked = next(p for p in with_passwords.values() if p.pk == d.person_id)
    client = signed_in(asked)
    card = sections(page_of(client))[str(clar.pk)]
    [href] = re.findall(r'Document: <a href="([^"]+)">Master services agreement</a>', card)
    assert href == path_of(clar) + "#passage"  # on this server, whatever its port
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    resp = client.get(href.split("#")[0])
    assert resp.status_code == 200
    page = resp.content.decode()
    assert "<h1>Master services agreement</h1>" in page
    assert PASSAGE in page
    assert page.count("<mark") == 1
    before_span, after_span = TEXT.split(SPAN_TEXT)
    assert before_span in page and after_span in page
    assert "When does “MSA term” take effect?" in page
    assert "/admin/" not in page
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before


@pytest.mark.parametrize("who", ["vera", "alice", "sam"])
def test_whoever_may_read_the_source_reads_the_page(ingest_client, with_passwords, who):
    clar = submit_with(ingest_client)  # ACL group:legal: vera (viewer) and alice; sam steward
    resp = signed_in(with_passwords[who]).get(path_of(clar))
    assert resp.status_code == 200
    page = resp.content.decode()
    assert PASSAGE in page
    assert '<a href="https://example.test/contracts/msa.docx">Open the original document</a>' in (
        page
    )


def test_without_a_question_the_latest_text_is_shown_unmarked(ingest_client, with_passwords):
    clar = submit_with(ingest_client)
    other = submit_with(ingest_client, external_id="contracts/other.docx")
    client = signed_in(with_passwords["alice"])
    source_path = f"/inbox/documents/{clar.source_version.source_id}/"
    for query in ("", f"?clarification={other.pk}", "?clarification=not-a-uuid"):
        resp = client.get(source_path + query)
        assert resp.status_code == 200, query
        page = resp.content.decode()
        assert SPAN_TEXT in page and "<mark" not in page, query


def test_the_text_is_escaped(ingest_client, with_passwords):
    text = "Signed <script>alert(1)</script> and effective next quarter."
    span = {"start": text.index("effective"), "end": len(text) - 1}
    clar = submit_with(ingest_client, text=text, span=span)
    page = signed_in(with_passwords["alice"]).get(path_of(clar)).content.decode()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<mark id="passage" class="passage">effective next quarter</mark>' in page


def test_a_restricted_source_is_read_by_who_may_and_labelled(ingest_client, with_passwords):
    clar = submit_with(ingest_client, restriction="privileged")
    page = signed_in(with_passwords["alice"]).get(path_of(clar)).content.decode()
    assert "restricted: privileged" in page and PASSAGE in page


def test_anyone_else_gets_a_404_and_nothing_is_written(ingest_client, with_passwords, globex):
    clar = submit_with(ingest_client)  # acme, group:legal
    theirs = submit_with(globex.ingest_client, email_domain="globex.test")
    olga = signed_in(with_passwords["olga"])  # acme, finance only
    gus = Client()
    signed = gus.post("/accounts/login/", {"username": "gus@globex.test", "password": PASSWORD})
    assert signed.status_code == 302
    before = snapshot_rows()
    events_before = AuditEvent.objects.count()
    not_found = [
        (olga, path_of(clar)),  # may not read it
        (gus, path_of(clar)),  # another tenant's
        (signed_in(with_passwords["alice"]), path_of(theirs)),  # another tenant's, too
        (olga, f"/inbox/documents/{uuid.uuid4()}/"),  # no such source
        (olga, "/inbox/documents/not-a-uuid/"),
    ]
    bodies = set()
    for client, path in not_found:
        resp = client.get(path)
        assert resp.status_code == 404, path
        bodies.add(resp.content)
        assert SPAN_TEXT.encode() not in resp.content
    assert len(bodies) == 1  # the same page: nothing tells them apart
    resp = Client().get(path_of(clar))  # not signed in
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/?next=")
    assert snapshot_rows() == before
    assert AuditEvent.objects.count() == events_before


def test_a_user_who_is_no_person_of_a_workspace_reads_nothing(ingest_client):
    from django.contrib.auth.models import User

    clar = submit_with(ingest_client)
    admin = User.objects.create_superuser("root@example.test", password=PASSWORD)
    client = Client()
    client.force_login(admin)  # a superuser with no person: not a reader of any workspace
    assert client.get(path_of(clar)).status_code == 404
