"""`POST /v1/submissions` (CONTRACT §3.1): the 201 shape, who may submit, every validation
rule (422 SUBMISSION_INVALID with a JSON path, nothing written), PERSON resolution, fact
identity across re-ingestion and the best-guess application."""

import copy

import pytest

from clarify.models import Clarification
from common.times import MAX_US
from graph.models import Edge, Node, NodeVersion, Source, SourceVersion, Span
from tenancy.services import api_key_create, workspace_load

from ..conftest import WORKSPACE, client_for
from ..factories import (
    JAN_2027,
    MSA_TEXT,
    OCT_2026,
    fact_payload,
    submission_payload,
    written_counts,
)

pytestmark = pytest.mark.django_db


def post(client, payload):
    return client.post("/v1/submissions", payload, format="json")


def submit(client, payload):
    response = post(client, payload)
    assert response.status_code == 201, response.json()
    return response.json()


# --- the happy path ---


def test_happy_path_response_shape(ingest_client, people):
    before = written_counts()
    response = post(ingest_client, submission_payload())
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"sourceVersionTx", "nodes", "clarifications"}
    assert isinstance(body["sourceVersionTx"], int)
    assert [set(n) for n in body["nodes"]] == [{"ref", "id", "versionTx"}] * 2
    assert [n["ref"] for n in body["nodes"]] == [0, 1]
    assert all(isinstance(n["versionTx"], int) and isinstance(n["id"], str) for n in body["nodes"])
    assert len(body["clarifications"]) == 1
    clar = body["clarifications"][0]
    assert set(clar) == {"id", "nodeRef", "state", "severity", "deduplicated"}
    assert (clar["nodeRef"], clar["state"], clar["deduplicated"]) == (0, "open", False)
    assert clar["severity"] in ("low", "normal", "high", "critical")

    after = written_counts()
    assert after["Source"] == before["Source"] + 1
    assert after["SourceVersion"] == before["SourceVersion"] + 1
    assert after["Span"] == before["Span"] + 1
    assert after["Node"] == before["Node"] + 2
    assert after["Edge"] == before["Edge"] + 1
    assert after["Clarification"] == before["Clarification"] + 1

    sv = SourceVersion.objects.get()
    assert sv.tx == body["sourceVersionTx"] and sv.text == MSA_TEXT
    source = sv.source
    assert (source.system, source.external_id, source.title, source.acl) == (
        "sharepoint",
        "contracts/msa.docx",
        "Master services agreement",
        ["group:legal"],
    )
    fact = Node.objects.get(pk=body["nodes"][0]["id"])
    assert (fact.source_id, fact.key, fact.person_id) == (source.pk, "msa-term", None)
    assert fact.versions.get().tx_from == body["nodes"][0]["versionTx"]
    person = Node.objects.get(pk=body["nodes"][1]["id"])
    assert person.person == people["alice"] and person.source_id is None
    edge = Edge.objects.get()
    assert (edge.type, edge.from_node_id, edge.to_node_id) == ("AUTHORED_BY", fact.pk, person.pk)
    assert edge.source_version == sv
    assert str(Clarification.objects.get().pk) == clar["id"]


def test_source_acl_becomes_guardian_permissions(ingest_client, people):
    body = submit(
        ingest_client, submission_payload(source_acl=["group:finance", "email:bob@acme.test"])
    )
    source = Source.objects.get()
    assert body["sourceVersionTx"] == source.versions.get().tx
    olga, bob, alice = people["olga"].user, people["bob"].user, people["alice"].user
    assert olga.has_perm("graph.view_source", source)
    assert bob.has_perm("graph.view_source", source)
    assert not alice.has_perm("graph.view_source", source)


@pytest.mark.parametrize("caller", ["clarify", "unbound key", "steward key", "editor key"])
def test_only_an_ingest_token_may_submit_and_nothing_is_written(
    workspace, people, clarify_client, caller
):
    clients = {
        "clarify": lambda: clarify_client,
        "unbound key": lambda: client_for(api_key_create(tenant=workspace)[1]),
        "steward key": lambda: client_for(
            api_key_create(tenant=workspace, person=people["sam"])[1]
        ),
        "editor key": lambda: client_for(
            api_key_create(tenant=workspace, person=people["alice"])[1]
        ),
    }
    client = clients[caller]()
    before = written_counts()
    response = post(client, submission_payload())
    assert response.status_code == 403
    assert response.json()["code"] == "PERMISSION_DENIED"
    assert written_counts() == before


