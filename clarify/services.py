"""Writes of the clarify loop: opening, answering (the outcome matrix), binding, audit.

Every state change runs in one transaction under a row lock on the clarification, appends
its audit events, and schedules side effects with `transaction.on_commit`.
"""

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connections, router, transaction

from telha.common.errors import NotFound
from telha.common.rows import RowColumns, quoted_column, row_columns, row_insert, row_update
from telha.common.times import TimeParseError, now_us, parse_us
from telha.graph.models import EvidenceClass, Node, NodeVersion, SourceVersion
from telha.graph.selectors import source_readable_sql
from telha.graph.services import (
    CurrentVersionMoved,
    node_current_version,
    node_lock_current,
    node_version_write,
)
from telha.jobs.services import JobSpec, job_enqueue, jobs_enqueue, jobs_finish_for_subject
from telha.tenancy.auth import Caller
from telha.tenancy.models import Person, Rights, Tenant

from .errors import (
    AlreadyAnswered,
    ResponderAssertionForbidden,
    ResponderNotAuthorised,
    StewardOverrideForbidden,
    UnparseableAnswer,
)
from .models import (
    AuditEvent,
    BindingStatus,
    Clarification,
    ClarificationBinding,
    QuorumState,
    ResponseRecord,
    Severity,
    State,
)
from .planning import PlannedAmbiguity
from .policy import EffectivePolicy, job_priority, quorum_for, severity_for
from .ranking import rank_candidates_many
from .selectors import unresolved_post_binding_conflicts

CLARIFY_JOB_KIND = "clarify:temporal"
EMBED_JOB_KIND = "embed:reindex"
EMBED_TEXT_MAX_BYTES = 8192
TERMINAL_STATES = {State.ANSWERED}
# Called inside the binding transaction (e.g. delivery closes the card nonces).
BIND_HOOKS: list[Callable[[Clarification], None]] = []
BINDING_CAPABLE = {BindingStatus.BINDING_CANDIDATE, BindingStatus.CONFLICTING}


