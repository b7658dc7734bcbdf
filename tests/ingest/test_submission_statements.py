"""A submission of one source, one span, one fact and one edge is at most 12 SQL
statements in process (issue 22 item 2), with the same guarantees: the count is taken on
the path that resolves the ACL, resolves the PERSON node to the known person and writes
every row, and on the resubmission that deduplicates."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.models import Edge, Node, NodeVersion, Source, SourceGroupObjectPermission, Span
from ingest.services import submission_apply, submission_plan
from tests.conftest import CHAIN_STATEMENTS

from ..factories import written_counts

pytestmark = pytest.mark.django_db

MAX_STATEMENTS = 12


def one_node(external_id: str, *, ambiguous: bool = False) -> dict:
    text = f"Document {external_id}. The agreement starts next quarter."
    data = {
        "source": {
            "system": "sharepoint",
            "externalId": external_id,
            "title": external_id,
            "uri": "",
            "text": text,
            "acl": ["group:legal"],
            "restriction": None,
        },
        "spans": [{"start": 0, "end": len(text)}],
        "nodes": [
            {
                "ref": 0,
                "key": "term",
                "labels": ["CONTRACT_TERM"],
                "properties": {"name": external_id},
                "validFrom": None,
                "validTo": None,
                "confidence": 0.9,
                "spanRef": 0,
            },
            {
                "ref": 1,
                "labels": ["PERSON"],
                "properties": {"email": "alice@acme.test"},
                "validFrom": None,
                "validTo": None,
                "confidence": 1.0,
                "spanRef": None,
            },
        ],
        "edges": [{"type": "AUTHORED_BY", "from": 0, "to": 1}],
        "ambiguities": [],
    }
    if ambiguous:
        data["ambiguities"] = [
            {
                "nodeRef": 0,
                "kind": "relative_date",
                "severityHint": None,
                "candidates": [
                    {"validFrom": 1790812800000000, "validTo": None, "label": "Q4", "spanRef": 0}
                ],
                "detectorConfidence": 0.9,
                "appliedCandidateConfidence": 0.5,
            }
        ]
    return data


def apply(tenant, data) -> tuple[dict, int]:
    plan = submission_plan(data)
    with CaptureQueriesContext(connection) as captured:
        body = submission_apply(tenant=tenant, plan=plan)
    return body, len(captured.captured_queries)


def test_one_source_span_fact_and_edge_is_at_most_12_statements(workspace, people):
    apply(workspace, one_node("warm-up"))  # alice's PERSON node exists from here on
    before = written_counts()
    body, statements = apply(workspace, one_node("doc-1"))
    assert statements <= MAX_STATEMENTS, statements
    after = written_counts()
    grown = {name for name in after if after[name] > before[name]}
    assert grown == {
        "Source",
        "SourceVersion",
        "Span",
        "SourceGroupObjectPermission",
        "Node",
        "NodeVersion",
        "Edge",
    }
    source = Source.objects.get(external_id="doc-1")
    fact = Node.objects.get(source=source, key="term")
    alice = Node.objects.get(person=people["alice"])
    assert [n["id"] for n in body["nodes"]] == [fact.pk, alice.pk]
    assert Edge.objects.filter(from_node=fact, to_node=alice, type="AUTHORED_BY").count() == 1
    assert Span.objects.filter(source_version__source=source).count() == 1
    assert SourceGroupObjectPermission.objects.filter(content_object=source).count() == 1
    version = NodeVersion.objects.get(node=fact, tx_to__isnull=True)
    assert body["nodes"][0]["versionTx"] == version.tx_from
    assert body["nodes"][1]["versionTx"] == alice.versions.get(tx_to__isnull=True).tx_from


def test_a_second_fact_and_edge_add_no_statement(workspace, people):
    """Statements per table, not per row."""
    apply(workspace, one_node("warm-up"))
    data = one_node("doc-2")
    data["nodes"].append({**data["nodes"][0], "ref": 2, "key": "term-2"})
    data["edges"].append({"type": "AUTHORED_BY", "from": 2, "to": 1})
    _, two_facts = apply(workspace, data)
    _, one_fact = apply(workspace, one_node("doc-3"))
    assert two_facts == one_fact


def test_an_ambiguous_fact_adds_its_clarification_event_and_job_in_a_few_statements(
    workspace, people
):
    apply(workspace, one_node("warm-up", ambiguous=True))  # the tenant's chain head exists
    body, statements = apply(workspace, one_node("doc-4", ambiguous=True))
    assert body["clarifications"][0]["deduplicated"] is False
    # dedup lookup, policy, ranking, clarification, audit event, job: six more; and
    # issue 33's: the webhook outbox's read of the endpoints (the event announces the
    # opening) and the audit chain's
    assert statements <= MAX_STATEMENTS + 6 + 1 + CHAIN_STATEMENTS, statements


def test_an_identical_resubmission_deduplicates_and_writes_nothing(workspace, people):
    apply(workspace, one_node("warm-up"))
    first, _ = apply(workspace, one_node("doc-5", ambiguous=True))
    before = written_counts()
    again, statements = apply(workspace, one_node("doc-5", ambiguous=True))
    assert written_counts() == before
    assert again["clarifications"][0]["deduplicated"] is True
    assert again["clarifications"][0]["id"] == first["clarifications"][0]["id"]
    assert again["nodes"] == first["nodes"]
    assert statements <= MAX_STATEMENTS + 2, statements
