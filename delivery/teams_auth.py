"""Verifying Bot Framework tokens on inbound Teams activities: RS256, issuer
`https://api.botframework.com`, audience = TEAMS_APP_ID, expiry with 5 minutes of skew,
keys from the OpenID metadata's JWKS (cached; refetched on an unknown key id, at most once
per `JWKS_REFRESH_COOLDOWN_SECONDS` so forged key ids cannot make every request fetch the
JWKS), and the token's `serviceurl` claim equal to the activity's `serviceUrl`."""

import threading
import time
from typing import Any

import jwt
import requests
from django.conf import settings

ISSUER = "https://api.botframework.com"
LEEWAY_SECONDS = 300
METADATA_TTL_SECONDS = 24 * 3600
JWKS_REFRESH_COOLDOWN_SECONDS = 30


class TeamsAuthError(Exception):
    """The request is not from the Bot Framework service for this app."""


_lock = threading.Lock()
_clients: dict[str, tuple[float, jwt.PyJWKClient]] = {}


def _jwks_client() -> jwt.PyJWKClient:
    url = settings.TEAMS_OPENID_METADATA_URL
    with _lock:
        cached = _clients.get(url)
        if cached is not None and time.monotonic() - cached[0] < METADATA_TTL_SECONDS:
            return cached[1]
        try:
            metadata = requests.get(url, timeout=10).json()
            jwks_uri = metadata["jwks_uri"]
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            raise TeamsAuthError("OpenID metadata unavailable") from exc
        client = jwt.PyJWKClient(
            jwks_uri,
            cache_jwk_set=True,
            lifespan=METADATA_TTL_SECONDS,
            timeout=10,
            cooldown_duration=JWKS_REFRESH_COOLDOWN_SECONDS,
        )
        _clients[url] = (time.monotonic(), client)
        return client


def reset_cache() -> None:
    with _lock:
        _clients.clear()


def verify_token(authorization: str) -> dict[str, Any]:
    """The verified claims of a `Bearer` token, or `TeamsAuthError`."""
    if not settings.TEAMS_APP_ID:
        raise TeamsAuthError("Teams is not configured")
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise TeamsAuthError("missing bearer token")
    try:
        header = jwt.get_unverified_header(token)
        if header.get("alg") != "RS256":
            raise TeamsAuthError("unexpected algorithm")
        key = _jwks_client().get_signing_key(header.get("kid", ""))
        return jwt.decode(
            token,
            key.key,
            algorithms=["RS256"],
            audience=settings.TEAMS_APP_ID,
            issuer=ISSUER,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud"]},
        )
    except (jwt.PyJWTError, jwt.PyJWKClientError) as exc:
        raise TeamsAuthError(str(exc)) from exc


def check_service_url(claims: dict[str, Any], activity: dict[str, Any]) -> None:
    claimed = str(claims.get("serviceurl") or claims.get("serviceUrl") or "").rstrip("/")
    actual = str(activity.get("serviceUrl") or "").rstrip("/")
    if not claimed or claimed != actual:
        raise TeamsAuthError("serviceurl claim does not match the activity")
