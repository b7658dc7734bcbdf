"""32 concurrent answers to one clarification (PostgreSQL only).

Every race must leave exactly what SOME serial order of the same answers would: the
persisted response records, in `seq` order, are replayed through a pure model of the
outcome matrix and must match record by record; every answer that left no record must be
a 409 that agrees with the binding; at most one fact version is ever bound.
"""

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import OperationalError, connection

from clarify.answering import AnswerCaller, AnswerInput
from clarify.api.outcomes import answer_reply
from clarify.models import Clarification, ClarificationBinding, ResponseRecord
from clarify.services import clarification_answer
from common.errors import DomainError
from graph.models import NodeVersion

from .conftest import CANDIDATES

THREADS = 32
ROUNDS = 20

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row-lock races need PostgreSQL"),
]


def _interval(index: int) -> tuple[Any, Any]:
    return CANDIDATES[index]["validFrom"], CANDIDATES[index]["validTo"]


SCENARIOS = {
    # name: (severity hint, answer index of thread i)
    "agree-normal": (None, lambda i: 1),
    "agree-critical": ("critical", lambda i: 1),
    "mixed-normal": (None, lambda i: 1 + i % 2),
    "mixed-critical": ("critical", lambda i: 1 + i % 2),
    "dissent-critical": ("critical", lambda i: 2 if i in (5, 21) else 1),
}


def _connect(attempts: int = 60) -> None:
    """Open this thread's connection before the barrier (so the answers really start
    together), waiting out a momentarily full server shared with other test runs."""
    for attempt in range(attempts):
        try:
            connection.ensure_connection()
            return
        except OperationalError:
            if attempt == attempts - 1:
                raise
            connection.close()
            time.sleep(0.5)


def _race(tenant, plan):
    """Run `plan` [(clarification id, person, index)] at once: each person answers that
    clarification with that candidate, as the clarify service asserting editor rights. One
    outcome per thread, in plan order."""
    barrier = threading.Barrier(len(plan))
    outcomes: list[Any] = [None] * len(plan)

    def work(slot: int, clar_id: Any, person: Any, index: int) -> None:
        try:
            _connect()
            barrier.wait(timeout=60)
            result = clarification_answer(
                caller=AnswerCaller(tenant=tenant, clarify_service=True),
                clarification_id=clar_id,
                answer=AnswerInput(answer_index=index, responder=person.pk, rights="editor"),
            )
            reply = answer_reply(result)
            outcomes[slot] = ("answered", reply.status, reply.body)
        except DomainError as exc:
            outcomes[slot] = ("refused", exc.status_code, exc.code)
        except BaseException:
            outcomes[slot] = ("error", traceback.format_exc(), None)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=work, args=(slot, *entry)) for slot, entry in enumerate(plan)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racer hung"
    return outcomes


@dataclass
class Serial:
    """A pure model of the outcome matrix for binding-capable (editor) answers."""

    required: int
    active: dict[Any, Any] = field(default_factory=dict)
    statuses: list[str] = field(default_factory=list)
    bodies: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    conflicted: bool = False
    bound: Any = None

    def answer(self, responder: Any, interval: Any) -> None:
        slot = len(self.statuses)
        if self.bound is not None:
            assert interval != self.bound, "an agreeing answer after binding was recorded"
            self.statuses.append("conflicting")
            self.bodies.append(
                (202, {"outcome": "conflict", "state": "answered", "postBinding": True})
            )
            return
        self.active[responder] = (interval, slot)
        intervals = {i for i, _ in self.active.values()}
        if self.conflicted or len(intervals) > 1:
            self.statuses.append("conflicting" if len(intervals) > 1 else "binding_candidate")
            self.bodies.append(
                (202, {"outcome": "conflict", "state": "conflicted", "postBinding": False})
            )
            self.conflicted = True
            return
        if len(self.active) < self.required:
            self.statuses.append("binding_candidate")
            self.bodies.append(
                (
                    202,
                    {
                        "outcome": "partial_confirmation",
                        "state": "partially_confirmed",
                        "quorumRemaining": self.required - len(self.active),
                    },
                )
            )
            return
        self.bound = interval
        self.statuses.append("bound")
        for _, counted in self.active.values():
            self.statuses[counted] = "bound"
        self.bodies.append((200, {"outcome": "bound", "state": "answered"}))


