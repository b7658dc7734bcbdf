"""Integrity guarantees of the clarify core: a submission's clarifications open in the
submission's own transaction, one binding per clarification (a unique constraint), and
the targeted fan-out rule of bind()."""

from typing import Any

import pytest
from django.db import IntegrityError, transaction

from clarify import services
from clarify.models import AuditEvent, Clarification, ClarificationBinding, ResponseRecord
from clarify.services import EMBED_JOB_KIND, bind, bind_fanout, clarification_lock, embed_text
from graph.models import (
    Edge,
    EvidenceClass,
    Node,
    NodeVersion,
    Source,
    SourceGroupObjectPermission,
    SourceUserObjectPermission,
    SourceVersion,
    Span,
)
from jobs.models import Job

from .conftest import C1, C2, bulk_submission, versions_of

SUBMISSION_TABLES = (
    Source,
    SourceVersion,
    Span,
    Node,
    NodeVersion,
    Edge,
    SourceUserObjectPermission,
    SourceGroupObjectPermission,
    Clarification,
    AuditEvent,
    ResponseRecord,
    Job,
)


def _rows() -> dict[str, list[dict[str, Any]]]:
    return {m.__name__: list(m.objects.order_by("pk").values()) for m in SUBMISSION_TABLES}


class Injected(RuntimeError):
    pass


def _fail_on_call(real: Any, n: int) -> Any:
    """`real`, except that its n-th call raises Injected."""
    calls = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == n:
            raise Injected(f"injected failure in call {n}")
        return real(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize(
    "where",
    [
        # the submission's clarifications are opened together (clarifications_open)
        "rank_candidates_many",  # ranking, before the clarification rows exist
        "audit_events_append",  # the `opened` events, after the clarification rows
        "jobs_enqueue",  # the routing jobs, after the rows and their events
    ],
)
def test_a_clarify_failure_rolls_back_the_whole_submission(
    ingest_client, monkeypatch, django_capture_on_commit_callbacks, where
):
    """(spec §5) Clarifications open in the submission's transaction: a failure while
    opening the second one undoes the source, its version, spans, nodes, edges, ACL grants,
    the first clarification, its event and its routing job."""
    *owner_path, name = where.split(".")
    owner: Any = services
    for part in owner_path:
        owner = getattr(owner, part)
    monkeypatch.setattr(owner, name, _fail_on_call(getattr(owner, name), 1))
    before = _rows()

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(Injected),
    ):
        ingest_client.post("/v1/submissions", bulk_submission(2), format="json")

    assert _rows() == before
    assert callbacks == []  # no job kick scheduled
    # The same submission goes through once the failure is gone.
    monkeypatch.undo()
    resp = ingest_client.post("/v1/submissions", bulk_submission(2), format="json")
    assert resp.status_code == 201, resp.content
    assert Clarification.objects.count() == 2
    assert [c["deduplicated"] for c in resp.json()["clarifications"]] == [False, False]


def test_a_second_binding_is_impossible(submit, clients, answer):
    """The unique constraint on the clarification, not only the row lock: inserting a
    second binding fails, and so does a second bind() (which writes nothing then)."""
    s = submit()
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    guess, bound = versions_of(s.node_id)
    assert ClarificationBinding.objects.filter(clarification_id=s.clar_id).count() == 1

    with pytest.raises(IntegrityError), transaction.atomic():
        ClarificationBinding.objects.create(
            clarification_id=s.clar_id,
            node_version=guess,  # a version without a binding: only the clarification clashes
            evidence_class=EvidenceClass.HUMAN_CLARIFICATION,
            bound_tx=guess.tx_from,
        )
    assert ClarificationBinding.objects.filter(clarification_id=s.clar_id).count() == 1

    clar = Clarification.objects.get(pk=s.clar_id)
    with pytest.raises(IntegrityError), transaction.atomic():
        clar, current = clarification_lock(clar.tenant, clar.pk, None)
        bind(clar, current=current, interval=C2, evidence_class=EvidenceClass.STEWARD_OVERRIDE)
    assert [v.pk for v in versions_of(s.node_id)] == [guess.pk, bound.pk]
    current = NodeVersion.objects.get(node_id=s.node_id, tx_to__isnull=True)
    assert (current.pk, current.valid_from, current.valid_to) == (bound.pk, *C1)
    binding = ClarificationBinding.objects.get(clarification_id=s.clar_id)
    assert binding.node_version_id == bound.pk


