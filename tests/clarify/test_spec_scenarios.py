"""The spec §12 named tests of the clarification core, driven through the HTTP API."""

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from clarify.models import ClarificationBinding, ResponseRecord
from clarify.services import embed_text
from graph.models import NodeVersion
from jobs.models import Job
from tenancy.models import Person
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for

from .conftest import (
    APPLIED_CONFIDENCE,
    C0,
    C1,
    C2,
    EXTRACTION_CONFIDENCE,
    assert_nothing_written,
    assert_refused_unreadable,
    build_submission,
    event_types,
    responses_of,
    snapshot,
    us,
    versions_of,
)

IN_C0_ONLY = us("2026-11-01")  # inside C0 and C1, outside C2
IN_C2_ONLY = us("2025-06-01")  # inside C2 only


def _bound_body(version: NodeVersion) -> dict:
    return {
        "outcome": "bound",
        "state": "answered",
        "factVersionTx": version.tx_from,
        "quorumSatisfied": True,
    }


PARTIAL_BODY = {
    "outcome": "partial_confirmation",
    "state": "partially_confirmed",
    "quorumRemaining": 1,
}
CONFLICT_BODY = {"outcome": "conflict", "state": "conflicted", "postBinding": False}


def _unchanged_except_status(before: ResponseRecord, after: ResponseRecord) -> None:
    """Append-only: a response row may only have its binding_status re-marked."""
    fields = [f.attname for f in ResponseRecord._meta.concrete_fields if f.name != "binding_status"]
    assert {f: getattr(before, f) for f in fields} == {f: getattr(after, f) for f in fields}


def _query(client, **body):
    resp = client.post("/v1/query", {"labels": ["CONTRACT_TERM"], **body}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()["records"]


def test_clarify_bitemporal_correction(submit, clients, answer):
    s = submit()
    [guess] = versions_of(s.node_id)
    assert (guess.valid_from, guess.valid_to) == C0
    assert guess.pending is True
    assert guess.confidence == APPLIED_CONFIDENCE
    assert guess.provenance["clarification"] == s.clar_id
    assert guess.tx_to is None
    guess_row = NodeVersion.objects.filter(pk=guess.pk).values().get()

    resp = answer(clients.alice, s.clar_id, answerIndex=2)

    assert resp.status_code == 200, resp.content
    versions = versions_of(s.node_id)
    assert len(versions) == 2
    old, new = versions
    assert resp.json() == _bound_body(new)
    # The best guess is closed at the new transaction time, otherwise untouched.
    assert old.tx_to == new.tx_from
    assert {**guess_row, "tx_to": new.tx_from} == NodeVersion.objects.filter(
        pk=old.pk
    ).values().get()
    # The correction: answer interval, extraction confidence restored, clarification provenance.
    assert (new.valid_from, new.valid_to) == C2
    assert new.tx_to is None
    assert new.confidence == EXTRACTION_CONFIDENCE
    assert new.pending is False
    assert new.evidence_class == "human_clarification"
    assert new.provenance["clarification"] == s.clar_id
    assert new.provenance["sourceVersionTx"] == old.provenance["sourceVersionTx"]
    assert (new.labels, new.properties) == (old.labels, old.properties)
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.quorum_state) == ("answered", "not_required")
    assert s.clar.fact_version_tx == new.tx_from
    binding = ClarificationBinding.objects.get(clarification=s.clar)
    assert (binding.node_version_id, binding.evidence_class) == (new.pk, "human_clarification")
    [record] = responses_of(s.clar_id)
    assert (record.binding_status, record.rights_at_answer_time) == ("bound", "editor")
    assert record.responder == s.clar.tenant.people.get(email="alice@acme.test").pk
    assert record.channel == "api"
    assert "bound" in event_types(s.clar_id)
    assert Job.objects.get(kind="clarify:temporal").status == "done"

    # As of (old valid time, pre-answer tx time): still the best-guess belief.
    asof = clients.alice.get(f"/v1/nodes/{s.node_id}", {"validAt": IN_C0_ONLY, "txAt": old.tx_from})
    assert asof.status_code == 200
    body = asof.json()
    assert (body["validFrom"], body["validTo"]) == C0
    assert body["confidence"] == APPLIED_CONFIDENCE
    assert (body["txFrom"], body["txTo"]) == (old.tx_from, new.tx_from)
    # The old belief never covered 2025.
    miss = clients.alice.get(f"/v1/nodes/{s.node_id}", {"validAt": IN_C2_ONLY, "txAt": old.tx_from})
    assert miss.status_code == 404
    # Now: the corrected interval with restored confidence, and the guess is gone.
    cur = clients.alice.get(f"/v1/nodes/{s.node_id}", {"validAt": IN_C2_ONLY})
    assert cur.status_code == 200
    body = cur.json()
    assert (body["validFrom"], body["validTo"]) == C2
    assert body["confidence"] == EXTRACTION_CONFIDENCE
    assert body["pendingClarification"] is None
    assert body["evidenceClass"] == "human_clarification"
    assert body["provenance"]["clarification"] == s.clar_id
    assert clients.alice.get(f"/v1/nodes/{s.node_id}", {"validAt": IN_C0_ONLY}).status_code == 404
    history = clients.alice.get(f"/v1/nodes/{s.node_id}/history").json()["records"]
    assert [(r["txFrom"], r["txTo"]) for r in history] == [
        (old.tx_from, new.tx_from),
        (new.tx_from, None),
    ]


