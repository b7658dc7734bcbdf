"""Severity and quorum policy (spec §3.7 to §3.8, §5, §8; architecture page).

Environment values (settings.CLARIFY) are the defaults; a tenant's `ClarifyPolicy` row
overrides them field by field. The quorum policy is pinned on each clarification when it
is opened and never recomputed.
"""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from tenancy.models import Rights, Tenant

from .models import ClarifyPolicy, Kind, QuorumState, Severity


@dataclass(frozen=True)
class EffectivePolicy:
    """The clarify policy in force for a tenant right now."""

    severity_elevate: dict[str, str] = field(default_factory=dict)
    quorum_enabled: bool = True
    critical_required_confirmations: int = 2
    required_roles: list[str] = field(default_factory=lambda: [Rights.EDITOR.value])
    allow_steward_override: bool = True
    # Delivery channels in the order they are tried (a person is reached on the first
    # configured one where they have a verified address).
    channel_order: list[str] = field(default_factory=list)
    # One reminder this many hours after a card (None: no reminders); below the window.
    reminder_after_hours: float | None = None


CHANNEL_NAMES = ("teams", "slack", "inbox", "email")


def channel_order_errors(value: Any) -> str | None:
    """Why `value` is not a channel order (a non-empty list of distinct known channel
    names), or None when it is one."""
    if (
        not isinstance(value, list)
        or not value
        or any(not isinstance(c, str) or c not in CHANNEL_NAMES for c in value)
    ):
        return (
            f'Use a list of channel names from {", ".join(CHANNEL_NAMES)}, e.g. ["slack", "inbox"].'
        )
    if len(set(value)) != len(value):
        return "Name each channel once."
    return None


def reminder_errors(value: Any) -> str | None:
    """Why `value` is not a reminder delay in hours (a positive number below the
    escalation window, CLARIFY_ESCALATION_WINDOW_HOURS), or None when it is one (None
    itself: no reminders)."""
    if value is None:
        return None
    window = float(settings.CLARIFY["ESCALATION_WINDOW_HOURS"])
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return "Give a positive number of hours."
    if value >= window:
        return (
            f"A reminder after {value:g} hours would come at or after the escalation window "
            f"({window:g} hours, CLARIFY_ESCALATION_WINDOW_HOURS): give fewer hours than the "
            "window, or leave it empty for no reminders."
        )
    return None


def _validated_elevations(raw: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind, severity in raw.items():
        if kind in Kind.values and severity in Severity.values:
            out[kind] = severity
    return out


def policy_for(tenant: Tenant) -> EffectivePolicy:
    """The environment defaults overlaid with the tenant's overrides (one query)."""
    conf = settings.CLARIFY
    row = ClarifyPolicy.objects.filter(tenant=tenant).first()

    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    roles = pick(row.required_roles if row else None, conf["QUORUM_REQUIRED_ROLES"])
    return EffectivePolicy(
        severity_elevate=_validated_elevations(
            pick(row.severity_elevate if row else None, conf["SEVERITY_ELEVATE"])
        ),
        quorum_enabled=bool(pick(row.quorum_enabled if row else None, conf["QUORUM_ENABLED"])),
        critical_required_confirmations=int(
            pick(
                row.critical_required_confirmations if row else None,
                conf["QUORUM_CRITICAL_REQUIRED_CONFIRMATIONS"],
            )
        ),
        required_roles=[r for r in roles if r in Rights.values] or [Rights.EDITOR.value],
        allow_steward_override=bool(
            pick(row.allow_steward_override if row else None, conf["QUORUM_ALLOW_STEWARD_OVERRIDE"])
        ),
        channel_order=_channel_order(row.channel_order if row else None),
        reminder_after_hours=_reminder(row.reminder_after_hours if row else None),
    )


def _reminder(value: float | None) -> float | None:
    """The tenant's reminder delay, else CLARIFY_REMINDER_AFTER_HOURS; defensively None
    (no reminders) when the value in force is not below the window."""
    hours = value if value is not None else settings.CLARIFY.get("REMINDER_AFTER_HOURS")
    return None if hours is None or reminder_errors(hours) is not None else float(hours)


def _channel_order(value: Any) -> list[str]:
    """The tenant's channel order, or CLARIFY_CHANNELS when unset (or, defensively, when a
    stored value is not a valid order)."""
    if value is None or channel_order_errors(value) is not None:
        return list(settings.CLARIFY_CHANNELS)
    return list(value)


def severity_for(policy: EffectivePolicy, kind: str, hint: str | None) -> str:
    """The worker's hint (default normal), raised — never lowered — by the tenant's
    kind elevation."""
    hinted = hint or Severity.NORMAL
    elevated = policy.severity_elevate.get(kind, Severity.LOW)
    return max(hinted, elevated, key=Severity.rank)


def quorum_for(policy: EffectivePolicy, severity: str) -> tuple[dict[str, Any], str]:
    """The pinned quorum policy and initial quorum state for a new clarification. Only
    critical severity with quorum enabled asks for more than one confirmation."""
    required = 1
    if severity == Severity.CRITICAL and policy.quorum_enabled:
        required = max(1, policy.critical_required_confirmations)
    pinned = {
        "requiredConfirmations": required,
        "requiredRoles": list(policy.required_roles),
        "allowStewardOverride": policy.allow_steward_override,
    }
    state = QuorumState.PENDING if required > 1 else QuorumState.NOT_REQUIRED
    return pinned, state


def job_priority(severity: str) -> int:
    """Queue priority of a clarification's routing job: critical 0, high 1, else 2."""
    priorities: dict[str, int] = {Severity.CRITICAL: 0, Severity.HIGH: 1}
    return priorities.get(severity, 2)
