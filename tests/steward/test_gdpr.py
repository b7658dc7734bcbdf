"""GDPR (spec OQ-5, §14 v0.8/v0.9; architecture "GDPR attribution erasure"):
`erase_person_attribution` tombstones attribution while every piece of confirmation
evidence survives; `gdpr_erase` is the full executor, after which no table holds the
person's id, email or aliases except the tombstone row's primary key."""

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.files.base import ContentFile
from django.db import models

from clarify.models import AuditEvent, Clarification, ClarificationBinding, ResponseRecord
from clarify.stewardship import (
    ErasureSubject,
    clarify_policy_update,
    erase_person_attribution,
    scrub,
)
from delivery.actions import ANSWERED, DROPPED, card_action_process
from delivery.ask.services import respond
from delivery.models import CardAction, ChatTurn, Delivery, TeamsConversation
from graph.models import Node, NodeVersion
from ingest.models import Document
from ingest.uploads import document_upload
from jobs.models import JobStatus
from privacy.filenames import FileNameSubject
from tenancy.models import ApiKey, Person, PersonAlias
from tenancy.services import workspace_load
from tests.submissions import OMIT, Submission

from .conftest import (
    JUN_2026,
    NIL,
    SPAN_TEXT,
    TEXT,
    assert_only_events_appended,
    change_url,
    cli,
    events,
    job_of,
    reask_form,
    run_worker,
    snapshot,
)


def _evidence(clar: Any) -> dict[str, Any]:
    """Everything that must survive an erasure: answer values, response times, rights at
    answer time, binding statuses, outcomes, quorum state, the binding and the fact's
    versions."""
    clar.refresh_from_db()
    return {
        "responses": list(
            ResponseRecord.objects.filter(clarification=clar)
            .order_by("seq")
            .values(
                "id",
                "seq",
                "rights_at_answer_time",
                "answer_index",
                "answer_custom",
                "interval_from",
                "interval_to",
                "response_tx",
                "binding_status",
                "outcome_status",
                "outcome",
            )
        ),
        "clarification": (
            clar.state,
            clar.quorum_state,
            clar.quorum_policy,
            clar.fact_version_tx,
            clar.candidates,
            clar.severity,
        ),
        "binding": list(ClarificationBinding.objects.filter(clarification=clar).values()),
        "versions": list(NodeVersion.objects.filter(node=clar.target).order_by("seq").values()),
    }


def _audit_shape(clar: Any) -> list[tuple[Any, ...]]:
    """The audit trail without its values: each event's id, type, time and detail keys."""
    return [(e.pk, e.type, e.at, sorted(e.detail)) for e in events(clar)]


def _mentions(clar: Any, needle: str) -> list[str]:
    return [e.type for e in events(clar) if needle in json.dumps(e.detail)]


