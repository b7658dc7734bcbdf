"""What a leased routing job does now, decided without the database — the delivery
worker's decision, as `clarify.answering.decide` is the answer's. The worker reads what
the decision needs (once for a whole round of leases), locks, asks `lease_plan` for each
lease, records the plans in one transaction and sends what they say.

A plan is a step and the skips before it:

* the attempt's candidate is asked (ASK), or their card queued for their digest
  (DIGEST: low and normal severity, beyond the digest threshold in the window);
* candidates the gate turns down are skipped, each with its reason code, inside the same
  lease (`skip_reason`: unknown, deprovisioned, unable to read the source, unreachable,
  over the daily cap); a job whose attempts run out on skips ends there (SKIP);
* past the last candidate: the redacted steward escalation (ESCALATE);
* the clarification closed (or gone) meanwhile: the job completes, nothing sent
  (COMPLETE); a job naming no clarification of its tenant dies (FAIL); a lease no longer
  held writes nothing (LOST);
* an attempt that has its card already is a re-send of that card, with its nonce; a card
  whose nonce was revoked or closed is never sent again (WITHHOLD);
* after a high-severity card went out, the stewards' FYI (NOTIFY, `notice_plan`);
* a candidate away (PERSON_AWAY) with a delegate: the delegate is asked in their place
  (ASK or DIGEST with `on_behalf`) when the delegate passes the same gate on their own —
  never an away delegate (no chains: the skip is PERSON_AWAY), never one who may not read
  the source (the skip carries the gate's reason), never one ranked themselves (they are
  asked in their own right);
* a reminder job (`reminder_plan`): the one reminder of an unanswered card (REMIND), or
  nothing when it was answered, reminded, withdrawn or closed meanwhile (COMPLETE).

The steward messages of an escalation or a notice go to each steward on their first
reachable channel (`steward_messages`)."""

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from clarify.models import CLOSED_STATES, Severity
from common.codes import SkipReason

from .channels import Route
from .models import NonceState

DELETED = "deleted"  # the state of a clarification gone since the round was read


class Step(enum.Enum):
    ASK = "ask"
    DIGEST = "digest"
    SKIP = "skip"
    ESCALATE = "escalate"
    NOTIFY = "notify"
    COMPLETE = "complete"
    REMIND = "remind"
    WITHHOLD = "withhold"
    FAIL = "fail"
    LOST = "lost"


@dataclass(frozen=True)
class Skip:
    """A candidate passed over inside the lease, and why."""

    attempt: int
    candidate: str
    reason: SkipReason
    delegate: str = ""  # the away candidate's delegate the reason is about, if any


@dataclass(frozen=True)
class Issued:
    """A card the job issued before (a delivery row: a question or a steward's message),
    as the plan reads it."""

    pk: Any
    kind: str
    nonce_state: str


@dataclass(frozen=True)
class Reach:
    """A ranked person as the plan reads them: deprovisioned or not, the read floor's
    verdict on the clarification's source, where they are reached, and their question
    cards the daily cap and the digest count so far; away now, and their delegate (a
    person id) if they named one."""

    deactivated: bool
    verdict: SkipReason | None
    route: Route | None
    sent_today: int
    recent: int
    away: bool = False
    delegate: str | None = None


@dataclass(frozen=True)
class JobView:
    """The leased job under its lock: whether the lease still holds it, its attempt, its
    attempts allowed and its ranking (person ids, best first)."""

    held: bool
    attempts: int
    max_attempts: int
    ranking: Sequence[str]


@dataclass(frozen=True)
class ClarView:
    """The job's clarification under its lock (`state` DELETED when it is gone)."""

    state: str
    severity: str


@dataclass(frozen=True)
class Limits:
    daily_cap: int
    digest_threshold: int


@dataclass(frozen=True)
class StewardMessage:
    """A steward's redacted message: to whom, where, and the card made for it before
    (None: a row is made now)."""

    steward: str
    route: Route
    card: Issued | None = None


