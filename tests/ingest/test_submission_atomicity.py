"""A valid submission is applied in one transaction (CONTRACT §3.1, architecture "Data
flow"): a failure at any step of `submission_apply` leaves no source, version, span, grant,
node, node version, edge, clarification, audit event or job behind."""

import pytest

import clarify.services
import ingest.batch
from graph.models import Edge, Source

from ..factories import submission_payload, written_counts

pytestmark = pytest.mark.django_db

# What the example submission writes when nothing fails (the control below checks it).
WRITES = [
    "Source",
    "SourceVersion",
    "Span",
    "SourceGroupObjectPermission",
    "Node",
    "NodeVersion",
    "Edge",
    "Clarification",
    "AuditEvent",
    "Job",
]


class Fault(Exception):
    """The injected failure."""


def fail_on_call(monkeypatch, target: object, name: str, *, call: int = 1) -> dict[str, bool]:
    """Make `target.name` raise `Fault` on its `call`-th call (earlier calls go through).
    Returns `{"fired": …}`, to prove the fault fired."""
    original = getattr(target, name)
    state = {"calls": 0, "fired": False}

    def wrapper(*args, **kwargs):
        state["calls"] += 1
        if state["calls"] == call:
            state["fired"] = True
            raise Fault(f"{name} failed")
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, wrapper)
    return state  # type: ignore[return-value]


FAULTS = {
    # the fact node's version (one batch of versions), after the source, its version,
    # spans, grants and nodes
    "fact node version": lambda mp: fail_on_fact_versions(mp),
    # resolving the PERSON node, after the source, its version, spans and grants
    "person node resolution": lambda mp: fail_on_call(mp, ingest.batch, "_known_people"),
    "edge creation": lambda mp: fail_on_call(mp, Edge.objects, "bulk_create"),
    "clarification opening": lambda mp: fail_on_call(mp, ingest.batch, "clarifications_open"),
    # inside clarifications_open: the clarification and its audit event exist by then
    "routing job enqueue": lambda mp: fail_on_call(mp, clarify.services, "jobs_enqueue"),
}


def fail_on_fact_versions(monkeypatch) -> dict[str, bool]:
    """Make the batch's node_versions_write raise `Fault` on the call writing a fact."""
    original = ingest.batch.node_versions_write
    state = {"fired": False}

    def wrapper(writes):
        if any("PERSON" not in w.labels for w in writes):
            state["fired"] = True
            raise Fault("node_versions_write failed")
        return original(writes)

    monkeypatch.setattr(ingest.batch, "node_versions_write", wrapper)
    return state


def test_control_the_submission_writes_every_kind_of_row(ingest_client):
    before = written_counts()
    response = ingest_client.post("/v1/submissions", submission_payload(), format="json")
    assert response.status_code == 201
    after = written_counts()
    assert [name for name in WRITES if after[name] <= before[name]] == []


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failure_part_way_leaves_nothing_written(ingest_client, monkeypatch, fault):
    state = FAULTS[fault](monkeypatch)
    ingest_client.raise_request_exception = False
    before = written_counts()
    response = ingest_client.post("/v1/submissions", submission_payload(), format="json")
    assert state["fired"], "the fault never fired"
    assert response.status_code == 500
    assert written_counts() == before


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failed_resubmission_leaves_the_stored_state_unchanged(ingest_client, monkeypatch, fault):
    """The same on a changed document whose source already exists: the new source version,
    the fact's new version and its new clarification all vanish together."""
    assert (
        ingest_client.post("/v1/submissions", submission_payload(), format="json").status_code
        == 201
    )
    changed = submission_payload(source_text=submission_payload()["source"]["text"] + " Amended.")
    changed["source"]["acl"] = ["group:finance"]
    state = FAULTS[fault](monkeypatch)
    ingest_client.raise_request_exception = False
    before = written_counts()
    response = ingest_client.post("/v1/submissions", changed, format="json")
    assert state["fired"], "the fault never fired"
    assert response.status_code == 500
    assert written_counts() == before
    assert Source.objects.get().acl == ["group:legal"]
