"""An answer's `Outcome` as the HTTP reply of CONTRACT §3.2 (the only place that knows).

| outcome kind | status | body |
| --- | --- | --- |
| BOUND, BINDING_UPHELD | 200 | `{"outcome": "bound", "state", "factVersionTx", …}` |
| PARTIAL | 202 | `{"outcome": "partial_confirmation", "state", "quorumRemaining"}` |
| ATTESTATION | 202 | `{"outcome": "attestation", "state"}` |
| CONFLICT, POST_BINDING_CONFLICT | 202 | `{"outcome": "conflict", "state", "postBinding"}` |
| REPLAY | the prior status | the prior body, byte-identical |
| ALREADY_ANSWERED, REFUSED | the error's: 409, 403, 422 | `{"code", "detail"}` (the handler) |
"""

from dataclasses import dataclass
from typing import Any

from ..answering import Outcome


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]


def answer_reply(outcome: Outcome) -> Reply:
    """The status and body an outcome is answered with; a refusal is raised, to be
    rendered by the exception handler like every other `DomainError`."""
    if outcome.error is not None:
        raise outcome.error
    if outcome.prior is not None:
        return Reply(outcome.prior.outcome_status, outcome.body)
    return Reply(200 if outcome.settled else 202, outcome.body)
