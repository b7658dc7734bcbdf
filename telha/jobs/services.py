"""Writes of the lease queue."""

from typing import Any

from django.conf import settings
from django.db.models.functions import Now

from telha.tenancy.models import Tenant

from .models import Job


def job_enqueue(
    *,
    tenant: Tenant,
    kind: str,
    payload: dict[str, Any],
    priority: int = 2,
    max_attempts: int = 5,
    subject: str = "",
) -> Job:
    """Add a pending job, ready now. Call inside the transaction that makes it necessary."""
    audience, sep, _ = kind.partition(":")
    if not sep or not audience:
        raise ValueError(f"job kind must look like 'audience:name', got {kind!r}")
    if audience == "ingest":
        # Capability flag (spec §6): core wins over any worker-supplied value.
        options = dict(payload.get("options") or {})
        options["clarify"] = bool(settings.CLARIFY["ENABLED"])
        payload = {**payload, "options": options}
    return Job.objects.create(
        tenant=tenant,
        kind=kind,
        audience=audience,
        priority=priority,
        payload=payload,
        max_attempts=max_attempts,
        subject=subject,
        run_after=Now(),
    )