def test_clarify_gdpr_tombstone(
    submit, people, passwords, clarify_client, answer, person_client, steward_client
):
    """A bound critical clarification answered by two editors: erasing each responder's
    attribution (alice via the CLI, bob via the service) tombstones asked entries,
    responder ids, message refs and channels, scrubs audit details, appends
    `attribution_erased`; the confirmation evidence and the corrected fact survive."""
    alice, bob = people["alice"], people["bob"]
    passwords("alice", "bob")
    clar = submit(severity_hint="critical")
    assert clar.asked == [str(alice.pk), str(bob.pk)]
    assert run_worker() == 1  # alice's card goes out: delivery events name her
    first = clarify_client.post(
        f"/v1/clarifications/{clar.pk}/answer",
        {
            "answerIndex": 1,
            "responder": str(alice.pk),
            "rights": "editor",
            "channel": "slack",
            "messageRef": "slack:C0LEGAL/1781222400.000100",
        },
        format="json",
    )
    assert first.status_code == 202 and first.json()["quorumRemaining"] == 1
    second = answer("bob", clar, index=1)
    assert second.status_code == 200 and second.json()["quorumSatisfied"] is True
    evidence = _evidence(clar)
    assert evidence["clarification"][:2] == ("answered", "satisfied")
    assert [r["binding_status"] for r in evidence["responses"]] == ["bound", "bound"]
    assert evidence["binding"][0]["evidence_class"] == "quorum_confirmation"
    fact_version_tx = second.json()["factVersionTx"]
    assert _mentions(clar, str(alice.pk)) and _mentions(clar, str(bob.pk))
    job_ranking = job_of(clar).payload["ranking"]
    shape = _audit_shape(clar)

    out = cli(
        "clarify", "erase-attribution", "--tenant", "acme", "--person", "alice@acme.test", "--json"
    )
    assert out == {"clarifications": 1}
    clar.refresh_from_db()
    assert clar.asked == [NIL, str(bob.pk)]
    alice_record, bob_record = ResponseRecord.objects.filter(clarification=clar).order_by("seq")
    assert (str(alice_record.responder), alice_record.message_ref, alice_record.channel) == (
        NIL,
        None,
        "erased",
    )
    assert (bob_record.responder, bob_record.channel) == (bob.pk, "api")
    assert _mentions(clar, str(alice.pk)) == []
    assert _mentions(clar, str(bob.pk))  # only alice's were scrubbed
    [erased] = events(clar, "attribution_erased")
    assert erased.detail == {
        "responsesErased": 1,
        "rolesAtAnswerTime": ["editor"],
        "by": None,  # the local operator
        "via": "cli",
    }
    # The audit trail keeps its shape: the same events in the same order with the same
    # detail keys (values scrubbed), and one `attribution_erased` appended.
    after = _audit_shape(clar)
    assert after[:-1] == shape and after[-1][1] == "attribution_erased"
    [request] = AuditEvent.objects.filter(clarification=None, type="erasure_requested")
    assert request.detail == {"scope": "attribution", "by": None, "via": "cli", "clarifications": 1}
    assert str(alice.pk) not in json.dumps(request.detail)
    assert _evidence(clar) == evidence
    # As of PR-064 the routing job's payload is outside erase_person_attribution (recorded
    # limit, spec §14 v0.8): the full `gdpr_erase` executor nils it (next test).
    assert job_of(clar).payload["ranking"] == job_ranking

    assert erase_person_attribution(tenant=clar.tenant, person=bob) == 1
    clar.refresh_from_db()
    assert clar.asked == [NIL, NIL]
    records = list(ResponseRecord.objects.filter(clarification=clar).order_by("seq"))
    assert [(str(r.responder), r.message_ref, r.channel) for r in records] == [
        (NIL, None, "erased"),
        (NIL, None, "erased"),
    ]
    assert [r.rights_at_answer_time for r in records] == ["editor", "editor"]
    for pid in (alice.pk, bob.pk):
        assert _mentions(clar, str(pid)) == []
        assert not AuditEvent.objects.filter(clarification=clar, detail__icontains=str(pid))
    assert [e.type for e in events(clar)].count("attribution_erased") == 2
    assert _audit_shape(clar)[:-1] == after
    # The quorum evidence is untouched: the same two editor confirmations, the same values
    # and times, the same binding and corrected version.
    assert _evidence(clar) == evidence
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.tx_from, current.evidence_class) == (
        JUN_2026,
        fact_version_tx,
        "quorum_confirmation",
    )
    # Erasing again finds nothing left to erase; the request itself is still audited.
    before = snapshot()
    assert erase_person_attribution(tenant=clar.tenant, person=alice) == 0
    [again] = assert_only_events_appended(before)
    assert (again.type, again.clarification_id, again.detail) == (
        "erasure_requested",
        None,
        {"scope": "attribution", "by": None, "via": "cli", "clarifications": 0},
    )

    # The API shows the nil UUID.
    resp = person_client("vera").get(f"/v1/clarifications/{clar.pk}")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["asked"] == [NIL, NIL]
    assert [r["responder"] for r in body["responses"]] == [NIL, NIL]
    assert [r["channel"] for r in body["responses"]] == ["erased", "erased"]
    assert [r["messageRef"] for r in body["responses"]] == [None, None]
    assert [r["rightsAtAnswerTime"] for r in body["responses"]] == ["editor", "editor"]
    assert body["factVersionTx"] == fact_version_tx
    assert str(alice.pk) not in json.dumps(body) and str(bob.pk) not in json.dumps(body)
    delivery_view = clarify_client.get(f"/v1/clarifications/{clar.pk}").json()
    assert delivery_view["asked"] == [NIL, NIL]
    assert "U0ALICE" not in json.dumps(delivery_view["askedAliases"])
    # ...and so does the CLI and the decide page, with the role-level marker.
    shown = cli("clarify", "show", str(clar.pk), "--json")
    assert [(r["responderName"], r["rightsAtAnswerTime"]) for r in shown["responses"]] == [
        ("(erased)", "editor"),
        ("(erased)", "editor"),
    ]
    page = steward_client.get(change_url(clar)).content.decode()
    assert "Alice Author" not in page.split("Erase a person")[0].split("<h2>Decide</h2>")[0]


