"""The answer outcome matrix of CONTRACT §3.2 on the pure decision (clarify.answering):
one parametrized case per row, no database (these tests carry no `django_db` mark, so any
query would fail them), each checked through `answer_reply` to the status and body the
contract pins.

Two rows are not the decision's: a responder who may not read the source (404) is refused
by the lock, and a deprovisioned or erased responder (403) by the person lookup, both
before `decide` runs; tests/clarify/test_answer_matrix.py covers them over HTTP. Their
pure halves (the trust check before anything is read) are the rows marked `trust`.
"""

import uuid
from dataclasses import replace
from typing import Any

import pytest

from clarify.answering import (
    NEW,
    AnswerCaller,
    AnswerInput,
    Locked,
    Outcome,
    OutcomeKind,
    Prior,
    decide,
    responder_claimed,
    steward_may_override,
)
from clarify.api.outcomes import answer_reply
from clarify.models import BindingStatus, QuorumState, State
from common.errors import DomainError
from graph.models import EvidenceClass
from tenancy.models import Rights, Tenant

from .conftest import C1, C2, CANDIDATES

ALICE, BOB, SAM, VERA = (uuid.UUID(int=n) for n in (1, 2, 3, 4))
RIGHTS = {ALICE: Rights.EDITOR, BOB: Rights.EDITOR, SAM: Rights.STEWARD, VERA: Rights.VIEWER}
BOUND_TX = 1_700_000_000_000_000
PENDING_BODY = {"outcome": "partial_confirmation", "state": "partially_confirmed"}


def clar(state: str = State.OPEN, **kw: Any) -> Locked:
    fields: dict[str, Any] = {
        "state": state,
        "quorum_state": QuorumState.NOT_REQUIRED,
        "allow_override": False,
        "minimum_role": Rights.EDITOR,
        "required_confirmations": 1,
        "candidates": CANDIDATES,
        **kw,
    }
    return Locked(**fields)


def quorum(state: str = State.OPEN, **kw: Any) -> Locked:
    """A critical clarification: two confirmations, steward override allowed."""
    kw.setdefault("quorum_state", QuorumState.PENDING)
    return clar(state, required_confirmations=2, allow_override=True, **kw)


def answered(**kw: Any) -> Locked:
    return clar(State.ANSWERED, fact_version_tx=BOUND_TX, bound=C1, **kw)


def prior(
    seq: int, who: uuid.UUID, interval: Any, status: str, body: dict[str, Any], code: int = 202
) -> Prior:
    return Prior(uuid.UUID(int=100 + seq), seq, who, RIGHTS[who], status, interval, body, code)


BOUND_BODY = {"outcome": "bound", "state": "answered", "factVersionTx": BOUND_TX}
ALICE_C1 = prior(1, ALICE, C1, BindingStatus.BINDING_CANDIDATE, {**PENDING_BODY})
ALICE_BOUND = prior(1, ALICE, C1, BindingStatus.BOUND, {**BOUND_BODY, "quorumSatisfied": True}, 200)
BOB_DISPUTE = prior(
    2,
    BOB,
    C2,
    BindingStatus.CONFLICTING,
    {"outcome": "conflict", "state": "answered", "postBinding": True},
)


def answer(index: int, *, override: bool = False, **kw: Any) -> AnswerInput:
    return AnswerInput(answer_index=index, steward_override=override, **kw)


def run(locked: Locked, responses: list[Prior], who: uuid.UUID, given: AnswerInput) -> Outcome:
    return decide(locked, responses, given, responder=who, rights=RIGHTS[who])


def applied(outcome: Outcome) -> Outcome:
    """As answer_apply returns a binding: with the bound version's transaction time."""
    if outcome.kind is OutcomeKind.BOUND:
        return replace(outcome, fact_version_tx=BOUND_TX)
    return outcome


