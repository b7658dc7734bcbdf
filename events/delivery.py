"""The webhook sender: the `events:webhook` jobs' handler (`register_kind` in `EventsConfig.ready`).

Each message is signed per Standard Webhooks with the endpoint's secret (the
`standardwebhooks` library: `webhook-id`, `webhook-timestamp`, `webhook-signature`) at
each attempt and POSTed; a 2xx completes the job, anything else fails it retryable, so the
lease queue retries it after the kind's exponential backoff and buries it `dead` after the
policy's attempts (re-sendable from the steward admin). A message waits while an earlier
message of its stream (the same endpoint and clarification) is still unsent, so each
receiver hears about a clarification in order."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from django.conf import settings
from django.db.models import Min
from django.utils import timezone
from standardwebhooks import Webhook

from common.codes import WebhookReason
from jobs.models import BACKLOG_STATUSES, Job
from jobs.policies import KindPolicy
from jobs.services import Lease, job_complete, job_fail, lease_postpone

from .models import WebhookEndpoint
from .outbox import WEBHOOK_KIND

# A message waiting for an earlier one is looked at again no sooner than this.
WAIT_SECONDS = 1.0


def webhook_policy() -> KindPolicy:
    options = settings.WEBHOOKS
    return KindPolicy(
        lease_ttl_seconds=int(options["TIMEOUT_SECONDS"]) + 30,
        backoff_base_seconds=float(options["BACKOFF_BASE_SECONDS"]),
        backoff_cap_seconds=float(options["BACKOFF_CAP_SECONDS"]),
        max_attempts=int(options["MAX_ATTEMPTS"]),
    )


def signed_request(secret: str, msg_id: str, body: bytes, now: datetime) -> dict[str, str]:
    """The headers of a message signed with `secret` at `now` (Standard Webhooks)."""
    signature = Webhook(secret).sign(msg_id, now, body.decode("utf-8"))
    return {
        "Content-Type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }


def message_bytes(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload["body"], separators=(",", ":"), ensure_ascii=False).encode()


def _earlier_unsent(job: Job) -> datetime | None:
    """When the earliest unsent message before `job` in its stream is next tried (None:
    none is unsent — a dead one does not hold its successors up)."""
    earlier = Job.objects.filter(
        kind=WEBHOOK_KIND, subject=job.subject, pk__lt=job.pk, status__in=BACKLOG_STATUSES
    )
    return earlier.aggregate(at=Min("run_after"))["at"]


def handle_lease(lease: Lease) -> None:
    job = lease.job
    endpoint = WebhookEndpoint.objects.filter(
        pk=job.payload.get("endpoint"), tenant_id=job.tenant_id
    ).first()
    if endpoint is None:
        result: dict[str, Any] = {"skipped": str(WebhookReason.ENDPOINT_REMOVED)}
        job_complete(tenant=None, job_id=job.pk, token=lease.token, result=result)
        return
    waiting_for = _earlier_unsent(job)
    if waiting_for is not None:
        later = max(waiting_for, timezone.now()) + timedelta(seconds=WAIT_SECONDS)
        lease_postpone(lease, run_after=later, reason=WebhookReason.WAITING_FOR_EARLIER)
        return
    body = message_bytes(job.payload)
    headers = signed_request(endpoint.secret, job.payload["id"], body, datetime.now(UTC))
    timeout = float(settings.WEBHOOKS["TIMEOUT_SECONDS"])
    try:
        response = requests.post(
            endpoint.url, data=body, headers=headers, timeout=(3.0, timeout), allow_redirects=False
        )
    except requests.RequestException as exc:
        reason, detail = WebhookReason.WEBHOOK_UNREACHABLE, f"{type(exc).__name__}: {exc}"[:500]
    else:
        if 200 <= response.status_code < 300:
            result = {"status": response.status_code}
            job_complete(tenant=None, job_id=job.pk, token=lease.token, result=result)
            return
        reason, detail = WebhookReason.WEBHOOK_REJECTED, f"HTTP {response.status_code}"
    job_fail(
        tenant=None, job_id=job.pk, token=lease.token, retryable=True, reason=reason, detail=detail
    )
