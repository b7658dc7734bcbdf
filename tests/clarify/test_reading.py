"""Reading clarifications (CONTRACT §3.2) and evidence classes on records (§3.3)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clarify.models import Clarification
from clarify.routing import on_dead
from jobs.models import Job

from .conftest import (
    APPLIED_CONFIDENCE,
    C0,
    C1,
    C2,
    CANDIDATES,
    DELIVERY_KEYS,
    DETAIL_KEYS,
    DETECTOR_CONFIDENCE,
    LIST_KEYS,
    RESPONSE_KEYS,
    TEXT,
    build_submission,
    bulk_submission,
    us,
)


@pytest.fixture
def sixty(ingest_client):
    resp = ingest_client.post("/v1/submissions", bulk_submission(60), format="json")
    assert resp.status_code == 201, resp.content
    ids = [c["id"] for c in resp.json()["clarifications"]]
    assert len(set(ids)) == 60
    return ids


def _page_through(client, limit, **params):
    seen, pages, cursor = [], 0, None
    while True:
        query = {"limit": limit, **params}
        if cursor:
            query["cursor"] = cursor
        resp = client.get("/v1/clarifications", query)
        assert resp.status_code == 200, resp.content
        body = resp.json()
        assert set(body) == {"results", "next"}
        seen += [row["id"] for row in body["results"]]
        pages += 1
        cursor = body["next"]
        if cursor is None:
            return seen, pages
        assert pages < 100


def test_list_pages_through_every_clarification_once(sixty, clients):
    seen, pages = _page_through(clients.alice, 7)
    assert len(seen) == 60
    assert set(seen) == set(sixty)
    assert pages == 9
    # Newest first: the order is the stable created_at/id order of the rows.
    assert seen == [
        str(pk)
        for pk in Clarification.objects.order_by("-created_at", "-id").values_list("pk", flat=True)
    ]


def test_list_filters(sixty, clients):
    critical, _ = _page_through(clients.alice, 50, severity="critical")
    assert set(critical) == set(sixty[2::4])
    Clarification.objects.filter(pk__in=sixty[:5]).update(state="conflicted")
    conflicted, _ = _page_through(clients.alice, 2, state="conflicted")
    assert sorted(conflicted) == sorted(sixty[:5])
    both, _ = _page_through(clients.alice, 50, state="conflicted", severity="normal")
    assert sorted(both) == sorted([sixty[0], sixty[4]])
    assert _page_through(clients.alice, 50, state="answered")[0] == []
    for bad in [{"state": "closed"}, {"severity": "urgent"}]:
        resp = clients.alice.get("/v1/clarifications", bad)
        assert resp.status_code == 422
        assert resp.json()["code"] == "INVALID_INPUT"


def test_list_is_scoped_to_readable_sources(sixty, clients, ingest_client):
    assert _page_through(clients.olga, 50)[0] == []  # olga is not in legal
    assert len(_page_through(clients.sam, 50)[0]) == 60
    other = build_submission(external_id="finance/budget.xlsx", acl=("group:finance",))
    assert ingest_client.post("/v1/submissions", other, format="json").status_code == 201
    assert len(_page_through(clients.olga, 50)[0]) == 1
    assert len(_page_through(clients.alice, 50)[0]) == 60


def test_list_query_count_does_not_grow_with_page_size(sixty, clients):
    counts = []
    for limit in (5, 50):
        with CaptureQueriesContext(connection) as ctx:
            resp = clients.alice.get("/v1/clarifications", {"limit": limit})
        assert len(resp.json()["results"]) == limit
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_list_row_shape(sixty, clients):
    row = clients.alice.get("/v1/clarifications", {"limit": 1}).json()["results"][0]
    assert set(row) == LIST_KEYS
    assert set(row["quorumPolicy"]) == {
        "requiredConfirmations",
        "requiredRoles",
        "allowStewardOverride",
    }
    assert [set(c) for c in row["candidates"]] == [{"index", "validFrom", "validTo", "label"}] * 3


def test_detail_shape_and_values(submit, clients, people):
    s = submit()
    detail = clients.alice.get(f"/v1/clarifications/{s.clar_id}")
    assert detail.status_code == 200
    body = detail.json()
    assert set(body) == DETAIL_KEYS
    events = body.pop("events")
    assert [e["type"] for e in events] == ["opened"]
    assert set(events[0]) == {"at", "type", "detail"}
    assert body == {
        "id": s.clar_id,
        "target": s.node_id,
        "kind": "relative_date",
        "severity": "normal",
        "state": "open",
        "quorumState": "not_required",
        "quorumPolicy": {
            "requiredConfirmations": 1,
            "requiredRoles": ["editor"],
            "allowStewardOverride": True,
        },
        "candidates": [
            {"index": i, "validFrom": c["validFrom"], "validTo": c["validTo"], "label": c["label"]}
            for i, c in enumerate(CANDIDATES)
        ],
        "asked": [str(people["alice"].pk)],
        "responses": [],
        "detectorConfidence": DETECTOR_CONFIDENCE,
        "appliedCandidateConfidence": APPLIED_CONFIDENCE,
        "factVersionTx": None,
    }


def test_detail_after_answers(submit, clients, answer, people):
    s = submit(severity_hint="critical")
    answer(clients.vera, s.clar_id, answerIndex=1)
    answer(clients.alice, s.clar_id, answerIndex=1, channel="slack", messageRef="m-1")
    bound = answer(clients.bob, s.clar_id, answerCustom={"validFrom": C1[0], "sourceText": "July"})
    assert bound.status_code == 200
    body = clients.alice.get(f"/v1/clarifications/{s.clar_id}").json()
    assert (body["state"], body["quorumState"]) == ("answered", "satisfied")
    assert body["factVersionTx"] == bound.json()["factVersionTx"]
    responses = body["responses"]
    assert all(set(r) == RESPONSE_KEYS for r in responses)
    assert [
        (
            r["responder"],
            r["rightsAtAnswerTime"],
            r["answerIndex"],
            r["answerCustom"],
            r["channel"],
            r["messageRef"],
            r["bindingStatus"],
        )
        for r in responses
    ] == [
        (str(people["vera"].pk), "viewer", 1, None, "api", None, "attestation"),
        (str(people["alice"].pk), "editor", 1, None, "slack", "m-1", "bound"),
        (
            str(people["bob"].pk),
            "editor",
            None,
            {"validFrom": C1[0], "validTo": None, "sourceText": "July"},
            "api",
            None,
            "bound",
        ),
    ]
    assert all(isinstance(r["responseTx"], int) for r in responses)
    assert responses[0]["responseTx"] <= responses[1]["responseTx"] <= responses[2]["responseTx"]
    types = [e["type"] for e in body["events"]]
    for expected in ("opened", "attestation_recorded", "quorum_transition", "bound"):
        assert expected in types
    assert [e["at"] for e in body["events"]] == sorted(e["at"] for e in body["events"])


def test_delivery_view_only_for_the_clarify_audience(
    submit, clients, clarify_client, ingest_client, people
):
    s = submit(links=[("AUTHORED_BY", "alice"), ("CC", "bob")])
    url = f"/v1/clarifications/{s.clar_id}"
    for client in (clients.alice, clients.sam, clients.vera, ingest_client):
        body = client.get(url).json()
        assert set(body) == DETAIL_KEYS
        assert not DELIVERY_KEYS & set(body)
    body = clarify_client.get(url).json()
    assert set(body) == DETAIL_KEYS | DELIVERY_KEYS
    assert body["spanExcerpt"] == "effective next quarter"
    assert body["spanExcerpt"] == TEXT[69:91]
    assert json.loads(body["aclJson"]) == ["group:legal", "group:finance"]
    assert body["askedAliases"] == {
        str(people["alice"].pk): {
            "email": "alice@acme.test",
            "upn": "alice@acme.test",
            "slackUserId": "U0ALICE",
            "aadOid": "oid-alice",
        },
        str(people["bob"].pk): {
            "email": "bob@acme.test",
            "upn": "bob@acme.test",
            "slackUserId": "U0BOB",
        },
    }
    # The list never carries the delivery view, whoever asks.
    rows = clarify_client.get("/v1/clarifications").json()["results"]
    assert [set(r) for r in rows] == [LIST_KEYS]


def test_detail_of_unknown_or_foreign_clarification_is_404(submit, clients):
    s = submit()
    for bad in ["not-a-uuid", "00000000-0000-0000-0000-000000000000"]:
        resp = clients.alice.get(f"/v1/clarifications/{bad}")
        assert resp.status_code == 404
        assert resp.json()["code"] == "NOT_FOUND"
    assert clients.alice.get(f"/v1/clarifications/{s.clar_id}").status_code == 200


def test_evidence_classes_on_query_records(submit, clients, answer):
    plain = submit(external_id="d/plain", ambiguity=False)
    pending = submit(external_id="d/pending")
    attested = submit(external_id="d/attested")
    human = submit(external_id="d/human")
    quorum = submit(external_id="d/quorum", severity_hint="critical")
    override = submit(external_id="d/override", severity_hint="critical")
    assert answer(clients.vera, attested.clar_id, answerIndex=1).status_code == 202
    assert answer(clients.alice, human.clar_id, answerIndex=1).status_code == 200
    assert answer(clients.alice, quorum.clar_id, answerIndex=1).status_code == 202
    assert answer(clients.bob, quorum.clar_id, answerIndex=1).status_code == 200
    resp = answer(clients.sam, override.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 200

    resp = clients.alice.post(
        "/v1/query", {"labels": ["CONTRACT_TERM"], "validAt": us("2026-11-01")}, format="json"
    )

    by_node = {r["id"]: r for r in resp.json()["records"]}
    classes = {
        name: by_node[s.node_id]["evidenceClass"]
        for name, s in [
            ("plain", plain),
            ("pending", pending),
            ("attested", attested),
            ("human", human),
            ("quorum", quorum),
            ("override", override),
        ]
    }
    assert classes == {
        "plain": "system_extraction",
        "pending": "system_extraction",
        "attested": "human_attestation",
        "human": "human_clarification",
        "quorum": "quorum_confirmation",
        "override": "steward_override",
    }
    for s in (human, quorum, override):
        rec = by_node[s.node_id]
        assert rec["pendingClarification"] is None
        assert rec["provenance"]["clarification"] == s.clar_id
        assert (rec["validFrom"], rec["validTo"]) == C1
    for s, state in ((pending, "open"), (attested, "attested")):
        rec = by_node[s.node_id]
        assert rec["pendingClarification"]["state"] == state
        assert (rec["validFrom"], rec["validTo"]) == C0
    assert by_node[plain.node_id]["pendingClarification"] is None
    # The record shape (CONTRACT §3.3).
    assert set(by_node[human.node_id]) == {
        "id",
        "labels",
        "properties",
        "validFrom",
        "validTo",
        "txFrom",
        "txTo",
        "confidence",
        "source",
        "provenance",
        "evidenceClass",
        "pendingClarification",
    }
    assert set(by_node[human.node_id]["source"]) == {"system", "externalId", "title"}
    assert set(by_node[human.node_id]["provenance"]) == {
        "sourceVersionTx",
        "spans",
        "clarification",
    }


def test_history_keeps_every_evidence_class(submit, clients, answer):
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    answer(clients.bob, s.clar_id, answerIndex=2)
    answer(clients.sam, s.clar_id, answerIndex=2, stewardOverride=True)
    records = clients.alice.get(f"/v1/nodes/{s.node_id}/history").json()["records"]
    assert [(r["evidenceClass"], r["validFrom"], r["validTo"]) for r in records] == [
        ("system_extraction", *C0),
        ("steward_override", *C2),
    ]


def _evidence(client, node_id, **params):
    resp = client.post(
        "/v1/query",
        {"labels": ["CONTRACT_TERM"], "validAt": us("2026-11-01"), **params},
        format="json",
    )
    by_node = {r["id"]: r for r in resp.json()["records"]}
    node = client.get(f"/v1/nodes/{node_id}", {"validAt": us("2026-11-01")}).json()
    assert node["evidenceClass"] == by_node[node_id]["evidenceClass"]
    return by_node[node_id]


def test_attestation_evidence_survives_dead_lettering(submit, clients, answer):
    """human_attestation is derived from the recorded responses, not the state: an
    attested clarification that is dead-lettered (ranking exhausted) still has a viewer's
    attestation as its fact's only human support."""
    s = submit()
    assert answer(clients.vera, s.clar_id, answerIndex=1).status_code == 202
    job = Job.objects.get(kind="clarify:temporal", subject=s.clar_id)
    on_dead(job)
    s.clar.refresh_from_db()
    assert s.clar.state == "dead_lettered"

    rec = _evidence(clients.alice, s.node_id)

    assert rec["evidenceClass"] == "human_attestation"
    assert rec["pendingClarification"]["state"] == "dead_lettered"
    assert (rec["validFrom"], rec["validTo"]) == C0
    # A late editor confirmation binds; the bound version is a human clarification.
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    assert _evidence(clients.alice, s.node_id)["evidenceClass"] == "human_clarification"