def _dump_everything() -> list[tuple[str, Any, str, str]]:
    """Every row of every table (django_q's task tables included) as
    (table, pk, column, text), JSON values dumped, pickled values unpickled and sessions
    decoded."""
    rows = []
    for model in apps.get_models(include_auto_created=True):
        for obj in model._base_manager.all().iterator():
            for field in model._meta.concrete_fields:
                value = getattr(obj, field.attname)
                if isinstance(field, models.JSONField) or isinstance(value, dict | list):
                    text = json.dumps(value, default=str)
                else:
                    text = "" if value is None else str(value)
                rows.append((model._meta.db_table, obj.pk, field.attname, text))
            if isinstance(obj, Session):
                rows.append(
                    (
                        model._meta.db_table,
                        obj.pk,
                        "decoded",
                        json.dumps(obj.get_decoded(), default=str),
                    )
                )
    return rows


def _leftovers(needles: set[str], person_id: str) -> list[tuple[str, Any, str, str]]:
    """Every stored mention of any needle, but the tombstone Person row's primary key."""
    return [
        (table, pk, column, text[:200])
        for table, pk, column, text in _dump_everything()
        if any(n.lower() in text.lower() for n in needles)
        and not (table == Person._meta.db_table and str(pk) == person_id and column == "id")
    ]


