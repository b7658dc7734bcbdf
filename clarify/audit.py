"""The clarify audit trail: append-only events, inserted one by one or as one batch."""

from typing import Any

from telha.common.times import now_us
from telha.tenancy.models import Tenant

from .models import AuditEvent, Clarification


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
            AuditEvent.objects.append(self.events)
            self.events = []
