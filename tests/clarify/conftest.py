"""Clarify-core fixtures: a submission builder, HTTP helpers and whole-table snapshots.

Plain helpers (times, `build_submission`, `snapshot`) are importable from this module;
the fixtures below bind them to the shared `ingest_client` / `people` fixtures.
"""

from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from clarify.models import (
    AuditEvent,
    Clarification,
    ClarificationBinding,
    ClarifyPolicy,
    ResponseRecord,
)
from common.times import to_us
from graph.models import NodeVersion
from jobs.models import Job
from tenancy.services import workspace_load
from tests.submissions import OMIT, Submission


def us(text: str) -> int:
    """An ISO date(-time) in UTC as µs since the epoch."""
    if "T" not in text:
        text += "T00:00:00"
    return to_us(datetime.fromisoformat(text + "+00:00"))


# Three candidate intervals; the first is the detector's best guess (applied on ingest).
C0 = (us("2026-10-01"), None)
C1 = (us("2026-07-01"), None)
C2 = (us("2025-01-01"), us("2026-01-01"))
CANDIDATES = [
    {"validFrom": C0[0], "validTo": C0[1], "label": "1 Oct 2026 (next quarter)", "spanRef": 0},
    {"validFrom": C1[0], "validTo": C1[1], "label": "1 Jul 2026 (signature)"},
    {"validFrom": C2[0], "validTo": C2[1], "label": "calendar 2025 (countersignature)"},
]
EXTRACTION_CONFIDENCE = 0.92
APPLIED_CONFIDENCE = 0.45
DETECTOR_CONFIDENCE = 0.81
TEXT = (
    "MASTER SERVICES AGREEMENT between Acme and Vendor. This agreement is effective "
    "next quarter and runs until terminated by either party with 90 days notice."
)
SPAN = {"start": 69, "end": 91}  # "effective next quarter"

LIST_KEYS = {
    "id",
    "target",
    "kind",
    "severity",
    "state",
    "quorumState",
    "quorumPolicy",
    "candidates",
    "asked",
    "detectorConfidence",
    "appliedCandidateConfidence",
    "factVersionTx",
}
DETAIL_KEYS = LIST_KEYS | {"responses", "events"}
DELIVERY_KEYS = {"spanExcerpt", "aclJson", "askedAliases"}
RESPONSE_KEYS = {
    "responseId",
    "responder",
    "rightsAtAnswerTime",
    "answerIndex",
    "answerCustom",
    "channel",
    "messageRef",
    "responseTx",
    "bindingStatus",
}


def build_submission(
    *,
    external_id: str = "contracts/msa.docx",
    text: str = TEXT,
    key: str = "msa-term",
    labels: tuple[str, ...] = ("CONTRACT_TERM",),
    properties: dict[str, Any] | None = None,
    links: list[tuple[Any, ...]] | None = None,
    acl: tuple[str, ...] = ("group:legal", "group:finance"),
    ambiguity: bool = True,
    kind: str = "relative_date",
    severity_hint: str | None = None,
    candidates: list[dict[str, Any]] | None = None,
    detector_confidence: float = DETECTOR_CONFIDENCE,
    applied_confidence: float = APPLIED_CONFIDENCE,
    extraction_confidence: float = EXTRACTION_CONFIDENCE,
    restriction: Any = OMIT,
) -> dict[str, Any]:
    """A Submission (CONTRACT §3.1) with one fact node (ref 0) and PERSON nodes.

    `links` are `(EDGE_TYPE, person)` (fact → person) or `(EDGE_TYPE, person, "in")`
    (person → fact); a person is a workspace name ("alice") or a full email."""
    links = [("AUTHORED_BY", "alice")] if links is None else links
    sub = Submission(
        external_id,
        text,
        title="Master services agreement",
        uri="https://example.test/msa",
        acl=acl,
        restriction=restriction,
    )
    fact = sub.fact(
        key,
        properties=properties if properties is not None else {"name": "MSA term"},
        labels=labels,
        confidence=extraction_confidence,
        span=sub.span(SPAN["start"], SPAN["end"]),
    )
    refs: dict[str, int] = {}
    for link in links:
        edge_type, who = link[0], link[1]
        email = who if "@" in who else f"{who}@acme.test"
        if email not in refs:
            refs[email] = sub.person(email, of=())
        if len(link) > 2 and link[2] == "in":
            sub.edge(edge_type, refs[email], fact)
        else:
            sub.edge(edge_type, fact, refs[email])
    if ambiguity:
        sub.ambiguity(
            fact,
            candidates=candidates or CANDIDATES,
            kind=kind,
            severity_hint=severity_hint,
            detector_confidence=detector_confidence,
            applied_confidence=applied_confidence,
        )
    data = sub.payload()
    return data


SEVERITY_CYCLE = ["normal", "high", "critical", "low"]


