"""Writes of the clarify loop: opening, routing, answering, binding.

Every state change runs in one transaction under a row lock on the clarification, goes
through the lifecycle (clarify.lifecycle), appends its audit events, and schedules side
effects with `transaction.on_commit`. The answer is decided by a pure function
(clarify.answering.decide) and applied here by `answer_apply`.
"""

import functools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from common.errors import NotFound
from common.times import now_us
from graph.access import person_reader, rights_within
from graph.models import Node, NodeVersion, SourceVersion
from graph.services import CurrentVersionMoved, node_current_version, node_version_write
from jobs.models import Job
from jobs.services import JobSpec, job_enqueue, jobs_enqueue, jobs_finish_for_subject
from tenancy.auth import Caller
from tenancy.models import Person, Tenant

from . import sql
from .answering import (
    NEW,
    AnswerCaller,
    AnswerInput,
    Interval,
    Locked,
    Outcome,
    OutcomeKind,
    Prior,
    decide,
    responder_claimed,
)
from .audit import AuditBuffer, audit_event_append, audit_events_append
from .errors import NoReadPermission, ResponderNotAuthorised
from .lifecycle import clarification_transition
from .models import (
    CLARIFY_JOB_KIND,
    AuditEvent,
    BindingStatus,
    Clarification,
    ClarificationBinding,
    ResponseRecord,
    Severity,
    State,
)
from .planning import PlannedAmbiguity
from .policy import EffectivePolicy, job_priority, quorum_for, severity_for
from .ranking import rank_candidates_many

__all__ = [
    "CLARIFY_JOB_KIND",
    "AnswerCaller",
    "AnswerInput",
    "Outcome",
    "OutcomeKind",
    "audit_event_append",
    "audit_events_append",
]

EMBED_JOB_KIND = "embed:reindex"
EMBED_TEXT_MAX_BYTES = 8192
# Called inside the binding transaction (e.g. delivery closes the card nonces).
BIND_HOOKS: list[Callable[[Clarification], None]] = []


@dataclass(frozen=True)
class ClarificationToOpen:
    """One clarification for `clarifications_open`."""

    clarification_id: uuid.UUID
    target: Node
    planned: PlannedAmbiguity
    source_version: SourceVersion
    dedup_key: str
    extraction_confidence: float


def clarification_open(
    *,
    tenant: Tenant,
    clarification_id: uuid.UUID,
    target: Node,
    planned: PlannedAmbiguity,
    source_version: SourceVersion,
    dedup_key: str,
    extraction_confidence: float,
    policy: EffectivePolicy,
) -> Clarification:
    """Open a clarification for a planned ambiguity (`clarifications_open` of one)."""
    item = ClarificationToOpen(
        clarification_id, target, planned, source_version, dedup_key, extraction_confidence
    )
    return clarifications_open(tenant=tenant, items=[item], policy=policy)[0]


def clarifications_open(
    *, tenant: Tenant, items: list[ClarificationToOpen], policy: EffectivePolicy
) -> list[Clarification]:
    """Open clarifications for planned ambiguities (inside the submissions' transaction):
    severity from policy, quorum policy pinned, the ranking from the graph, an `opened`
    event each, and — above `low` — a routing job each (`clarification_route`'s). One
    statement per table whatever the number (ranking, clarifications, events, jobs)."""
    if not items:
        return []
    rankings = rank_candidates_many(
        targets=[i.target.pk for i in items], max_candidates=settings.CLARIFY["MAX_CANDIDATES"]
    )
    clarifications, events = [], []
    for item in items:
        planned = item.planned
        severity = severity_for(policy, planned.kind, planned.severity_hint)
        quorum_policy, quorum_state = quorum_for(policy, severity)
        clarification = Clarification(
            id=item.clarification_id,
            tenant=tenant,
            target=item.target,
            kind=planned.kind,
            severity=severity,
            state=State.OPEN,
            candidates=planned.candidates,
            asked=[str(p) for p in rankings[item.target.pk]],
            quorum_policy=quorum_policy,
            quorum_state=quorum_state,
            detector_confidence=planned.detector_confidence,
            applied_candidate_confidence=planned.applied_candidate_confidence,
            extraction_confidence=item.extraction_confidence,
            source_version=item.source_version,
            span_start=planned.span[0] if planned.span else None,
            span_end=planned.span[1] if planned.span else None,
            dedup_key=item.dedup_key,
        )
        clarifications.append(clarification)
        detail = {
            "severity": severity,
            "severityHint": planned.severity_hint,
            "ranking": clarification.asked,
            "quorumPolicy": quorum_policy,
        }
        events.append(
            AuditEvent(
                tenant=tenant,
                clarification=clarification,
                at=now_us(),
                type="opened",
                detail=detail,
            )
        )
    Clarification.objects.bulk_create(clarifications)
    audit_events_append(events)
    clarifications_route([c for c in clarifications if c.severity != Severity.LOW])
    return clarifications


