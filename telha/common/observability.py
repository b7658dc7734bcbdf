"""Structured JSON logs with a request id, and in-process answer latency for /metrics.

The request id comes from `X-Request-ID` (or is generated), is returned in the response,
attached to every log line, stored on jobs enqueued during the request and restored by
the worker that runs them — so one id follows a clarification from submission through
delivery to binding."""

import contextvars
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

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
        request.request_id = rid  # type: ignore[attr-defined]
        token = request_id_var.set(rid)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = rid
        if request.path.endswith("/answer") and request.method == "POST":
            ANSWER_LATENCY.observe(time.perf_counter() - started)
        return response


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


class Histogram:
    """A thread-safe cumulative histogram in the Prometheus shape."""

    BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = [0] * len(self.BUCKETS)
        self.total = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        with self._lock:
            self.total += 1
            self.sum += seconds
            for i, bound in enumerate(self.BUCKETS):
                if seconds <= bound:
                    self.counts[i] += 1

    def snapshot(self) -> tuple[list[int], int, float]:
        with self._lock:
            return list(self.counts), self.total, self.sum


ANSWER_LATENCY = Histogram()