def test_attestation_evidence_needs_attestation_to_be_the_only_human_support(
    submit, clients, answer
):
    """An expired or dead-lettered clarification nobody answered stays system_extraction;
    one where an editor's confirmation is also recorded (quorum still pending) is not
    "attestation only" either (CONTRACT §3.3)."""
    silent = submit(external_id="d/silent")
    Clarification.objects.filter(pk=silent.clar_id).update(state="dead_lettered")
    assert _evidence(clients.alice, silent.node_id)["evidenceClass"] == "system_extraction"

    mixed = submit(external_id="d/mixed", severity_hint="critical")
    assert answer(clients.vera, mixed.clar_id, answerIndex=1).status_code == 202
    assert _evidence(clients.alice, mixed.node_id)["evidenceClass"] == "human_attestation"
    assert answer(clients.alice, mixed.clar_id, answerIndex=1).status_code == 202
    rec = _evidence(clients.alice, mixed.node_id)
    assert rec["evidenceClass"] == "system_extraction"
    assert rec["pendingClarification"]["state"] == "partially_confirmed"


def test_query_records_query_count_does_not_grow_with_pending_records(submit, clients, answer):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            resp = clients.alice.post(
                "/v1/query",
                {"labels": ["CONTRACT_TERM"], "validAt": us("2026-11-01")},
                format="json",
            )
        assert resp.status_code == 200
        return len(ctx.captured_queries)

    for i in range(2):
        s = submit(external_id=f"few/{i}")
        answer(clients.vera, s.clar_id, answerIndex=1)
    few = count()
    for i in range(10):
        s = submit(external_id=f"more/{i}")
        if i % 2:
            answer(clients.vera, s.clar_id, answerIndex=1)
    assert count() == few