def clarification_route(clar: Clarification) -> Job:
    """Enqueue the clarification's routing job over its `asked` ranking (one attempt per
    candidate, then the steward's) and wake the workers once the transaction commits (a
    rolled-back caller wakes nothing). Opening, re-asking and "Ask now" all route here."""
    return clarifications_route([clar])[0]


def clarifications_route(clars: list[Clarification]) -> list[Job]:
    """`clarification_route` of several clarifications: one INSERT, one wake-up."""
    if not clars:
        return []
    specs = [
        JobSpec(
            kind=CLARIFY_JOB_KIND,
            payload={"v": 1, "clarificationId": str(c.pk), "ranking": c.asked},
            priority=job_priority(c.severity),
            max_attempts=len(c.asked) + 1,
            subject=str(c.pk),
        )
        for c in clars
    ]
    jobs = jobs_enqueue(tenant=clars[0].tenant, specs=specs)
    transaction.on_commit(lambda: _kick_jobs(CLARIFY_JOB_KIND))
    return jobs


def _kick_jobs(kind: str) -> None:
    """Wake the job cluster after commit (a no-op until the dispatcher is installed)."""
    from jobs import dispatch

    dispatch.kick(kind)


# ---------------------------------------------------------------------------------------
# Answering: lock → decide → apply


def clarification_answer(
    *,
    caller: AnswerCaller,
    clarification_id: Any,
    answer: AnswerInput,
    readable_by: Caller | None = None,
) -> Outcome:
    """Answer a clarification (CONTRACT §3.2): trust first (a refusal reads nothing about
    the clarification), then the lock, then `decide` over the locked state and its
    responses, then `answer_apply`. A refusal — also an agreeing answer after binding
    (`CLARIFY_ALREADY_ANSWERED`) — is raised and writes nothing; a replay writes nothing
    and returns the prior outcome.

    Read access is checked here, at answer time, for every path (API, CLI, admin, inbox,
    chat taps, the clarify service) with the one read rule (graph.access): the
    responder's own (`person_reader`), or, when `readable_by` is the responder's own key,
    that caller's (its rights may be below the person's; a service token's whole-tenant
    read never stands in for the responder's). A responder who may not read the source gets
    `NoReadPermission` — a 404 like a missing clarification — with nothing recorded but
    the refusal's audit event (`answer_refused`, reason `NO_READ_PERMISSION`), written
    after the answer's transaction rolled back."""
    try:
        return _answer_locked(caller, clarification_id, answer, readable_by)
    except NoReadPermission as refused:
        if refused.clarification is not None:
            audit_event_append(
                tenant=caller.tenant,
                clarification=refused.clarification,
                type="answer_refused",
                detail={
                    "reason": NoReadPermission.reason,
                    "responder": str(refused.responder),
                    "channel": (answer.channel or _default_channel(caller))[:20],
                },
            )
        raise


def _default_channel(caller: AnswerCaller) -> str:
    return "clarify" if caller.clarify_service else "api"


@transaction.atomic
def _answer_locked(
    caller: AnswerCaller, clarification_id: Any, answer: AnswerInput, readable_by: Caller | None
) -> Outcome:
    person, rights = _responder(caller, answer)
    if (
        readable_by is not None
        and readable_by.person is not None
        and readable_by.person.pk == person.pk
    ):
        reader = readable_by
    else:
        reader = person_reader(person)
    clar, current = clarification_lock(caller.tenant, clarification_id, reader)
    clar.tenant = caller.tenant  # the same row (filtered above); saves a query per event
    responses = list(clar.responses.order_by("seq")) if clar.responses_recorded else []
    bound = _bound_interval(clar) if clar.state == State.ANSWERED else None
    outcome = decide(
        Locked.of(clar, bound),
        [Prior.of(r) for r in responses],
        answer,
        responder=person.pk,
        rights=rights,
    )
    if outcome.error is not None:
        raise outcome.error
    if outcome.replayed:
        return outcome
    assert outcome.interval is not None
    channel = answer.channel or _default_channel(caller)
    fields = {
        "responder": person.pk,
        "rights_at_answer_time": rights,
        "answer_index": answer.answer_index,
        "answer_custom": _custom_stored(answer.answer_custom, outcome.interval),
        "interval_from": outcome.interval[0],
        "interval_to": outcome.interval[1],
        "channel": channel[:20],
        "message_ref": answer.message_ref or None,
    }
    return answer_apply(outcome, clar=clar, current=current, fields=fields)