def test_clarify_dedup(submit, clients, answer, ingest_client):
    s = submit()
    assert s.body["clarifications"] == [
        {
            "id": s.clar_id,
            "nodeRef": 0,
            "state": "open",
            "severity": "normal",
            "deduplicated": False,
        }
    ]
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    bound = versions_of(s.node_id)[-1]
    before = snapshot()

    again = ingest_client.post("/v1/submissions", build_submission(), format="json")

    assert again.status_code == 201, again.content
    body = again.json()
    assert body["clarifications"] == [
        {
            "id": s.clar_id,
            "nodeRef": 0,
            "state": "answered",
            "severity": "normal",
            "deduplicated": True,
        }
    ]
    assert body["nodes"][0] == {"ref": 0, "id": s.node_id, "versionTx": bound.tx_from}
    assert body["sourceVersionTx"] == s.body["sourceVersionTx"]
    # Nothing reopened: no clarification, version, job, event or response was written.
    assert_nothing_written(before)
    s.clar.refresh_from_db()
    assert s.clar.state == "answered"

    # An open one is deduplicated too (no second routing job) ...
    other = submit(external_id="contracts/nda.docx")
    jobs = Job.objects.filter(kind="clarify:temporal").count()
    before = snapshot()
    again = ingest_client.post(
        "/v1/submissions", build_submission(external_id="contracts/nda.docx"), format="json"
    )
    assert again.json()["clarifications"][0] == {
        "id": other.clar_id,
        "nodeRef": 0,
        "state": "open",
        "severity": "normal",
        "deduplicated": True,
    }
    assert_nothing_written(before)
    assert Job.objects.filter(kind="clarify:temporal").count() == jobs
    # ... while changed content is a new source version with a new clarification.
    changed = submit(
        external_id="contracts/nda.docx", text=build_submission()["source"]["text"] + "!"
    )
    assert changed.body["clarifications"][0]["deduplicated"] is False
    assert changed.clar_id != other.clar_id