@dataclass(frozen=True)
class Plan:
    """What one lease does: `step`, after `skips`. `attempt` and `person`: the attempt
    asked, escalated or notified about and its candidate (a delegate: the person asked);
    `route` where they are reached; `card` the attempt's card made before (a re-send, or
    the one withheld); `state` the state that closed the clarification (or why a reminder
    is not sent); `stewards` the steward messages; `on_behalf` the away candidate a
    delegate is asked for."""

    step: Step
    skips: tuple[Skip, ...] = ()
    attempt: int = 0
    person: str = ""
    route: Route | None = None
    card: Issued | None = None
    state: str = ""
    stewards: tuple[StewardMessage, ...] = ()
    on_behalf: str = ""

    @property
    def new_card(self) -> bool:
        """A question card row is made for it (counted by the cap and the digest)."""
        return self.step in (Step.ASK, Step.DIGEST) and self.card is None


def skip_reason(reach: Reach | None, limits: Limits) -> SkipReason | None:
    """Why the candidate is not asked (None: they are), in the order the reasons are
    checked: unknown, deprovisioned, the read floor, away, no address, the daily cap."""
    if reach is None:
        return SkipReason.NO_DELIVERY_ALIAS
    if reach.deactivated:
        return SkipReason.RESPONDER_NOT_AUTHORISED
    if reach.verdict is not None:
        return reach.verdict
    if reach.away:
        return SkipReason.PERSON_AWAY
    if reach.route is None:
        return SkipReason.NO_DELIVERY_ALIAS
    if reach.sent_today >= limits.daily_cap:
        return SkipReason.DAILY_CAP_EXCEEDED
    return None


def lease_plan(
    job: JobView,
    clar: ClarView | None,
    people: Mapping[str, Reach],
    cards: Mapping[tuple[int, str], Issued],
    limits: Limits,
) -> Plan:
    """The plan of a leased routing job. `clar` None: the job names no clarification of
    its tenant; `people` the ranked persons known (by id); `cards` the question cards
    the job made before, by (attempt, person)."""
    if not job.held:
        return Plan(Step.LOST)
    if clar is None:
        return Plan(Step.FAIL)
    if clar.state == DELETED or clar.state in CLOSED_STATES:
        return Plan(Step.COMPLETE, state=clar.state)
    skips: list[Skip] = []
    for attempt in range(job.attempts, len(job.ranking)):
        person = job.ranking[attempt]
        reach = people.get(person)
        reason = skip_reason(reach, limits)
        if reason is None:
            assert reach is not None
            return _asked(clar, reach, tuple(skips), attempt, person, cards, limits)
        delegate = ""
        if reason is SkipReason.PERSON_AWAY:
            assert reach is not None
            delegate, reason = delegate_of(reach, people, job.ranking, limits)
            if reason is None:
                asked = _asked(
                    clar, people[delegate], tuple(skips), attempt, delegate, cards, limits
                )
                return replace(asked, on_behalf=person)
        skips.append(Skip(attempt, person, reason, delegate))
        if attempt + 1 >= job.max_attempts:  # the skip was the job's last attempt
            return Plan(Step.SKIP, tuple(skips))
    return Plan(Step.ESCALATE, tuple(skips), attempt=max(job.attempts, len(job.ranking)))


def delegate_of(
    reach: Reach, people: Mapping[str, Reach], ranking: Sequence[str], limits: Limits
) -> tuple[str, SkipReason | None]:
    """An away candidate's delegate and why they are not asked in the candidate's place
    (None: they are). No delegate, or one ranked themselves (asked in their own right):
    PERSON_AWAY; else the delegate's own gate — an away delegate is PERSON_AWAY (their own
    delegate is never used: no chains), one who may not read the source the read floor's
    reason, unknown or unreachable NO_DELIVERY_ALIAS, over their cap DAILY_CAP_EXCEEDED."""
    delegate = reach.delegate or ""
    if not delegate or delegate in ranking:
        return delegate, SkipReason.PERSON_AWAY
    return delegate, skip_reason(people.get(delegate), limits)