def _responder(caller: AnswerCaller, answer: AnswerInput) -> tuple[Person, str]:
    """The answering person (of the tenant, not erased) and their rights, or a refusal."""
    person_id, rights = responder_claimed(caller, answer)
    person = caller.person
    if (
        person is None
        or person.pk != person_id
        or person.tenant_id != caller.tenant.pk
        or person.erased_at is not None
        or person.deactivated_at is not None
    ):
        person = (
            Person.objects.select_related("user")
            .filter(pk=person_id, tenant=caller.tenant, erased_at__isnull=True)
            .filter(deactivated_at__isnull=True)
            .first()
        )
    if person is None:
        raise ResponderNotAuthorised("The responder is not a person of this tenant.")
    if person.user is not None and not person.user.is_active:  # deprovisioned
        raise ResponderNotAuthorised("The responder is deprovisioned.")
    if caller.clarify_service and not rights_within(rights, person):
        raise ResponderNotAuthorised("The asserted rights are above the responder's role.")
    return person, rights


def _bound_interval(clar: Clarification) -> Interval:
    bound = ClarificationBinding.objects.select_related("node_version").get(clarification=clar)
    return bound.node_version.valid_from, bound.node_version.valid_to


def answer_apply(
    outcome: Outcome,
    *,
    clar: Clarification,
    current: NodeVersion | None,
    fields: dict[str, Any],
) -> Outcome:
    """Apply a recording outcome in the answer's transaction: the response record (with
    the body it returns, kept for replays), its audit events in order, the quorum and state
    changes (through the lifecycle), and for a binding the bound version, the earlier
    responses that counted marked `bound`, the routing job completed. A conflict the
    clarification enters completes its routing job too. Returns the outcome with its
    response id (and, bound, its `factVersionTx`)."""
    now = now_us()
    audit = AuditBuffer(clar, now)
    # A binding answer is evaluated as a candidate (its events say so) and written bound.
    shown = cast(str, outcome.status)
    if shown == BindingStatus.BOUND:
        shown = BindingStatus.BINDING_CANDIDATE
    seq = clar.responses_recorded = clar.responses_recorded + 1
    record = ResponseRecord(
        clarification=clar, seq=seq, binding_status=shown, response_tx=now, **fields
    )
    if outcome.kind is OutcomeKind.BOUND:
        outcome = _binding_apply(outcome, clar, current, record, audit)
    else:
        _recording_apply(outcome, clar, functools.partial(_response_event, audit, record), audit)
    # The HTTP status the answer returns (CONTRACT §3.2), kept with the body for a replay.
    record.binding_status = cast(str, outcome.status)
    record.outcome_status = 200 if outcome.settled else 202
    record.outcome = outcome.body
    sql.response_insert(record)
    if outcome.kind is not OutcomeKind.BOUND:  # bind() wrote the row
        if outcome.entered:
            clarification_jobs_finish(clar)
        sql.clarification_answer_update(clar)
    # The events last: their append locks the tenant's audit chain head until the commit
    # (events.chain), so the answer holds it for no other statement.
    audit.flush()
    return replace(outcome, response_id=record.pk)


def _binding_apply(
    outcome: Outcome,
    clar: Clarification,
    current: NodeVersion | None,
    record: ResponseRecord,
    audit: AuditBuffer,
) -> Outcome:
    """A binding answer: its event, the earlier responses that count marked `bound`, the
    quorum satisfied, then `bind`. Returns the outcome with the bound `factVersionTx`."""
    overriding = record.binding_status == BindingStatus.STEWARD_OVERRIDE
    _response_event(audit, record, "steward_override" if overriding else "response_recorded")
    earlier = [pk for pk in outcome.counting if pk is not NEW]
    if earlier:
        ResponseRecord.objects.filter(pk__in=earlier).update(binding_status=BindingStatus.BOUND)
    _quorum(audit, clar, outcome.quorum)
    version = bind(
        clar,
        current=current,
        interval=cast(Interval, outcome.interval),
        evidence_class=cast(str, outcome.evidence_class),
        responses=[record.pk if pk is NEW else pk for pk in outcome.counting],
        audit=audit,
    )
    return replace(outcome, fact_version_tx=version.tx_from)