def test_clarify_gdpr_tombstone_extension(
    submit,
    people,
    passwords,
    answer,
    person_client,
    workspace,
    ingest_client,
    settings,
    tmp_path,
    django_capture_on_commit_callbacks,
):
    """`telha gdpr_erase --tenant acme --person alice@acme.test`: attribution erased
    everywhere, her positions in clarify:temporal rankings nil'd (positions kept), her
    deliveries, card actions, Teams conversation, aliases, keys and Django user gone, the
    documents, facts and uploads that name her redacted, the person tombstoned — and then
    no table (django_q's included) and no stored upload holds her id, email, name or
    aliases but the tombstone's key."""
    settings.MEDIA_ROOT = str(tmp_path)
    alice, bob, olga = people["alice"], people["bob"], people["olga"]
    alice_id, alice_user_id = str(alice.pk), alice.user_id
    # Minutes ingested before her Teams identity was known: an unresolved PERSON node
    # keyed by that alias, which the workspace then gives her.
    sub = Submission(
        "minutes/1",
        "Minutes of the legal sync. Present: Alice Author (alice@acme.test).",
        system="teams",
        title="Legal sync",
    )
    meeting = sub.fact(
        "minutes-1",
        labels=["MEETING"],
        properties={"name": "Legal sync", "actions": "ALICE@acme.test to send"},
        valid_from=OMIT,
        valid_to=OMIT,
        confidence=OMIT,
        span=OMIT,
    )
    # A PERSON node known by its Teams id alone (`properties` replaces the email).
    sub.person("", edge="ATTENDED_BY", of=[meeting], properties={"teamsUserId": "29:alice-teams"})
    minutes = ingest_client.post("/v1/submissions", sub.payload(omit_empty=True), format="json")
    assert minutes.status_code == 201, minutes.content
    teams_node = Node.objects.get(tenant=workspace, key="teamsUserId:29:alice-teams")
    assert teams_node.person_id is None
    workspace_load(
        data={
            "tenant": "acme",
            "groups": ["legal", "finance"],
            "people": [
                {
                    "name": "Alice Author",
                    "email": "alice@acme.test",
                    "role": "editor",
                    "groups": ["legal"],
                    "aliases": {
                        "slackUserId": "U0ALICE",
                        "aadOid": "oid-alice",
                        "teamsUserId": "29:alice-teams",
                    },
                }
            ],
        }
    )
    passwords("alice", "bob")
    alice_client = person_client("alice")  # an API key bound to her
    assert ApiKey.objects.filter(person=alice).count() == 1

    # A: critical, ranking [olga, alice, bob]; olga cannot read it, alice gets the card and
    # answers on it, bob confirms through the API: bound by quorum.
    a = submit(
        external_id="contracts/a.docx",
        severity_hint="critical",
        links=[("AUTHORED_BY", "olga"), ("MENTIONS", "alice"), ("OWNED_BY", "bob")],
    )
    # B: normal, ranking [alice, bob], its source's ACL names her; left unanswered.
    # Its text names her (front matter and body, the way an ingested .md file does).
    b_text = (
        "---\nauthor: alice@acme.test\nslack: U0ALICE\n---\n"
        f"Drafted by Alice   Author for review. {TEXT}"
    )
    b = submit(
        external_id="contracts/b.docx",
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")],
        acl=["group:legal", "email:alice@acme.test"],
        text=b_text,
    )
    b_version = b.source_version
    b_excerpt = b_version.text[b.span_start : b.span_end]
    assert b_excerpt == SPAN_TEXT
    # An upload naming her, in its name, title, ACL and content.
    memo = document_upload(
        tenant=workspace,
        filename="notes-U0ALICE.eml",
        title="Notes for Alice Author",
        content=ContentFile(b"From: Alice Author <alice@acme.test>\nSubject: MSA\n\nSee ya.\n"),
        size=60,
        acl=["group:legal", "email:alice@acme.test", "aad:OID-ALICE"],
        uploaded_by=f"key:{alice_id}",
    )
    memo_path = Path(memo.file.path)
    assert memo_path.name == f"{memo.pk}.eml"  # stored under its id, not her name
    # Uploads whose names name her while their content does not (issue 28 item 3): three
    # stored the way uploads were before they got neutral names — storage rewrote "Alice
    # Author CV.txt" to Alice_Author_CV.txt (and the second one of that name to
    # Alice_Author_CV_xxxxxxx.txt) and "alice@acme.test-notes.txt" to
    # aliceacme.test-notes.txt — and two uploaded since, her name glued or underscored.
    named: list[Any] = []
    for uploaded in ("Alice Author CV.txt", "Alice Author CV.txt", "alice@acme.test-notes.txt"):
        doc = document_upload(
            tenant=workspace, filename=uploaded, content=ContentFile(b"A plain CV."), size=11
        )
        doc.file.delete(save=False)
        doc.file.save(uploaded, ContentFile(b"A plain CV."), save=True)  # the old naming
        named.append(doc)
    stored = [Path(d.file.name).name for d in named]
    assert stored[0] == "Alice_Author_CV.txt" and stored[2] == "aliceacme.test-notes.txt"
    assert re.fullmatch(r"Alice_Author_CV_[A-Za-z0-9]{7}\.txt", stored[1]), stored
    for uploaded in ("AliceAuthor-notes.md", "Alice_Author_review.txt"):
        named.append(
            document_upload(
                tenant=workspace, filename=uploaded, content=ContentFile(b"Notes."), size=6
            )
        )
    named_paths = [Path(d.file.path) for d in named]
    # Her Teams conversation reference (a chat identity).
    TeamsConversation.objects.create(
        tenant=workspace,
        person=alice,
        conversation_id="a:1conv-alice",
        service_url="https://smba.example.test/",
        teams_tenant_id="t-acme",
        user_id="29:alice-teams",
    )
    # C: bob's card, which alice taps through Slack (dropped, audited with her identity).
    c = submit(external_id="contracts/c.docx", links=[("AUTHORED_BY", "bob")])
    assert run_worker() == 3
    card_a = Delivery.objects.get(clarification=a, person=alice)
    assert Delivery.objects.filter(clarification=b, person=alice).exists()
    card_c = Delivery.objects.get(clarification=c, person=bob)
    tapped = card_action_process(
        channel="inbox",
        actor=alice,
        clarification_id=str(a.pk),
        nonce=card_a.nonce,
        answer_index=1,
        action_id="inbox-action-1",
        message_ref=f"inbox:{card_a.nonce[:40]}",
        actor_identity=f"user:{alice_user_id}",
    )
    assert tapped.status == ANSWERED, tapped
    assert answer("bob", a, index=1).status_code == 200
    forwarded = card_action_process(
        channel="slack",
        actor=alice,
        clarification_id=str(c.pk),
        nonce=card_c.nonce,
        answer_index=0,
        action_id="slack-action-9",
        actor_identity="slack:U0ALICE",
    )
    assert forwarded.status == DROPPED and forwarded.reason == "NOT_RECIPIENT"
    assert alice_client.get(f"/v1/clarifications/{a.pk}").status_code == 200
    # She asked a question in chat: the exchange is stored history about her.
    respond(person=alice, question="When does the MSA term start?", channel="inbox")
    assert ChatTurn.objects.filter(person=alice).count() == 2
    # Bob asked about her: his history stays, her mention in it goes.
    respond(person=bob, question="Did alice@acme.test sign the MSA?", channel="inbox")
    evidence_a = _evidence(a)
    assert evidence_a["clarification"][:2] == ("answered", "satisfied")
    job_a, job_b = job_of(a), job_of(b)
    assert job_a.payload["ranking"] == [str(olga.pk), alice_id, str(bob.pk)]
    assert job_b.payload["ranking"] == [alice_id, str(bob.pk)]
    assert job_b.status == JobStatus.LEASED
    alias_values = list(PersonAlias.objects.filter(person=alice).values_list("value", flat=True))
    assert set(alias_values) == {"alice@acme.test", "U0ALICE", "oid-alice", "29:alice-teams"}
    needles = {alice_id, uuid.UUID(alice_id).hex, "Alice Author", *alias_values}
    # Her name and email as stored file names hold them.
    needles |= {"Alice_Author", "AliceAuthor", "aliceacme.test"}
    # She is all over the database before...
    before = _dump_everything()
    assert {table for table, _, _, text in before if "U0ALICE".lower() in text.lower()}

    with django_capture_on_commit_callbacks(execute=True):
        out = cli("gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test", "--json")
    # A and B asked her; C's audit trail names her (the tap she forwarded).
    assert out["clarifications"] == 3 and out["jobs"] >= 2 and out["deliveries"] == 2
    # Her email, upn (her userName, the email), Slack and Teams ids and Entra object id.
    assert out["aliases"] == 5 and out["chatIdentities"] == 1
    assert out["sourceTexts"] == 2 and out["documents"] == 6 and out["factVersions"] >= 1
    assert not TeamsConversation.objects.filter(person_id=alice_id).exists()
    # Her mentions in stored text are redacted: a source text bar for bar (offsets, and
    # so spans and excerpts, stay true), everything else with the "erased" marker.
    b_version.refresh_from_db()
    assert len(b_version.text) == len(b_text)
    assert b_version.text.startswith("---\nauthor: " + "\u2588" * len("alice@acme.test"))
    assert "Drafted by " + "\u2588" * len("Alice   Author") + " for review." in b_version.text
    assert b_version.text[b.span_start : b.span_end] == SPAN_TEXT
    assert b_version.content_hash == b.source_version.content_hash
    memo.refresh_from_db()
    assert memo.acl == ["group:legal"] and memo.title == "Notes for erased"
    assert memo.filename == "notes-erased.eml" and memo.uploaded_by == "key:erased"
    assert not memo_path.exists()  # the old stored file is gone
    assert Path(memo.file.path).read_bytes() == b"From: erased <erased>\nSubject: MSA\n\nSee ya.\n"
    assert memo.size == len(Path(memo.file.path).read_bytes())
    # Whatever their content, uploads whose names named her — as uploaded or as stored —
    # are stored under a neutral name now, their content kept; the old files are gone.
    for doc, old_path in zip(named, named_paths, strict=True):
        doc.refresh_from_db()
        assert Path(doc.file.name).name.startswith(str(doc.pk)), doc.file.name
        assert Path(doc.file.path).read_bytes() in (b"A plain CV.", b"Notes.")
        if old_path != Path(doc.file.path):
            assert not old_path.exists()
    assert [d.filename for d in named] == [
        "erased CV.txt",
        "erased CV.txt",
        "erased-notes.txt",
        "erased-notes.md",
        "erased_review.txt",
    ]
    meeting = NodeVersion.objects.get(node__key="minutes-1", tx_to__isnull=True)
    assert meeting.properties == {"name": "Legal sync", "actions": "erased to send"}
    assert "alice" not in meeting.search_text
    bob_turns = ChatTurn.objects.filter(person=bob)
    assert bob_turns.count() == 2
    assert "Did erased sign the MSA?" in [t.text for t in bob_turns]

    # Rankings: her positions are the nil UUID, every other position unchanged.
    job_a.refresh_from_db()
    job_b.refresh_from_db()
    assert job_a.payload["ranking"] == [str(olga.pk), NIL, str(bob.pk)]
    assert job_b.payload["ranking"] == [NIL, str(bob.pk)]
    assert (job_b.status, job_b.max_attempts) == (JobStatus.LEASED, 3)
    # Her deliveries, card actions, aliases, keys and user are gone; the person is a
    # tombstone.
    assert not Delivery.objects.filter(person_id=alice_id).exists()
    assert not ChatTurn.objects.filter(person_id=alice_id).exists()
    assert not CardAction.objects.filter(action_id="inbox-action-1").exists()
    assert Delivery.objects.filter(pk=card_c.pk).exists()  # bob's card stays
    assert not PersonAlias.objects.filter(person_id=alice_id).exists()
    assert not ApiKey.objects.filter(person_id=alice_id).exists()
    assert not get_user_model().objects.filter(pk=alice_user_id).exists()
    assert alice_client.get(f"/v1/clarifications/{a.pk}").status_code in (401, 403)
    tomb = Person.objects.get(pk=alice_id)
    assert tomb.erased_at is not None and tomb.name == "(erased)"
    assert tomb.user_id is None and tomb.email != "alice@acme.test"
    assert not tomb.groups.exists()
    assert not Node.objects.filter(person_id=alice_id).exists()
    teams_node.refresh_from_db()
    assert teams_node.key.startswith("erased:")
    assert [v.properties for v in teams_node.versions.all()] == [{"erased": True}]
    # The answered clarification keeps its evidence, attribution tombstoned.
    assert _evidence(a) == evidence_a
    a.refresh_from_db()
    assert a.asked == [str(olga.pk), NIL, str(bob.pk)]
    records = list(ResponseRecord.objects.filter(clarification=a).order_by("seq"))
    assert [(str(r.responder), r.channel, r.message_ref) for r in records] == [
        (NIL, "erased", None),
        (str(bob.pk), "api", None),
    ]
    b.refresh_from_db()
    assert b.asked == [NIL, str(bob.pk)]
    assert b.source_version.source.acl == ["group:legal"]
    assert AuditEvent.objects.filter(tenant=workspace, type="person_erased").count() == 1
    # Nothing else was lost: bob, olga and their answers are intact.
    assert Person.objects.filter(pk__in=[bob.pk, olga.pk], erased_at__isnull=True).count() == 2

    # Then: a scan of every table. The only mention left is the tombstone's primary key.
    assert _leftovers(needles, alice_id) == []
    # ...and of every stored upload, by name and content: each is named after its
    # document's id (no form of her name or email, random insertions included).
    ids = {str(pk) for pk in Document.objects.values_list("pk", flat=True)}
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text = f"{path.name}\n{path.read_bytes().decode(errors='replace')}".lower()
            assert not any(n.lower() in text for n in needles), path
            assert path.name[:36] in ids, path
    # The decide page still shows B's excerpt.
    assert SPAN_TEXT in Clarification.objects.get(pk=b.pk).source_version.text


