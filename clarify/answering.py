"""The answer as a decision (CONTRACT §3.2, spec §6): pure functions, no database.

`decide` reads the locked clarification (`Locked`), its recorded responses (`Prior`) and
the answer, and returns a typed `Outcome`. `clarify.services.answer_apply` applies an
outcome's effects in the answer's transaction; `clarify.api.outcomes.answer_reply` maps it
to an HTTP status and body. Trust (who answers, with which rights) is settled before the
clarification is read: `responder_claimed` is its pure half.
"""

import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from common.errors import DomainError
from common.times import TimeParseError, parse_us
from graph.models import EvidenceClass
from tenancy.models import Rights

from .errors import (
    AlreadyAnswered,
    ResponderAssertionForbidden,
    ResponderNotAuthorised,
    StewardOverrideForbidden,
    UnparseableAnswer,
)
from .models import BindingStatus, QuorumState, State

if TYPE_CHECKING:
    from tenancy.models import Person, Tenant

    from .models import Clarification, ResponseRecord

Interval = tuple[int | None, int | None]
NEW = None  # the answer's own response record in `Outcome.counting` (no id before apply)
# States an attestation moves to `attested` (richer states are kept).
ATTESTABLE = (State.OPEN, State.EXPIRED, State.DEAD_LETTERED)
# The key order a stored outcome body was first returned in (jsonb keeps none; a replay
# must be byte-identical).
OUTCOME_KEY_ORDER = (
    "outcome",
    "state",
    "factVersionTx",
    "quorumSatisfied",
    "quorumRemaining",
    "postBinding",
)


@dataclass(frozen=True)
class AnswerCaller:
    """Who answers. A `clarify` service asserts a verified responder and their rights; any
    other caller answers only as the person bound to its credential."""

    tenant: "Tenant"
    clarify_service: bool
    person_id: uuid.UUID | None = None
    rights: str | None = None
    # The credential's person as already loaded (by the key authentication): saves
    # reading it again when it is the responder.
    person: "Person | None" = None

    @classmethod
    def of_person(cls, person: "Person", *, rights: str | None = None) -> "AnswerCaller":
        """A person answering for themself (CLI, admin), with their role or `rights`."""
        return cls(
            tenant=person.tenant,
            clarify_service=False,
            person_id=person.pk,
            rights=rights or person.role,
            person=person,
        )

    @classmethod
    def clarify_service_of(cls, tenant: "Tenant") -> "AnswerCaller":
        """The clarify service (chat hooks, inbox): asserts responder and rights."""
        return cls(tenant=tenant, clarify_service=True)


@dataclass(frozen=True)
class AnswerInput:
    """The answer as sent (unvalidated: `decide` normalises it)."""

    answer_index: Any = None
    answer_custom: Any = None
    steward_override: bool | None = False
    channel: str | None = None
    message_ref: str | None = None
    responder: Any = None
    rights: Any = None
    unknown: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Locked:
    """The locked clarification, as the decision reads it."""

    state: str
    quorum_state: str
    allow_override: bool
    minimum_role: str
    required_confirmations: int
    candidates: list[dict[str, Any]]
    fact_version_tx: int | None = None
    bound: Interval | None = None  # the bound version's interval, once answered

    @classmethod
    def of(cls, clar: "Clarification", bound: Interval | None = None) -> "Locked":
        return cls(
            state=clar.state,
            quorum_state=clar.quorum_state,
            allow_override=clar.allows_steward_override,
            minimum_role=clar.minimum_role,
            required_confirmations=clar.required_confirmations,
            candidates=clar.candidates,
            fact_version_tx=clar.fact_version_tx,
            bound=bound,
        )


@dataclass(frozen=True)
class Prior:
    """A recorded response, as the decision reads it."""

    id: uuid.UUID
    seq: int
    responder: uuid.UUID
    rights: str
    binding_status: str
    interval: Interval
    outcome: dict[str, Any]
    outcome_status: int

    @classmethod
    def of(cls, r: "ResponseRecord") -> "Prior":
        return cls(
            r.pk,
            r.seq,
            r.responder,
            r.rights_at_answer_time,
            r.binding_status,
            r.interval,
            r.outcome,
            r.outcome_status,
        )

    @property
    def override(self) -> bool:
        return self.binding_status == BindingStatus.STEWARD_OVERRIDE

    @property
    def post_binding_conflict(self) -> bool:
        return (
            self.binding_status == BindingStatus.CONFLICTING
            and self.outcome.get("postBinding") is True
        )