def _recording_apply(
    outcome: Outcome, clar: Clarification, event: Callable[..., None], audit: AuditBuffer
) -> None:
    """The events and state changes of an answer that records without binding, in the
    order the audit trail shows them."""
    kind = outcome.kind
    if kind is OutcomeKind.POST_BINDING_CONFLICT:
        event("post_binding_conflict")
        event("steward_notified", reason="post_binding_conflict")
    elif kind is OutcomeKind.BINDING_UPHELD:
        event("steward_override", upheld=True)
        conflicts = [str(pk) for pk in outcome.resolves]
        event("post_binding_conflict_resolved", resolution="binding_upheld", conflicts=conflicts)
    elif kind is OutcomeKind.ATTESTATION:
        clarification_transition(clar, cast(str, outcome.state), audit=audit)
        event("attestation_recorded")
    elif kind is OutcomeKind.CONFLICT:
        event("response_recorded")
        if outcome.entered:
            _quorum(audit, clar, outcome.quorum)
            clarification_transition(clar, State.CONFLICTED, audit=audit)
            event("conflict_entered", intervals=list(outcome.intervals))
        event("steward_notified", reason="conflict")
    elif kind is OutcomeKind.PARTIAL:
        event("response_recorded")
        _quorum(audit, clar, outcome.quorum)
        clarification_transition(clar, State.PARTIALLY_CONFIRMED, audit=audit)
    else:
        raise ValueError(f"{kind} records nothing")


def _response_event(audit: AuditBuffer, record: ResponseRecord, type: str, **extra: Any) -> None:
    """An audit event about the answer's response record."""
    audit.add(
        type,
        {
            "responseId": str(record.pk),
            "responder": str(record.responder),
            "rights": record.rights_at_answer_time,
            "channel": record.channel,
            "bindingStatus": record.binding_status,
            **extra,
        },
    )


def _quorum(audit: AuditBuffer, clar: Clarification, state: str | None) -> None:
    """Move the quorum state (None: unchanged), audited as `quorum_transition`."""
    if state is not None and clar.quorum_state != state:
        audit.add("quorum_transition", {"from": clar.quorum_state, "to": state})
        clar.quorum_state = state


def _custom_stored(custom: Any, interval: Interval) -> dict[str, Any] | None:
    if custom is None:
        return None
    return {
        "validFrom": interval[0],
        "validTo": interval[1],
        "sourceText": custom.get("sourceText"),
    }


def clarification_lock(
    tenant: Tenant, clarification_id: Any, readable_by: Caller | None
) -> tuple[Clarification, NodeVersion | None]:
    """The clarification to answer, locked with its target node in one statement
    (clarification first, then node: the order bind() and every other writer of both
    use), with the target's current version read by the same statement for bind()
    (None if it has none). 404 (`NotFound`) unless it is the tenant's; with `readable_by`,
    `NoReadPermission` (a 404 too) unless that caller may read its source — the one read
    rule (`caller_source_readable_sql`), evaluated by the same statement as a column, so
    a refusal can be audited on the clarification it names. The statement is literal
    (`clarify.sql.clarification_lock_read`)."""
    try:
        pk = Clarification._meta.pk.to_python(clarification_id)
    except ValidationError as exc:
        raise NotFound("No such clarification.") from exc
    if pk is None:
        raise NotFound("No such clarification.")
    locked = sql.clarification_lock_read(tenant, pk, readable_by)
    if locked is None:
        raise NotFound("No such clarification.")
    if not locked.readable:
        refused = NoReadPermission()
        refused.clarification = locked.clarification
        refused.responder = readable_by.person.pk if readable_by and readable_by.person else None
        raise refused
    return locked.clarification, locked.current


# ---------------------------------------------------------------------------------------
# Binding


def embed_text(labels: list[str], properties: dict[str, Any]) -> str:
    """The text an embedding of the fact would be computed from (labels + properties),
    capped; validity and provenance are not part of it."""
    parts = [" ".join(sorted(labels))]
    parts += [f"{k}: {properties[k]}" for k in sorted(properties)]
    return "\n".join(parts).encode()[:EMBED_TEXT_MAX_BYTES].decode(errors="ignore")