def test_an_uploads_source_id_naming_the_person_is_erased_on_both_sides(people, settings, tmp_path):
    """An uploader's own source id naming her: on the source its job wrote and on the
    document, kept the same (the admin's text view and a later version still find it);
    on a document whose job has not run yet, on the document alone."""
    from unittest import mock

    from graph.models import Source
    from jobs.tasks import work

    settings.MEDIA_ROOT = str(tmp_path)
    workspace = people["alice"].tenant
    applied = document_upload(
        tenant=workspace,
        filename="cv.md",
        content=ContentFile(b"Signed on 12 June 2026.\n"),
        size=24,
        external_id="people/alice-author/cv",
    )
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        assert work("ingest:document", max_seconds=5) == 1
    waiting = document_upload(
        tenant=workspace,
        filename="notes.md",
        content=ContentFile(b"Notes.\n"),
        size=7,
        external_id="people/alice-author/notes",
    )
    assert Source.objects.get(system="upload").external_id == "people/alice-author/cv"

    cli("gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test")

    applied.refresh_from_db()
    waiting.refresh_from_db()
    source = Source.objects.get(system="upload")
    assert source.external_id == applied.external_id == "people/erased/cv"
    assert applied.source_version.source == source
    assert waiting.external_id == "people/erased/notes"