def audit_event_append(
    *,
    tenant: Tenant,
    type: str,
    clarification: Clarification | None = None,
    detail: dict[str, Any] | None = None,
    at: int | None = None,
) -> AuditEvent:
    """Append one audit event (never updated or deleted, except GDPR scrubbing)."""
    return AuditEvent.objects.create(
        tenant=tenant,
        clarification=clarification,
        at=at if at is not None else now_us(),
        type=type,
        detail=detail or {},
    )


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
    event each, and — above `low` — a `clarify:temporal` routing job each. One statement
    per table whatever the number (ranking, clarifications, events, jobs)."""
    if not items:
        return []
    rankings = rank_candidates_many(
        targets=[i.target.pk for i in items], max_candidates=settings.CLARIFY["MAX_CANDIDATES"]
    )
    clarifications, events, jobs = [], [], []
    for item in items:
        planned = item.planned
        severity = severity_for(policy, planned.kind, planned.severity_hint)
        quorum_policy, quorum_state = quorum_for(policy, severity)
        ranking = rankings[item.target.pk]
        clarification = Clarification(
            id=item.clarification_id,
            tenant=tenant,
            target=item.target,
            kind=planned.kind,
            severity=severity,
            state=State.OPEN,
            candidates=planned.candidates,
            asked=[str(p) for p in ranking],
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
        if severity != Severity.LOW:
            payload = {
                "v": 1,
                "clarificationId": str(clarification.pk),
                "ranking": clarification.asked,
            }
            jobs.append(
                JobSpec(
                    CLARIFY_JOB_KIND,
                    payload,
                    job_priority(severity),
                    len(ranking) + 1,
                    str(clarification.pk),
                )
            )
    Clarification.objects.bulk_create(clarifications)
    AuditEvent.objects.append(events)
    if jobs:
        jobs_enqueue(tenant=tenant, specs=jobs)
        transaction.on_commit(lambda: _kick_jobs(CLARIFY_JOB_KIND))
    return clarifications


def _kick_jobs(kind: str) -> None:
    """Wake the job cluster after commit (a no-op until the dispatcher is installed)."""
    from telha.jobs import dispatch

    dispatch.kick(kind)


# ---------------------------------------------------------------------------------------
# Answering


@dataclass(frozen=True)
class AnswerCaller:
    """Who answers. A `clarify` service asserts a verified responder and their rights; any
    other caller answers only as the person bound to its credential."""

    tenant: Tenant
    clarify_service: bool
    person_id: uuid.UUID | None = None
    rights: str | None = None
    # The credential's person as already loaded (by the key authentication): saves
    # reading it again when it is the responder.
    person: Person | None = None


@dataclass(frozen=True)
class AnswerInput:
    answer_index: Any = None
    answer_custom: Any = None
    steward_override: bool | None = False
    channel: str | None = None
    message_ref: str | None = None
    responder: Any = None
    rights: Any = None
    unknown: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AnswerResult:
    status: int
    body: dict[str, Any]
    replayed: bool = False
    response_id: uuid.UUID | None = None


def _resolve_responder(caller: AnswerCaller, answer: AnswerInput) -> tuple[Person, str]:
    """Trust resolution before anything is read about the clarification (spec §6):
    a forged assertion leaves no trace."""
    if not caller.clarify_service:
        if answer.rights is not None:
            raise ResponderAssertionForbidden("Only the clarify service may assert rights.")
        if answer.responder is not None and str(answer.responder) != str(caller.person_id):
            raise ResponderAssertionForbidden()
        if caller.person_id is None or caller.rights is None:
            raise ResponderNotAuthorised()
        person_id, rights = caller.person_id, caller.rights
    else:
        if answer.responder is None or answer.rights not in Rights.values:
            raise ResponderNotAuthorised(
                "The clarify service must send the verified responder and their rights."
            )
        try:
            person_id = uuid.UUID(str(answer.responder))
        except ValueError as exc:
            raise ResponderNotAuthorised("responder is not a person id.") from exc
        rights = answer.rights
    person = caller.person
    if (
        person is None
        or person.pk != person_id
        or person.tenant_id != caller.tenant.pk
        or person.erased_at is not None
    ):
        person = Person.objects.filter(
            pk=person_id, tenant=caller.tenant, erased_at__isnull=True
        ).first()
    if person is None:
        raise ResponderNotAuthorised("The responder is not a person of this tenant.")
    return person, rights


def normalise_answer(
    clarification: Clarification, answer: AnswerInput
) -> tuple[int | None, int | None]:
    """The answer as a structured interval, or `UnparseableAnswer` (422, nothing written)."""
    if answer.unknown:
        raise UnparseableAnswer(f"Unknown field(s): {', '.join(answer.unknown[:5])}.")
    if answer.steward_override is None:
        raise UnparseableAnswer("stewardOverride must be true or false.")
    has_index = answer.answer_index is not None
    has_custom = answer.answer_custom is not None
    if has_index == has_custom:
        raise UnparseableAnswer("Send exactly one of answerIndex or answerCustom.")
    if has_index:
        index = answer.answer_index
        if isinstance(index, bool) or not isinstance(index, int):
            raise UnparseableAnswer("answerIndex must be an integer.")
        if not 0 <= index < len(clarification.candidates):
            raise UnparseableAnswer(f"answerIndex {index} is not a candidate.")
        cand = clarification.candidates[index]
        return cand.get("validFrom"), cand.get("validTo")
    custom = answer.answer_custom
    if not isinstance(custom, dict) or set(custom) - {"validFrom", "validTo", "sourceText"}:
        raise UnparseableAnswer("answerCustom is {validFrom, validTo, sourceText}.")
    source_text = custom.get("sourceText")
    if source_text is not None and (not isinstance(source_text, str) or len(source_text) > 2000):
        raise UnparseableAnswer("sourceText must be a string of at most 2000 characters.")
    try:
        vf = parse_us(custom["validFrom"]) if custom.get("validFrom") is not None else None
        vt = parse_us(custom["validTo"]) if custom.get("validTo") is not None else None
    except TimeParseError as exc:
        raise UnparseableAnswer(f"answerCustom: {exc}") from exc
    if vf is None and vt is None:
        raise UnparseableAnswer("answerCustom needs validFrom or validTo.")
    if vf is not None and vt is not None and vf >= vt:
        raise UnparseableAnswer("validFrom must be before validTo.")
    return vf, vt


def _outcome_body(outcome: str, **fields: Any) -> dict[str, Any]:
    return {"outcome": outcome, **fields}


OUTCOME_KEY_ORDER = (
    "outcome",
    "state",
    "factVersionTx",
    "quorumSatisfied",
    "quorumRemaining",
    "postBinding",
)


def _outcome_ordered(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored outcome in the key order it was first returned in (PostgreSQL's jsonb
    does not keep key order; a replay must be byte-identical)."""
    rank = {k: i for i, k in enumerate(OUTCOME_KEY_ORDER)}
    return dict(sorted(stored.items(), key=lambda kv: rank.get(kv[0], len(rank))))


