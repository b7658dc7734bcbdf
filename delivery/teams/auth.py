"""Verifying Bot Framework tokens on inbound Teams activities: RS256, issuer
`https://api.botframework.com`, audience = TEAMS_APP_ID, expiry with 5 minutes of skew,
keys from the OpenID metadata's JWKS (cached; refetched on an unknown key id, at most once
per `JWKS_REFRESH_COOLDOWN_SECONDS` so forged key ids cannot make every request fetch the
JWKS), and, once the activity is read (`check_activity`), the token's `serviceurl` claim
equal to the activity's `serviceUrl` and the signing key endorsed for the activity's
channel: the Bot Framework publishes each key with the channels it may sign for
(`"endorsements": ["msteams", …]` in the JWKS), and a token is only valid for an activity
whose `channelId` its key's endorsements include (Bot Framework authentication spec).
The endorsements are read from the key PyJWT's `PyJWKClient` resolved, which keeps the
JWK as published."""

import threading
import time
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings

ISSUER = "https://api.botframework.com"
TEAMS_CHANNEL = "msteams"
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


@dataclass(frozen=True)
class VerifiedToken:
    """A token's verified claims and the channels its signing key is endorsed for."""

    claims: dict[str, Any]
    endorsements: tuple[str, ...]


def _endorsements(key: jwt.PyJWK) -> tuple[str, ...]:
    published = key._jwk_data.get("endorsements")  # the JWK as the JWKS published it
    if not isinstance(published, list):
        return ()
    return tuple(e for e in published if isinstance(e, str))


def verify_token(authorization: str) -> VerifiedToken:
    """The verified claims of a `Bearer` token and its key's endorsements, or
    `TeamsAuthError`."""
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
        claims = jwt.decode(
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
    return VerifiedToken(claims=claims, endorsements=_endorsements(key))


def check_activity(token: VerifiedToken, activity: dict[str, Any]) -> None:
    """The token may speak for this activity: its `serviceurl` claim is the activity's
    `serviceUrl`, the activity is a Teams one (`channelId` "msteams": this hook binds
    Teams identities only), and its key is endorsed for that channel."""
    check_service_url(token.claims, activity)
    channel = activity.get("channelId")
    if channel != TEAMS_CHANNEL:
        raise TeamsAuthError("not a Microsoft Teams activity")
    if channel not in token.endorsements:
        raise TeamsAuthError("the signing key is not endorsed for the activity's channel")


def check_service_url(claims: dict[str, Any], activity: dict[str, Any]) -> None:
    claimed = str(claims.get("serviceurl") or claims.get("serviceUrl") or "").rstrip("/")
    actual = str(activity.get("serviceUrl") or "").rstrip("/")
    if not claimed or claimed != actual:
        raise TeamsAuthError("serviceurl claim does not match the activity")