@pytest.mark.parametrize("confirmer", ["alice", "sam"])
def test_clarify_attestation(submit, clients, answer, confirmer):
    s = submit()
    resp = answer(clients.vera, s.clar_id, answerIndex=1)

    assert resp.status_code == 202
    assert resp.json() == {"outcome": "attestation", "state": "attested"}
    assert len(versions_of(s.node_id)) == 1
    assert not ClarificationBinding.objects.exists()
    [att] = responses_of(s.clar_id)
    assert (att.binding_status, att.rights_at_answer_time) == ("attestation", "viewer")
    assert att.responder == s.clar.tenant.people.get(email="vera@acme.test").pk
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.quorum_state) == ("attested", "not_required")
    assert "attestation_recorded" in event_types(s.clar_id)
    [rec] = _query(clients.alice, validAt=IN_C0_ONLY)
    assert rec["evidenceClass"] == "human_attestation"
    assert rec["pendingClarification"]["state"] == "attested"
    assert rec["confidence"] == APPLIED_CONFIDENCE

    # A second non-binding answer (an editor's key restricted to viewer) binds nothing either.
    viewer_key = _viewer_key_of(s, "bob")
    resp = answer(viewer_key, s.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json() == {"outcome": "attestation", "state": "attested"}
    assert len(versions_of(s.node_id)) == 1

    # Binding only after an editor's (or a steward's plain) confirmation.
    resp = answer(getattr(clients, confirmer), s.clar_id, answerIndex=1)
    assert resp.status_code == 200, resp.content
    versions = versions_of(s.node_id)
    assert len(versions) == 2
    assert resp.json() == _bound_body(versions[-1])
    assert (versions[-1].valid_from, versions[-1].valid_to) == C1
    assert versions[-1].evidence_class == "human_clarification"
    records = responses_of(s.clar_id)
    assert [r.binding_status for r in records] == ["attestation", "attestation", "bound"]
    _unchanged_except_status(att, records[0])
    assert records[0].binding_status == "attestation"


def _viewer_key_of(s, name):
    person = s.clar.tenant.people.get(email=f"{name}@acme.test")
    _, secret = api_key_create(tenant=s.clar.tenant, person=person, role="viewer")
    return client_for(secret)


def test_clarify_quorum_required(submit, clients, answer):
    s = submit(severity_hint="critical")
    assert s.body["clarifications"][0]["severity"] == "critical"
    assert s.clar.quorum_policy == {
        "requiredConfirmations": 2,
        "requiredRoles": ["editor"],
        "allowStewardOverride": True,
    }
    assert s.clar.quorum_state == "pending"

    resp = answer(clients.alice, s.clar_id, answerIndex=1)

    assert resp.status_code == 202
    assert resp.json() == PARTIAL_BODY
    assert len(versions_of(s.node_id)) == 1
    assert not ClarificationBinding.objects.exists()
    [record] = responses_of(s.clar_id)
    assert (record.binding_status, record.rights_at_answer_time) == ("binding_candidate", "editor")
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.quorum_state) == ("partially_confirmed", "pending")
    assert s.clar.fact_version_tx is None
    assert "bound" not in event_types(s.clar_id)
    job = Job.objects.get(kind="clarify:temporal")
    assert (job.status, job.priority) == ("pending", 0)
    [rec] = _query(clients.alice, validAt=IN_C0_ONLY)
    assert rec["pendingClarification"]["state"] == "partially_confirmed"
    assert rec["pendingClarification"]["quorumState"] == "pending"
    assert (rec["validFrom"], rec["validTo"]) == C0


def test_clarify_quorum_satisfied(submit, clients, answer):
    s = submit(severity_hint="critical")
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 202
    [first] = responses_of(s.clar_id)

    resp = answer(clients.bob, s.clar_id, answerIndex=1)

    assert resp.status_code == 200, resp.content
    versions = versions_of(s.node_id)
    assert len(versions) == 2
    new = versions[-1]
    assert resp.json() == _bound_body(new)
    assert (new.valid_from, new.valid_to) == C1
    assert new.evidence_class == "quorum_confirmation"
    assert new.provenance["clarification"] == s.clar_id
    assert new.confidence == EXTRACTION_CONFIDENCE
    assert versions[0].tx_to == new.tx_from
    records = responses_of(s.clar_id)
    assert [r.binding_status for r in records] == ["bound", "bound"]
    _unchanged_except_status(first, records[0])
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.quorum_state) == ("answered", "satisfied")
    assert s.clar.fact_version_tx == new.tx_from
    events = list(s.clar.events.order_by("at", "id"))
    transitions = [e.detail for e in events if e.type == "quorum_transition"]
    assert {"from": "pending", "to": "satisfied"} in transitions
    [bound] = [e for e in events if e.type == "bound"]
    assert bound.detail["evidenceClass"] == "quorum_confirmation"
    assert sorted(bound.detail["responses"]) == sorted(str(r.pk) for r in records)
    [rec] = _query(clients.alice, validAt=IN_C0_ONLY)
    assert rec["evidenceClass"] == "quorum_confirmation"
    assert rec["pendingClarification"] is None


