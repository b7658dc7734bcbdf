"""Domain errors carry contract error codes; one DRF handler renders them.

Every error body has the shape `{"code": "UPPER_SNAKE", "detail": "human text", ...}`.
"""

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework import status
from rest_framework.response import Response

from common.codes import ErrorCode


class DomainError(Exception):
    """A refused operation. Subclasses pin the HTTP status and error code."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code: str = ErrorCode.BAD_REQUEST
    default_detail: str = "The request was refused."

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        self.detail = detail or self.default_detail
        self.extra = extra
        super().__init__(self.detail)

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "detail": self.detail, **self.extra}


class NotFound(DomainError):
    status_code = 404
    code = ErrorCode.NOT_FOUND
    default_detail = "Not found."


class PermissionDeniedError(DomainError):
    status_code = 403
    code = ErrorCode.PERMISSION_DENIED
    default_detail = "This credential may not perform that operation."


class Conflict(DomainError):
    status_code = 409
    code = ErrorCode.CONFLICT


class InvalidInput(DomainError):
    status_code = 422
    code = ErrorCode.INVALID_INPUT
    default_detail = "The request is invalid."


class ServiceUnavailable(DomainError):
    """A service the request needs (the database, the shared cache) does not answer."""

    status_code = 503
    code = ErrorCode.SERVICE_UNAVAILABLE
    default_detail = "The service is temporarily unavailable; retry shortly."


class SubmissionInvalid(DomainError):
    status_code = 422
    code = ErrorCode.SUBMISSION_INVALID
    default_detail = "The submission is invalid; nothing was written."

    def __init__(self, errors: list[dict[str, str]], detail: str | None = None) -> None:
        super().__init__(detail, errors=errors)
        self.errors = errors


_DRF_CODES: dict[type[Exception], str] = {
    drf_exceptions.NotAuthenticated: ErrorCode.UNAUTHENTICATED,
    drf_exceptions.AuthenticationFailed: ErrorCode.UNAUTHENTICATED,
    drf_exceptions.PermissionDenied: ErrorCode.PERMISSION_DENIED,
    drf_exceptions.NotFound: ErrorCode.NOT_FOUND,
    drf_exceptions.MethodNotAllowed: ErrorCode.METHOD_NOT_ALLOWED,
    drf_exceptions.NotAcceptable: ErrorCode.NOT_ACCEPTABLE,
    drf_exceptions.UnsupportedMediaType: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    drf_exceptions.Throttled: ErrorCode.RATE_LIMITED,
    drf_exceptions.ParseError: ErrorCode.MALFORMED_REQUEST,
    drf_exceptions.ValidationError: ErrorCode.INVALID_INPUT,
}


def flatten_errors(detail: Any, path: str = "") -> list[dict[str, str]]:
    """DRF's nested error detail as a flat list of `{"path", "message"}`."""
    out: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                sub = path
            elif isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
                sub = f"{path}[{key}]"
            else:
                sub = f"{path}.{key}" if path else str(key)
            out.extend(flatten_errors(value, sub))
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            out.extend({"path": path or "$", "message": str(item)} for item in detail)
        else:
            for index, item in enumerate(detail):
                if item in ({}, [], None):
                    continue
                out.extend(flatten_errors(item, f"{path}[{index}]"))
    else:
        out.append({"path": path or "$", "message": str(detail)})
    return out


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every error as `{"code", "detail", ...}` (CONTRACT §3)."""
    from rest_framework.views import set_rollback

    if isinstance(exc, DomainError):
        set_rollback()
        return Response(exc.body(), status=exc.status_code)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    if not isinstance(exc, drf_exceptions.APIException):
        return None
    set_rollback()
    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), ErrorCode.BAD_REQUEST)
    headers: dict[str, str] = {}
    wait = getattr(exc, "wait", None) if isinstance(exc, drf_exceptions.Throttled) else None
    if wait is not None:
        headers["Retry-After"] = str(int(wait) + 1)
    status_code = exc.status_code
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        status_code = 401
        headers["WWW-Authenticate"] = 'Bearer realm="telha"'
    if isinstance(exc, drf_exceptions.ValidationError):
        status_code = 422  # like InvalidInput: the same code always has the same status
        errors = flatten_errors(exc.detail)
        body: dict[str, Any] = {
            "code": code,
            "detail": "; ".join(f"{e['path']}: {e['message']}" for e in errors[:5]),
            "errors": errors,
        }
    else:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        body = {"code": code, "detail": str(detail)}
    return Response(body, status=status_code, headers=headers)