class OutcomeKind(enum.Enum):
    BOUND = "bound"
    PARTIAL = "partial_confirmation"
    ATTESTATION = "attestation"
    CONFLICT = "conflict"
    POST_BINDING_CONFLICT = "post_binding_conflict"
    BINDING_UPHELD = "binding_upheld"
    ALREADY_ANSWERED = "already_answered"
    REPLAY = "replay"
    REFUSED = "refused"


# Outcomes that record a response (the others write nothing).
RECORDING = {
    OutcomeKind.BOUND,
    OutcomeKind.PARTIAL,
    OutcomeKind.ATTESTATION,
    OutcomeKind.CONFLICT,
    OutcomeKind.POST_BINDING_CONFLICT,
    OutcomeKind.BINDING_UPHELD,
}


@dataclass(frozen=True)
class Outcome:
    """What an answer does. `status` is the new response record's binding status, `state`
    and `quorum` the clarification's afterwards (None: unchanged). `counting`: the responses
    a binding counts, in order (`NEW` for the answer's own). `fact_version_tx` and
    `response_id` are filled in when the outcome is applied."""

    kind: OutcomeKind
    interval: Interval | None = None
    status: str | None = None
    state: str | None = None
    quorum: str | None = None
    evidence_class: str | None = None
    counting: tuple[uuid.UUID | None, ...] = ()
    remaining: int = 0
    entered: bool = False  # a conflict the clarification enters now
    intervals: tuple[str, ...] = ()  # the disagreeing intervals, when entered
    resolves: tuple[uuid.UUID, ...] = ()  # post-binding conflicts an upheld binding resolves
    prior: Prior | None = None  # REPLAY: the response replayed
    error: DomainError | None = None  # REFUSED, ALREADY_ANSWERED
    fact_version_tx: int | None = None
    response_id: uuid.UUID | None = None

    @property
    def settled(self) -> bool:
        """Bound (200) rather than accepted and pending (202)."""
        return self.kind in (OutcomeKind.BOUND, OutcomeKind.BINDING_UPHELD)

    @property
    def replayed(self) -> bool:
        return self.kind is OutcomeKind.REPLAY

    @property
    def body(self) -> dict[str, Any]:
        """The contract body (CONTRACT §3.2), as returned and stored for a replay."""
        k = self.kind
        if k is OutcomeKind.REPLAY:
            assert self.prior is not None
            rank = {key: i for i, key in enumerate(OUTCOME_KEY_ORDER)}
            ordered = sorted(self.prior.outcome.items(), key=lambda kv: rank.get(kv[0], len(rank)))
            return dict(ordered)
        if self.settled:
            return {
                "outcome": "bound",
                "state": State.ANSWERED.value,
                "factVersionTx": self.fact_version_tx,
                "quorumSatisfied": True,
            }
        state = str(self.state)
        if k is OutcomeKind.PARTIAL:
            return {"outcome": k.value, "state": state, "quorumRemaining": self.remaining}
        if k is OutcomeKind.ATTESTATION:
            return {"outcome": k.value, "state": state}
        if k in (OutcomeKind.CONFLICT, OutcomeKind.POST_BINDING_CONFLICT):
            post = k is OutcomeKind.POST_BINDING_CONFLICT
            return {"outcome": "conflict", "state": state, "postBinding": post}
        assert self.error is not None
        return self.error.body()


def responder_claimed(caller: AnswerCaller, answer: AnswerInput) -> tuple[uuid.UUID, str]:
    """Trust, before anything is read about the clarification (spec §6): the responder and
    rights the caller may answer as, or the refusal (a forged assertion leaves no trace)."""
    if not caller.clarify_service:
        if answer.rights is not None:
            raise ResponderAssertionForbidden("Only the clarify service may assert rights.")
        if answer.responder is not None and str(answer.responder) != str(caller.person_id):
            raise ResponderAssertionForbidden()
        if caller.person_id is None or caller.rights is None:
            raise ResponderNotAuthorised()
        return caller.person_id, caller.rights
    if answer.responder is None or answer.rights not in Rights.values:
        raise ResponderNotAuthorised(
            "The clarify service must send the verified responder and their rights."
        )
    try:
        return uuid.UUID(str(answer.responder)), answer.rights
    except ValueError as exc:
        raise ResponderNotAuthorised("responder is not a person id.") from exc


