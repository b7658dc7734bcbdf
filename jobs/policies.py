"""Per-kind job policy: lease TTL, backoff base and cap, default max attempts, and hooks
other apps register (e.g. clarify moves a clarification to dead_lettered when its job dies).
"""

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JITTER = 0.1


@dataclass(frozen=True)
class KindPolicy:
    lease_ttl_seconds: int = 60
    backoff_base_seconds: float = 5.0
    backoff_cap_seconds: float = 3600.0
    max_attempts: int = 5
    on_expired: Callable[[Any], None] | None = field(default=None, compare=False)
    on_retry: Callable[[Any], None] | None = field(default=None, compare=False)
    on_dead: Callable[[Any], None] | None = field(default=None, compare=False)
    # The jobs of the kind one lease took (their next attempts start), at once: a round
    # of one is a list of one. Runs in the leasing transaction.
    on_lease: Callable[[list[Any]], None] | None = field(default=None, compare=False)
    # A reaped job became runnable again: its backoff (e.g. an escalation window) ran out.
    on_window_end: Callable[[Any], None] | None = field(default=None, compare=False)


DEFAULT_POLICY = KindPolicy()
_POLICIES: dict[str, Callable[[], KindPolicy]] = {}


def register_kind(kind: str, policy: Callable[[], KindPolicy]) -> None:
    """Register a kind's policy factory (called at use, so settings overrides apply)."""
    _POLICIES[kind] = policy


def registered_kinds() -> list[str]:
    return list(_POLICIES)


def policy_for_kind(kind: str) -> KindPolicy:
    factory = _POLICIES.get(kind)
    return factory() if factory is not None else DEFAULT_POLICY


def backoff_seconds(kind: str, attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff from the kind's base for the `attempt`-th retry (1-based), with
    upward jitter of up to 10%, never above the cap: a wait is never shorter than
    `base * 2**(attempt-1)` (or the cap). A kind whose cap equals its base therefore waits
    exactly the base — `clarify:temporal`'s escalation window is what it says."""
    policy = policy_for_kind(kind)
    exponent = max(0, attempt - 1)
    delay = min(policy.backoff_cap_seconds, policy.backoff_base_seconds * (2 ** min(exponent, 32)))
    return min(policy.backoff_cap_seconds, delay * (1 + JITTER * (rng or random).random()))