def test_gdpr_erase_of_a_steward_leaves_no_trace(
    conflicted, people, steward_client, workspace, settings, tmp_path
):
    """A steward's own trail: the override they bound, the reason they gave, a re-ask, a
    policy change, a document they uploaded, their admin session and log entries."""
    settings.MEDIA_ROOT = str(tmp_path)
    sam = people["sam"]
    sam_id = str(sam.pk)
    clar = conflicted()
    steward_client.post(
        change_url(clar),
        {"action": "override", "answer_index": "1", "reason": "Checked with legal"},
    )
    other = conflicted(external_id="contracts/other.docx")
    steward_client.post(change_url(other), reask_form(people["olga"]))
    resp = steward_client.post(
        "/admin/clarify/clarifypolicy/add/",
        {
            "severity_elevate": "",
            "quorum_enabled": "true",
            "critical_required_confirmations": "2",
            "required_roles": '["editor"]',
            "allow_steward_override": "true",
            "_save": "Save",
        },
    )
    assert resp.status_code == 302
    document_upload(
        tenant=workspace,
        filename="memo.txt",
        content=ContentFile(b"A memo."),
        size=7,
        uploaded_by=f"steward:{sam_id}",
    )
    evidence = _evidence(clar)
    needles = {sam_id, uuid.UUID(sam_id).hex, "sam@acme.test", "Sam Steward"}
    assert _leftovers(needles, sam_id)

    cli("gdpr_erase", "--tenant", "acme", "--person", "sam@acme.test")
    assert _leftovers(needles, sam_id) == []
    # The override still binds: same evidence, the steward's record now anonymous.
    assert _evidence(clar) == evidence
    record = ResponseRecord.objects.get(clarification=clar, binding_status="steward_override")
    assert (str(record.responder), record.rights_at_answer_time) == (NIL, "steward")
    assert [e.detail["reason"] for e in events(clar, "override_reason")] == ["Checked with legal"]
    # Signed out: the session no longer belongs to anyone.
    assert steward_client.get("/admin/").status_code == 302


