"""`GET /metrics` in the Prometheus text format (behind METRICS_ENABLED; optionally a
bearer METRICS_TOKEN).

Two sources, both cheap however large the database grows:

- what the processes counted (`common.observability`: requests and latency per
  endpoint, answer latency by outcome, audit and delivery events as they are appended).
  Under gunicorn with `PROMETHEUS_MULTIPROC_DIR` a scrape adds up the files every process
  on the host wrote there (prometheus_client's multiprocess mode), so every worker
  answers the same totals; without it, this process's own values;
- gauges read from the database at scrape time, only ever over the unfinished work and
  through partial indexes that hold just those rows: clarifications not yet answered by
  state and severity (`clarification_unresolved`), jobs pending or leased by kind
  (`job_backlog`), and the age of the oldest ready job per kind. Finished rows — answered
  clarifications, done jobs, the audit trail — are never scanned; their flow is in the
  counters.
"""

import hmac
import os
from collections.abc import Iterator

import prometheus_client
from django.conf import settings
from django.db.models import Count, Min, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from clarify.models import UNRESOLVED_STATES, Clarification
from common.observability import PROCESS_REGISTRY
from events.models import ChainHead
from jobs.models import BACKLOG_STATUSES, Job, JobStatus

CONTENT_TYPE = "text/plain; version=0.0.4"


def _counted(
    name: str, documentation: str, rows: QuerySet, labels: tuple[str, ...]
) -> GaugeMetricFamily:
    """A gauge of how many `rows` there are per combination of the `labels` columns."""
    gauge = GaugeMetricFamily(name, documentation, labels=list(labels))
    grouped = rows.values_list(*labels).annotate(n=Count("*")).order_by()
    for *values, n in grouped:
        gauge.add_metric(values, n)
    return gauge


class DatabaseGauges(Collector):
    """The gauges read from the database at each scrape."""

    def collect(self) -> Iterator[Metric]:
        yield _counted(
            "telha_clarifications",
            "Clarifications not yet answered, by state and severity.",
            Clarification.objects.filter(state__in=UNRESOLVED_STATES),
            ("state", "severity"),
        )
        yield _counted(
            "telha_jobs",
            "Jobs pending or leased, by kind and status.",
            Job.objects.filter(status__in=BACKLOG_STATUSES),
            ("kind", "status"),
        )
        yield self._ready_age()
        yield from self._chain_heads()

    def _chain_heads(self) -> Iterator[GaugeMetricFamily]:
        """Each tenant's published audit chain head (one row a tenant): its length, and
        its hash as a label of an info-style gauge, so a later rewrite of the whole chain
        disagrees with what was scraped."""
        length = GaugeMetricFamily(
            "telha_audit_chain_length", "Events in the tenant's audit chain.", labels=["tenant"]
        )
        head = GaugeMetricFamily(
            "telha_audit_chain_head",
            "The tenant's audit chain head (1; its hash and place as labels).",
            labels=["tenant", "seq", "hash"],
        )
        for slug, seq, hash in ChainHead.objects.values_list("tenant__slug", "seq", "hash"):
            length.add_metric([slug], seq)
            head.add_metric([slug, str(seq), hash], 1)
        yield length
        yield head

    def _ready_age(self) -> GaugeMetricFamily:
        ready = GaugeMetricFamily(
            "telha_job_ready_age_seconds",
            "Age of the oldest job ready to run, by kind.",
            labels=["kind"],
        )
        now = timezone.now()
        oldest = (
            Job.objects.filter(status=JobStatus.PENDING, run_after__lte=now)
            .values_list("kind")
            .annotate(oldest=Min("run_after"))
            .order_by()
        )
        for kind, run_after in oldest:
            ready.add_metric([kind], max(0.0, (now - run_after).total_seconds()))
        return ready


def render_metrics() -> bytes:
    """Every metric in the Prometheus text format."""
    registry = prometheus_client.CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)  # every process's files in the directory
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseGauges())
    return prometheus_client.generate_latest(registry)


class _ThisProcess(Collector):
    """This process's own values, without multiprocess mode."""

    def collect(self) -> Iterator[Metric]:
        yield from PROCESS_REGISTRY.collect()


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_ENABLED:
        raise Http404("metrics are disabled")
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given, token):
            return HttpResponse("unauthorized\n", status=401, content_type="text/plain")
    return HttpResponse(render_metrics(), content_type=CONTENT_TYPE)