@transaction.atomic
def clarification_answer(
    *,
    caller: AnswerCaller,
    clarification_id: Any,
    answer: AnswerInput,
    readable_by: Caller | None = None,
) -> AnswerResult:
    """The answer endpoint's outcome matrix (CONTRACT §3.2), in the architecture page's
    order: trust → normalise → idempotent replay → steward-override check (before the
    post-binding and attestation checks: an unauthorised override flag is refused, not
    downgraded) → post-binding → steward override → attestation → active set (conflict /
    partial confirmation / bound).

    After binding, a steward's explicit override naming the bound interval resolves the
    post-binding conflicts recorded since the last steward override: the binding is
    upheld (`200 bound` with the existing `factVersionTx`, no new version) and the
    clarification leaves the needs-attention set. Without such conflicts it is
    `409 CLARIFY_ALREADY_ANSWERED`, like any agreeing late answer.

    `readable_by` optionally restricts the answer to the clarifications that caller may
    read (clarify.selectors.readable_clarification_q); others are 404 like a missing
    one."""
    person, rights = _resolve_responder(caller, answer)
    clar, current = clarification_lock(caller.tenant, clarification_id, readable_by)
    clar.tenant = caller.tenant  # the same row (filtered above); saves a query per event
    interval = normalise_answer(clar, answer)
    override = bool(answer.steward_override)
    responses = list(clar.responses.order_by("seq")) if clar.responses_recorded else []
    mine = [r for r in responses if r.responder == person.pk]
    unresolved = (
        unresolved_post_binding_conflicts(responses) if clar.state == State.ANSWERED else []
    )
    # Resolving a dispute is not overriding the quorum: allowed whatever the pinned policy
    # says about overrides (like a conflicted clarification).
    override_allowed = rights == Rights.STEWARD and (
        clar.state == State.CONFLICTED
        or bool(unresolved)
        or bool(clar.quorum_policy.get("allowStewardOverride"))
    )
    # A steward's earlier override is not replayed over conflicts recorded after it.
    upholding_again = override and bool(unresolved) and bool(mine) and _was_override(mine[-1])
    if (
        mine
        and not upholding_again
        and mine[-1].interval == interval
        and (
            _was_override(mine[-1]) == override
            # After binding, an allowed override is recorded as a post-binding conflict.
            or (override and override_allowed and mine[-1].outcome.get("postBinding") is True)
        )
    ):
        prior = mine[-1]
        body = _outcome_ordered(prior.outcome)
        return AnswerResult(prior.outcome_status, body, replayed=True, response_id=prior.pk)

    if override and not override_allowed:
        raise StewardOverrideForbidden()

    now = now_us()
    record_fields = {
        "responder": person.pk,
        "rights_at_answer_time": rights,
        "answer_index": answer.answer_index,
        "answer_custom": _custom_stored(answer.answer_custom, interval),
        "interval_from": interval[0],
        "interval_to": interval[1],
        "channel": (answer.channel or ("clarify" if caller.clarify_service else "api"))[:20],
        "message_ref": (answer.message_ref or None),
        "response_tx": now,
    }

    # The new response record is built first (its id goes into the audit events) and
    # inserted once, with its final outcome; the answer's audit events are inserted
    # together, in the order they were appended (`events`).
    events: list[AuditEvent] = []
    if clar.state == State.ANSWERED:
        bound = ClarificationBinding.objects.select_related("node_version").get(clarification=clar)
        if (bound.node_version.valid_from, bound.node_version.valid_to) == interval:
            if not (override and unresolved):
                raise AlreadyAnswered()
            return _binding_upheld(clar, unresolved, record_fields, events, now)
        body = _outcome_body("conflict", state=State.ANSWERED.value, postBinding=True)
        record = _record(clar, BindingStatus.CONFLICTING, 202, body, record_fields)
        _event(events, clar, "post_binding_conflict", record, now)
        _event(events, clar, "steward_notified", record, now, reason="post_binding_conflict")
        _write(record, events)
        _save(clar)
        return AnswerResult(202, body, response_id=record.pk)

    if override:
        record = _record(clar, BindingStatus.STEWARD_OVERRIDE, 200, {}, record_fields)
        _event(events, clar, "steward_override", record, now)
        if clar.quorum_state != QuorumState.NOT_REQUIRED:
            _quorum(events, clar, QuorumState.SATISFIED, now)
        bind(
            clar,
            interval=interval,
            evidence_class=EvidenceClass.STEWARD_OVERRIDE,
            responses=[record.pk],
            events=events,
            target_locked=True,
            current=current,
            before_hooks=lambda v: _write(record, events, outcome=_bound_body(v)),
        )
        return AnswerResult(200, record.outcome, response_id=record.pk)

    if not Rights.at_least(rights, clar.minimum_role):
        if clar.state in (State.OPEN, State.EXPIRED, State.DEAD_LETTERED):
            _transition(events, clar, State.ATTESTED, now)
        body = _outcome_body("attestation", state=clar.state)
        record = _record(clar, BindingStatus.ATTESTATION, 202, body, record_fields)
        _event(events, clar, "attestation_recorded", record, now)
        _write(record, events)
        _save(clar)
        return AnswerResult(202, body, response_id=record.pk)

    # Binding-capable: append, then evaluate the active set including it.
    record = _record(clar, BindingStatus.BINDING_CANDIDATE, 200, {}, record_fields)
    active = _active_set([*responses, record], clar.minimum_role)
    intervals = {r.interval for r in active.values()}
    if clar.state == State.CONFLICTED or len(intervals) > 1:
        body = _outcome_body("conflict", state=State.CONFLICTED.value, postBinding=False)
        status = (
            BindingStatus.CONFLICTING if len(intervals) > 1 else BindingStatus.BINDING_CANDIDATE
        )
        _set_outcome(record, status, 202, body)
        _event(events, clar, "response_recorded", record, now)
        entered = clar.state != State.CONFLICTED
        if entered:
            _quorum(events, clar, QuorumState.CONFLICTED, now)
            _transition(events, clar, State.CONFLICTED, now)
            _event(
                events, clar, "conflict_entered", record, now, intervals=sorted(map(str, intervals))
            )
        _event(events, clar, "steward_notified", record, now, reason="conflict")
        _write(record, events)
        if entered:
            clarification_jobs_finish(clar)
        _save(clar)
        return AnswerResult(202, body, response_id=record.pk)

    required = clar.required_confirmations
    if len(active) < required:
        body = _outcome_body(
            "partial_confirmation",
            state=State.PARTIALLY_CONFIRMED.value,
            quorumRemaining=required - len(active),
        )
        _set_outcome(record, BindingStatus.BINDING_CANDIDATE, 202, body)
        _event(events, clar, "response_recorded", record, now)
        _quorum(events, clar, QuorumState.PENDING, now)
        _transition(events, clar, State.PARTIALLY_CONFIRMED, now)
        _write(record, events)
        _save(clar)
        return AnswerResult(202, body, response_id=record.pk)

    _event(events, clar, "response_recorded", record, now)
    counting = [r.pk for r in active.values()]
    earlier = [pk for pk in counting if pk != record.pk]  # `record` is written bound
    if earlier:
        ResponseRecord.objects.filter(pk__in=earlier).update(binding_status=BindingStatus.BOUND)
    evidence = (
        EvidenceClass.QUORUM_CONFIRMATION if required > 1 else EvidenceClass.HUMAN_CLARIFICATION
    )
    if clar.quorum_state != QuorumState.NOT_REQUIRED:
        _quorum(events, clar, QuorumState.SATISFIED, now)
    bind(
        clar,
        interval=interval,
        evidence_class=evidence,
        responses=counting,
        events=events,
        target_locked=True,
        current=current,
        before_hooks=lambda v: _write(
            record, events, status=BindingStatus.BOUND, outcome=_bound_body(v)
        ),
    )
    return AnswerResult(200, record.outcome, response_id=record.pk)