def _asked(
    clar: ClarView,
    reach: Reach,
    skips: tuple[Skip, ...],
    attempt: int,
    person: str,
    cards: Mapping[tuple[int, str], Issued],
    limits: Limits,
) -> Plan:
    """The candidate is asked: a card of theirs this attempt made before is sent again
    (never one whose nonce is no longer active); low and normal severity beyond the
    digest threshold go to the digest."""
    card = cards.get((attempt, person))
    if card is not None and card.nonce_state != NonceState.ACTIVE:
        return Plan(Step.WITHHOLD, skips, attempt, person, card=card)
    digest = clar.severity in (Severity.LOW, Severity.NORMAL) and (
        reach.recent >= limits.digest_threshold
    )
    step = Step.DIGEST if digest else Step.ASK
    return Plan(step, skips, attempt, person, route=reach.route, card=card)


def notice_plan(job: JobView, clar: ClarView, attempt: int, asked: str) -> Plan:
    """The stewards' FYI after the high-severity card of `attempt` went out to `asked`."""
    if not job.held:
        return Plan(Step.LOST)
    if clar.state == DELETED or clar.state in CLOSED_STATES:
        return Plan(Step.COMPLETE, state=clar.state)
    return Plan(Step.NOTIFY, attempt=attempt, person=asked)


def steward_messages(
    plan: Plan, stewards: Sequence[tuple[str, Route | None]], cards: Mapping[str, Issued]
) -> Plan:
    """An escalation's or a notice's plan with its steward messages: each steward
    reachable on a channel (the one asked excepted: a notice is about them), with the
    card this attempt made them before; a steward's card that is no longer active
    withholds the whole message (WITHHOLD, naming that steward)."""
    messages = []
    for steward, route in stewards:
        if route is None or (plan.step is Step.NOTIFY and steward == plan.person):
            continue
        card = cards.get(steward)
        if card is not None and card.nonce_state != NonceState.ACTIVE:
            return replace(plan, step=Step.WITHHOLD, person=steward, card=card, stewards=())
        messages.append(StewardMessage(steward, route, card))
    return replace(plan, stewards=tuple(messages))


@dataclass(frozen=True)
class Reminding:
    """A reminder job's question card as the plan reads it: to whom (and for whom), its
    attempt and nonce state, whether it was reminded already, whether its person answered
    the clarification, whether they are away now, and where they are reached on the
    card's own channel (None: no longer)."""

    person: str
    attempt: int
    nonce_state: str
    reminded: bool
    answered: bool
    away: bool
    route: Route | None
    on_behalf: str = ""


def reminder_plan(job: JobView, clar: ClarView | None, card: Reminding | None) -> Plan:
    """The one reminder of an unanswered card, on the card's channel with its nonce
    (REMIND). Nothing is sent (COMPLETE, `state` saying why) once the clarification
    closed, the card's nonce is no longer active (a re-ask, lost access, an answer that
    bound), its person answered or is away now, it was reminded already, or the card's
    channel no longer reaches them. A reminder is no new card: no row, not counted by the
    daily cap; the escalation window is the routing job's and does not move."""
    if not job.held:
        return Plan(Step.LOST)
    if clar is None or card is None:
        return Plan(Step.FAIL)
    if clar.state == DELETED or clar.state in CLOSED_STATES:
        return Plan(Step.COMPLETE, state=clar.state)
    why = ""
    if card.nonce_state != NonceState.ACTIVE:
        why = f"card {card.nonce_state}"
    elif card.reminded:
        why = "reminded already"
    elif card.answered:
        why = "answered"
    elif card.away:
        why = "away"
    elif card.route is None:
        why = "unreachable"
    if why:
        return Plan(Step.COMPLETE, attempt=card.attempt, person=card.person, state=why)
    return Plan(
        Step.REMIND,
        attempt=card.attempt,
        person=card.person,
        route=card.route,
        on_behalf=card.on_behalf,
    )
