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
* after a high-severity card went out, the stewards' FYI (NOTIFY, `notice_plan`).

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
    WITHHOLD = "withhold"
    FAIL = "fail"
    LOST = "lost"


@dataclass(frozen=True)
class Skip:
    """A candidate passed over inside the lease, and why."""

    attempt: int
    candidate: str
    reason: SkipReason


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
    cards the daily cap and the digest count so far."""

    deactivated: bool
    verdict: SkipReason | None
    route: Route | None
    sent_today: int
    recent: int


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
    asked, escalated or notified about and its candidate; `route` where they are reached;
    `card` the attempt's card made before (a re-send, or the one withheld); `state` the
    state that closed the clarification; `stewards` the steward messages."""

    step: Step
    skips: tuple[Skip, ...] = ()
    attempt: int = 0
    person: str = ""
    route: Route | None = None
    card: Issued | None = None
    state: str = ""
    stewards: tuple[StewardMessage, ...] = ()

    @property
    def new_card(self) -> bool:
        """A question card row is made for it (counted by the cap and the digest)."""
        return self.step in (Step.ASK, Step.DIGEST) and self.card is None


def skip_reason(reach: Reach | None, limits: Limits) -> SkipReason | None:
    """Why the candidate is not asked (None: they are), in the order the reasons are
    checked: unknown, deprovisioned, the read floor, no address, the daily cap."""
    if reach is None:
        return SkipReason.NO_DELIVERY_ALIAS
    if reach.deactivated:
        return SkipReason.RESPONDER_NOT_AUTHORISED
    if reach.verdict is not None:
        return reach.verdict
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
        skips.append(Skip(attempt, person, reason))
        if attempt + 1 >= job.max_attempts:  # the skip was the job's last attempt
            return Plan(Step.SKIP, tuple(skips))
    return Plan(Step.ESCALATE, tuple(skips), attempt=max(job.attempts, len(job.ranking)))


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
