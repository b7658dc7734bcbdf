"""Reads of the clarify loop."""

from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet

from telha.graph.models import NodeVersion
from telha.graph.selectors import source_readable_q
from telha.tenancy.auth import Caller

from .models import Clarification, Severity, State

ATTENTION_ALWAYS = (State.CONFLICTED, State.EXPIRED, State.DEAD_LETTERED)
ATTENTION_IF_SEVERE = (State.OPEN, State.ATTESTED, State.PARTIALLY_CONFIRMED)


def readable_clarification_q(caller: Caller) -> Q | None:
    """The filter on `Clarification` (within the caller's tenant) to what the caller may
    read, or None when the caller reads the whole tenant: a single `EXISTS` over the
    source permission rows (telha.graph.selectors.source_readable_q)."""
    if caller.sees_whole_tenant:
        return None
    return source_readable_q(caller.user, source="target__source")


def readable_clarifications(caller: Caller) -> QuerySet[Clarification]:
    """Clarifications of the caller's tenant about facts from sources the caller may read."""
    qs = Clarification.objects.filter(tenant=caller.tenant)
    readable = readable_clarification_q(caller)
    return qs if readable is None else qs.filter(readable)


def needs_steward_attention_q() -> Q:
    """Conflicted, expired and dead-lettered at any severity; open, attested and partially
    confirmed at high or critical (architecture page `needs_steward_attention`)."""
    return Q(state__in=ATTENTION_ALWAYS) | Q(
        state__in=ATTENTION_IF_SEVERE, severity__in=(Severity.HIGH, Severity.CRITICAL)
    )


def needs_steward_attention(clarification: Clarification) -> bool:
    return clarification.state in ATTENTION_ALWAYS or (
        clarification.state in ATTENTION_IF_SEVERE
        and clarification.severity in (Severity.HIGH, Severity.CRITICAL)
    )


def pending_caveat(clarification: Clarification) -> dict[str, Any]:
    """The pending caveat of a fact that depends on this clarification (spec §3.9)."""
    return {
        "id": str(clarification.pk),
        "state": clarification.state,
        "severity": clarification.severity,
        "candidates": [
            {k: c.get(k) for k in ("index", "validFrom", "validTo", "label")}
            for c in clarification.candidates
        ],
        "appliedCandidateConfidence": clarification.applied_candidate_confidence,
        "quorumState": clarification.quorum_state,
    }


def clarifications_for_versions(
    versions: Iterable[NodeVersion],
) -> dict[str, Clarification]:
    """The clarifications referenced by these versions' provenance (one query)."""
    ids = {v.provenance.get("clarification") for v in versions}
    ids.discard(None)
    if not ids:
        return {}
    return {str(c.pk): c for c in Clarification.objects.filter(pk__in=ids)}