def clarification_lock(
    tenant: Tenant, clarification_id: Any, readable_by: Caller | None
) -> tuple[Clarification, NodeVersion | None]:
    """The clarification to answer, locked with its target node in one statement
    (clarification first, then node: the order bind() and every other writer of both
    use), with the target's current version read by the same statement for bind()
    (None if it has none). 404 unless it is the tenant's and, with
    `readable_by`, readable by that caller (readable_clarification_q).

    Hand-written SQL (its column lists built once, `row_columns`): the same statement
    from the ORM — FilteredRelation, two select_related, select_for_update(of=…) —
    cost 1.4 ms of CPU to compile per answer, ten times what running it does."""
    connection = connections[router.db_for_write(Clarification)]
    try:
        pk = Clarification._meta.pk.to_python(clarification_id)
    except ValidationError as exc:
        raise NotFound("No such clarification.") from exc
    if pk is None:
        raise NotFound("No such clarification.")
    statement = _lock_statement(connection.alias)
    sql = statement.sql
    params = [
        statement.tenant_key.get_db_prep_value(tenant.pk, connection),
        Clarification._meta.pk.get_db_prep_value(pk, connection),
    ]
    if readable_by is not None and not readable_by.sees_whole_tenant:
        acl, acl_params = source_readable_sql(readable_by.user, statement.source, connection)
        sql += f" AND {acl}"
        params += acl_params
    if connection.features.has_select_for_update_of:
        sql += f" FOR UPDATE OF {statement.lock}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise NotFound("No such clarification.")
    clar_cols, node_cols, version_cols = statement.columns
    a, b = clar_cols.width, clar_cols.width + node_cols.width
    clar = cast(Clarification, clar_cols.instance(row[:a]))
    clar.target = cast(Node, node_cols.instance(row[a:b]))
    return clar, cast(NodeVersion | None, version_cols.instance(row[b:]))


