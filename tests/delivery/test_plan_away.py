"""The plan's away and reminder branches (issue 32), without a database: an away candidate
is skipped with PERSON_AWAY, or their delegate is asked in their place when the delegate
passes the same gate on their own (no chains, never one who may not read, never one
ranked themselves); a card's one reminder, and every reason it is not sent."""

import pytest

from common.codes import SkipReason
from delivery.plan import (
    DELETED,
    ClarView,
    Issued,
    JobView,
    Plan,
    Reminding,
    Skip,
    Step,
    reminder_plan,
    skip_reason,
)

from .test_plan import LIMITS, OPEN, ROUTE, job, plan, reach

OTHER = ROUTE.__class__(ROUTE.channel, "nowhere:delegate")


def test_an_away_candidate_without_a_delegate_is_skipped_as_away():
    people = {"ann": reach(away=True), "ben": reach()}
    assert plan(people) == Plan(
        Step.ASK, (Skip(0, "ann", SkipReason.PERSON_AWAY),), 1, "ben", ROUTE
    )


def test_the_delegate_of_an_away_candidate_is_asked_in_their_place():
    people = {"ann": reach(away=True, delegate="dee"), "dee": reach(route=OTHER)}
    assert plan(people) == Plan(Step.ASK, (), 0, "dee", OTHER, on_behalf="ann")


def test_a_delegate_s_card_is_sent_again_and_their_cap_and_digest_apply():
    card = Issued("row-1", "question", "active")
    people = {"ann": reach(away=True, delegate="dee"), "dee": reach(recent=3)}
    again = plan(people, cards={(0, "dee"): card})
    assert (again.step, again.person, again.card, again.on_behalf) == (
        Step.DIGEST,
        "dee",
        card,
        "ann",
    )
    capped = {"ann": reach(away=True, delegate="dee"), "dee": reach(sent_today=5), "ben": reach()}
    assert plan(capped).skips == (Skip(0, "ann", SkipReason.DAILY_CAP_EXCEEDED, "dee"),)


@pytest.mark.parametrize(
    ("delegate", "reason"),
    [
        # No chains: an away delegate is never replaced by their own delegate.
        (reach(away=True, delegate="eve"), SkipReason.PERSON_AWAY),
        (reach(verdict=SkipReason.NO_READ_PERMISSION), SkipReason.NO_READ_PERMISSION),
        (reach(deactivated=True), SkipReason.RESPONDER_NOT_AUTHORISED),
        (reach(route=None), SkipReason.NO_DELIVERY_ALIAS),
        (None, SkipReason.NO_DELIVERY_ALIAS),
    ],
)
def test_a_delegate_the_gate_turns_down_skips_the_away_candidate(delegate, reason):
    people = {"ann": reach(away=True, delegate="dee"), "eve": reach(), "ben": reach()}
    if delegate is not None:
        people["dee"] = delegate
    result = plan(people)
    assert result == Plan(Step.ASK, (Skip(0, "ann", reason, "dee"),), 1, "ben", ROUTE)
    assert result.on_behalf == ""


def test_a_ranked_delegate_is_asked_in_their_own_right_only():
    people = {"ann": reach(away=True, delegate="ben"), "ben": reach()}
    assert plan(people) == Plan(
        Step.ASK, (Skip(0, "ann", SkipReason.PERSON_AWAY, "ben"),), 1, "ben", ROUTE
    )


def test_away_is_checked_after_the_read_floor():
    # Delegation never widens who is asked: an away candidate who may not read the source
    # is skipped for that, and their delegate is not asked.
    unreadable = reach(away=True, delegate="dee", verdict=SkipReason.NO_READ_PERMISSION)
    assert skip_reason(unreadable, LIMITS) == SkipReason.NO_READ_PERMISSION
    result = plan({"ann": unreadable, "dee": reach(), "ben": reach()})
    assert result.skips == (Skip(0, "ann", SkipReason.NO_READ_PERMISSION),)
    assert result.person == "ben"
    assert skip_reason(reach(away=True, route=None, sent_today=9), LIMITS) == (
        SkipReason.PERSON_AWAY
    )


def test_an_away_last_candidate_ends_the_job_on_its_skip():
    people = {"cal": reach(away=True, delegate="dee"), "dee": reach(away=True)}
    assert plan(people, at=job(2, max_attempts=3)) == Plan(
        Step.SKIP, (Skip(2, "cal", SkipReason.PERSON_AWAY, "dee"),)
    )


# --- reminders ---------------------------------------------------------------------------

HELD = JobView(held=True, attempts=0, max_attempts=1, ranking=())


def card(**overrides) -> Reminding:
    fields = {
        "person": "ann",
        "attempt": 1,
        "nonce_state": "active",
        "reminded": False,
        "answered": False,
        "away": False,
        "route": ROUTE,
    }
    return Reminding(**{**fields, **overrides})


def test_an_unanswered_card_is_reminded_once_on_its_route():
    assert reminder_plan(HELD, OPEN, card()) == Plan(
        Step.REMIND, attempt=1, person="ann", route=ROUTE
    )
    delegated = reminder_plan(HELD, OPEN, card(on_behalf="bob"))
    assert delegated.on_behalf == "bob"


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"reminded": True}, "reminded already"),
        ({"answered": True}, "answered"),
        ({"nonce_state": "revoked"}, "card revoked"),
        ({"nonce_state": "closed"}, "card closed"),
        ({"away": True}, "away"),
        ({"route": None}, "unreachable"),
    ],
)
def test_a_card_is_not_reminded_when(overrides, why):
    assert reminder_plan(HELD, OPEN, card(**overrides)) == Plan(
        Step.COMPLETE, attempt=1, person="ann", state=why
    )


def test_a_closed_gone_or_unknown_card_or_a_lost_lease_sends_no_reminder():
    for state in ("answered", "conflicted", DELETED):
        closed = reminder_plan(HELD, ClarView(state, "normal"), card())
        assert closed == Plan(Step.COMPLETE, state=state)
    assert reminder_plan(HELD, OPEN, None) == Plan(Step.FAIL)
    assert reminder_plan(HELD, None, card()) == Plan(Step.FAIL)
    lost = JobView(held=False, attempts=0, max_attempts=1, ranking=())
    assert reminder_plan(lost, OPEN, card()) == Plan(Step.LOST)
