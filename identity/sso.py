"""OpenID Connect sign-in per tenant (CONTRACT §3.8), through Authlib's Django client:
discovery from `<issuer>/.well-known/openid-configuration`, `state` and `nonce` kept in
the session (each usable once), PKCE S256, the code exchanged at the token endpoint and
the id_token verified (signature from `jwks_uri`, `iss`, `aud`, `exp`, `nonce`).

The person signed in is the tenant's active person whose verified email (`email` with
`email_verified: true`) or Entra object id (`oid`, else `sub`) alias matches. Sign-in
never creates a person. Every refusal is a 403 page saying why, with no session."""

import hashlib
import logging
from typing import Any, cast
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
from authlib.integrations.base_client import OAuthError
from authlib.integrations.django_client import DjangoOAuth2App
from authlib.integrations.django_client.integration import DjangoIntegration
from django.conf import settings
from django.contrib.auth import login, logout
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET
from joserfc.errors import JoseError

from tenancy.forms import SignInForm
from tenancy.models import AliasKind, Person
from tenancy.selectors import person_by_alias

from .models import SsoProvider

log = logging.getLogger("telha.sso")

SCOPE = "openid email profile"
DEFAULT_NEXT = "/inbox/"
_NEXT_KEY = "sso_next"
SESSION_BACKEND = "django.contrib.auth.backends.ModelBackend"  # reads the session's user


class Refusal(Exception):
    """A sign-in refused, with the reason shown on the page (and logged)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CachedOidcApp(DjangoOAuth2App):
    """Authlib's Django client with the provider's discovery document and JWKS kept in the
    Django cache for SSO_METADATA_CACHE_SECONDS (not fetched at every login and
    callback). A token signed with a key id not in the cached JWKS makes Authlib fetch
    the JWKS again (`fetch_jwk_set(force=True)`), which refreshes the cache: a rotated
    key works at once. The discovery document must name the configured issuer."""

    def __init__(self, provider: SsoProvider, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.issuer = provider.issuer.rstrip("/")

    def _cache_key(self, what: str) -> str:
        return f"sso:{what}:{hashlib.sha256(self.issuer.encode()).hexdigest()}"

    def load_server_metadata(self) -> dict[str, Any]:
        if "_loaded_at" in self.server_metadata:
            return cast(dict[str, Any], self.server_metadata)
        cached = cache.get(self._cache_key("discovery"))
        if cached is not None:
            self.server_metadata.update(cached)
            return cast(dict[str, Any], self.server_metadata)
        metadata = cast(dict[str, Any], super().load_server_metadata())
        named = metadata.get("issuer")
        if not isinstance(named, str) or named.rstrip("/") != self.issuer:
            self.server_metadata.clear()
            log.warning("sso discovery issuer %r is not the configured %s", named, self.issuer)
            raise Refusal(
                "The sign-in provider's discovery document names another issuer than the "
                "one configured; ask your administrator to check the issuer URL."
            )
        cache.set(self._cache_key("discovery"), dict(metadata), _ttl())
        return metadata

    def fetch_jwk_set(self, force: bool = False) -> Any:
        if not force:
            cached = cache.get(self._cache_key("jwks"))
            if cached is not None:
                return cached
        jwk_set = super().fetch_jwk_set(force=True)
        cache.set(self._cache_key("jwks"), jwk_set, _ttl())
        return jwk_set


def _ttl() -> int:
    return int(settings.SSO_METADATA_CACHE_SECONDS)


def oidc_client(provider: SsoProvider) -> DjangoOAuth2App:
    """The tenant's OpenID client (state kept under a per-tenant session key, so a
    state issued for one tenant is unknown at another's callback)."""
    name = f"sso-{provider.tenant.slug}"
    return CachedOidcApp(
        provider,
        DjangoIntegration(name),
        name,
        client_id=provider.client_id,
        client_secret=provider.client_secret,
        server_metadata_url=provider.issuer.rstrip("/") + "/.well-known/openid-configuration",
        client_kwargs={"scope": SCOPE, "code_challenge_method": "S256", "timeout": 10},
    )


def safe_next(request: HttpRequest, value: str | None) -> str:
    """`next` only to a path of this site (no scheme, no other host, no `//`)."""
    if (
        value
        and value.startswith("/")
        and not value.startswith(("//", "/\\"))
        and url_has_allowed_host_and_scheme(value, allowed_hosts=None, require_https=False)
    ):
        return value
    return DEFAULT_NEXT


def _provider(tenant: str) -> SsoProvider:
    provider = SsoProvider.objects.select_related("tenant").filter(tenant__slug=tenant).first()
    if provider is None:
        raise Refusal("This organisation has no single sign-on configured.")
    return provider


def _refused(request: HttpRequest, tenant: str, refusal: Refusal) -> HttpResponse:
    log.warning("sso refused tenant=%s reason=%s", tenant, refusal.reason)
    context = {"reason": refusal.reason, "tenant": tenant}
    return render(request, "identity/sso_refused.html", context, status=403)