@dataclass(frozen=True)
class _LockStatement:
    sql: str  # up to the ACL condition and the lock clause
    columns: tuple[RowColumns, RowColumns, RowColumns]  # clarification, node, version
    tenant_key: Any  # the field the tenant's key is prepared by
    source: str  # the target's source column, for the ACL condition
    lock: str  # the tables FOR UPDATE OF locks


@functools.cache
def _lock_statement(alias: str) -> _LockStatement:
    """`clarification_lock`'s statement, built once per database."""
    connection = connections[alias]
    q = connection.ops.quote_name
    clar, node, version = Clarification._meta, Node._meta, NodeVersion._meta

    def col(meta: Any, table: str, name: str) -> str:
        return quoted_column(meta.get_field(name), connection, table)

    columns = (
        row_columns(Clarification, clar.db_table, alias),
        row_columns(Node, node.db_table, alias),
        row_columns(NodeVersion, "target_current", alias),
    )
    sql = (
        f"SELECT {', '.join(c.sql for c in columns)} FROM {q(clar.db_table)}"
        f" INNER JOIN {q(node.db_table)}"
        f" ON ({col(clar, clar.db_table, 'target')} = {col(node, node.db_table, 'id')})"
        f" LEFT OUTER JOIN {q(version.db_table)} {q('target_current')}"
        f" ON ({col(node, node.db_table, 'id')} = {col(version, 'target_current', 'node')}"
        f" AND {col(version, 'target_current', 'tx_to')} IS NULL)"
        f" WHERE {col(clar, clar.db_table, 'tenant')} = %s"
        f" AND {col(clar, clar.db_table, 'id')} = %s"
    )
    return _LockStatement(
        sql=sql,
        columns=columns,
        tenant_key=clar.get_field("tenant").target_field,
        source=col(node, node.db_table, "source"),
        lock=f"{q(clar.db_table)}, {q(node.db_table)}",
    )


