"""Reads of the clarify loop."""

from collections.abc import Iterable
from typing import Any

from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from common.codes import SkipReason
from graph.access import source_readable_q
from graph.api.records import PendingNote
from graph.models import EvidenceClass, NodeVersion
from jobs.models import Job, JobStatus
from tenancy.auth import Caller
from tenancy.models import Person

from .answering import Prior, unresolved_conflicts
from .models import (
    CLARIFY_JOB_KIND,
    CLOSED_STATES,
    AuditEvent,
    BindingStatus,
    Clarification,
    ResponseRecord,
    Severity,
    State,
)

ATTENTION_ALWAYS = (State.CONFLICTED, State.EXPIRED, State.DEAD_LETTERED)
ATTENTION_IF_SEVERE = (State.OPEN, State.ATTESTED, State.PARTIALLY_CONFIRMED)


def readable_clarification_q(caller: Caller) -> Q | None:
    """The filter on `Clarification` (within the caller's tenant) to what the caller may
    read, or None when the caller reads the whole tenant: a single `EXISTS` over the
    source permission rows (graph.access.source_readable_q)."""
    if caller.sees_whole_tenant:
        return None
    return source_readable_q(caller.user, source="target__source")


def readable_clarifications(caller: Caller) -> QuerySet[Clarification]:
    """Clarifications of the caller's tenant about facts from sources the caller may read."""
    qs = Clarification.objects.filter(tenant=caller.tenant)
    readable = readable_clarification_q(caller)
    return qs if readable is None else qs.filter(readable)


def routing_jobs(clarification: Clarification, *, active: bool = False) -> QuerySet[Job]:
    """The clarification's routing jobs (kind `clarify:temporal`, subject its id), oldest
    first — a re-ask supersedes the earlier one, so the latest is the last; `active`:
    only those still pending or leased."""
    jobs = Job.objects.filter(kind=CLARIFY_JOB_KIND, subject=str(clarification.pk))
    if active:
        jobs = jobs.filter(status__in=[JobStatus.PENDING, JobStatus.LEASED])
    return jobs.order_by("id")


def unresolved_post_binding_conflicts(responses: list[ResponseRecord]) -> list[ResponseRecord]:
    """The post-binding conflicts no steward has acted on yet: those after the latest
    steward-override response (in `seq` order). A steward resolves them by an explicit
    override that upholds the bound interval (the rule: clarify.answering.
    unresolved_conflicts, which the answer's decision uses)."""
    unresolved = {p.id for p in unresolved_conflicts([Prior.of(r) for r in responses])}
    return [r for r in responses if r.pk in unresolved]


def unresolved_post_binding_conflict_q() -> Q:
    """`Clarification` filter: answered, with a post-binding conflict newer than the latest
    steward override (the queryset form of `unresolved_post_binding_conflicts`)."""
    latest_override = (
        ResponseRecord.objects.filter(
            clarification=OuterRef("clarification"), binding_status=BindingStatus.STEWARD_OVERRIDE
        )
        .order_by("-seq")
        .values("seq")[:1]
    )
    unresolved = ResponseRecord.objects.filter(
        clarification=OuterRef("pk"),
        binding_status=BindingStatus.CONFLICTING,
        outcome__postBinding=True,
        seq__gt=Coalesce(Subquery(latest_override), Value(0)),
    )
    return Q(state=State.ANSWERED) & Q(Exists(unresolved))


def needs_steward_attention_q() -> Q:
    """Conflicted, expired and dead-lettered at any severity; open, attested and partially
    confirmed at high or critical (architecture page `needs_steward_attention`); and
    answered ones with a post-binding conflict no steward has resolved yet."""
    return (
        Q(state__in=ATTENTION_ALWAYS)
        | Q(state__in=ATTENTION_IF_SEVERE, severity__in=(Severity.HIGH, Severity.CRITICAL))
        | unresolved_post_binding_conflict_q()
    )


# The events that route a clarification to a candidate: its current routing attempt is
# the one its latest such event is about (a re-ask's new job starts again at 0).
ROUTING_EVENTS = ("delivered", "digested", "delegated", "skipped")