def normalise_answer(candidates: list[dict[str, Any]], answer: AnswerInput) -> Interval:
    """The answer as a structured interval, or `UnparseableAnswer` (422, nothing written)."""
    if answer.unknown:
        raise UnparseableAnswer(f"Unknown field(s): {', '.join(answer.unknown[:5])}.")
    if answer.steward_override is None:
        raise UnparseableAnswer("stewardOverride must be true or false.")
    if (answer.answer_index is None) == (answer.answer_custom is None):
        raise UnparseableAnswer("Send exactly one of answerIndex or answerCustom.")
    if answer.answer_index is not None:
        index = answer.answer_index
        if isinstance(index, bool) or not isinstance(index, int):
            raise UnparseableAnswer("answerIndex must be an integer.")
        if not 0 <= index < len(candidates):
            raise UnparseableAnswer(f"answerIndex {index} is not a candidate.")
        return candidates[index].get("validFrom"), candidates[index].get("validTo")
    custom = answer.answer_custom
    if not isinstance(custom, dict) or set(custom) - {"validFrom", "validTo", "sourceText"}:
        raise UnparseableAnswer("answerCustom is {validFrom, validTo, sourceText}.")
    source_text = custom.get("sourceText")
    if source_text is not None and (not isinstance(source_text, str) or len(source_text) > 2000):
        raise UnparseableAnswer("sourceText must be a string of at most 2000 characters.")
    try:
        vf = parse_us(custom["validFrom"]) if custom.get("validFrom") is not None else None
        vt = parse_us(custom["validTo"]) if custom.get("validTo") is not None else None
    except TimeParseError as exc:
        raise UnparseableAnswer(f"answerCustom: {exc}") from exc
    if vf is None and vt is None:
        raise UnparseableAnswer("answerCustom needs validFrom or validTo.")
    if vf is not None and vt is not None and vf >= vt:
        raise UnparseableAnswer("validFrom must be before validTo.")
    return vf, vt


def unresolved_conflicts(responses: Sequence[Prior]) -> list[Prior]:
    """The post-binding conflicts after the latest steward override (in `seq` order)."""
    latest = max((r.seq for r in responses if r.override), default=0)
    return [r for r in responses if r.seq > latest and r.post_binding_conflict]


def steward_may_override(*, rights: str, state: str, allow_override: bool, disputed: bool) -> bool:
    """May this answer be a steward's override: steward rights, and a conflicted
    clarification, a binding disputed after it was made (`disputed`: unresolved
    post-binding conflicts), or a pinned policy that allows overrides. Resolving a
    conflict or a dispute is not overriding the quorum: allowed whatever the policy says.
    The one rule: the answer's decision and the steward admin's decide page ask it."""
    return rights == Rights.STEWARD and (state == State.CONFLICTED or disputed or allow_override)


def decide(
    clar: Locked,
    responses: Sequence[Prior],
    answer: AnswerInput,
    *,
    responder: uuid.UUID,
    rights: str,
) -> Outcome:
    """The §6 outcome matrix, in the architecture page's order: normalise → idempotent
    replay → steward-override check (an unauthorised override flag is refused, not
    downgraded) → post-binding → steward override → attestation → active set."""
    try:
        interval = normalise_answer(clar.candidates, answer)
    except UnparseableAnswer as exc:
        return Outcome(OutcomeKind.REFUSED, error=exc)
    override = bool(answer.steward_override)
    mine = [r for r in responses if r.responder == responder]
    unresolved = unresolved_conflicts(responses) if clar.state == State.ANSWERED else []
    may_override = steward_may_override(
        rights=rights,
        state=clar.state,
        allow_override=clar.allow_override,
        disputed=bool(unresolved),
    )
    if mine and _repeats(mine[-1], interval, override, may_override, bool(unresolved)):
        return Outcome(OutcomeKind.REPLAY, interval, prior=mine[-1], response_id=mine[-1].id)
    if override and not may_override:
        return Outcome(OutcomeKind.REFUSED, interval, error=StewardOverrideForbidden())
    if clar.state == State.ANSWERED:
        return _after_binding(clar, interval, override, unresolved)
    satisfied = None if clar.quorum_state == QuorumState.NOT_REQUIRED else QuorumState.SATISFIED
    if override:
        return Outcome(
            OutcomeKind.BOUND,
            interval,
            BindingStatus.STEWARD_OVERRIDE,
            State.ANSWERED,
            satisfied,
            EvidenceClass.STEWARD_OVERRIDE,
            counting=(NEW,),
        )
    if not Rights.at_least(rights, clar.minimum_role):
        state = State.ATTESTED if clar.state in ATTESTABLE else clar.state
        return Outcome(OutcomeKind.ATTESTATION, interval, BindingStatus.ATTESTATION, state)
    return _active_set_outcome(clar, responses, interval, responder, rights, satisfied)