# row → (clarification, responses, responder, answer, kind, status, body)
ROWS = {
    "bound, quorum not required": (
        clar(),
        [],
        ALICE,
        answer(1),
        OutcomeKind.BOUND,
        200,
        {**BOUND_BODY, "quorumSatisfied": True},
    ),
    "bound, quorum met": (
        quorum(State.PARTIALLY_CONFIRMED),
        [ALICE_C1],
        BOB,
        answer(1),
        OutcomeKind.BOUND,
        200,
        {**BOUND_BODY, "quorumSatisfied": True},
    ),
    "bound, steward override": (
        quorum(State.CONFLICTED, quorum_state=QuorumState.CONFLICTED),
        [ALICE_C1],
        SAM,
        answer(2, override=True),
        OutcomeKind.BOUND,
        200,
        {**BOUND_BODY, "quorumSatisfied": True},
    ),
    "partial confirmation": (
        quorum(),
        [],
        ALICE,
        answer(1),
        OutcomeKind.PARTIAL,
        202,
        {**PENDING_BODY, "quorumRemaining": 1},
    ),
    "attestation": (
        clar(),
        [],
        VERA,
        answer(1),
        OutcomeKind.ATTESTATION,
        202,
        {"outcome": "attestation", "state": "attested"},
    ),
    "attestation keeps a richer state": (
        quorum(State.PARTIALLY_CONFIRMED),
        [ALICE_C1],
        VERA,
        answer(2),
        OutcomeKind.ATTESTATION,
        202,
        {"outcome": "attestation", "state": "partially_confirmed"},
    ),
    "conflict": (
        quorum(State.PARTIALLY_CONFIRMED),
        [ALICE_C1],
        BOB,
        answer(2),
        OutcomeKind.CONFLICT,
        202,
        {"outcome": "conflict", "state": "conflicted", "postBinding": False},
    ),
    "post-binding disagreement": (
        answered(),
        [ALICE_BOUND],
        BOB,
        answer(2),
        OutcomeKind.POST_BINDING_CONFLICT,
        202,
        {"outcome": "conflict", "state": "answered", "postBinding": True},
    ),
    "binding upheld over a disagreement": (
        answered(),
        [ALICE_BOUND, BOB_DISPUTE],
        SAM,
        answer(1, override=True),
        OutcomeKind.BINDING_UPHELD,
        200,
        {**BOUND_BODY, "quorumSatisfied": True},
    ),
    "agreeing answer after binding, new responder": (
        answered(),
        [ALICE_BOUND],
        BOB,
        answer(1),
        OutcomeKind.ALREADY_ANSWERED,
        409,
        {"code": "CLARIFY_ALREADY_ANSWERED"},
    ),
    "same responder, same answer again": (
        quorum(State.PARTIALLY_CONFIRMED),
        [ALICE_C1],
        ALICE,
        answer(1, channel="slack"),
        OutcomeKind.REPLAY,
        202,
        PENDING_BODY,
    ),
    "steward override without steward rights": (
        quorum(),
        [],
        ALICE,
        answer(1, override=True),
        OutcomeKind.REFUSED,
        403,
        {"code": "STEWARD_OVERRIDE_FORBIDDEN"},
    ),
    "steward override not allowed by policy": (
        clar(),
        [],
        SAM,
        answer(1, override=True),
        OutcomeKind.REFUSED,
        403,
        {"code": "STEWARD_OVERRIDE_FORBIDDEN"},
    ),
    "unparseable answer: no such candidate": (
        clar(),
        [],
        ALICE,
        answer(7),
        OutcomeKind.REFUSED,
        422,
        {"code": "CLARIFY_UNPARSEABLE_ANSWER"},
    ),
    "unparseable answer: validFrom >= validTo": (
        clar(),
        [],
        ALICE,
        AnswerInput(answer_custom={"validFrom": "2026-02-01", "validTo": "2026-01-01"}),
        OutcomeKind.REFUSED,
        422,
        {"code": "CLARIFY_UNPARSEABLE_ANSWER"},
    ),
}


def reply_of(outcome: Outcome) -> tuple[int, dict[str, Any]]:
    try:
        reply = answer_reply(outcome)
    except DomainError as exc:
        return exc.status_code, {"code": exc.code}
    return reply.status, reply.body


@pytest.mark.parametrize(
    ("locked", "responses", "who", "given", "kind", "status", "body"),
    list(ROWS.values()),
    ids=list(ROWS),
)
def test_outcome_matrix_row(locked, responses, who, given, kind, status, body):
    outcome = run(locked, responses, who, given)
    assert outcome.kind is kind
    assert reply_of(applied(outcome)) == (status, body)


def test_a_replay_returns_the_stored_body_in_its_first_key_order():
    stored = {"quorumRemaining": 1, "state": "partially_confirmed", "outcome": "x"}
    again = prior(1, ALICE, C1, BindingStatus.BINDING_CANDIDATE, stored)
    outcome = run(quorum(State.PARTIALLY_CONFIRMED), [again], ALICE, answer(1))
    assert list(answer_reply(outcome).body) == ["outcome", "state", "quorumRemaining"]
    assert outcome.response_id == again.id


def test_a_binding_counts_every_active_response_in_order_with_its_evidence():
    outcome = run(quorum(State.PARTIALLY_CONFIRMED), [ALICE_C1], BOB, answer(1))
    assert outcome.counting == (ALICE_C1.id, NEW)
    assert outcome.evidence_class == EvidenceClass.QUORUM_CONFIRMATION
    assert (outcome.state, outcome.quorum) == (State.ANSWERED, QuorumState.SATISFIED)
    single = run(clar(), [], ALICE, answer(1))
    assert single.evidence_class == EvidenceClass.HUMAN_CLARIFICATION
    assert single.quorum is None  # not required: no quorum transition


