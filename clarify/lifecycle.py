"""The clarification lifecycle (spec §5): which state may follow which, and the one
function every state change goes through (answer, override, routing, expiry, re-ask).

`clarification_transition` checks the change against `TRANSITIONS`, appends the
`state_changed` audit event and sets the state; the caller saves the row with its other
changes in the same transaction (a refused transition raises and changes nothing).
"""

from typing import Any

from common.errors import Conflict
from tenancy.models import Person

from .audit import AuditBuffer, audit_event_append
from .models import Clarification, State

_UNANSWERED = {
    State.OPEN,
    State.ATTESTED,
    State.PARTIALLY_CONFIRMED,
    State.CONFLICTED,
    State.EXPIRED,
    State.DEAD_LETTERED,
}

# state → the states it may change to. An answer may bind, attest, partially confirm or
# conflict any clarification not yet answered (a conflicted one binds only by a steward's
# override, and stays conflicted otherwise); routing expires an open one for the window
# between two candidates, opens it again at the next attempt and dead-letters it when the
# ranking is exhausted; a re-ask opens an expired or dead-lettered one again. An answered
# clarification is terminal (later answers are post-binding conflicts, not state changes).
TRANSITIONS: dict[str, frozenset[str]] = {
    State.OPEN: frozenset(_UNANSWERED - {State.OPEN} | {State.ANSWERED}),
    State.ATTESTED: frozenset(
        {State.PARTIALLY_CONFIRMED, State.CONFLICTED, State.ANSWERED, State.DEAD_LETTERED}
    ),
    State.PARTIALLY_CONFIRMED: frozenset({State.CONFLICTED, State.ANSWERED, State.DEAD_LETTERED}),
    State.CONFLICTED: frozenset({State.ANSWERED}),
    State.EXPIRED: frozenset(_UNANSWERED - {State.EXPIRED} | {State.ANSWERED}),
    State.DEAD_LETTERED: frozenset(
        _UNANSWERED - {State.DEAD_LETTERED, State.EXPIRED} | {State.ANSWERED}
    ),
    State.ANSWERED: frozenset(),
}


class TransitionRefused(Conflict):
    """The lifecycle does not allow this state change (nothing is written)."""


def can_transition(current: str, to: str) -> bool:
    return to in TRANSITIONS[current]


def clarification_transition(
    clar: Clarification,
    to: str,
    *,
    actor: Person | None = None,
    reason: str | None = None,
    at: int | None = None,
    audit: AuditBuffer | None = None,
    **detail: Any,
) -> bool:
    """Change `clar`'s state to `to`: checked against the lifecycle, audited as
    `state_changed` `{"from", "to"}` (plus `by` for an actor, `reason`, and any `detail`),
    into `audit` when the caller buffers its events. A change to the state it is in is no
    change (False, nothing appended); one the lifecycle forbids raises `TransitionRefused`
    before anything is written. The caller saves the row."""
    if clar.state == to:
        return False
    if not can_transition(clar.state, to):
        raise TransitionRefused(f"A clarification in state {clar.state} cannot become {to}.")
    event: dict[str, Any] = {"from": clar.state, "to": to}
    if actor is not None:
        event["by"] = str(actor.pk)
    if reason is not None:
        event["reason"] = reason
    event.update(detail)
    if audit is None:
        audit_event_append(
            tenant=clar.tenant, clarification=clar, type="state_changed", detail=event, at=at
        )
    else:
        audit.add("state_changed", event, at)
    clar.state = to
    return True