def bulk_submission(n: int, acl: tuple[str, ...] = ("group:legal",)) -> dict[str, Any]:
    """One source with n ambiguous facts (severities cycling normal/high/critical/low)."""
    data = build_submission(acl=acl, links=[("AUTHORED_BY", "alice")])
    person = data["nodes"][1]
    fact = data["nodes"][0]
    amb = data["ambiguities"][0]
    data["nodes"] = [{**fact, "ref": i, "key": f"term-{i}"} for i in range(n)]
    data["nodes"].append({**person, "ref": n})
    data["edges"] = [{"type": "AUTHORED_BY", "from": i, "to": n} for i in range(n)]
    data["ambiguities"] = [
        {**amb, "nodeRef": i, "severityHint": SEVERITY_CYCLE[i % 4]} for i in range(n)
    ]
    return data


TABLES = {
    "responses": (ResponseRecord, "seq"),
    "versions": (NodeVersion, "tx_from"),
    "events": (AuditEvent, "id"),
    "bindings": (ClarificationBinding, "id"),
    "jobs": (Job, "id"),
    "clarifications": (Clarification, "id"),
}


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of the tables an answer may write, as plain values."""
    return {
        name: list(model.objects.order_by(order, "pk").values())
        for name, (model, order) in TABLES.items()
    }


def assert_nothing_written(before: dict[str, list[dict[str, Any]]]) -> None:
    after = snapshot()
    for name in TABLES:
        assert after[name] == before[name], f"{name} changed"


def assert_refused_unreadable(before: dict[str, list[dict[str, Any]]], clar_id: Any) -> None:
    """Nothing written but the refusal's audit event: `answer_refused`, NO_READ_PERMISSION,
    on the clarification refused."""
    after = snapshot()
    for name in TABLES:
        if name != "events":
            assert after[name] == before[name], f"{name} changed"
    new = after["events"][len(before["events"]) :]
    assert after["events"][: len(before["events"])] == before["events"]
    assert [(e["type"], e["clarification_id"], e["detail"]["reason"]) for e in new] == [
        ("answer_refused", clar_id, "NO_READ_PERMISSION")
    ]


def responses_of(clar_id: Any) -> list[ResponseRecord]:
    return list(ResponseRecord.objects.filter(clarification_id=clar_id).order_by("seq"))


def versions_of(node_id: Any) -> list[NodeVersion]:
    return list(NodeVersion.objects.filter(node_id=node_id).order_by("seq"))


def event_types(clar_id: Any) -> list[str]:
    return list(
        AuditEvent.objects.filter(clarification_id=clar_id)
        .order_by("at", "id")
        .values_list("type", flat=True)
    )


def answer_url(clar_id: Any) -> str:
    return f"/v1/clarifications/{clar_id}/answer"


@pytest.fixture
def submit(ingest_client):
    """`submit(**build_submission_kwargs)` → POST /v1/submissions (201) as a namespace with
    `body`, `clar_id`, `node_id`, `clar` (the Clarification row, or None)."""

    def do(**kwargs: Any) -> SimpleNamespace:
        resp = ingest_client.post("/v1/submissions", build_submission(**kwargs), format="json")
        assert resp.status_code == 201, resp.content
        body = resp.json()
        clar_id = body["clarifications"][0]["id"] if body["clarifications"] else None
        return SimpleNamespace(
            body=body,
            clar_id=clar_id,
            node_id=body["nodes"][0]["id"],
            clar=Clarification.objects.get(pk=clar_id) if clar_id else None,
        )

    return do


@pytest.fixture
def answer():
    """`answer(client, clar_id, **body)` → the response of POST …/answer."""

    def do(client: Any, clar_id: Any, **body: Any) -> Any:
        return client.post(answer_url(clar_id), body, format="json")

    return do


@pytest.fixture
def clients(person_client):
    """Editors alice/bob/olga, viewer vera, steward sam, each with their own key."""
    return SimpleNamespace(**{n: person_client(n) for n in ("alice", "bob", "olga", "vera", "sam")})


@pytest.fixture
def tenant_policy(workspace):
    """`tenant_policy(**fields)` → the tenant's ClarifyPolicy overrides (create or update)."""

    def set_policy(**fields: Any) -> ClarifyPolicy:
        policy, _ = ClarifyPolicy.objects.update_or_create(tenant=workspace, defaults=fields)
        return policy

    return set_policy


@pytest.fixture
def many_editors(workspace):
    """`many_editors(n)` → n extra editor people of the acme tenant (racer0…), in legal
    (so they may read what they answer: the answer checks read access)."""

    def load(n: int, prefix: str = "racer") -> list[Any]:
        workspace_load(
            data={
                "tenant": workspace.slug,
                "groups": ["legal"],
                "people": [
                    {
                        "name": f"Racer {i}",
                        "email": f"{prefix}{i}@acme.test",
                        "role": "editor",
                        "groups": ["legal"],
                    }
                    for i in range(n)
                ],
            }
        )
        return [workspace.people.get(email=f"{prefix}{i}@acme.test") for i in range(n)]

    return load