@require_GET
def sso_login(request: HttpRequest, tenant: str) -> HttpResponse:
    """302 to the tenant's provider with state, nonce and a PKCE S256 challenge."""
    try:
        provider = _provider(tenant)
        client = oidc_client(provider)
        redirect_uri = request.build_absolute_uri(reverse("sso-callback", args=[tenant]))
        response = client.authorize_redirect(request, redirect_uri)
    except Refusal as refusal:
        return _refused(request, tenant, refusal)
    except (requests.RequestException, ValueError, KeyError, RuntimeError) as exc:
        log.warning("sso discovery failed tenant=%s: %s", tenant, exc)
        return _refused(request, tenant, Refusal("The sign-in provider could not be reached."))
    state = _state_of(response["Location"])
    request.session[f"{_NEXT_KEY}:{tenant}:{state}"] = safe_next(request, request.GET.get("next"))
    return response


def _state_of(url: str) -> str:
    return parse_qs(urlsplit(url).query).get("state", [""])[0]


@require_GET
def sso_callback(request: HttpRequest, tenant: str) -> HttpResponse:
    """The provider's redirect back: code exchange, id_token verification, sign-in."""
    next_url = request.session.pop(f"{_NEXT_KEY}:{tenant}:{request.GET.get('state', '')}", None)
    try:
        provider = _provider(tenant)
        claims = _verified_claims(request, provider)
        person = _person_for(provider, claims)
    except Refusal as refusal:
        logout(request)  # a refused sign-in leaves no session, not even an earlier one
        return _refused(request, tenant, refusal)
    login(request, person.user, backend=SESSION_BACKEND)
    return HttpResponseRedirect(next_url or DEFAULT_NEXT)


def _verified_claims(request: HttpRequest, provider: SsoProvider) -> dict[str, Any]:
    client = oidc_client(provider)
    try:
        token = client.authorize_access_token(
            request, claims_options={"iss": {"essential": True, "values": [provider.issuer]}}
        )
    except OAuthError as exc:
        if exc.error == "mismatching_state":
            raise Refusal("The sign-in request was not started here, or was used already.") from exc
        raise Refusal(f"The provider refused the sign-in ({exc.error}).") from exc
    except JoseError as exc:
        why = exc.description or exc.error
        raise Refusal(f"The identity token is not valid ({why}).") from exc
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        log.warning("sso token exchange failed tenant=%s: %s", provider.tenant.slug, exc)
        raise Refusal("The sign-in could not be completed with the provider.") from exc
    claims = token.get("userinfo")
    if not claims:
        raise Refusal("The provider sent no identity token.")
    return dict(claims)


def _person_for(provider: SsoProvider, claims: dict[str, Any]) -> Person:
    """The tenant's person the verified claims name: by verified email, else by the
    Entra object id (`oid`) or `sub` alias. Never creates one."""
    tenant = provider.tenant
    person = None
    email = claims.get("email")
    if isinstance(email, str) and claims.get("email_verified") is True:
        person = person_by_alias(tenant=tenant, kind=AliasKind.EMAIL, value=email)
    for claim in ("oid", "sub"):
        value = claims.get(claim)
        if person is None and isinstance(value, str) and value:
            person = person_by_alias(tenant=tenant, kind=AliasKind.AAD_OID, value=value)
    if person is None:
        if isinstance(email, str) and claims.get("email_verified") is not True:
            raise Refusal("Your email address is not verified by the provider.")
        raise Refusal("You have no account here; ask your administrator to provision you.")
    if person.deactivated_at is not None or person.user is None or not person.user.is_active:
        raise Refusal("Your account has been deactivated.")
    return person


def sso_choice(request: HttpRequest) -> dict[str, Any]:
    """The login pages' single sign-on part: with `tenant` (query or form) of a tenant
    that has an OpenID provider, its "Sign in with <provider>" link; otherwise a field
    for the organisation's name (tenant slug) that reloads the page with it. The tenants
    with a provider are never listed."""
    slug = (request.GET.get("tenant") or request.POST.get("tenant") or "").strip().lower()
    next_url = safe_next(request, request.GET.get("next") or request.POST.get("next"))
    context: dict[str, Any] = {"sso_tenant": slug, "sso_next": next_url}
    provider = SsoProvider.objects.filter(tenant__slug=slug).first() if slug else None
    if provider is not None:
        context["sso"] = {
            "label": provider.label,
            "url": f"{reverse('sso-login', args=[slug])}?{urlencode({'next': next_url})}",
            "passwords": provider.password_login,
        }
    return context


class SignInView(LoginView):
    """`/accounts/login/`: with `?tenant=SLUG` of a tenant that has an OpenID provider,
    it offers "Sign in with <provider>" (and hides the password form when the tenant
    turned password sign-in off); without, a field for the organisation (`sso_choice`).
    The password form signs in within `?tenant=SLUG` when given, else within the
    organisation its own optional field names (`SignInForm`)."""

    form_class = SignInForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **sso_choice(self.request)}
