"""A hook's error response, one helper for every channel: CONTRACT §3's error shape
`{"code", "detail", …}` as JSON with its status (and `Retry-After` when given), the code
one of `common.codes.HookError`. A request whose signature or token fails is
`401 UNAUTHENTICATED` on every channel (`hook_unauthenticated`).

The body limit is one for every hook too: `HOOK_MAX_BODY_BYTES`, applied to the declared
length before the request is read (`common.middleware.RequestBodyLimitMiddleware`; Django
reads no more than that length, so no hook measures a body again)."""

from typing import Any

from django.http import JsonResponse

from common.codes import HookError


def hook_error(
    status: int, code: HookError | str, detail: str, *, retry_after: int | None = None, **extra: Any
) -> JsonResponse:
    """The refusal `{"code": code, "detail": detail, **extra}` with `status`."""
    response = JsonResponse({"code": str(code), "detail": detail, **extra}, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def hook_unauthenticated(detail: str) -> JsonResponse:
    """A request whose signature (Slack) or token (Teams) failed: nothing was read."""
    return hook_error(401, HookError.UNAUTHENTICATED, detail)


def hook_malformed(detail: str) -> JsonResponse:
    """A verified request that is not shaped as its platform sends it: nothing written."""
    return hook_error(400, HookError.MALFORMED_REQUEST, detail)