def bind_fanout(*, before: NodeVersion, after: NodeVersion) -> dict[str, bool]:
    """Which derived indexes a bound version must refresh (targeted fan-out). The temporal
    and evidence indexes move with every version write; the embedding only when the embed
    text (labels + properties, capped) changed. bind() copies the labels and properties,
    so a correction — a validity-only change — never re-embeds."""
    return {
        "temporal": True,
        "evidence": True,
        "reembed": embed_text(before.labels, before.properties)
        != embed_text(after.labels, after.properties),
    }


def bind(
    clar: Clarification,
    *,
    current: NodeVersion | None,
    interval: Interval,
    evidence_class: str,
    responses: Sequence[Any] = (),
    audit: AuditBuffer | None = None,
) -> NodeVersion:
    """The bitemporal correction: a new version of the target with the answer's interval,
    the extraction confidence restored, no longer pending, `provenance.clarification` set.
    The previous belief stays readable at its transaction time. Targeted fan-out
    (`bind_fanout`): an `embed:` job only when the embed text changed, which a correction
    (labels and properties copied, validity changed) never does.

    `clar` and its target are locked in this transaction (`clarification_lock`: the
    clarification first, then the node), `current` is the target's current version as
    that lock read it (None: read now). `responses`: the response ids the binding counts.
    The `state_changed` and `bound` events go into `audit`: the answer's buffer, which the
    answer inserts last (its append locks the tenant's audit chain head until the
    commit); without one, bind's own, inserted after the routing job is finished and the
    BIND_HOOKS ran."""
    if current is None:
        current = node_current_version(clar.target_id)
    try:
        version = _bound_version_write(clar, current, interval, evidence_class)
    except CurrentVersionMoved:
        # Read before the lock was granted and replaced by its holder (another fact
        # version write on the same node): the lock is held now, so this read is current.
        current = node_current_version(clar.target_id)
        version = _bound_version_write(clar, current, interval, evidence_class)
    assert current is not None  # _bound_version_write refuses a node without a version
    ClarificationBinding(
        clarification=clar,
        node_version=version,
        evidence_class=evidence_class,
        bound_tx=version.tx_from,
    ).save(force_insert=True)
    fanout = bind_fanout(before=current, after=version)
    if fanout["reembed"]:
        job_enqueue(
            tenant=clar.tenant,
            kind=EMBED_JOB_KIND,
            payload={"v": 1, "nodeId": str(clar.target_id), "versionTx": version.tx_from},
            subject=str(clar.target_id),
        )
    clar.fact_version_tx = version.tx_from
    buffered = audit is not None
    audit = audit or AuditBuffer(clar, version.tx_from)
    clarification_transition(clar, State.ANSWERED, at=version.tx_from, audit=audit)
    sql.clarification_answer_update(clar)
    detail = {
        "factVersionTx": version.tx_from,
        "evidenceClass": evidence_class,
        "responses": [str(r) for r in responses],
        "fanout": fanout,
    }
    audit.add("bound", detail, at=version.tx_from)
    clarification_jobs_finish(clar)
    for hook in BIND_HOOKS:
        hook(clar)
    if not buffered:
        audit.flush()
    return version


def _bound_version_write(
    clar: Clarification,
    current: NodeVersion | None,
    interval: tuple[int | None, int | None],
    evidence_class: str,
) -> NodeVersion:
    """The target's next version: `current`'s labels, properties and cited spans (so its
    search text too) with the answer's valid time (bind's correction)."""
    if current is None:
        raise NodeVersion.DoesNotExist("The clarification's target has no current version.")
    return node_version_write(
        node=clar.target,
        labels=current.labels,
        properties=current.properties,
        valid_from=interval[0],
        valid_to=interval[1],
        confidence=clar.extraction_confidence,
        provenance={**current.provenance, "clarification": str(clar.pk)},
        pending=False,
        evidence_class=evidence_class,
        current=current,
        search_text=current.search_text,
    )


def clarification_jobs_finish(clar: Clarification) -> int:
    """An answered clarification completes its routing job so nobody else is asked.

    Called with the clarification locked. A job row another transaction holds is skipped,
    not waited for: leasing and reaping lock the job first and then the clarification
    (`on_lease` / `on_dead` hooks), so waiting here deadlocked. That transaction finds the
    clarification answered once it gets the lock, and the worker completes such a job."""
    return jobs_finish_for_subject(
        kind=CLARIFY_JOB_KIND, subject=str(clar.pk), reason="clarification answered"
    )