# ---------------------------------------------------------------------------------------
# Targeted fan-out


def _version(**fields: Any) -> NodeVersion:
    base = {
        "labels": ["CONTRACT_TERM"],
        "properties": {"name": "MSA term"},
        "valid_from": C1[0],
        "valid_to": None,
        "confidence": 0.45,
        "pending": True,
        "provenance": {"sourceVersionTx": 1},
        "evidence_class": EvidenceClass.SYSTEM_EXTRACTION,
    }
    return NodeVersion(**{**base, **fields})


@pytest.mark.parametrize(
    "change",
    [
        {"valid_from": C2[0], "valid_to": C2[1]},
        {"confidence": 0.92, "pending": False},
        {"provenance": {"sourceVersionTx": 1, "clarification": "x"}},
        {"evidence_class": EvidenceClass.QUORUM_CONFIRMATION},
        {"labels": ["CONTRACT_TERM"], "properties": {"name": "MSA term"}},
    ],
    ids=["validity", "confidence", "provenance", "evidence-class", "same-content"],
)
def test_fanout_without_a_content_change_never_reembeds(change):
    assert bind_fanout(before=_version(), after=_version(**change)) == {
        "temporal": True,
        "evidence": True,
        "reembed": False,
    }


@pytest.mark.parametrize(
    "change",
    [
        {"properties": {"name": "MSA term (amended)"}},
        {"properties": {"name": "MSA term", "owner": "legal"}},
        {"labels": ["CONTRACT_TERM", "AMENDED"]},
    ],
    ids=["property-value", "new-property", "labels"],
)
def test_fanout_with_a_content_change_reembeds(change):
    assert bind_fanout(before=_version(), after=_version(**change)) == {
        "temporal": True,
        "evidence": True,
        "reembed": True,
    }


def test_fanout_compares_the_capped_embed_text():
    """Differences past the cap are not part of the embed text, so they do not re-embed."""
    long = "x" * services.EMBED_TEXT_MAX_BYTES
    before = _version(properties={"name": "MSA term", "zz": long + "a"})
    after = _version(properties={"name": "MSA term", "zz": long + "b"})
    assert embed_text(before.labels, before.properties) == embed_text(
        after.labels, after.properties
    )
    assert bind_fanout(before=before, after=after)["reembed"] is False


def test_bind_enqueues_an_embed_job_when_the_fanout_says_so(submit, clients, answer, monkeypatch):
    """bind() follows bind_fanout: a correction never changes the content, so this branch
    is reached only through the rule (stubbed here); the job and the audit record it."""
    monkeypatch.setattr(
        services,
        "bind_fanout",
        lambda *, before, after: {"temporal": True, "evidence": True, "reembed": True},
    )
    s = submit()

    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200

    new = versions_of(s.node_id)[-1]
    [job] = Job.objects.filter(kind=EMBED_JOB_KIND)
    assert job.payload == {"v": 1, "nodeId": s.node_id, "versionTx": new.tx_from}
    assert (job.subject, job.tenant_id) == (s.node_id, s.clar.tenant_id)
    [bound] = s.clar.events.filter(type="bound")
    assert bound.detail["fanout"] == {"temporal": True, "evidence": True, "reembed": True}


def test_bind_hands_the_real_versions_to_the_fanout_rule(submit, clients, answer, monkeypatch):
    seen: list[tuple[NodeVersion, NodeVersion]] = []
    real = services.bind_fanout

    def spy(*, before: NodeVersion, after: NodeVersion) -> dict[str, bool]:
        seen.append((before, after))
        return real(before=before, after=after)

    monkeypatch.setattr(services, "bind_fanout", spy)
    s = submit()
    assert answer(clients.alice, s.clar_id, answerIndex=2).status_code == 200
    guess, new = versions_of(s.node_id)
    [(before, after)] = seen
    assert (before.pk, after.pk) == (guess.pk, new.pk)
    assert (after.valid_from, after.valid_to) == C2
    assert not Job.objects.filter(kind=EMBED_JOB_KIND).exists()