def waiting_on_away_q() -> Q:
    """Open questions waiting on someone away today (issue 32): not closed, and whose
    current routing attempt — their latest routing event (`ROUTING_EVENTS`, in the
    chain's order) — skipped its candidate `PERSON_AWAY`, that candidate a person of the
    clarification's own tenant whose away runs through today or later. One that moved
    on to someone else (asked, or skipped for another reason) no longer waits on them."""
    away = {
        (tenant, str(pk))
        for tenant, pk in Person.objects.filter(away_until__gte=timezone.now().date()).values_list(
            "tenant_id", "pk"
        )
    }
    if not away:
        return Q(pk__in=[])
    skips = AuditEvent.objects.filter(
        type="skipped",
        detail__reason=str(SkipReason.PERSON_AWAY),
        detail__candidate__in=sorted({pk for _, pk in away}),
        tenant_id__in={tenant for tenant, _ in away},
    ).exclude(clarification__state__in=CLOSED_STATES)
    candidates = {
        (clar, tenant)
        for clar, tenant, candidate in skips.values_list(
            "clarification_id", "tenant_id", "detail__candidate"
        )
        if (tenant, candidate) in away
    }
    latest: dict[Any, tuple[str, dict[str, Any]]] = {}
    routing = AuditEvent.objects.filter(
        clarification_id__in={clar for clar, _ in candidates}, type__in=ROUTING_EVENTS
    ).order_by(F("seq").asc(nulls_first=True), "at", "id")
    for clar, type_, detail in routing.values_list("clarification_id", "type", "detail"):
        latest[clar] = (type_, detail if isinstance(detail, dict) else {})
    waiting = [
        clar
        for clar, tenant in candidates
        if clar in latest
        and latest[clar][0] == "skipped"
        and latest[clar][1].get("reason") == SkipReason.PERSON_AWAY
        and (tenant, latest[clar][1].get("candidate")) in away
    ]
    return Q(pk__in=waiting) & ~Q(state__in=CLOSED_STATES)


def needs_steward_attention(clarification: Clarification) -> bool:
    """The predicate form of `needs_steward_attention_q` for one clarification."""
    if clarification.state == State.ANSWERED:
        responses = list(clarification.responses.order_by("seq"))
        return bool(unresolved_post_binding_conflicts(responses))
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
    """The clarifications referenced by these versions' provenance (one query), each
    annotated with `has_attestation` and `has_other_response` (EXISTS subqueries over its
    recorded responses) for `is_attestation_only`."""
    ids = {v.provenance.get("clarification") for v in versions}
    ids.discard(None)
    if not ids:
        return {}
    responses = ResponseRecord.objects.filter(clarification=OuterRef("pk"))
    qs = Clarification.objects.filter(pk__in=ids).annotate(
        has_attestation=Exists(responses.filter(binding_status=BindingStatus.ATTESTATION)),
        has_other_response=Exists(responses.exclude(binding_status=BindingStatus.ATTESTATION)),
    )
    return {str(c.pk): c for c in qs}


def is_attestation_only(clarification: Clarification) -> bool:
    """The fact's only human support is attestation (CONTRACT §3.3 `human_attestation`):
    derived from the recorded responses, not the state, so it survives the lifecycle
    (e.g. an attested clarification that is later dead-lettered). Needs the annotations of
    `clarifications_for_versions`."""
    return (
        clarification.fact_version_tx is None
        and bool(getattr(clarification, "has_attestation", False))
        and not getattr(clarification, "has_other_response", True)
    )


def pending_notes(versions: list[NodeVersion]) -> dict[str, PendingNote]:
    """The graph's record seam (`graph.api.records.PENDING_NOTES`): for each
    clarification these pending versions depend on, its caveat, and `human_attestation`
    when attestation is the fact's only human support, whatever the lifecycle state."""
    return {
        pk: PendingNote(
            caveat=pending_caveat(c),
            evidence_class=EvidenceClass.HUMAN_ATTESTATION if is_attestation_only(c) else None,
        )
        for pk, c in clarifications_for_versions(versions).items()
    }
