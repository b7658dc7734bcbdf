"""The job kinds, declared in one place each (`register_kind`, from an app's
`AppConfig.ready`): a kind's policy — lease TTL, backoff base and cap, default max
attempts, and the hooks the queue calls (e.g. clarify moves a clarification to
dead_lettered when its job dies) — and its in-process handler, the function the cluster
runs for each leased job (`jobs.tasks.work`). A kind registered without a handler is
leased only by external workers (`/v1/jobs`).
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


@dataclass(frozen=True)
class KindHandler:
    """A kind's in-process handler. `rounds`: it takes each leased round whole (a list of
    leases), so what it reads and writes for one lease it reads and writes once for the
    round, and a single lease is a round of one. Such a handler may raise only before it
    wrote or sent anything (the round is then run again lease by lease); after that it
    fails the jobs it could not finish itself. Otherwise it takes one lease at a time."""

    handle: Callable[..., None]
    rounds: bool = False


@dataclass(frozen=True)
class _Kind:
    policy: Callable[[], KindPolicy] | None
    handler: KindHandler | None


_KINDS: dict[str, _Kind] = {}


def register_kind(
    kind: str,
    policy: Callable[[], KindPolicy] | None = None,
    *,
    handler: Callable[..., None] | None = None,
    rounds: bool = False,
) -> None:
    """Declare `kind`: its policy factory (called at use, so settings overrides apply;
    None: `DEFAULT_POLICY`) and its in-process handler (a function of one lease, or with
    `rounds=True` of a round's list of leases; None: external workers only). Call it from
    the registering app's `AppConfig.ready`; registering a kind again replaces it."""
    _KINDS[kind] = _Kind(policy, KindHandler(handler, rounds) if handler is not None else None)


def registered_kinds() -> list[str]:
    return list(_KINDS)


def policy_for_kind(kind: str) -> KindPolicy:
    entry = _KINDS.get(kind)
    return entry.policy() if entry is not None and entry.policy is not None else DEFAULT_POLICY


def handler_for(kind: str) -> KindHandler | None:
    """The kind's in-process handler, or None (no such kind, or external workers only)."""
    entry = _KINDS.get(kind)
    return entry.handler if entry is not None else None


def backoff_seconds(kind: str, attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff from the kind's base for the `attempt`-th retry (1-based), with
    upward jitter of up to 10%, never above the cap: a wait is never shorter than
    `base * 2**(attempt-1)` (or the cap). A kind whose cap equals its base therefore waits
    exactly the base — `clarify:temporal`'s escalation window is what it says."""
    policy = policy_for_kind(kind)
    exponent = max(0, attempt - 1)
    delay = min(policy.backoff_cap_seconds, policy.backoff_base_seconds * (2 ** min(exponent, 32)))
    return min(policy.backoff_cap_seconds, delay * (1 + JITTER * (rng or random).random()))