def _repeats(
    prior: Prior, interval: Interval, override: bool, may_override: bool, disputed: bool
) -> bool:
    """The answer repeats the responder's latest one (a replay). A steward's earlier
    override is not replayed over conflicts recorded after it; after binding, an allowed
    override was recorded as a post-binding conflict and replays it."""
    if prior.interval != interval or (override and disputed and prior.override):
        return False
    return prior.override == override or (
        override and may_override and prior.outcome.get("postBinding") is True
    )


def _after_binding(
    clar: Locked, interval: Interval, override: bool, unresolved: list[Prior]
) -> Outcome:
    """An answer to an answered clarification: agreeing is already answered — unless a
    steward's override upholds the binding over open disputes — disagreeing is recorded
    as a post-binding conflict."""
    if clar.bound != interval:
        return Outcome(
            OutcomeKind.POST_BINDING_CONFLICT, interval, BindingStatus.CONFLICTING, State.ANSWERED
        )
    if not (override and unresolved):
        return Outcome(OutcomeKind.ALREADY_ANSWERED, interval, error=AlreadyAnswered())
    return Outcome(
        OutcomeKind.BINDING_UPHELD,
        interval,
        BindingStatus.STEWARD_OVERRIDE,
        State.ANSWERED,
        resolves=tuple(r.id for r in unresolved),
        fact_version_tx=clar.fact_version_tx,
    )


def _active_set_outcome(
    clar: Locked,
    responses: Sequence[Prior],
    interval: Interval,
    responder: uuid.UUID,
    rights: str,
    satisfied: str | None,
) -> Outcome:
    """A binding-capable answer, evaluated with each responder's latest binding-capable
    response at or above the minimum role (the answer's own included)."""
    active: dict[uuid.UUID, tuple[uuid.UUID | None, Interval]] = {}
    for r in responses:
        if r.binding_status in (BindingStatus.ATTESTATION, BindingStatus.STEWARD_OVERRIDE):
            continue
        if Rights.at_least(r.rights, clar.minimum_role):
            active[r.responder] = (r.id, r.interval)
    active[responder] = (NEW, interval)
    intervals = {i for _, i in active.values()}
    if clar.state == State.CONFLICTED or len(intervals) > 1:
        entered = clar.state != State.CONFLICTED
        status = BindingStatus.CONFLICTING
        if len(intervals) == 1:
            status = BindingStatus.BINDING_CANDIDATE
        return Outcome(
            OutcomeKind.CONFLICT,
            interval,
            status,
            State.CONFLICTED,
            QuorumState.CONFLICTED if entered else None,
            entered=entered,
            intervals=tuple(sorted(map(str, intervals))) if entered else (),
        )
    required = clar.required_confirmations
    if len(active) < required:
        return Outcome(
            OutcomeKind.PARTIAL,
            interval,
            BindingStatus.BINDING_CANDIDATE,
            State.PARTIALLY_CONFIRMED,
            QuorumState.PENDING,
            remaining=required - len(active),
        )
    evidence = EvidenceClass.HUMAN_CLARIFICATION
    if required > 1:
        evidence = EvidenceClass.QUORUM_CONFIRMATION
    return Outcome(
        OutcomeKind.BOUND,
        interval,
        BindingStatus.BOUND,
        State.ANSWERED,
        satisfied,
        evidence,
        counting=tuple(pk for pk, _ in active.values()),
    )
