"""Django's error views (`handler400/403/404/500`), in the contract's error shape on the
API and hook paths.

DRF renders errors raised inside its views, but some requests never reach one: a path
that resolves to no view (`/v1/nodes/a%2Fb/history`: the decoded `/` matches no route),
a `SuspiciousOperation` raised outside DRF, an exception DRF re-raises. On `/v1/…` and
`/hooks/…` those answer `{"code", "detail"}` as JSON; other paths (admin, inbox,
sign-in) keep Django's HTML pages.
"""

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

JSON_PREFIXES = ("/v1/", "/hooks/")
# SCIM's own error body (RFC 7644 §3.12) on /scim/ (CONTRACT §3.7).
SCIM_PREFIX = "/scim/"
SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def _scim_error(status: int, detail: str) -> JsonResponse:
    body = {"schemas": [SCIM_ERROR], "status": str(status), "detail": detail}
    return JsonResponse(body, status=status, content_type="application/scim+json")


def _wants_json(request: HttpRequest) -> bool:
    return request.path_info.startswith(JSON_PREFIXES)


def bad_request(request: HttpRequest, exception: Any = None) -> HttpResponse:
    if request.path_info.startswith(SCIM_PREFIX):
        return _scim_error(400, "The request was not understood.")
    if _wants_json(request):
        return JsonResponse(
            {"code": "MALFORMED_REQUEST", "detail": "The request was not understood."}, status=400
        )
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Any = None) -> HttpResponse:
    if request.path_info.startswith(SCIM_PREFIX):
        return _scim_error(403, "This request is not allowed.")
    if _wants_json(request):
        return JsonResponse(
            {"code": "PERMISSION_DENIED", "detail": "This request is not allowed."}, status=403
        )
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Any = None) -> HttpResponse:
    if request.path_info.startswith(SCIM_PREFIX):
        return _scim_error(404, "No such resource.")
    if _wants_json(request):
        return JsonResponse({"code": "NOT_FOUND", "detail": "No such resource."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith(SCIM_PREFIX):
        return _scim_error(500, "An unexpected error occurred.")
    if _wants_json(request):
        return JsonResponse(
            {"code": "INTERNAL_ERROR", "detail": "An unexpected error occurred."}, status=500
        )
    return defaults.server_error(request)