def test_erase_attribution_scrubs_the_id_from_every_audit_detail_of_the_tenant(
    submit, people, passwords, steward_client, workspace
):
    """Not only on the clarifications that asked them: a card they tapped that was not
    theirs (the NOT_RECIPIENT drop), a re-ask they made, a policy change they made (a
    tenant-level event) — each loses their id; each clarification touched gets its
    `attribution_erased` event, and its trail keeps its shape."""
    sam, bob, olga = people["sam"], people["bob"], people["olga"]
    passwords("bob")
    tapped = submit(external_id="contracts/tapped.docx", links=[("AUTHORED_BY", "bob")])
    assert run_worker() == 1
    card = Delivery.objects.get(clarification=tapped, person=bob, kind="question")
    dropped = card_action_process(
        channel="inbox",
        actor=sam,
        clarification_id=str(tapped.pk),
        nonce=card.nonce,
        answer_index=0,
        action_id="inbox-sam-1",
        actor_identity=f"user:{sam.user_id}",
    )
    assert dropped.status == DROPPED and dropped.reason == "NOT_RECIPIENT"
    reasked = submit(external_id="contracts/reasked.docx", links=[("AUTHORED_BY", "olga")])
    steward_client.post(change_url(reasked), reask_form(olga))
    clarify_policy_update(tenant=workspace, actor=sam, quorum_enabled=True)
    naming = AuditEvent.objects.filter(tenant=workspace, detail__icontains=str(sam.pk))
    assert {(e.type, e.clarification_id) for e in naming} == {
        ("card_action_dropped", tapped.pk),
        ("reasked", reasked.pk),
        ("policy_changed", None),
    }
    shapes = {c.pk: _audit_shape(c) for c in (tapped, reasked)}
    evidence = {c.pk: _evidence(c) for c in (tapped, reasked)}

    out = cli(
        "clarify", "erase-attribution", "--tenant", "acme", "--person", "sam@acme.test", "--json"
    )
    assert out == {"clarifications": 2}
    assert not naming.all().exists()  # a fresh query (naming is evaluated above)
    for clar in (tapped, reasked):
        after = _audit_shape(clar)
        assert after[:-1] == shapes[clar.pk] and after[-1][1] == "attribution_erased"
        assert _evidence(clar) == evidence[clar.pk]
    [drop] = events(tapped, "card_action_dropped")
    assert (drop.detail["reason"], drop.detail["actor"]) == ("NOT_RECIPIENT", "erased")
    [again] = events(reasked, "reasked")
    assert (again.detail["by"], again.detail["ranking"]) == ("erased", [str(olga.pk)])
    [policy] = AuditEvent.objects.filter(tenant=workspace, type="policy_changed")
    assert policy.detail["by"] == "erased" and policy.detail["after"]["quorum_enabled"] is True


