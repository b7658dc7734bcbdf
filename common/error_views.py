"""Django's error views (`handler400/403/404/500`), in the contract's error shape on the
API and hook paths.

DRF renders errors raised inside its views, but some requests never reach one: a path
that resolves to no view (`/v1/nodes/a%2Fb/history`: the decoded `/` matches no route),
a `SuspiciousOperation` raised outside DRF, an exception DRF re-raises. On `/v1/…` and
`/hooks/…` those answer `{"code", "detail"}` as JSON; other paths (admin, inbox,
sign-in) keep Django's HTML pages.
"""

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from common.codes import ErrorCode

JSON_PREFIXES = ("/v1/", "/hooks/")
# SCIM's own error body (RFC 7644 §3.12) on /scim/ (CONTRACT §3.7).
SCIM_PREFIX = "/scim/"
SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def _scim_error(status: int, detail: str) -> JsonResponse:
    body = {"schemas": [SCIM_ERROR], "status": str(status), "detail": detail}
    return JsonResponse(body, status=status, content_type="application/scim+json")


def contract_error(
    request: HttpRequest, status: int, code: str, detail: str
) -> HttpResponse | None:
    """The error in the contract's shape for an API, hook or SCIM path; None elsewhere
    (Django's own page then)."""
    if request.path_info.startswith(SCIM_PREFIX):
        return _scim_error(status, detail)
    if request.path_info.startswith(JSON_PREFIXES):
        return JsonResponse({"code": code, "detail": detail}, status=status)
    return None


def bad_request(request: HttpRequest, exception: Any = None) -> HttpResponse:
    response = contract_error(
        request, 400, ErrorCode.MALFORMED_REQUEST, "The request was not understood."
    )
    return response or defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Any = None) -> HttpResponse:
    response = contract_error(
        request, 403, ErrorCode.PERMISSION_DENIED, "This request is not allowed."
    )
    return response or defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Any = None) -> HttpResponse:
    response = contract_error(request, 404, ErrorCode.NOT_FOUND, "No such resource.")
    return response or defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    response = contract_error(
        request, 500, ErrorCode.INTERNAL_ERROR, "An unexpected error occurred."
    )
    return response or defaults.server_error(request)


@csrf_exempt
def unmatched(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The last route under `/v1/`, `/hooks/` and `/scim/`: a path no view serves is the
    contract's 404 (`{"code": "NOT_FOUND"}`, or SCIM's error body) whatever `DEBUG` says —
    Django answers an unresolved path with its HTML debug page under `DEBUG=1` before any
    `handler404` runs. A GET of a path missing only its trailing slash is redirected to it,
    as `APPEND_SLASH` does for unresolved paths."""
    path = request.path_info
    if settings.APPEND_SLASH and request.method in ("GET", "HEAD") and not path.endswith("/"):
        try:
            match = resolve(f"{path}/")
        except Resolver404:
            match = None
        if match is not None and match.func is not unmatched:
            return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
    return page_not_found(request)
