"""A database that goes away: `503`, never `500`, and the next request reconnects.

`DatabaseUnavailableMiddleware` turns a lost or refused database connection
(`django.db.utils.OperationalError` / `InterfaceError`) into `503 Service Unavailable`
with `Retry-After`:

- `/v1/…` and `/hooks/…`: `{"code": "SERVICE_UNAVAILABLE", "detail": …}` (CONTRACT §3
  error shape); other paths (inbox, admin, sign-in): a plain HTML 503 page;
- from a view (DRF re-raises exceptions its handler does not render), through
  `process_exception`;
- from code that swallows the exception and answers 500 itself (slack-bolt answers an
  empty 500 when a listener or middleware raises) or from an inner middleware (Django
  renders those as 500 before they reach us): a 500 answered after a database error
  occurred during this request (`connection.errors_occurred`) becomes the same 503.

Recovery needs nothing from here: with `CONN_HEALTH_CHECKS` (PostgreSQL settings) a
persistent connection is checked before its first use in a request and replaced when the
server went away, and a request that failed closes its connection at the end
(`close_old_connections`), so the first request after the database is back succeeds.
`/healthz` answers its own 503 (telha.health).
"""

import logging
from collections.abc import Callable

from django.db import connection
from django.db.utils import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from common.errors import ServiceUnavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
JSON_PREFIXES = ("/v1/", "/hooks/")
DETAIL = "The database is unavailable; retry shortly."
HTML = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
    "<title>Service unavailable</title></head><body><h1>Service unavailable</h1>"
    "<p>The service is temporarily unavailable. Please try again in a moment.</p>"
    "</body></html>"
)


def is_unavailable_error(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError | InterfaceError)


def unavailable_response(request: HttpRequest) -> HttpResponse:
    response: HttpResponse
    if request.path_info.startswith(JSON_PREFIXES):
        response = JsonResponse({"code": ServiceUnavailable.code, "detail": DETAIL}, status=503)
    else:
        response = HttpResponse(HTML, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if connection.connection is None:
            # No connection yet: a flag left from an earlier request's failed connect would
            # otherwise be read below (connect() clears it when this request connects).
            connection.errors_occurred = False
        response = self.get_response(request)
        if response.status_code == 500 and connection.errors_occurred:
            log.warning("database error during %s %s: answered 503", request.method, request.path)
            return unavailable_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_unavailable_error(exception):
            return None
        log.warning(
            "database unavailable during %s %s: %s: %s",
            request.method,
            request.path,
            type(exception).__name__,
            str(exception).strip()[:300],
        )
        return unavailable_response(request)
