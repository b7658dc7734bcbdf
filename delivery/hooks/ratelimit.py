"""Rate limits on /hooks/* (Slack and Teams), counted in the Django cache.

Two fixed one-minute windows, each allowing `HOOK_RATE_LIMIT_PER_MINUTE` requests:

- **per client IP** (`REMOTE_ADDR`; a proxy in front must set it from the forwarded
  address): `hook_rate_limited` wraps every hook view and answers before the request
  body is read, verified or parsed;
- **per tenant**, once the request is verified and the tenant is known: for Slack
  interactivity that is the tenant of the delivery record the card's nonce belongs to;
  for Slack events (which carry no nonce) the Slack `team_id` stands in for the tenant.
  Teams card actions likewise count against their nonce's tenant; Teams activities
  without a nonce against the Azure AD tenant (`teams-tenant:<id>`).
  The hook calls `rate_limit_hit("tenant", …)` and answers `too_many_requests(…)`.

Counting per tenant only after verification means forged requests cannot spend a
tenant's budget; they spend their IP's budget instead.

Over the limit: `429 {"code": "RATE_LIMITED", "detail": …}` with `Retry-After` (seconds
to the end of the window).

The counters live in the shared cache (`CACHE_URL=redis://…` in production), so the limit
holds across every process: `cache.add` then `cache.incr` (Redis `SET NX`, `INCRBY`), each
atomic, never read-modify-write. A cache that does not answer (Redis down) is
`CacheUnavailable`, which every hook answers `503 {"code": "SERVICE_UNAVAILABLE"}` with
`Retry-After` — never a 500, and nothing is processed (`hook_rate_limited` for the whole
view; slack-bolt's middleware answers it itself, `slack.before_authorize`).
"""

import functools
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

from common.codes import HookError
from common.errors import ServiceUnavailable

from .errors import hook_error

WINDOW_SECONDS = 60
KEY_PREFIX = "telha:hookrl"
RETRY_AFTER_UNAVAILABLE = 5
# What a cache that does not answer raises: redis-py's errors, socket errors otherwise.
CACHE_ERRORS: tuple[type[Exception], ...] = (redis.RedisError, OSError)


class CacheUnavailable(ServiceUnavailable):
    default_detail = "The shared cache is unavailable; retry shortly."


def cache_add(key: str, value: Any, timeout: int) -> bool:
    """`cache.add` (atomic: Redis `SET NX`), `CacheUnavailable` when the cache is down."""
    try:
        return bool(cache.add(key, value, timeout=timeout))
    except CACHE_ERRORS as exc:
        raise CacheUnavailable() from exc


def rate_limit_hit(scope: str, ident: str, *, now: float | None = None) -> int | None:
    """Count one request for (scope, ident); returns the Retry-After seconds when over the
    limit, else None."""
    limit = int(settings.HOOK_RATE_LIMIT_PER_MINUTE)
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    key = f"{KEY_PREFIX}:{scope}:{ident[:200]}:{window}"
    try:
        count = _count(key)
    except CACHE_ERRORS as exc:
        raise CacheUnavailable() from exc
    if count > limit:
        return max(1, WINDOW_SECONDS - int(now) % WINDOW_SECONDS)
    return None


def _count(key: str) -> int:
    """One more request in the window `key`: the count so far, this one included."""
    if cache.add(key, 1, timeout=WINDOW_SECONDS * 2):
        return 1
    try:
        return int(cache.incr(key))
    except ValueError:  # evicted between add and incr: this request starts it again
        cache.add(key, 1, timeout=WINDOW_SECONDS * 2)
        return 1


def rate_limited_body(scope: str) -> dict[str, str]:
    return {
        "code": HookError.RATE_LIMITED,
        "detail": f"Too many hook requests for this {scope}; retry later.",
    }


def too_many_requests(retry_after: int, scope: str) -> HttpResponse:
    body = rate_limited_body(scope)
    return hook_error(429, body["code"], body["detail"], retry_after=retry_after)


def service_unavailable(exc: ServiceUnavailable) -> HttpResponse:
    """`503 SERVICE_UNAVAILABLE` with `Retry-After` (CONTRACT §3 error shape)."""
    body = exc.body()
    return hook_error(
        exc.status_code,
        body.pop("code"),
        body.pop("detail"),
        retry_after=RETRY_AFTER_UNAVAILABLE,
        **body,
    )


def client_ip(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def hook_rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The per-IP limit, checked before anything else happens to the request; a cache
    that does not answer, here or later in the view, is a 503."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            retry_after = rate_limit_hit("ip", client_ip(request))
            if retry_after is not None:
                return too_many_requests(retry_after, "client")
            return view(request, *args, **kwargs)
        except CacheUnavailable as exc:
            return service_unavailable(exc)

    return wrapped