def test_entering_a_conflict_names_the_intervals_and_staying_in_it_does_not():
    entered = run(quorum(State.PARTIALLY_CONFIRMED), [ALICE_C1], BOB, answer(2))
    assert entered.entered and entered.status == BindingStatus.CONFLICTING
    assert entered.intervals == tuple(sorted(map(str, {C1, C2})))
    conflicted = quorum(State.CONFLICTED, quorum_state=QuorumState.CONFLICTED)
    again = run(conflicted, [ALICE_C1], BOB, answer(1))
    assert (again.kind, again.entered, again.quorum) == (OutcomeKind.CONFLICT, False, None)
    assert again.status == BindingStatus.BINDING_CANDIDATE  # it agrees; the state stays


def test_a_stewards_earlier_override_is_not_replayed_over_later_disputes():
    upheld = prior(3, SAM, C1, BindingStatus.STEWARD_OVERRIDE, {**BOUND_BODY}, 200)
    dispute = prior(4, BOB, C2, BindingStatus.CONFLICTING, dict(BOB_DISPUTE.outcome))
    responses = [ALICE_BOUND, BOB_DISPUTE, upheld]
    assert run(answered(), responses, SAM, answer(1, override=True)).kind is OutcomeKind.REPLAY
    outcome = run(answered(), [*responses, dispute], SAM, answer(1, override=True))
    assert outcome.kind is OutcomeKind.BINDING_UPHELD
    assert outcome.resolves == (dispute.id,)


TENANT = Tenant(slug="acme", name="Acme")
PERSON_KEY = AnswerCaller(tenant=TENANT, clarify_service=False, person_id=ALICE, rights="editor")
SERVICE = AnswerCaller.clarify_service_of(TENANT)
TRUST = {
    "non-clarify caller asserts another responder": (
        PERSON_KEY,
        AnswerInput(answer_index=1, responder=str(BOB)),
        "RESPONDER_ASSERTION_FORBIDDEN",
    ),
    "non-clarify caller asserts rights": (
        PERSON_KEY,
        AnswerInput(answer_index=1, rights="steward"),
        "RESPONDER_ASSERTION_FORBIDDEN",
    ),
    "API key with no bound principal": (
        AnswerCaller(tenant=TENANT, clarify_service=False),
        AnswerInput(answer_index=1),
        "RESPONDER_NOT_AUTHORISED",
    ),
    "clarify token without a verified responder": (
        SERVICE,
        AnswerInput(answer_index=1, rights="editor"),
        "RESPONDER_NOT_AUTHORISED",
    ),
    "clarify token asserting rights that are no role": (
        SERVICE,
        AnswerInput(answer_index=1, responder=str(BOB), rights="owner"),
        "RESPONDER_NOT_AUTHORISED",
    ),
    "clarify token naming no person id": (
        SERVICE,
        AnswerInput(answer_index=1, responder="bob", rights="editor"),
        "RESPONDER_NOT_AUTHORISED",
    ),
}


@pytest.mark.parametrize(("caller", "given", "code"), list(TRUST.values()), ids=list(TRUST))
def test_trust_rows_refuse_before_anything_is_read(caller, given, code):
    with pytest.raises(DomainError) as refused:
        responder_claimed(caller, given)
    assert (refused.value.status_code, refused.value.code) == (403, code)


def test_trust_lets_each_caller_answer_only_as_itself():
    assert responder_claimed(PERSON_KEY, AnswerInput(responder=str(ALICE))) == (ALICE, "editor")
    asserted = AnswerInput(responder=str(BOB), rights="steward")
    assert responder_claimed(SERVICE, asserted) == (BOB, "steward")


# --- "may a steward override": one rule for the answer and the decide page ---------------

OVERRIDE_CASES = [
    (rights, state, allow, disputed)
    for rights in (Rights.STEWARD, Rights.EDITOR)
    for state in (State.OPEN, State.PARTIALLY_CONFIRMED, State.CONFLICTED, State.ANSWERED)
    for allow in (False, True)
    for disputed in (False, True)
    if not disputed or state == State.ANSWERED  # only a binding is disputed
]


@pytest.mark.parametrize(("rights", "state", "allow", "disputed"), OVERRIDE_CASES)
def test_the_answer_refuses_an_override_exactly_when_the_rule_says_no(
    rights, state, allow, disputed
):
    may = steward_may_override(rights=rights, state=state, allow_override=allow, disputed=disputed)
    assert may == (rights == Rights.STEWARD and (state == State.CONFLICTED or disputed or allow))
    locked = clar(state, allow_override=allow)
    if state == State.ANSWERED:
        locked = answered(allow_override=allow)
    responses = [ALICE_BOUND, BOB_DISPUTE] if disputed else []
    outcome = decide(
        locked,
        responses,
        AnswerInput(answer_index=0, steward_override=True),
        responder=SAM,
        rights=rights,
    )
    refused = outcome.kind is OutcomeKind.REFUSED
    assert refused == (not may)
    if refused:
        assert outcome.error is not None and outcome.error.code == "STEWARD_OVERRIDE_FORBIDDEN"
