"""Submissions applied in batches (issue 22 item 3): one statement per table per batch,
each document still all-or-nothing — a document that fails rolls back alone and is
reported, the others of its batch are applied — with the same dedup identity, ACL
resolution, PERSON resolution and clarifications as one at a time."""

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

import ingest.batch
from clarify.models import AuditEvent, Clarification
from graph.models import Edge, Node, Source, SourceGroupObjectPermission
from ingest.services import submission_plan, submissions_apply
from jobs.models import Job

from ..factories import written_counts
from .test_submission_statements import one_node

pytestmark = pytest.mark.django_db


def plans(*external_ids: str, ambiguous: bool = True) -> list:
    return [submission_plan(one_node(e, ambiguous=ambiguous)) for e in external_ids]


def test_a_batch_writes_what_one_at_a_time_writes(workspace, people):
    applied = submissions_apply(tenant=workspace, plans=plans("a", "b", "c"))
    assert [a.error for a in applied] == [None, None, None]
    assert Source.objects.count() == 3
    assert SourceGroupObjectPermission.objects.count() == 3
    alice = Node.objects.get(person=people["alice"])  # one node for her, whatever the batch
    assert Edge.objects.filter(to_node=alice).count() == 3
    assert Clarification.objects.count() == Job.objects.count() == 3
    assert AuditEvent.objects.filter(type="opened").count() == 3
    ids = {a.result["clarifications"][0]["id"] for a in applied}  # type: ignore[index]
    assert ids == set(Clarification.objects.values_list("pk", flat=True))


def test_statements_per_batch_do_not_grow_with_its_documents(workspace, people):
    submissions_apply(tenant=workspace, plans=plans("warm-up"))
    with CaptureQueriesContext(connection) as two:
        submissions_apply(tenant=workspace, plans=plans("d1", "d2"))
    with CaptureQueriesContext(connection) as twenty:
        submissions_apply(tenant=workspace, plans=plans(*(f"e{i}" for i in range(20))))
    assert len(twenty.captured_queries) == len(two.captured_queries)


def test_a_failing_document_rolls_back_alone_and_is_reported(workspace, people, monkeypatch):
    original = ingest.batch.node_versions_write

    def fail_for_b(writes):
        if any(w.properties.get("name") == "b" for w in writes):
            raise IntegrityError("injected for b")
        return original(writes)

    monkeypatch.setattr(ingest.batch, "node_versions_write", fail_for_b)
    applied = submissions_apply(tenant=workspace, plans=plans("a", "b", "c"))
    assert applied[0].error is None and applied[2].error is None
    assert isinstance(applied[1].error, IntegrityError)
    assert set(Source.objects.values_list("external_id", flat=True)) == {"a", "c"}
    assert Clarification.objects.count() == Job.objects.count() == 2
    assert not Node.objects.filter(source__external_id="b").exists()
    assert SourceGroupObjectPermission.objects.count() == 2


def test_every_document_failing_writes_nothing(workspace, people, monkeypatch):
    def always(writes):
        raise IntegrityError("injected")

    monkeypatch.setattr(ingest.batch, "node_versions_write", always)
    before = written_counts()
    applied = submissions_apply(tenant=workspace, plans=plans("a", "b"))
    assert all(isinstance(a.error, IntegrityError) for a in applied)
    assert written_counts() == before


def test_two_submissions_of_one_source_in_a_batch_apply_in_order(workspace, people):
    first = one_node("same", ambiguous=True)
    second = one_node("same", ambiguous=True)
    second["source"]["text"] += " Amended."
    second["spans"] = [{"start": 0, "end": len(second["source"]["text"])}]
    applied = submissions_apply(
        tenant=workspace, plans=[submission_plan(first), submission_plan(second)]
    )
    assert [a.error for a in applied] == [None, None]
    a, b = (x.result for x in applied)
    assert b["sourceVersionTx"] > a["sourceVersionTx"]  # type: ignore[index]
    assert a["nodes"][0]["id"] == b["nodes"][0]["id"]  # type: ignore[index]
    assert Source.objects.get().versions.count() == 2


def test_an_unknown_person_named_in_two_documents_of_a_batch_is_one_node(workspace):
    datas = [one_node("x"), one_node("y")]
    for data in datas:
        data["nodes"][1]["properties"] = {"email": "Stranger@Example.test"}
    applied = submissions_apply(tenant=workspace, plans=[submission_plan(d) for d in datas])
    x, y = (a.result["nodes"][1]["id"] for a in applied)  # type: ignore[index]
    assert x == y
    node = Node.objects.get(pk=x)
    assert (node.person_id, node.source_id, node.origin.external_id) == (None, None, "x")
    assert node.versions.count() == 1


def test_a_rerun_of_the_batch_deduplicates_and_writes_nothing(workspace, people):
    first = submissions_apply(tenant=workspace, plans=plans("a", "b"))
    before = written_counts()
    again = submissions_apply(tenant=workspace, plans=plans("a", "b"))
    assert written_counts() == before
    for one, two in zip(first, again, strict=True):
        assert two.result["clarifications"][0]["deduplicated"] is True  # type: ignore[index]
        assert two.result["nodes"] == one.result["nodes"]  # type: ignore[index]