@pytest.mark.parametrize("round_no", range(ROUNDS))
def test_concurrent_answers_match_a_serial_order(submit, many_editors, round_no):
    """Each round races every scenario once, each on a fresh clarification (one database
    flush per round keeps the 20 rounds affordable)."""
    racers = many_editors(THREADS)
    for scenario in SCENARIOS:
        s = submit(severity_hint=SCENARIOS[scenario][0], external_id=f"race/{scenario}/{round_no}")
        try:
            _check_race(scenario, s.clar, racers)
        except AssertionError as exc:
            raise AssertionError(f"race {scenario!r}, round {round_no}: {exc}") from exc


def _check_race(scenario, clar, racers):
    pick = SCENARIOS[scenario][1]
    plan = [(person, pick(i)) for i, person in enumerate(racers)]
    interval_of = {person.pk: _interval(index) for person, index in plan}

    outcomes = _race(clar.tenant, [(clar.pk, person, index) for person, index in plan])

    errors = [o[1] for o in outcomes if o[0] == "error"]
    assert not errors, errors[0]
    refused = [o for o in outcomes if o[0] == "refused"]
    assert all(o[1:] == (409, "CLARIFY_ALREADY_ANSWERED") for o in refused), refused

    # At most one binding, and the target has exactly 1 + bound versions.
    clar.refresh_from_db()
    bindings = list(ClarificationBinding.objects.filter(clarification=clar))
    assert len(bindings) <= 1
    versions = list(NodeVersion.objects.filter(node_id=clar.target_id).order_by("seq"))
    assert len(versions) == 1 + len(bindings)
    assert sum(1 for v in versions if v.tx_to is None) == 1

    # Replay the persisted records in seq order through the serial model.
    records = list(ResponseRecord.objects.filter(clarification=clar).order_by("seq"))
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert len({r.responder for r in records}) == len(records)  # one answer each
    model = Serial(required=clar.required_confirmations)
    for r in records:
        assert r.interval == interval_of[r.responder]
        model.answer(r.responder, r.interval)
    assert [r.binding_status for r in records] == model.statuses
    by_responder = dict(zip((person.pk for person, _ in plan), outcomes, strict=True))
    for r, (status, body) in zip(records, model.bodies, strict=True):
        got = by_responder[r.responder]
        assert got[0] == "answered"
        assert (got[1], r.outcome_status) == (status, status)
        assert r.outcome == got[2]
        assert {
            k: v for k, v in got[2].items() if k not in ("factVersionTx", "quorumSatisfied")
        } == body

    # Answers that left no record: 409s agreeing with the binding (they came after it).
    recorded = {r.responder for r in records}
    silent = [p for p, _ in plan if p.pk not in recorded]
    assert len(silent) == len(refused)
    if silent:
        assert model.bound is not None
        assert all(interval_of[p.pk] == model.bound for p in silent)

    if model.bound is not None:
        [binding] = bindings
        bound_version = versions[-1]
        assert binding.node_version_id == bound_version.pk
        assert (bound_version.valid_from, bound_version.valid_to) == model.bound
        assert bound_version.provenance["clarification"] == str(clar.pk)
        assert (clar.state, clar.fact_version_tx) == ("answered", bound_version.tx_from)
        assert clar.quorum_state == ("satisfied" if model.required > 1 else "not_required")
        [winner] = [o for o in outcomes if o[0] == "answered" and o[1] == 200]
        assert winner[2] == {
            "outcome": "bound",
            "state": "answered",
            "factVersionTx": bound_version.tx_from,
            "quorumSatisfied": True,
        }
        assert binding.evidence_class == (
            "quorum_confirmation" if model.required > 1 else "human_clarification"
        )
    else:
        assert model.conflicted
        assert not bindings
        assert (clar.state, clar.quorum_state, clar.fact_version_tx) == (
            "conflicted",
            "conflicted",
            None,
        )

    # The all-agreeing races have only one possible serial result.
    if scenario == "agree-normal":
        assert sorted(o[1] for o in outcomes) == [200] + [409] * (THREADS - 1)
        assert len(records) == 1
    if scenario == "agree-critical":
        assert sorted(o[1] for o in outcomes) == [200, 202] + [409] * (THREADS - 2)
        assert [r.binding_status for r in records] == ["bound", "bound"]
    if scenario == "mixed-normal":
        assert len(records) == 1 + THREADS // 2  # the binder plus every dissenter
        assert sorted(o[1] for o in outcomes).count(409) == THREADS // 2 - 1
    assert Clarification.objects.filter(pk=clar.pk, state=clar.state).exists()
