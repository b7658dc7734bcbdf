"""The clarify audit trail: append-only events, and the one function that writes them.

Every event is written by `audit_events_append` — a batch of one or of many, in one
statement (`clarify.sql.audit_events_insert`) — which also logs each under its request id
and counts it for /metrics once committed. Nothing is written to the trail another way
(no `save()`, `create()` or `bulk_create()` of an event).

Apps above clarify take part in the write through `audit_append_hooks_register` without
clarify importing them: a hook before the insert (the tenant's hash chain, `events.chain`)
and one after it (the webhook outbox, `events.outbox`), both in the writer's
transaction."""

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from common.observability import audit_events_count, request_id_var
from common.times import now_us
from tenancy.models import Tenant

from .models import AuditEvent, Clarification
from .sql import audit_events_insert

audit_log = logging.getLogger("clarify.audit")

AppendHook = Callable[[list[AuditEvent]], None]
_BEFORE_INSERT: list[AppendHook] = []
_AFTER_INSERT: list[AppendHook] = []


def audit_append_hooks_register(
    *, before: AppendHook | None = None, after: AppendHook | None = None
) -> None:
    """Run `before` on every batch of events about to be inserted (it may set their
    columns) and `after` on every batch inserted (keys set), in the appending
    transaction; registering a hook twice registers it once."""
    for hook, hooks in ((before, _BEFORE_INSERT), (after, _AFTER_INSERT)):
        if hook is not None and hook not in hooks:
            hooks.append(hook)


def audit_events_append(events: list[AuditEvent], *, request_ids: list[str] | None = None) -> None:
    """Append `events`, in order (never updated or deleted, except GDPR scrubbing), in one
    statement a hundred; each gets its key and is marked saved. Every event is also a log
    line, so it carries the current request id — the submission's, the worker's (restored
    from its job) or the answer's — or, with `request_ids` (a round of several jobs'
    events), each event's own; and is counted for /metrics once its transaction commits
    (`common.observability.audit_events_count`)."""
    if not events:
        return
    if len({e.tenant_id for e in events}) > 1:
        # Tenant by tenant in a fixed order (each one's in the order given): the chain
        # locks each tenant's head as its events go in, so two appends of several
        # tenants never wait for each other's heads in a circle.
        order = sorted(range(len(events)), key=lambda i: str(events[i].tenant_id))
        events = [events[i] for i in order]
        if request_ids is not None:
            request_ids = [request_ids[i] for i in order]
    # One transaction from the chain head's lock to the insert and the outbox, whoever
    # calls (the delivery worker writes its outcomes after its sends, outside one): the
    # head is read and moved under one lock (SQLite: one IMMEDIATE writer). Nested in the
    # caller's transaction it adds nothing (no savepoint): that caller already holds its
    # clarifications. Called outside one, it takes them first, in id order — the head is
    # the last lock a transaction takes, or an event's insert (a key-share lock on its
    # clarification) would wait, head held, for an answer that waits for the head.
    own = not transaction.get_connection().in_atomic_block
    with transaction.atomic(savepoint=False):
        if own:
            clarifications_hold({e.clarification_id for e in events} - {None})
        for hook in _BEFORE_INSERT:
            hook(events)
        audit_events_insert(events)
        for hook in _AFTER_INSERT:
            hook(events)
    counted = []
    for i, event in enumerate(events):
        token = request_id_var.set(request_ids[i]) if request_ids is not None else None
        try:
            audit_log.info("audit %s clarification=%s", event.type, event.clarification_id or "-")
        finally:
            if token is not None:
                request_id_var.reset(token)
        reason = event.detail.get("reason") if isinstance(event.detail, dict) else None
        counted.append((event.type, str(reason or "")))
    audit_events_count(counted)


def clarifications_hold(ids: set[Any]) -> None:
    """Lock these clarifications (FOR NO KEY UPDATE where the database has it), in id
    order: what a transaction that appends audit events takes before the chain head."""
    if ids:
        locked = Clarification.objects.select_for_update(no_key=True).filter(pk__in=ids)
        list(locked.order_by("pk").values_list("pk", flat=True))


def audit_event_append(
    *,
    tenant: Tenant,
    type: str,
    clarification: Clarification | None = None,
    detail: dict[str, Any] | None = None,
    at: int | None = None,
) -> AuditEvent:
    """Append one audit event: `audit_events_append` of one."""
    event = AuditEvent(
        tenant=tenant,
        clarification=clarification,
        at=at if at is not None else now_us(),
        type=type,
        detail=detail or {},
    )
    audit_events_append([event])
    return event


class AuditBuffer:
    """A clarification's audit events appended in order and inserted together by `flush`
    (one statement; ids ascend with the order, so `(at, id)` orders them as separate
    inserts would). The answer writes its events this way."""

    def __init__(self, clar: Clarification, at: int) -> None:
        self.clar, self.at = clar, at
        self.events: list[AuditEvent] = []

    def add(self, type: str, detail: dict[str, Any], at: int | None = None) -> None:
        self.events.append(
            AuditEvent(
                tenant=self.clar.tenant,
                clarification=self.clar,
                at=self.at if at is None else at,
                type=type,
                detail=detail,
            )
        )

    def flush(self) -> None:
        if self.events:
            audit_events_append(self.events)
            self.events = []
