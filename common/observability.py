"""Structured JSON logs with a request id, and the Prometheus metrics every process
records (served by telha.metrics at /metrics).

The request id comes from `X-Request-ID` (or is generated), is returned in the response,
attached to every log line, stored on jobs enqueued during the request and restored by
the worker that runs them — so one id follows a clarification from submission through
delivery to binding.

Metrics are `prometheus_client` counters and histograms. With `PROMETHEUS_MULTIPROC_DIR`
set (production: gunicorn workers and job clusters on one host share the directory) each
process writes its values to memory-mapped files there and a scrape adds them up, so
every scrape reports the same totals whichever worker answers it; without it (make run,
tests) they live in this process.
"""

import contextvars
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Values are files there: a process started before the directory would fail on its
    # first sample (gunicorn.conf.py and the production guide create it too).
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)

import prometheus_client  # after the directory exists

# `_created` series are per process, meaningless once several processes are added up.
prometheus_client.disable_created_metrics()
# Our metrics only (not the client's process and GC collectors, which multiprocess mode
# cannot add up): scraped by telha.metrics.
PROCESS_REGISTRY = prometheus_client.CollectorRegistry()

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0)
ANSWER_ENDPOINT = "clarification-answer"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
DELIVERY_EVENTS = frozenset({"delivered", "skipped", "digested", "delivery_failed", "escalated"})


def _histogram(name: str, documentation: str, *labels: str) -> prometheus_client.Histogram:
    return prometheus_client.Histogram(
        name, documentation, labels, buckets=LATENCY_BUCKETS, registry=PROCESS_REGISTRY
    )


def _counter(name: str, documentation: str, *labels: str) -> prometheus_client.Counter:
    return prometheus_client.Counter(name, documentation, labels, registry=PROCESS_REGISTRY)


ANSWER_LATENCY = _histogram(
    "telha_answer_latency_seconds",
    "POST /v1/clarifications/{id}/answer latency by outcome (bound, partial_confirmation, "
    "attestation, conflict, or the error code of a refusal).",
    "outcome",
)
HTTP_REQUESTS = _counter(
    "telha_http_requests",
    "Requests by endpoint (the resolved URL name), method and status.",
    "endpoint",
    "method",
    "status",
)
HTTP_LATENCY = _histogram(
    "telha_http_request_duration_seconds",
    "Request latency by endpoint (the resolved URL name) and method.",
    "endpoint",
    "method",
)
AUDIT_EVENTS = _counter("telha_audit_events", "Audit events appended (committed), by type.", "type")
DELIVERY_EVENT_COUNTS = _counter(
    "telha_delivery_events",
    "Deliveries, skips, digests, failures and escalations (committed), by reason.",
    "event",
    "reason",
)

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def current_request_id() -> str:
    return request_id_var.get()


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        rid = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        # For RequestIdFilter: Django logs a 4xx after the middleware returned, with the request.
        request.request_id = rid  # type: ignore[attr-defined]  # HttpRequest declares no such slot
        token = request_id_var.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = rid
        return response


def endpoint_of(request: HttpRequest) -> str:
    """The request's endpoint as a metric label: the resolved URL's name (`node`,
    `admin:index`, `hook-slack-events`; the view's dotted path when unnamed), `static`
    for static files, `unmatched` otherwise — never the raw path."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return str(match.view_name)
    if request.path_info.startswith("/" + str(settings.STATIC_URL).lstrip("/")):
        return "static"
    return "unmatched"


def answer_outcome(response: HttpResponse) -> str:
    """The answer's `outcome` (2xx), or the error code of a refusal."""
    data = getattr(response, "data", None)
    if isinstance(data, dict):
        value = data.get("outcome") if response.status_code < 300 else data.get("code")
        if isinstance(value, str) and value:
            return value[:40]
    return "error" if response.status_code >= 400 else "unknown"


class MetricsMiddleware:
    """Counts and times every request by endpoint (outermost: static files included),
    and the answer endpoint by outcome."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        endpoint = endpoint_of(request)
        method = request.method if request.method in METHODS else "other"
        HTTP_REQUESTS.labels(endpoint, method, str(response.status_code)).inc()
        HTTP_LATENCY.labels(endpoint, method).observe(elapsed)
        if endpoint == ANSWER_ENDPOINT and method == "POST":
            ANSWER_LATENCY.labels(answer_outcome(response)).observe(elapsed)
        return response


def audit_events_count(events: Iterable[tuple[str, str]]) -> None:
    """Count appended audit events `(type, reason)` once their transaction commits (at
    once outside one): a rolled-back delivery is not counted."""
    appended = list(events)
    if not appended:
        return

    def count() -> None:
        for kind, reason in appended:
            AUDIT_EVENTS.labels(kind[:40]).inc()
            if kind in DELIVERY_EVENTS:
                DELIVERY_EVENT_COUNTS.labels(kind, reason[:64]).inc()

    transaction.on_commit(count)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # Django logs 4xx responses ("Not Found: …") after the middleware chain has
        # returned; those records carry the request, which carries its id.
        request = getattr(record, "request", None)
        record.request_id = request_id_var.get() or getattr(request, "request_id", "")
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestId": getattr(record, "request_id", "") or None,
        }
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)