def test_clarify_quorum_conflict(submit, clients, answer):
    s = submit(severity_hint="critical")
    assert answer(clients.alice, s.clar_id, answerIndex=1).json() == PARTIAL_BODY

    resp = answer(clients.bob, s.clar_id, answerIndex=2)

    assert resp.status_code == 202
    assert resp.json() == CONFLICT_BODY
    assert len(versions_of(s.node_id)) == 1
    assert not ClarificationBinding.objects.exists()
    records = responses_of(s.clar_id)
    assert [(r.interval, r.binding_status) for r in records] == [
        (C1, "binding_candidate"),
        (C2, "conflicting"),
    ]
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.quorum_state) == ("conflicted", "conflicted")
    types = event_types(s.clar_id)
    assert "conflict_entered" in types
    assert "steward_notified" in types
    notified = s.clar.events.filter(type="steward_notified").get()
    assert notified.detail["reason"] == "conflict"

    # A third editor agreeing with the first does not resolve it: steward only.
    resp = answer(clients.olga, s.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json() == CONFLICT_BODY
    assert len(versions_of(s.node_id)) == 1
    assert len(responses_of(s.clar_id)) == 3
    s.clar.refresh_from_db()
    assert s.clar.state == "conflicted"


def test_clarify_steward_override(submit, clients, answer):
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    assert answer(clients.bob, s.clar_id, answerIndex=2).json() == CONFLICT_BODY
    prior = responses_of(s.clar_id)

    resp = answer(clients.sam, s.clar_id, answerIndex=2, stewardOverride=True)

    assert resp.status_code == 200, resp.content
    versions = versions_of(s.node_id)
    assert len(versions) == 2
    new = versions[-1]
    assert resp.json() == _bound_body(new)
    assert (new.valid_from, new.valid_to) == C2
    assert new.evidence_class == "steward_override"
    assert new.provenance["clarification"] == s.clar_id
    assert versions[0].tx_to == new.tx_from  # history preserved, not edited
    records = responses_of(s.clar_id)
    assert len(records) == 3
    for before, after in zip(prior, records[:2], strict=True):
        _unchanged_except_status(before, after)
        assert after.binding_status == before.binding_status  # conflicting ones stay on record
    assert (records[2].binding_status, records[2].rights_at_answer_time) == (
        "steward_override",
        "steward",
    )
    s.clar.refresh_from_db()
    assert s.clar.state == "answered"
    assert ClarificationBinding.objects.get().evidence_class == "steward_override"
    types = event_types(s.clar_id)
    assert "steward_override" in types and "bound" in types
    assert types.index("steward_override") < types.index("bound")
    detail = clients.alice.get(f"/v1/clarifications/{s.clar_id}").json()
    assert [r["bindingStatus"] for r in detail["responses"]] == [
        "binding_candidate",
        "conflicting",
        "steward_override",
    ]
    [rec] = _query(clients.alice, validAt=IN_C2_ONLY)
    assert rec["evidenceClass"] == "steward_override"


BAD_ANSWERS = [
    pytest.param({"answerIndex": 3}, id="index-out-of-range"),
    pytest.param({"answerIndex": -1}, id="negative-index"),
    pytest.param({"answerIndex": "1"}, id="string-index"),
    pytest.param({"answerIndex": True}, id="bool-index"),
    pytest.param(
        {"answerCustom": {"validFrom": "2026-03-01T00:00:00Z", "validTo": "2026-02-01T00:00:00Z"}},
        id="from-after-to",
    ),
    pytest.param(
        {"answerCustom": {"validFrom": C1[0], "validTo": C1[0]}},
        id="from-equals-to",
    ),
    pytest.param({"answerCustom": {"validFrom": "next tuesday", "validTo": None}}, id="garbage"),
    pytest.param({"answerCustom": {"validFrom": "2026-13-45T99:00:00Z"}}, id="bad-rfc3339"),
    pytest.param({"answerCustom": {"validFrom": "2026-03-01T00:00:00"}}, id="no-offset"),
    pytest.param({"answerCustom": {"validFrom": None, "validTo": None}}, id="no-bounds"),
    pytest.param({"answerCustom": {"sourceText": "sometime in spring"}}, id="text-only"),
    pytest.param({"answerCustom": "1 March 2026"}, id="custom-not-object"),
    pytest.param({"answerCustom": {"validFrom": C1[0], "extra": 1}}, id="custom-unknown-key"),
    pytest.param(
        {"answerIndex": 1, "answerCustom": {"validFrom": C1[0], "validTo": None}}, id="both"
    ),
    pytest.param({}, id="neither"),
    pytest.param({"channel": "slack"}, id="neither-with-channel"),
    pytest.param({"answerIndex": 1, "answerIdx": 1}, id="unknown-field"),
    pytest.param({"answerIndex": 1, "stewardOverride": "yes"}, id="override-not-bool"),
]


@pytest.mark.parametrize("body", BAD_ANSWERS)
def test_clarify_freeform_validation(submit, clients, answer, body):
    s = submit()
    before = snapshot()

    resp = answer(clients.alice, s.clar_id, **body)

    assert resp.status_code == 422, resp.content
    assert resp.json()["code"] == "CLARIFY_UNPARSEABLE_ANSWER"
    assert set(resp.json()) == {"code", "detail"}
    assert_nothing_written(before)
    assert len(versions_of(s.node_id)) == 1


def test_clarify_freeform_validation_normalised_custom_binds(submit, clients, answer):
    s = submit()
    resp = answer(
        clients.alice,
        s.clar_id,
        answerCustom={
            "validFrom": "2026-03-01T00:00:00Z",
            "validTo": "2026-09-01T02:00:00+02:00",
            "sourceText": "signed 1 March, ends with August",
        },
    )
    assert resp.status_code == 200, resp.content
    new = versions_of(s.node_id)[-1]
    assert (new.valid_from, new.valid_to) == (us("2026-03-01"), us("2026-09-01"))
    [record] = responses_of(s.clar_id)
    assert record.answer_index is None
    assert record.answer_custom == {
        "validFrom": us("2026-03-01"),
        "validTo": us("2026-09-01"),
        "sourceText": "signed 1 March, ends with August",
    }
    detail = clients.alice.get(f"/v1/clarifications/{s.clar_id}").json()
    assert detail["responses"][0]["answerCustom"] == record.answer_custom
    assert detail["responses"][0]["answerIndex"] is None


def test_clarify_pending_answer_caveat(submit, clients, answer):
    s = submit()
    plain = submit(external_id="contracts/sow.docx", key="sow-term", ambiguity=False)
    assert plain.clar_id is None

    records = _query(clients.alice, validAt=IN_C0_ONLY)

    by_id = {r["id"]: r for r in records}
    assert set(by_id) == {s.node_id, plain.node_id}
    pending = by_id[s.node_id]
    assert pending["confidence"] == APPLIED_CONFIDENCE
    assert (pending["validFrom"], pending["validTo"]) == C0
    assert pending["provenance"]["clarification"] == s.clar_id
    assert pending["evidenceClass"] == "system_extraction"
    assert pending["pendingClarification"] == {
        "id": s.clar_id,
        "state": "open",
        "severity": "normal",
        "candidates": [
            {
                "index": 0,
                "validFrom": C0[0],
                "validTo": C0[1],
                "label": "1 Oct 2026 (next quarter)",
            },
            {"index": 1, "validFrom": C1[0], "validTo": C1[1], "label": "1 Jul 2026 (signature)"},
            {
                "index": 2,
                "validFrom": C2[0],
                "validTo": C2[1],
                "label": "calendar 2025 (countersignature)",
            },
        ],
        "appliedCandidateConfidence": APPLIED_CONFIDENCE,
        "quorumState": "not_required",
    }
    confirmed = by_id[plain.node_id]
    assert confirmed["pendingClarification"] is None
    assert confirmed["provenance"]["clarification"] is None
    assert confirmed["confidence"] == EXTRACTION_CONFIDENCE
    # The same caveat on the node read.
    node = clients.alice.get(f"/v1/nodes/{s.node_id}", {"validAt": IN_C0_ONLY}).json()
    assert node["pendingClarification"] == pending["pendingClarification"]
    assert node["confidence"] == APPLIED_CONFIDENCE

    # Once bound, the caveat is gone and the confidence restored.
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    [rec] = [r for r in _query(clients.alice, validAt=IN_C0_ONLY) if r["id"] == s.node_id]
    assert rec["pendingClarification"] is None
    assert rec["confidence"] == EXTRACTION_CONFIDENCE


def test_clarify_temporal_reindex_only(submit, clients, answer):
    s = submit()
    old = versions_of(s.node_id)[0]

    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200

    new = versions_of(s.node_id)[-1]
    assert embed_text(old.labels, old.properties) == embed_text(new.labels, new.properties)
    assert not Job.objects.filter(kind__startswith="embed:").exists()
    [bound] = s.clar.events.filter(type="bound")
    assert bound.detail["fanout"] == {"temporal": True, "evidence": True, "reembed": False}
    assert Job.objects.get(kind="clarify:temporal").status == "done"
    # The temporal index (valid time) and evidence index moved with the version write.
    [rec] = _query(clients.alice, validAt=us("2026-08-01"))
    assert (rec["validFrom"], rec["validTo"]) == C1
    assert rec["evidenceClass"] == "human_clarification"
    assert _query(clients.alice, validAt=us("2026-08-01"), txAt=old.tx_from) == []


def test_clarify_post_binding_conflict(submit, clients, answer):
    s = submit()
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    s.clar.refresh_from_db()
    fact_version_tx = s.clar.fact_version_tx
    versions_before = list(NodeVersion.objects.order_by("pk").values())
    bindings_before = list(ClarificationBinding.objects.values())
    [bound_record] = responses_of(s.clar_id)

    resp = answer(clients.bob, s.clar_id, answerIndex=2)

    assert resp.status_code == 202
    assert resp.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
    assert list(NodeVersion.objects.order_by("pk").values()) == versions_before
    assert list(ClarificationBinding.objects.values()) == bindings_before
    records = responses_of(s.clar_id)
    assert [(r.interval, r.binding_status) for r in records] == [(C1, "bound"), (C2, "conflicting")]
    _unchanged_except_status(bound_record, records[0])
    assert records[0].binding_status == "bound"
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.fact_version_tx) == ("answered", fact_version_tx)
    types = event_types(s.clar_id)
    assert "post_binding_conflict" in types
    notified = s.clar.events.filter(type="steward_notified").get()
    assert notified.detail["reason"] == "post_binding_conflict"

    # A viewer's disagreeing answer is also recorded as a conflicting attestation.
    resp = answer(clients.vera, s.clar_id, answerIndex=0)
    assert resp.status_code == 202
    assert resp.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
    assert responses_of(s.clar_id)[-1].binding_status == "conflicting"
    assert list(NodeVersion.objects.order_by("pk").values()) == versions_before

    # An agreeing answer from a new responder: 409, nothing written.
    before = snapshot()
    resp = answer(clients.olga, s.clar_id, answerIndex=1)
    assert resp.status_code == 409
    assert resp.json()["code"] == "CLARIFY_ALREADY_ANSWERED"
    assert_nothing_written(before)