def _binding_upheld(
    clar: Clarification,
    unresolved: list[ResponseRecord],
    fields: dict[str, Any],
    events: list[AuditEvent],
    now: int,
) -> AnswerResult:
    """A steward's override naming the bound interval after post-binding conflicts: the
    binding stands, the steward's response is recorded as `steward_override`, and the
    conflicts it resolves are named in the audit trail."""
    body = _outcome_body(
        "bound",
        state=State.ANSWERED.value,
        factVersionTx=clar.fact_version_tx,
        quorumSatisfied=True,
    )
    record = _record(clar, BindingStatus.STEWARD_OVERRIDE, 200, body, fields)
    _event(events, clar, "steward_override", record, now, upheld=True)
    _event(
        events,
        clar,
        "post_binding_conflict_resolved",
        record,
        now,
        resolution="binding_upheld",
        conflicts=[str(r.pk) for r in unresolved],
    )
    _write(record, events)
    _save(clar)
    return AnswerResult(200, body, response_id=record.pk)


def _set_outcome(
    record: ResponseRecord, status: str, outcome_status: int, body: dict[str, Any]
) -> None:
    record.binding_status, record.outcome_status, record.outcome = status, outcome_status, body


def _write(
    record: ResponseRecord,
    events: list[AuditEvent],
    *,
    status: str | None = None,
    outcome: dict[str, Any] | None = None,
) -> None:
    """Insert the answer's response record (with its final outcome: `status` and the
    200 `outcome` body of a binding, when given) and its audit events, in order."""
    if outcome is not None:
        _set_outcome(record, status or record.binding_status, 200, outcome)
    row_insert(record)
    _events_write(events)


def _events_write(events: list[AuditEvent]) -> None:
    """Insert buffered audit events in one statement, in the order they were appended
    (ids ascend with it, so `(at, id)` orders them as separate inserts would)."""
    if events:
        AuditEvent.objects.append(events)
        events.clear()


def _was_override(record: ResponseRecord) -> bool:
    return record.binding_status == BindingStatus.STEWARD_OVERRIDE


def _custom_stored(custom: Any, interval: tuple[int | None, int | None]) -> dict[str, Any] | None:
    if custom is None:
        return None
    return {
        "validFrom": interval[0],
        "validTo": interval[1],
        "sourceText": custom.get("sourceText"),
    }


def _bound_body(version: NodeVersion) -> dict[str, Any]:
    return _outcome_body(
        "bound", state=State.ANSWERED.value, factVersionTx=version.tx_from, quorumSatisfied=True
    )


def _active_set(responses: list[ResponseRecord], minimum_role: str) -> dict[Any, ResponseRecord]:
    """Each responder's latest binding-capable response at or above the minimum role."""
    active: dict[Any, ResponseRecord] = {}
    for r in responses:
        if r.binding_status in (BindingStatus.ATTESTATION, BindingStatus.STEWARD_OVERRIDE):
            continue
        if not Rights.at_least(r.rights_at_answer_time, minimum_role):
            continue
        active[r.responder] = r
    return active


def _record(
    clar: Clarification,
    status: str,
    outcome_status: int,
    outcome: dict[str, Any],
    fields: dict[str, Any],
) -> ResponseRecord:
    """The answer's response record, not yet inserted (`_write`); its id is set. Counts it
    in `clar.responses_recorded` (saved with the clarification by every path)."""
    seq = clar.responses_recorded + 1
    clar.responses_recorded = seq
    return ResponseRecord(
        clarification=clar,
        seq=seq,
        binding_status=status,
        outcome_status=outcome_status,
        outcome=outcome,
        **fields,
    )


def _audit(
    events: list[AuditEvent] | None,
    clar: Clarification,
    type: str,
    at: int,
    detail: dict[str, Any],
) -> None:
    """Append an audit event to `events` (inserted later, together), or insert it now."""
    if events is None:
        audit_event_append(tenant=clar.tenant, clarification=clar, type=type, at=at, detail=detail)
    else:
        events.append(
            AuditEvent(tenant=clar.tenant, clarification=clar, at=at, type=type, detail=detail)
        )


