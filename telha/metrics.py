"""`GET /metrics` in the Prometheus text format (behind METRICS_ENABLED; optionally a
bearer METRICS_TOKEN): clarifications by state and severity, deliveries and skips by
reason, job queue depth and age, answer latency."""

import hmac

from django.conf import settings
from django.db.models import Count, Min
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from clarify.models import AuditEvent, Clarification
from telha.common.observability import ANSWER_LATENCY, Histogram
from telha.jobs.models import Job, JobStatus

DELIVERY_EVENTS = ("delivered", "skipped", "digested", "delivery_failed", "escalated")


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def render_metrics() -> str:
    lines = [
        "# HELP telha_clarifications Clarifications by state and severity.",
        "# TYPE telha_clarifications gauge",
    ]
    for clar_row in (
        Clarification.objects.values("state", "severity").annotate(n=Count("id")).order_by()
    ):
        lines.append(
            f'telha_clarifications{{state="{clar_row["state"]}",'
            f'severity="{clar_row["severity"]}"}} {clar_row["n"]}'
        )
    lines += [
        "# HELP telha_delivery_events_total Deliveries, skips and failures by reason.",
        "# TYPE telha_delivery_events_total counter",
    ]
    events = (
        AuditEvent.objects.filter(type__in=DELIVERY_EVENTS)
        .values("type", "detail__reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    for event_row in events:
        reason = event_row["detail__reason"] or ""
        lines.append(
            f'telha_delivery_events_total{{event="{event_row["type"]}",'
            f'reason="{_escape(reason)}"}} {event_row["n"]}'
        )
    lines += ["# HELP telha_jobs Jobs by kind and status.", "# TYPE telha_jobs gauge"]
    for job_row in Job.objects.values("kind", "status").annotate(n=Count("id")).order_by():
        lines.append(
            f'telha_jobs{{kind="{_escape(job_row["kind"])}",status="{job_row["status"]}"}} '
            f"{job_row['n']}"
        )
    lines += [
        "# HELP telha_job_ready_age_seconds Age of the oldest ready job per kind.",
        "# TYPE telha_job_ready_age_seconds gauge",
    ]
    now = timezone.now()
    ready = (
        Job.objects.filter(status=JobStatus.PENDING, run_after__lte=now)
        .values("kind")
        .annotate(oldest=Min("run_after"))
        .order_by()
    )
    for ready_row in ready:
        age = max(0.0, (now - ready_row["oldest"]).total_seconds())
        lines.append(
            f'telha_job_ready_age_seconds{{kind="{_escape(ready_row["kind"])}"}} {age:.3f}'
        )
    counts, total, seconds = ANSWER_LATENCY.snapshot()
    lines += [
        "# HELP telha_answer_latency_seconds Answer endpoint latency (this process).",
        "# TYPE telha_answer_latency_seconds histogram",
    ]
    for bound, count in zip(Histogram.BUCKETS, counts, strict=True):
        lines.append(f'telha_answer_latency_seconds_bucket{{le="{bound}"}} {count}')
    lines.append(f'telha_answer_latency_seconds_bucket{{le="+Inf"}} {total}')
    lines.append(f"telha_answer_latency_seconds_sum {seconds:.6f}")
    lines.append(f"telha_answer_latency_seconds_count {total}")
    return "\n".join(lines) + "\n"


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_ENABLED:
        raise Http404("metrics are disabled")
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given, token):
            return HttpResponse("unauthorized\n", status=401, content_type="text/plain")
    return HttpResponse(render_metrics(), content_type="text/plain; version=0.0.4")
