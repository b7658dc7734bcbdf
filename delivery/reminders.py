"""The one reminder of a question card (a tenant's `reminderAfterHours`): its job is
enqueued in the transaction that records the card as sent — by the delivery worker
(`worker._write_outcomes`) and by a digest (`digests._flush`) — so a sent card never
lacks its reminder job. The job (`REMINDER_KIND`) is run by `worker.handle_leases`."""

from collections import defaultdict
from datetime import timedelta
from typing import Any

from jobs.models import Job
from jobs.services import JobSpec, jobs_enqueue

from .models import Delivery, DeliveryKind

REMINDER_KIND = "delivery:reminder"


def reminders_enqueue(rows: list[Delivery], hours: dict[Any, float | None]) -> None:
    """One reminder job per question card sent (never a second one for a card, e.g. on a
    re-send), due `hours[tenant]` after its send; none for a tenant whose reminders are
    off. In the caller's transaction: the one that writes the rows as sent."""
    due = [
        r
        for r in rows
        if r.kind == DeliveryKind.QUESTION and r.sent_at is not None and hours.get(r.tenant_id)
    ]
    if not due:
        return
    known = set(
        Job.objects.filter(kind=REMINDER_KIND, subject__in=[str(r.pk) for r in due]).values_list(
            "subject", flat=True
        )
    )
    by_tenant: dict[Any, list[JobSpec]] = defaultdict(list)
    tenants = {}
    for row in due:
        if str(row.pk) in known:
            continue
        delay = hours[row.tenant_id]
        assert delay is not None and row.sent_at is not None
        tenants[row.tenant_id] = row.clarification.tenant
        payload = {"v": 1, "delivery": str(row.pk), "clarificationId": str(row.clarification_id)}
        by_tenant[row.tenant_id].append(
            JobSpec(
                REMINDER_KIND,
                payload,
                max_attempts=1,
                subject=str(row.pk),
                run_after=row.sent_at + timedelta(hours=delay),
            )
        )
    for tenant_id, specs in by_tenant.items():
        jobs_enqueue(tenant=tenants[tenant_id], specs=specs)
