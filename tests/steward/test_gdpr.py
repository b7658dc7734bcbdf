"""GDPR (spec OQ-5, §14 v0.8/v0.9; architecture "GDPR attribution erasure"):
`erase_person_attribution` tombstones attribution while every piece of confirmation
evidence survives; `gdpr_erase` is the full executor, after which no table holds the
person's id, email or aliases except the tombstone row's primary key."""

import json
import uuid
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.files.base import ContentFile
from django.db import models

from clarify.models import AuditEvent, ClarificationBinding, ResponseRecord
from clarify.stewardship import erase_person_attribution
from delivery.actions import ANSWERED, DROPPED, card_action_process
from delivery.ask import respond
from delivery.models import CardAction, ChatTurn, Delivery
from telha.graph.models import Node, NodeVersion
from telha.ingest.documents import document_upload
from telha.jobs.models import JobStatus
from telha.tenancy.models import ApiKey, Person, PersonAlias
from telha.tenancy.services import workspace_load

from .conftest import (
    JUN_2026,
    NIL,
    SPAN_TEXT,
    change_url,
    cli,
    events,
    job_of,
    run_worker,
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
    assert erased.detail == {"responsesErased": 1, "rolesAtAnswerTime": ["editor"]}
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
    # The quorum evidence is untouched: the same two editor confirmations, the same values
    # and times, the same binding and corrected version.
    assert _evidence(clar) == evidence
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.tx_from, current.evidence_class) == (
        JUN_2026,
        fact_version_tx,
        "quorum_confirmation",
    )
    # Erasing again finds nothing left to erase.
    assert erase_person_attribution(tenant=clar.tenant, person=alice) == 0

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
    """Every row of every table (django_q's task tables excepted) as
    (table, pk, column, text), JSON values dumped and sessions decoded."""
    rows = []
    for model in apps.get_models(include_auto_created=True):
        if model._meta.app_label == "django_q":
            continue
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
    submit, people, passwords, answer, person_client, workspace, ingest_client
):
    """`telha gdpr_erase --tenant acme --person alice@acme.test`: attribution erased
    everywhere, her positions in clarify:temporal rankings nil'd (positions kept), her
    deliveries, card actions, aliases, keys and Django user gone, the person tombstoned —
    and then no table holds her id, email, name or aliases but the tombstone's key."""
    alice, bob, olga = people["alice"], people["bob"], people["olga"]
    alice_id, alice_user_id = str(alice.pk), alice.user_id
    # Minutes ingested before her Teams identity was known: an unresolved PERSON node
    # keyed by that alias, which the workspace then gives her.
    minutes = ingest_client.post(
        "/v1/submissions",
        {
            "source": {
                "system": "teams",
                "externalId": "minutes/1",
                "title": "Legal sync",
                "text": "Minutes of the legal sync.",
                "acl": ["group:legal"],
            },
            "nodes": [
                {
                    "ref": 0,
                    "key": "minutes-1",
                    "labels": ["MEETING"],
                    "properties": {"name": "Legal sync"},
                },
                {"ref": 1, "labels": ["PERSON"], "properties": {"teamsUserId": "29:alice-teams"}},
            ],
            "edges": [{"type": "ATTENDED_BY", "from": 0, "to": 1}],
        },
        format="json",
    )
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
    b = submit(
        external_id="contracts/b.docx",
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")],
        acl=["group:legal", "email:alice@acme.test"],
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
    evidence_a = _evidence(a)
    assert evidence_a["clarification"][:2] == ("answered", "satisfied")
    job_a, job_b = job_of(a), job_of(b)
    assert job_a.payload["ranking"] == [str(olga.pk), alice_id, str(bob.pk)]
    assert job_b.payload["ranking"] == [alice_id, str(bob.pk)]
    assert job_b.status == JobStatus.LEASED
    alias_values = list(PersonAlias.objects.filter(person=alice).values_list("value", flat=True))
    assert set(alias_values) == {"alice@acme.test", "U0ALICE", "oid-alice", "29:alice-teams"}
    needles = {alice_id, uuid.UUID(alice_id).hex, "Alice Author", *alias_values}
    # She is all over the database before...
    before = _dump_everything()
    assert {table for table, _, _, text in before if "U0ALICE".lower() in text.lower()}

    out = cli("gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test", "--json")
    # A and B named her (C only in an audit detail, scrubbed tenant-wide).
    assert out["clarifications"] == 2 and out["jobs"] >= 2 and out["deliveries"] == 2
    assert out["aliases"] == 4

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
    # (The document text names nobody, so no table needed excluding.)
    assert all(n not in SPAN_TEXT for n in needles)


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
    steward_client.post(change_url(other), {"action": "reask", "ranking": [str(people["olga"].pk)]})
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