def _event(
    events: list[AuditEvent] | None,
    clar: Clarification,
    type: str,
    record: ResponseRecord,
    at: int,
    **extra: Any,
) -> None:
    _audit(
        events,
        clar,
        type,
        at,
        {
            "responseId": str(record.pk),
            "responder": str(record.responder),
            "rights": record.rights_at_answer_time,
            "channel": record.channel,
            "bindingStatus": record.binding_status,
            **extra,
        },
    )


def _transition(events: list[AuditEvent] | None, clar: Clarification, state: str, at: int) -> None:
    if clar.state != state:
        _audit(events, clar, "state_changed", at, {"from": clar.state, "to": state})
        clar.state = state


def _quorum(events: list[AuditEvent] | None, clar: Clarification, state: str, at: int) -> None:
    if clar.quorum_state != state:
        _audit(events, clar, "quorum_transition", at, {"from": clar.quorum_state, "to": state})
        clar.quorum_state = state


_ANSWER_FIELDS = ("state", "quorum_state", "fact_version_tx", "responses_recorded", "updated_at")


def _save(clar: Clarification) -> None:
    row_update(clar, _ANSWER_FIELDS)


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
    interval: tuple[int | None, int | None],
    evidence_class: str,
    responses: list[Any] | None = None,
    events: list[AuditEvent] | None = None,
    before_hooks: Callable[[NodeVersion], None] | None = None,
    target_locked: bool = False,
    current: NodeVersion | None = None,
) -> NodeVersion:
    """The bitemporal correction: a new version of the target with the answer's interval,
    the extraction confidence restored, no longer pending, `provenance.clarification` set.
    The previous belief stays readable at its transaction time. Targeted fan-out
    (`bind_fanout`): an `embed:` job only when the embed text changed, which a correction
    (labels and properties copied, validity changed) never does.

    `events`: audit events buffered by the caller; bind appends its own and inserts them
    all before the routing job is finished and the BIND_HOOKS run. `before_hooks(version)`
    runs just before that (the answer inserts its response record there).
    `target_locked`: `clar.target` was loaded and locked with the clarification in this
    transaction (the answer does), with `current`, its current version as read by that
    statement (the answer's lock: no further read here unless it moved meanwhile)."""
    # Lock the target, then read its current version (once: handed to the write).
    if not target_locked:
        clar.target, current = node_lock_current(clar.target_id)
    elif current is None:
        current = node_current_version(clar.target_id)
    try:
        version = _bound_version_write(clar, current, interval, evidence_class)
    except CurrentVersionMoved:
        # Read before the lock was granted and replaced by its holder (another fact
        # version write on the same node): the lock is held now, so this read is current.
        current = node_current_version(clar.target_id)
        version = _bound_version_write(clar, current, interval, evidence_class)
    assert current is not None  # _bound_version_write refuses a node without a version
    row_insert(
        ClarificationBinding(
            clarification=clar,
            node_version=version,
            evidence_class=evidence_class,
            bound_tx=version.tx_from,
        )
    )
    fanout = bind_fanout(before=current, after=version)
    if fanout["reembed"]:
        job_enqueue(
            tenant=clar.tenant,
            kind=EMBED_JOB_KIND,
            payload={"v": 1, "nodeId": str(clar.target_id), "versionTx": version.tx_from},
            subject=str(clar.target_id),
        )
    clar.fact_version_tx = version.tx_from
    events = [] if events is None else events
    _transition(events, clar, State.ANSWERED, version.tx_from)
    _save(clar)
    _audit(
        events,
        clar,
        "bound",
        version.tx_from,
        {
            "factVersionTx": version.tx_from,
            "evidenceClass": evidence_class,
            "responses": [str(r) for r in responses or []],
            "fanout": fanout,
        },
    )
    if before_hooks is not None:
        before_hooks(version)
    _events_write(events)
    clarification_jobs_finish(clar)
    for hook in BIND_HOOKS:
        hook(clar)
    return version


def _bound_version_write(
    clar: Clarification,
    current: NodeVersion | None,
    interval: tuple[int | None, int | None],
    evidence_class: str,
) -> NodeVersion:
    """The target's next version: `current`'s labels and properties with the answer's
    valid time (bind's correction)."""
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
