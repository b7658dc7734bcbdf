"""The delivery decision of one lease (`delivery.plan`), without a database: who is
skipped and why, in the gate's order; the card asked or queued for the digest; the
escalation past the last candidate; a job out of attempts on skips; a re-send, and a
withdrawn card never sent again; a closed, deleted or missing clarification; a lost
lease; the stewards' messages."""

from typing import Any

import pytest

from common.codes import SkipReason
from delivery.cards import Card, Escalation
from delivery.channels import Channel, Route
from delivery.plan import (
    DELETED,
    ClarView,
    Issued,
    JobView,
    Limits,
    Plan,
    Reach,
    Skip,
    Step,
    lease_plan,
    notice_plan,
    skip_reason,
    steward_messages,
)
from tenancy.models import Person


class Nowhere(Channel):
    """A channel that is never sent on: the plan only carries routes."""

    name = "nowhere"

    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        raise AssertionError("the plan does not look addresses up")

    def send_card(self, *, address: str, card: Card) -> str:
        raise AssertionError("the plan sends nothing")

    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        raise AssertionError("the plan sends nothing")

    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        raise AssertionError("the plan sends nothing")


ROUTE = Route(Nowhere(), "nowhere:1")
LIMITS = Limits(daily_cap=5, digest_threshold=3)
OPEN = ClarView(state="open", severity="normal")
RANKING = ("ann", "ben", "cal")


def reach(**overrides: Any) -> Reach:
    fields: dict[str, Any] = {
        "deactivated": False,
        "verdict": None,
        "route": ROUTE,
        "sent_today": 0,
        "recent": 0,
    }
    return Reach(**{**fields, **overrides})


def job(attempts: int = 0, *, held: bool = True, max_attempts: int = 4) -> JobView:
    return JobView(held=held, attempts=attempts, max_attempts=max_attempts, ranking=RANKING)


def plan(
    people: dict[str, Reach],
    *,
    at: JobView | None = None,
    clar: ClarView | None = OPEN,
    cards: dict[tuple[int, str], Issued] | None = None,
) -> Plan:
    return lease_plan(at or job(), clar, people, cards or {}, LIMITS)


def test_the_first_candidate_who_passes_the_gate_is_asked():
    assert plan({"ann": reach()}) == Plan(Step.ASK, (), 0, "ann", ROUTE)


@pytest.mark.parametrize(
    ("person", "reason"),
    [
        (None, SkipReason.NO_DELIVERY_ALIAS),
        (reach(deactivated=True), SkipReason.RESPONDER_NOT_AUTHORISED),
        (reach(verdict=SkipReason.NO_READ_PERMISSION), SkipReason.NO_READ_PERMISSION),
        (reach(verdict=SkipReason.TENANT_SCOPE_MISMATCH), SkipReason.TENANT_SCOPE_MISMATCH),
        (reach(route=None), SkipReason.NO_DELIVERY_ALIAS),
        (reach(sent_today=5), SkipReason.DAILY_CAP_EXCEEDED),
    ],
)
def test_a_candidate_the_gate_turns_down_is_skipped_with_its_reason(person, reason):
    people = {"ben": reach()} if person is None else {"ann": person, "ben": reach()}
    assert plan(people) == Plan(Step.ASK, (Skip(0, "ann", reason),), 1, "ben", ROUTE)


def test_the_reasons_are_checked_in_the_gate_s_order():
    # Deprovisioned before the read floor, the read floor before the address and the cap.
    everything = reach(
        deactivated=True, verdict=SkipReason.NO_READ_PERMISSION, route=None, sent_today=9
    )
    assert skip_reason(everything, LIMITS) == SkipReason.RESPONDER_NOT_AUTHORISED
    unreadable = reach(verdict=SkipReason.NO_READ_PERMISSION, route=None, sent_today=9)
    assert skip_reason(unreadable, LIMITS) == SkipReason.NO_READ_PERMISSION
    assert skip_reason(reach(route=None, sent_today=9), LIMITS) == SkipReason.NO_DELIVERY_ALIAS
    assert skip_reason(reach(sent_today=4), LIMITS) is None


@pytest.mark.parametrize(
    ("severity", "recent", "step"),
    [
        ("low", 3, Step.DIGEST),
        ("normal", 3, Step.DIGEST),
        ("normal", 2, Step.ASK),
        ("high", 9, Step.ASK),  # high and critical go direct, never into a digest
        ("critical", 9, Step.ASK),
    ],
)
def test_low_and_normal_cards_beyond_the_threshold_go_to_the_digest(severity, recent, step):
    clar = ClarView(state="open", severity=severity)
    assert plan({"ann": reach(recent=recent)}, clar=clar).step is step


