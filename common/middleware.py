"""Request-size limits, applied before a request body is read; U+0000 in URLs and forms.

`RequestBodyLimitMiddleware` refuses a request whose declared `Content-Length` is over the
limit for its path with `413 {"code": "PAYLOAD_TOO_LARGE", "detail": …}`, before URL
resolution, rate limiting, signature checks or parsing:

- `/hooks/…` (chat platforms): `HOOK_MAX_BODY_BYTES` (default 1 MB);
- everything else: `DATA_UPLOAD_MAX_MEMORY_SIZE` (12 MB: a 10 MB document or submission
  text plus its envelope).

Django enforces `DATA_UPLOAD_MAX_MEMORY_SIZE` itself only when `request.body` or
`request.POST` is read; DRF's JSON parser reads the stream directly, so without this a JSON
body of any size would be read into memory. Django's own refusals of form bodies
(`RequestDataTooBig`, `TooManyFieldsSent`, `TooManyFilesSent`, normally a 400 HTML page)
are rendered the same JSON way by `process_exception`.

Bodies without a `Content-Length` are not read by Django at all (it reads at most the
declared length), so the declared length bounds what any view can read.

`NulCharacterMiddleware` refuses U+0000 (`%00`) in a path or query string, and in the
fields of an HTML form post (urlencoded or multipart, outside `/v1/` and `/hooks/`) with
400: `MALFORMED_REQUEST` JSON on `/v1/` and `/hooks/`, SCIM's error body on `/scim/`,
Django's 400 page elsewhere.
PostgreSQL can store or compare text with U+0000 in neither text nor jsonb, so one reaching
a lookup or a write (an admin list filter, the inbox answer form) was a 500 there. JSON
bodies are checked by the API's parser (common.parsers); hook bodies are left alone
until their signature is verified.
"""

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from common.codes import ErrorCode

from .error_views import contract_error

HOOKS_PREFIX = "/hooks/"
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def body_limit_for(path: str) -> int:
    if path.startswith(HOOKS_PREFIX):
        return int(settings.HOOK_MAX_BODY_BYTES)
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def payload_too_large(detail: str) -> JsonResponse:
    return JsonResponse({"code": ErrorCode.PAYLOAD_TOO_LARGE, "detail": detail}, status=413)


def declared_length(request: HttpRequest) -> int:
    """The request's Content-Length as Django reads it (absent or invalid: 0, and then
    Django reads no body at all)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except (ValueError, TypeError):
        return 0


class RequestBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = body_limit_for(request.path_info)
        if declared_length(request) > limit:
            return payload_too_large(f"Request bodies over {limit} bytes are refused.")
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig):
            return payload_too_large("The request body is too large.")
        if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
            return payload_too_large("The request has too many fields or files.")
        return None


class NulCharacterMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = request.path_info.startswith(("/v1/", HOOKS_PREFIX))
        query = str(request.META.get("QUERY_STRING", ""))
        if "\x00" in request.path_info or "%00" in query or "\x00" in query:
            return self.refuse(request, api, "The URL contains U+0000.")
        # A form's fields (not its files), parsed as the CSRF check is about to parse them.
        if not api and request.method == "POST" and request.content_type in FORM_TYPES:
            fields = request.POST.lists()
            if any("\x00" in k or any("\x00" in v for v in vs) for k, vs in fields):
                return self.refuse(request, api, "The form contains U+0000.")
        return self.get_response(request)

    @staticmethod
    def refuse(request: HttpRequest, api: bool, detail: str) -> HttpResponse:
        response = contract_error(request, 400, ErrorCode.MALFORMED_REQUEST, detail)
        return response or defaults.bad_request(request, SuspiciousOperation(detail))
