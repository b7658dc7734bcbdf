"""The answer reads the target's current version in the statement that locks the
clarification and the target. If that statement waited for the target's lock, the version
it read predates the write the lock holder committed: `node_version_write` then refuses
to close it (`CurrentVersionMoved`, nothing written) and bind re-reads the current
version under the lock and derives the correction from that one.

The race (two clarifications of one fact bound at once) needs PostgreSQL's row locks; the
moved-version path itself is also driven directly, on any database."""

import itertools
import threading
from typing import Any

import pytest
from django.db import connection, transaction

from clarify import services
from clarify.integrity import check_versions
from clarify.models import Clarification, ClarificationBinding, State
from clarify.services import bind
from graph.models import EvidenceClass, NodeVersion
from graph.services import CurrentVersionMoved, node_update, node_version_write

from .conftest import C1, C2, build_submission, versions_of
from .test_races import ROUNDS, _race


def _fact_with_two_clarifications(ingest_client, external_id: str) -> list[Clarification]:
    """One fact node with two open clarifications: the same source submitted twice, each
    time with an ambiguity of another kind on the fact."""
    ids = []
    for kind in ("relative_date", "conflicting_dates"):
        data = build_submission(external_id=external_id, kind=kind)
        resp = ingest_client.post("/v1/submissions", data, format="json")
        assert resp.status_code == 201, resp.content
        ids += [c["id"] for c in resp.json()["clarifications"]]
    clars = list(Clarification.objects.filter(pk__in=ids, state=State.OPEN).order_by("kind"))
    assert len(clars) == 2 and clars[0].target_id == clars[1].target_id
    return clars


@pytest.mark.django_db
def test_a_moved_current_version_is_refused_and_nothing_is_written(submit):
    s = submit()
    stale = NodeVersion.objects.get(node_id=s.node_id, tx_to__isnull=True)
    node_update(node=stale.node, properties={"name": "MSA term (renamed)"})
    before = list(NodeVersion.objects.filter(node_id=s.node_id).order_by("seq").values())
    with transaction.atomic():
        with pytest.raises(CurrentVersionMoved):
            node_version_write(
                node=stale.node,
                labels=stale.labels,
                properties=stale.properties,
                valid_from=C1[0],
                valid_to=C1[1],
                confidence=0.9,
                provenance={},
                current=stale,
            )
        # The enclosing transaction goes on (nothing marked it for rollback).
        assert list(NodeVersion.objects.filter(node_id=s.node_id).order_by("seq").values()) == (
            before
        )
    assert list(NodeVersion.objects.filter(node_id=s.node_id).order_by("seq").values()) == before


@pytest.mark.django_db
def test_bind_handed_a_moved_version_corrects_the_current_one(submit):
    s = submit()
    clar = Clarification.objects.select_related("target").get(pk=s.clar_id)
    stale = NodeVersion.objects.get(node_id=s.node_id, tx_to__isnull=True)
    renamed = node_update(node=clar.target, properties={"name": "MSA term (renamed)"})
    with transaction.atomic():
        version = bind(
            clar,
            interval=C2,
            evidence_class=EvidenceClass.HUMAN_CLARIFICATION,
            current=stale,
        )
    v1, v2, v3 = versions_of(s.node_id)
    assert (v2.pk, v3.pk) == (renamed.pk, version.pk)
    assert v1.tx_to == v2.tx_from and v2.tx_to == v3.tx_from and v3.tx_to is None
    # Derived from the current version (the renamed one), not the stale one.
    assert v3.properties == {"name": "MSA term (renamed)"}
    assert (v3.valid_from, v3.valid_to, v3.seq) == (C2[0], C2[1], 3)
    assert v3.provenance["clarification"] == str(clar.pk)
    clar.refresh_from_db()
    assert (clar.state, clar.fact_version_tx) == (State.ANSWERED, v3.tx_from)
    assert ClarificationBinding.objects.get(clarification=clar).node_version_id == v3.pk
    assert list(check_versions()) == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row-lock races need PostgreSQL")
def test_two_clarifications_of_one_fact_bound_at_once_chain_its_versions(
    ingest_client, people, monkeypatch
):
    """Both answers bind; the second-locked one finds the version it read closed by the
    first and corrects the first's version instead. The first holds its locks a moment
    (a slow routing-job update), so the second surely waits for the target's lock."""
    moved: list[int] = []
    rereads = services.node_current_version
    finish = services.clarification_jobs_finish

    def counting_reread(node_id: Any) -> Any:
        moved.append(1)
        return rereads(node_id)

    def slow_finish(clar: Any) -> int:
        threading.Event().wait(0.05)
        return finish(clar)

    monkeypatch.setattr(services, "node_current_version", counting_reread)
    monkeypatch.setattr(services, "clarification_jobs_finish", slow_finish)
    for round_no in range(ROUNDS):
        clars = _fact_with_two_clarifications(ingest_client, f"one-fact/{round_no}")
        ingested = len(versions_of(clars[0].target_id))  # each submission wrote one
        plan = [(clars[0], 1, people["alice"]), (clars[1], 2, people["bob"])]
        outcomes = _race(clars[0].tenant, [(c.pk, person, i) for c, i, person in plan])
        assert [o[:2] for o in outcomes] == [("answered", 200)] * 2, f"round {round_no}: {outcomes}"
        assert [o[2]["outcome"] for o in outcomes] == ["bound", "bound"]

        versions = versions_of(clars[0].target_id)
        assert [v.seq for v in versions] == list(range(1, ingested + 3))
        assert all(a.tx_to == b.tx_from for a, b in itertools.pairwise(versions))
        assert versions[-1].tx_to is None
        bound = {
            b.clarification_id: b.node_version
            for b in ClarificationBinding.objects.select_related("node_version").filter(
                clarification__in=clars
            )
        }
        assert sorted(v.seq for v in bound.values()) == [ingested + 1, ingested + 2]
        for clar, index, _ in plan:
            version = bound[clar.pk]
            clar.refresh_from_db()
            assert clar.fact_version_tx == version.tx_from
            assert version.provenance["clarification"] == str(clar.pk)
            assert (version.valid_from, version.valid_to) == (C1 if index == 1 else C2)
            assert version.properties == {"name": "MSA term"}
    assert moved, "no answer ever read a version another binding had replaced"
    assert list(check_versions()) == []