def test_the_attempt_decides_who_is_asked():
    assert plan({"ben": reach(), "cal": reach()}, at=job(2)).person == "cal"


def test_past_the_last_candidate_the_stewards_are_escalated_to():
    skipped = {p: reach(route=None) for p in RANKING}
    assert plan(skipped) == Plan(
        Step.ESCALATE,
        tuple(Skip(i, p, SkipReason.NO_DELIVERY_ALIAS) for i, p in enumerate(RANKING)),
        attempt=3,
    )
    # A retried escalation's attempt is the job's own (one more per retry).
    assert plan({}, at=job(5, max_attempts=6)) == Plan(Step.ESCALATE, attempt=5)


def test_a_job_out_of_attempts_ends_on_its_last_skip():
    assert plan({}, at=job(1, max_attempts=2)) == Plan(
        Step.SKIP, (Skip(1, "ben", SkipReason.NO_DELIVERY_ALIAS),)
    )


def test_an_attempt_with_its_card_sends_that_card_again():
    mine = Issued(pk=1, kind="question", nonce_state="active")
    assert plan({"ann": reach()}, cards={(0, "ann"): mine}) == Plan(
        Step.ASK, (), 0, "ann", ROUTE, card=mine
    )
    assert not plan({"ann": reach()}, cards={(0, "ann"): mine}).new_card
    assert plan({"ann": reach()}).new_card


@pytest.mark.parametrize("state", ["revoked", "closed"])
def test_a_withdrawn_card_is_never_sent_again(state):
    withdrawn = Issued(pk=1, kind="question", nonce_state=state)
    assert plan({"ann": reach(recent=9)}, cards={(0, "ann"): withdrawn}) == Plan(
        Step.WITHHOLD, (), 0, "ann", card=withdrawn
    )


@pytest.mark.parametrize("state", ["answered", "conflicted", DELETED])
def test_a_closed_or_deleted_clarification_completes_the_job(state):
    closed = ClarView(state=state, severity="normal")
    assert plan({"ann": reach()}, clar=closed) == Plan(Step.COMPLETE, state=state)


@pytest.mark.parametrize("state", ["expired", "dead_lettered", "attested", "partially_confirmed"])
def test_an_unresolved_clarification_is_still_asked_about(state):
    assert plan({"ann": reach()}, clar=ClarView(state=state, severity="normal")).step is Step.ASK


def test_a_job_naming_no_clarification_fails_and_a_lost_lease_does_nothing():
    assert plan({"ann": reach()}, clar=None) == Plan(Step.FAIL)
    assert plan({"ann": reach()}, at=job(held=False)) == Plan(Step.LOST)
    assert plan({"ann": reach()}, at=job(held=False), clar=None) == Plan(Step.LOST)


def test_the_notice_follows_a_card_while_the_lease_holds_and_the_question_is_open():
    assert notice_plan(job(1), OPEN, 1, "ben") == Plan(Step.NOTIFY, attempt=1, person="ben")
    answered = ClarView(state="answered", severity="high")
    assert notice_plan(job(1), answered, 1, "ben") == Plan(Step.COMPLETE, state="answered")
    assert notice_plan(job(1, held=False), OPEN, 1, "ben") == Plan(Step.LOST)


def test_the_stewards_reached_are_those_with_a_route_but_the_person_asked():
    other = Route(Nowhere(), "nowhere:2")
    stewards = [("sam", ROUTE), ("sue", None), ("ben", other), ("sal", other)]
    escalation = steward_messages(Plan(Step.ESCALATE, attempt=3), stewards, {})
    assert [(m.steward, m.route) for m in escalation.stewards] == [
        ("sam", ROUTE),
        ("ben", other),
        ("sal", other),
    ]
    notice = steward_messages(Plan(Step.NOTIFY, attempt=1, person="ben"), stewards, {})
    assert [m.steward for m in notice.stewards] == ["sam", "sal"]


def test_a_steward_s_withdrawn_card_withholds_the_message_and_an_active_one_is_resent():
    active = Issued(pk=1, kind="escalation", nonce_state="active")
    revoked = Issued(pk=2, kind="escalation", nonce_state="revoked")
    stewards = [("sam", ROUTE), ("sal", ROUTE)]
    again = steward_messages(Plan(Step.ESCALATE, attempt=3), stewards, {"sam": active})
    assert [m.card for m in again.stewards] == [active, None]
    withheld = steward_messages(Plan(Step.ESCALATE, attempt=3), stewards, {"sal": revoked})
    assert withheld == Plan(Step.WITHHOLD, attempt=3, person="sal", card=revoked)