def test_what_the_erasure_redacts_in_free_text():
    """Ids, emails and aliases as case-insensitive substrings (a short alias only as a whole
    word); a full name as whole words across any whitespace; a one-word name never (too
    common a word). Source text is masked bar for bar, everything else says "erased"."""
    subject = ErasureSubject(terms=["alice@acme.test", "U0ALICE", "ab1"], name="Alice   Author")
    text = "Mail ALICE@acme.test or U0alice; ab1 but not cab12; alice author, not Alice Authority."
    assert subject.text(text) == (
        "Mail erased or erased; erased but not cab12; erased, not Alice Authority."
    )
    masked = subject.mask(text)
    assert len(masked) == len(text) and masked.startswith("Mail " + "\u2588" * 15 + " or ")
    assert ErasureSubject(terms=[], name="Sam").pattern.search("Sam said") is None
    assert scrub({"U0ALICE": ["x U0ALICE", 3, None]}, subject) == {"erased": ["x erased", 3, None]}
    # A name as file names and addresses write it: underscores, dots, hyphens or nothing
    # between its words, an underscore ending it as a space does — but still whole words.
    names = "Alice_Author_CV.pdf alice.author AliceAuthor-notes alice-author MalicE Author"
    assert subject.text(names) == "erased_CV.pdf erased erased-notes erased MalicE Author"


@pytest.mark.parametrize(
    ("stored", "mentions"),
    [
        ("documents/2026/12/Yara_Quint_CV.txt", True),
        ("documents/2026/12/Yara_Quint_CV_d767pek.txt", True),
        ("documents/2026/12/zed.erasableacme.test-notes.txt", True),
        ("documents/2026/12/zed_pB1G0C2.erasableacme.test-notes.txt", True),  # random insertion
        ("documents/2026/12/YARAQUINT.docx", True),
        ("documents/2026/12/notes-U0YQ.md", True),
        ("documents/2026/12/0b3c6a52-2d54-4f59-b1a4-0d83d3b2c1aa.txt", False),
        ("documents/2026/12/Yara_Quinton_CV.txt", True),  # squashed: a prefix is enough
        ("documents/2026/12/zed.erasable.txt", False),  # her email's local part alone
        ("documents/2026/12/U0YQX-notes.md", False),  # a short alias: whole words only
    ],
)
def test_what_the_erasure_finds_in_stored_file_names(stored, mentions):
    """Stored names as storage rewrites uploaded ones (spaces to underscores, "@" and
    other punctuation dropped, "_" and seven random characters inserted before the
    suffixes when the name is taken): compared with case and separators ignored."""
    names = FileNameSubject(terms=["zed.erasable@acme.test", "U0YQ"], name="Yara Quint")
    assert names.mentions(stored) is mentions