def test_clarify_responder_supersede(submit, clients, answer):
    # Alice changes her answer before binding; only her latest counts.
    s = submit(severity_hint="critical")
    assert answer(clients.alice, s.clar_id, answerIndex=1).json() == PARTIAL_BODY
    [first] = responses_of(s.clar_id)

    resp = answer(clients.alice, s.clar_id, answerIndex=2)

    assert resp.status_code == 202
    assert resp.json() == PARTIAL_BODY  # still one confirmation short: hers counts once
    records = responses_of(s.clar_id)
    assert len(records) == 2
    _unchanged_except_status(first, records[0])
    assert [(r.interval, r.binding_status) for r in records] == [
        (C1, "binding_candidate"),
        (C2, "binding_candidate"),
    ]
    assert records[0].responder == records[1].responder
    # Bob agrees with her latest answer: bound to it; her superseded one is not counted.
    resp = answer(clients.bob, s.clar_id, answerIndex=2)
    assert resp.status_code == 200, resp.content
    new = versions_of(s.node_id)[-1]
    assert (new.valid_from, new.valid_to) == C2
    records = responses_of(s.clar_id)
    assert [r.binding_status for r in records] == ["binding_candidate", "bound", "bound"]
    _unchanged_except_status(first, records[0])

    # Agreeing with her superseded answer is a conflict with her latest one.
    t = submit(severity_hint="critical", external_id="contracts/other.docx")
    answer(clients.alice, t.clar_id, answerIndex=1)
    answer(clients.alice, t.clar_id, answerIndex=2)
    resp = answer(clients.bob, t.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json() == CONFLICT_BODY
    assert len(versions_of(t.node_id)) == 1


def test_clarify_answer_responder_assertion(
    submit, clients, answer, clarify_client, ingest_client, people, workspace
):
    s = submit()
    before = snapshot()
    _, plain_secret = api_key_create(tenant=workspace)
    other = workspace_load(
        data={
            "tenant": "globex",
            "people": [{"name": "G", "email": "g@globex.test", "role": "editor"}],
        }
    )
    outsider = other.tenant.people.get()
    refusals = [
        (clients.alice, {"responder": str(people["bob"].pk)}, "RESPONDER_ASSERTION_FORBIDDEN"),
        (clients.alice, {"rights": "steward"}, "RESPONDER_ASSERTION_FORBIDDEN"),
        (clients.vera, {"responder": str(people["alice"].pk)}, "RESPONDER_ASSERTION_FORBIDDEN"),
        (ingest_client, {}, "RESPONDER_NOT_AUTHORISED"),
        (client_for(plain_secret), {}, "RESPONDER_NOT_AUTHORISED"),
        (clarify_client, {}, "RESPONDER_NOT_AUTHORISED"),
        (clarify_client, {"responder": str(people["bob"].pk)}, "RESPONDER_NOT_AUTHORISED"),
        (
            clarify_client,
            {"responder": str(outsider.pk), "rights": "editor"},
            "RESPONDER_NOT_AUTHORISED",
        ),
        (
            clarify_client,
            {"responder": "not-a-uuid", "rights": "editor"},
            "RESPONDER_NOT_AUTHORISED",
        ),
    ]
    for client, extra, code in refusals:
        resp = answer(client, s.clar_id, answerIndex=1, **extra)
        assert resp.status_code == 403, (extra, resp.content)
        assert resp.json()["code"] == code, extra
        assert_nothing_written(before)

    # The clarify service's assertions are verified against what the core knows (issue 19
    # item 3, CONTRACT §3.2): rights above the person's current role, a deprovisioned or
    # an erased person are refused, nothing written.
    vera, alice = people["vera"], people["alice"]
    above = [
        {"responder": str(vera.pk), "rights": "editor"},
        {"responder": str(vera.pk), "rights": "steward"},
        {"responder": str(alice.pk), "rights": "steward", "stewardOverride": True},
    ]
    for extra in above:
        resp = answer(clarify_client, s.clar_id, answerIndex=1, **extra)
        assert (resp.status_code, resp.json()["code"]) == (403, "RESPONDER_NOT_AUTHORISED"), extra
        assert_nothing_written(before)
    as_alice = {"responder": str(alice.pk), "rights": "editor"}
    User.objects.filter(pk=alice.user_id).update(is_active=False)  # deprovisioned
    resp = answer(clarify_client, s.clar_id, answerIndex=1, **as_alice)
    assert (resp.status_code, resp.json()["code"]) == (403, "RESPONDER_NOT_AUTHORISED")
    User.objects.filter(pk=alice.user_id).update(is_active=True)
    Person.objects.filter(pk=alice.pk).update(erased_at=timezone.now())  # erased
    resp = answer(clarify_client, s.clar_id, answerIndex=1, **as_alice)
    assert (resp.status_code, resp.json()["code"]) == (403, "RESPONDER_NOT_AUTHORISED")
    Person.objects.filter(pk=alice.pk).update(erased_at=None)
    assert_nothing_written(before)
    # A responder who may not read the source (olga: finance; this source is legal's) is
    # answered like a missing clarification, and the refusal is audited.
    legal = submit(acl=("group:legal",), external_id="contracts/legal-only.docx")
    before = snapshot()
    resp = answer(
        clarify_client,
        legal.clar_id,
        answerIndex=1,
        responder=str(people["olga"].pk),
        rights="editor",
    )
    assert (resp.status_code, resp.json()["code"]) == (404, "NOT_FOUND")
    assert_refused_unreadable(before, legal.clar.pk)
    before = snapshot()

    # The clarify service may assert a verified third-party responder and their rights.
    resp = answer(
        clarify_client,
        s.clar_id,
        answerIndex=1,
        responder=str(people["bob"].pk),
        rights="editor",
        channel="slack",
        messageRef="1720000000.000100",
    )
    assert resp.status_code == 200, resp.content
    [record] = responses_of(s.clar_id)
    assert record.responder == people["bob"].pk
    assert (record.rights_at_answer_time, record.channel, record.message_ref) == (
        "editor",
        "slack",
        "1720000000.000100",
    )

    # An API key binds only as its own principal (asserting itself is not a forgery).
    t = submit(external_id="contracts/other.docx")
    resp = answer(clients.alice, t.clar_id, answerIndex=1, responder=str(people["alice"].pk))
    assert resp.status_code == 200, resp.content
    [record] = responses_of(t.clar_id)
    assert (record.responder, record.rights_at_answer_time, record.channel) == (
        people["alice"].pk,
        "editor",
        "api",
    )