# --- validation: every rule, its JSON path, and nothing written ---


def mutate(**changes):
    """A payload with `changes` applied: keys are dotted paths into the payload."""
    payload = submission_payload()
    for dotted, value in changes.items():
        target = payload
        parts = [int(p) if p.isdigit() else p for p in dotted.split(".")]
        for part in parts[:-1]:
            target = target[part]
        if value is DELETE:
            del target[parts[-1]]
        else:
            target[parts[-1]] = value
    return payload


DELETE = object()
SECOND_FACT = {
    "ref": 2,
    "key": "msa-renewal",
    "labels": ["CONTRACT_TERM"],
    "properties": {"name": "Renewal"},
}
AMBIGUITY = submission_payload()["ambiguities"][0]

INVALID = {
    # node refs in bounds
    "edge from unknown ref": (mutate(**{"edges.0.from": 7}), "edges[0].from"),
    "edge to unknown ref": (mutate(**{"edges.0.to": 9}), "edges[0].to"),
    "ambiguity on unknown ref": (mutate(**{"ambiguities.0.nodeRef": 5}), "ambiguities[0].nodeRef"),
    "ambiguity on a PERSON node": (
        mutate(**{"ambiguities.0.nodeRef": 1}),
        "ambiguities[0].nodeRef",
    ),
    "negative ref": (mutate(**{"nodes.1.ref": -1}), "nodes[1].ref"),
    # duplicate refs and keys
    "duplicate ref": (mutate(**{"nodes.1.ref": 0}), "nodes[1].ref"),
    "duplicate fact key": (
        mutate(nodes=[*submission_payload()["nodes"], {**SECOND_FACT, "key": "msa-term"}]),
        "nodes[2].key",
    ),
    # spans
    "node spanRef does not resolve": (mutate(**{"nodes.0.spanRef": 1}), "nodes[0].spanRef"),
    "candidate spanRef does not resolve": (
        mutate(**{"ambiguities.0.candidates.1.spanRef": 3}),
        "ambiguities[0].candidates[1].spanRef",
    ),
    "span outside the text": (
        mutate(spans=[{"start": 10, "end": len(MSA_TEXT) + 1}]),
        "spans[0]",
    ),
    "span start after end": (mutate(spans=[{"start": 30, "end": 20}]), "spans[0]"),
    "negative span start": (mutate(spans=[{"start": -1, "end": 20}]), "spans[0].start"),
    # candidates
    "no candidate": (mutate(**{"ambiguities.0.candidates": []}), "ambiguities[0].candidates"),
    "candidates missing": (
        mutate(**{"ambiguities.0.candidates": DELETE}),
        "ambiguities[0].candidates",
    ),
    "candidate validFrom equal to validTo": (
        mutate(**{"ambiguities.0.candidates.1.validTo": JAN_2027}),
        "ambiguities[0].candidates[1]",
    ),
    "candidate validFrom after validTo": (
        mutate(**{"ambiguities.0.candidates.1.validTo": OCT_2026}),
        "ambiguities[0].candidates[1]",
    ),
    # confidences in [0, 1]
    "detectorConfidence above 1": (
        mutate(**{"ambiguities.0.detectorConfidence": 1.01}),
        "ambiguities[0].detectorConfidence",
    ),
    "detectorConfidence below 0": (
        mutate(**{"ambiguities.0.detectorConfidence": -0.1}),
        "ambiguities[0].detectorConfidence",
    ),
    "appliedCandidateConfidence above 1": (
        mutate(**{"ambiguities.0.appliedCandidateConfidence": 2}),
        "ambiguities[0].appliedCandidateConfidence",
    ),
    "appliedCandidateConfidence below 0": (
        mutate(**{"ambiguities.0.appliedCandidateConfidence": -0.5}),
        "ambiguities[0].appliedCandidateConfidence",
    ),
    "node confidence above 1": (mutate(**{"nodes.0.confidence": 1.5}), "nodes[0].confidence"),
    # node interval
    "node validFrom equal to validTo": (
        mutate(**{"nodes.0.validFrom": OCT_2026, "nodes.0.validTo": OCT_2026}),
        "nodes[0]",
    ),
    "node validFrom after validTo": (
        mutate(**{"nodes.0.validFrom": JAN_2027, "nodes.0.validTo": OCT_2026}),
        "nodes[0]",
    ),
    # at most one ambiguity per node
    "two ambiguities on one node": (
        mutate(ambiguities=[AMBIGUITY, {**AMBIGUITY, "kind": "undated"}]),
        "ambiguities[1].nodeRef",
    ),
    # kinds and severities
    "unknown kind": (mutate(**{"ambiguities.0.kind": "fuzzy_date"}), "ambiguities[0].kind"),
    "unknown severityHint": (
        mutate(**{"ambiguities.0.severityHint": "urgent"}),
        "ambiguities[0].severityHint",
    ),
    # unknown fields at every level
    "unknown top-level field": (mutate(extra=1), "extra"),
    "unknown source field": (mutate(**{"source.owner": "x"}), "source.owner"),
    "unknown span field": (mutate(**{"spans.0.length": 3}), "spans[0].length"),
    "unknown node field": (mutate(**{"nodes.1.colour": "red"}), "nodes[1].colour"),
    "unknown edge field": (mutate(**{"edges.0.weight": 1}), "edges[0].weight"),
    "unknown ambiguity field": (mutate(**{"ambiguities.0.notes": "x"}), "ambiguities[0].notes"),
    "unknown candidate field": (
        mutate(**{"ambiguities.0.candidates.1.score": 0.3}),
        "ambiguities[0].candidates[1].score",
    ),
    # labels
    "reserved label CLARIFICATION": (
        mutate(**{"nodes.0.labels": ["CONTRACT_TERM", "CLARIFICATION"]}),
        "nodes[0].labels",
    ),
    "no label": (mutate(**{"nodes.0.labels": []}), "nodes[0].labels"),
    "malformed edge type": (mutate(**{"edges.0.type": "authored by"}), "edges[0].type"),
    # ACL principals
    "ACL principal of unknown kind": (mutate(**{"source.acl": ["user:alice"]}), "source.acl[0]"),
    "ACL principal without a kind": (
        mutate(**{"source.acl": ["group:legal", "alice@acme.test"]}),
        "source.acl[1]",
    ),
    "ACL principal with an empty name": (mutate(**{"source.acl": ["group:"]}), "source.acl[0]"),
    # times: negative or overflowing µs, unparseable strings
    "negative node validFrom": (mutate(**{"nodes.0.validFrom": -1}), "nodes[0].validFrom"),
    "overflowing node validTo": (mutate(**{"nodes.0.validTo": 2**63}), "nodes[0].validTo"),
    "node validTo past year 9999": (mutate(**{"nodes.0.validTo": MAX_US + 1}), "nodes[0].validTo"),
    "negative candidate validFrom": (
        mutate(**{"ambiguities.0.candidates.0.validFrom": -5}),
        "ambiguities[0].candidates[0].validFrom",
    ),
    "overflowing candidate validTo": (
        mutate(**{"ambiguities.0.candidates.0.validTo": 10**30}),
        "ambiguities[0].candidates[0].validTo",
    ),
    "unparseable time string": (
        mutate(**{"nodes.0.validFrom": "next quarter"}),
        "nodes[0].validFrom",
    ),
    "time string without offset": (
        mutate(**{"nodes.0.validFrom": "2026-10-01T00:00:00"}),
        "nodes[0].validFrom",
    ),
    "boolean time": (mutate(**{"nodes.0.validFrom": True}), "nodes[0].validFrom"),
    # required parts
    "source missing": (mutate(source=DELETE), "source"),
    "source text missing": (mutate(**{"source.text": DELETE}), "source.text"),
    "nodes missing": (mutate(nodes=DELETE), "nodes"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_submission_is_422_with_its_path_and_writes_nothing(ingest_client, case):
    payload, path = INVALID[case]
    before = written_counts()
    response = post(ingest_client, copy.deepcopy(payload))
    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["code"] == "SUBMISSION_INVALID"
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["errors"], list)
    for error in body["errors"]:
        assert set(error) == {"path", "message"}
    paths = [e["path"] for e in body["errors"]]
    assert path in paths, paths
    assert written_counts() == before


def test_every_error_is_reported_at_once(ingest_client):
    payload = mutate(
        **{
            "edges.0.from": 7,
            "spans": [{"start": 30, "end": 20}],
            "ambiguities.0.candidates.1.validTo": OCT_2026,
            "source.acl": ["nobody"],
        }
    )
    before = written_counts()
    response = post(ingest_client, payload)
    assert response.status_code == 422
    paths = {e["path"] for e in response.json()["errors"]}
    assert {"edges[0].from", "spans[0]", "ambiguities[0].candidates[1]", "source.acl[0]"} <= paths
    assert written_counts() == before


def test_invalid_resubmission_changes_nothing_already_stored(ingest_client):
    submit(ingest_client, submission_payload())
    before = written_counts()
    versions = list(NodeVersion.objects.values())
    payload = mutate(
        **{"source.text": MSA_TEXT + " Amended.", "source.acl": ["group:finance"], "edges.0.to": 4}
    )
    response = post(ingest_client, payload)
    assert response.status_code == 422
    assert written_counts() == before
    assert list(NodeVersion.objects.values()) == versions
    assert Source.objects.get().acl == ["group:legal"]


@pytest.mark.parametrize("body", [[], "text", 5])
def test_a_body_that_is_not_an_object_is_refused(ingest_client, body):
    before = written_counts()
    response = post(ingest_client, body)
    assert response.status_code in (400, 422)
    assert response.json()["code"] in ("SUBMISSION_INVALID", "MALFORMED_REQUEST")
    assert written_counts() == before


def test_malformed_json_is_refused(ingest_client):
    before = written_counts()
    response = ingest_client.post(
        "/v1/submissions", data='{"source": ', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "MALFORMED_REQUEST"
    assert written_counts() == before


# --- accepted variations ---


def test_rfc3339_times_are_accepted(ingest_client):
    payload = mutate(
        **{
            "nodes.0.validTo": "2030-01-01T00:00:00Z",
            "ambiguities.0.candidates.0.validFrom": "2026-10-01T00:00:00Z",
            "ambiguities.0.candidates.0.validTo": "2026-12-31T23:00:00-01:00",
        }
    )
    body = submit(ingest_client, payload)
    version = NodeVersion.objects.get(node_id=body["nodes"][0]["id"])
    assert (version.valid_from, version.valid_to) == (OCT_2026, JAN_2027)
    clar = Clarification.objects.get()
    assert (clar.candidates[0]["validFrom"], clar.candidates[0]["validTo"]) == (OCT_2026, JAN_2027)


def test_boundary_values_are_accepted(ingest_client):
    payload = fact_payload(valid_from=0, valid_to=MAX_US, text="abc")
    payload["spans"] = [{"start": 0, "end": 3}, {"start": 3, "end": 3}]
    payload["nodes"][0]["spanRef"] = 1
    payload["nodes"][0]["confidence"] = 0
    body = submit(ingest_client, payload)
    version = NodeVersion.objects.get(node_id=body["nodes"][0]["id"])
    assert (version.valid_from, version.valid_to, version.confidence) == (0, MAX_US, 0.0)


def test_optional_parts_may_be_omitted(ingest_client):
    payload = {
        "source": {"system": "notes", "externalId": "min", "text": ""},
        "nodes": [{"ref": 0, "labels": ["NOTE"]}],
    }
    body = submit(ingest_client, payload)
    assert body["clarifications"] == []
    node = Node.objects.get(pk=body["nodes"][0]["id"])
    assert node.key == "0"  # the key defaults to the ref


# --- PERSON resolution ---


def person_only(external_id: str, properties: dict) -> dict:
    return fact_payload(
        external_id=external_id, labels=["PERSON"], properties=properties, key="author"
    )


@pytest.fixture
def alice_with_upn(workspace):
    data = copy.deepcopy(WORKSPACE)
    data["people"][0]["aliases"]["upn"] = "alice.author@acme.onmicrosoft.test"
    workspace_load(data=data)


@pytest.mark.parametrize(
    "properties",
    [
        {"email": "alice@acme.test"},
        {"email": "ALICE@Acme.Test"},
        {"upn": "Alice.Author@acme.onmicrosoft.test"},
        {"aadOid": "OID-ALICE"},
        {"slackUserId": "U0ALICE"},
        {"name": "A. Author", "email": "nobody@acme.test", "slackUserId": "U0ALICE"},
    ],
    ids=["email", "email case", "upn", "aadOid", "slackUserId", "second alias matches"],
)
def test_person_node_resolves_to_the_known_person(
    ingest_client, people, alice_with_upn, properties
):
    first = submit(ingest_client, person_only("doc-1", {"email": "alice@acme.test"}))
    second = submit(ingest_client, person_only("doc-2", properties))
    alice_node = Node.objects.get(person=people["alice"])
    assert first["nodes"][0]["id"] == second["nodes"][0]["id"] == str(alice_node.pk)
    assert Node.objects.filter(person__isnull=False).count() == 1
    assert alice_node.versions.count() == 1


def test_two_submissions_naming_alice_make_one_person_node(ingest_client, people):
    a = submit(ingest_client, submission_payload())
    b = submit(
        ingest_client,
        submission_payload(source_externalId="contracts/other.docx", source_text=MSA_TEXT + "!"),
    )
    assert a["nodes"][1]["id"] == b["nodes"][1]["id"]
    assert Node.objects.filter(person=people["alice"]).count() == 1
    assert Edge.objects.filter(to_node_id=a["nodes"][1]["id"]).count() == 2
    assert a["nodes"][0]["id"] != b["nodes"][0]["id"]


def test_resubmitting_the_same_person_keeps_the_node(ingest_client):
    first = submit(ingest_client, submission_payload())
    before = written_counts()
    second = submit(ingest_client, submission_payload())
    assert first["nodes"] == second["nodes"]
    assert written_counts() == before


def test_unknown_person_is_keyed_by_alias_and_never_duplicated(ingest_client):
    first = submit(ingest_client, person_only("doc-1", {"email": "Stranger@Example.test"}))
    second = submit(ingest_client, person_only("doc-2", {"email": "stranger@example.test"}))
    assert first["nodes"][0]["id"] == second["nodes"][0]["id"]
    node = Node.objects.get(pk=first["nodes"][0]["id"])
    assert (node.person_id, node.source_id) == (None, None)
    assert Node.objects.filter(key__icontains="stranger").count() == 1


def test_a_person_node_is_not_a_fact_with_a_key_clash(ingest_client, people):
    """A PERSON node and a fact node may share a submission key without clashing."""
    payload = submission_payload()
    payload["nodes"][1]["key"] = "msa-term"
    body = submit(ingest_client, payload)
    assert body["nodes"][0]["id"] != body["nodes"][1]["id"]
    assert Node.objects.get(pk=body["nodes"][1]["id"]).person == people["alice"]


# --- fact identity across re-ingestion ---


def test_fact_keeps_its_identity_when_the_document_changes(ingest_client):
    first = submit(ingest_client, fact_payload())
    second = submit(
        ingest_client, fact_payload(text="The document, edited.", properties={"name": "Edited"})
    )
    assert first["nodes"][0]["id"] == second["nodes"][0]["id"]
    assert second["sourceVersionTx"] > first["sourceVersionTx"]
    assert second["nodes"][0]["versionTx"] > first["nodes"][0]["versionTx"]
    versions = NodeVersion.objects.filter(node_id=first["nodes"][0]["id"]).order_by("seq")
    assert [v.properties["name"] for v in versions] == ["Plain fact", "Edited"]
    assert versions[0].tx_to == versions[1].tx_from
    assert SourceVersion.objects.count() == 2 and Source.objects.count() == 1


def test_fact_identity_follows_the_key_not_the_ref(ingest_client):
    first = submit(ingest_client, submission_payload())
    payload = submission_payload()
    payload["nodes"][0]["ref"] = 5
    payload["edges"][0]["from"] = 5
    payload["ambiguities"][0]["nodeRef"] = 5
    second = submit(ingest_client, payload)
    assert second["nodes"][0] == {**first["nodes"][0], "ref": 5}


def test_default_key_is_the_ref(ingest_client):
    payload = fact_payload()
    del payload["nodes"][0]["key"]
    first = submit(ingest_client, payload)
    assert Node.objects.get(pk=first["nodes"][0]["id"]).key == "0"
    payload["source"]["text"] = "Changed."
    assert submit(ingest_client, payload)["nodes"][0]["id"] == first["nodes"][0]["id"]


@pytest.mark.parametrize(
    "change", [{"system": "gdrive"}, {"externalId": "notes/other.md"}, {"key": "other"}]
)
def test_a_different_system_external_id_or_key_is_a_different_fact(ingest_client, change):
    first = submit(ingest_client, fact_payload())
    payload = fact_payload(key=change.get("key", "plain"))
    payload["source"].update({k: v for k, v in change.items() if k != "key"})
    second = submit(ingest_client, payload)
    assert first["nodes"][0]["id"] != second["nodes"][0]["id"]


def test_identical_resubmission_writes_no_new_version(ingest_client):
    first = submit(ingest_client, submission_payload())
    before = written_counts()
    second = submit(ingest_client, submission_payload())
    assert written_counts() == before
    assert second["sourceVersionTx"] == first["sourceVersionTx"]
    assert second["nodes"] == first["nodes"]
    assert second["clarifications"] == [{**first["clarifications"][0], "deduplicated": True}]


def test_identical_resubmission_without_ambiguities_writes_nothing(ingest_client):
    first = submit(ingest_client, fact_payload())
    before = written_counts()
    second = submit(ingest_client, fact_payload())
    assert written_counts() == before
    assert second == first


def test_changed_text_same_fact_writes_a_new_source_version_only_when_needed(ingest_client):
    first = submit(ingest_client, fact_payload())
    second = submit(ingest_client, fact_payload(text="New text, same fact."))
    assert second["sourceVersionTx"] > first["sourceVersionTx"]
    # the provenance points at the new source version, so the fact gets a new version
    versions = NodeVersion.objects.filter(node_id=first["nodes"][0]["id"]).order_by("seq")
    assert [v.provenance["sourceVersionTx"] for v in versions] == [
        first["sourceVersionTx"],
        second["sourceVersionTx"],
    ]


# --- the best guess ---


def test_best_guess_is_applied_at_reduced_confidence_and_pending(ingest_client):
    body = submit(ingest_client, submission_payload())
    version = NodeVersion.objects.get(node_id=body["nodes"][0]["id"])
    assert (version.valid_from, version.valid_to) == (OCT_2026, None)  # the first candidate
    assert version.confidence == 0.45  # appliedCandidateConfidence, not the node's 0.92
    assert version.pending is True
    assert version.provenance["clarification"] == body["clarifications"][0]["id"]
    clar = Clarification.objects.get()
    assert clar.target_id == version.node_id
    assert clar.detector_confidence == 0.81 and clar.applied_candidate_confidence == 0.45


def test_a_fact_without_ambiguity_is_not_pending(ingest_client):
    body = submit(ingest_client, submission_payload(ambiguities=[]))
    version = NodeVersion.objects.get(node_id=body["nodes"][0]["id"])
    assert (version.valid_from, version.confidence, version.pending) == (None, 0.92, False)
    assert body["clarifications"] == []
    assert Clarification.objects.count() == 0


def test_below_min_detector_confidence_guess_applied_but_no_clarification(ingest_client, settings):
    settings.CLARIFY = {**settings.CLARIFY, "MIN_DETECTOR_CONFIDENCE": 0.9}
    before = written_counts()
    body = submit(ingest_client, submission_payload())  # detectorConfidence 0.81
    assert body["clarifications"] == []
    after = written_counts()
    assert after["Clarification"] == before["Clarification"]
    assert after["Job"] == before["Job"]
    version = NodeVersion.objects.get(node_id=body["nodes"][0]["id"])
    assert (version.valid_from, version.valid_to) == (OCT_2026, None)
    assert version.confidence == 0.45
    assert version.pending is False
    assert version.provenance["clarification"] is None
    record = ingest_client.get(f"/v1/nodes/{body['nodes'][0]['id']}").json()
    assert record["pendingClarification"] is None
    assert record["confidence"] == 0.45


def test_at_min_detector_confidence_a_clarification_is_opened(ingest_client, settings):
    settings.CLARIFY = {**settings.CLARIFY, "MIN_DETECTOR_CONFIDENCE": 0.81}
    body = submit(ingest_client, submission_payload())
    assert len(body["clarifications"]) == 1
    assert NodeVersion.objects.get(node_id=body["nodes"][0]["id"]).pending is True


def test_spans_are_stored_once_per_source_version(ingest_client):
    payload = submission_payload()
    submit(ingest_client, payload)
    submit(ingest_client, payload)
    span = payload["spans"][0]
    assert list(Span.objects.values_list("start", "end")) == [(span["start"], span["end"])]
