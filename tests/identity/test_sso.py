"""OpenID Connect sign-in per tenant (CONTRACT §3.8) against a local OpenID provider
(tests/identity/oidc_stub.py): discovery, state, nonce and PKCE S256 on the way out; the
code exchange and the id_token checks (signature from jwks_uri, iss, aud, exp, nonce) on
the way back; the person matched by verified email or oid/sub alias; `next` kept to this
site. Every refusal is a 403 page saying why, with no session and nothing written."""

import io
import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings
from joserfc.jwk import RSAKey

from identity.models import SsoProvider
from identity.services import SsoInvalid, person_deprovision, sso_configure
from tenancy.models import Person
from tenancy.services import workspace_load

from . import oidc_stub
from .test_scim import everything

pytestmark = pytest.mark.django_db

ALICE = {"sub": "sub-alice", "email": "alice@acme.test", "email_verified": True}


@pytest.fixture
def oidc(workspace):
    cache.clear()  # discovery and JWKS are cached per issuer; a port may be reused
    stub, server = oidc_stub.start()
    sso_configure(
        tenant=workspace,
        issuer=stub.url,
        client_id=oidc_stub.CLIENT_ID,
        client_secret=oidc_stub.CLIENT_SECRET,
        display_name="Test IdP",
    )
    yield stub
    server.shutdown()
    server.server_close()


def start(client: Client, tenant: str = "acme", **query: str) -> dict[str, str]:
    """GET /sso/<tenant>/login/: the authorization request the provider receives."""
    response = client.get(f"/sso/{tenant}/login/", query)
    assert response.status_code == 302, response.content
    return {k: v[0] for k, v in parse_qs(urlsplit(response["Location"]).query).items()}


def provider_redirect(stub: oidc_stub.OidcStub, location: str) -> tuple[str, dict[str, str]]:
    """The provider's answer to the authorization request: back to the callback."""
    back = requests.get(location, allow_redirects=False, timeout=10)
    parts = urlsplit(back.headers["Location"])
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


def sign_in(client: Client, stub: oidc_stub.OidcStub, tenant: str = "acme", **query: str) -> Any:
    response = client.get(f"/sso/{tenant}/login/", query)
    assert response.status_code == 302, response.content
    path, params = provider_redirect(stub, response["Location"])
    return client.get(path, params)


def signed_in(client: Client) -> str | None:
    return client.session.get("_auth_user_id")


def test_login_redirects_to_the_provider_with_state_nonce_and_pkce(oidc):
    params = start(Client(), next="/inbox/ask/")
    assert params["response_type"] == "code" and params["client_id"] == oidc_stub.CLIENT_ID
    assert params["redirect_uri"] == "http://testserver/sso/acme/callback/"
    assert set(params["scope"].split()) >= {"openid", "email"}
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) >= 43
    assert len(params["state"]) >= 20 and len(params["nonce"]) >= 20
    assert start(Client())["state"] != params["state"]


def test_a_verified_email_signs_in_and_follows_next(oidc, people):
    oidc.claims = ALICE
    client = Client()
    response = sign_in(client, oidc, next="/inbox/ask/")
    assert (response.status_code, response["Location"]) == (302, "/inbox/ask/")
    assert signed_in(client) == str(people["alice"].user.pk)
    assert client.get("/inbox/").status_code == 200
    assert oidc.token_requests[-1]["code_verifier"]  # PKCE: the verifier went with the code


def test_the_entra_object_id_signs_in_without_an_email(oidc, people):
    oidc.claims = {"sub": "pairwise-1", "oid": "OID-ALICE"}
    client = Client()
    assert sign_in(client, oidc)["Location"] == "/inbox/"
    assert signed_in(client) == str(people["alice"].user.pk)


@pytest.mark.parametrize(
    "target", ["https://evil.test/x", "//evil.test/x", "/\\evil.test", "inbox"]
)
def test_next_is_followed_only_to_this_sites_paths(oidc, target):
    oidc.claims = ALICE
    assert sign_in(Client(), oidc, next=target)["Location"] == "/inbox/"


def refused(client: Client, response: Any, reason: str) -> None:
    assert response.status_code == 403, response.content
    assert reason in response.content.decode()
    assert signed_in(client) is None
    assert client.get("/inbox/").status_code == 302


GLOBEX = {"tenant": "globex", "people": [{"name": "Gus", "email": "gus@globex.test"}]}


@pytest.mark.parametrize(
    "claims, override, reason",
    [
        ({**ALICE, "email_verified": False, "sub": "x"}, {}, "not verified"),
        ({"sub": "x", "email": "alice@acme.test"}, {}, "not verified"),
        ({"sub": "x", "email": "nobody@acme.test", "email_verified": True}, {}, "no account"),
        ({"sub": "x", "email": "gus@globex.test", "email_verified": True}, {}, "no account"),
        (ALICE, {"nonce": "forged-nonce"}, "Invalid claim: &#x27;nonce&#x27;"),
        (ALICE, {"aud": "another-client"}, "token is not valid"),
        (
            ALICE,
            {"aud": ["another-client"], "azp": "another-client"},
            "token is not valid",
        ),
        (ALICE, {"iss": "http://127.0.0.1:9/evil"}, "Invalid claim: &#x27;iss&#x27;"),
        (ALICE, {"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200}, "expired"),
    ],
    ids=[
        "unverified email",
        "email without verification",
        "unknown person",
        "another tenant's person",
        "wrong nonce",
        "wrong audience",
        "wrong audience list",
        "wrong issuer",
        "expired",
    ],
)
def test_a_refused_sign_in_is_a_403_page_with_no_session(oidc, people, claims, override, reason):
    workspace_load(data=GLOBEX)
    oidc.claims, oidc.override = claims, override
    client = Client()
    before, logins = everything(), list(Person.objects.values_list("user__last_login", flat=True))
    refused(client, sign_in(client, oidc), reason)
    assert everything() == before
    assert list(Person.objects.values_list("user__last_login", flat=True)) == logins


def test_a_badly_signed_token_is_refused(oidc):
    oidc.claims, oidc.sign_with = ALICE, RSAKey.generate_key(2048, {"kid": "k1"})
    client = Client()
    before = everything()
    refused(client, sign_in(client, oidc), "not valid (bad_signature)")
    assert everything() == before


def test_a_deprovisioned_person_is_refused(oidc, people):
    person_deprovision(person=people["alice"])
    oidc.claims = ALICE
    client = Client()
    before = everything()
    refused(client, sign_in(client, oidc), "deactivated")
    assert everything() == before


def test_a_forged_or_replayed_state_is_refused_before_the_provider_is_asked(oidc, workspace):
    oidc.claims = ALICE
    client = Client()
    start(client)
    before = everything()
    forged = client.get("/sso/acme/callback/", {"code": "x", "state": "forged-state"})
    refused(client, forged, "not started here")
    assert oidc.token_requests == []
    assert everything() == before

    first = Client()
    response = first.get("/sso/acme/login/")
    path, params = provider_redirect(oidc, response["Location"])
    assert first.get(path, params).status_code == 302 and signed_in(first)
    # Replayed in the same session (no logout in between): the state was used already,
    # the provider is not asked again and the session ends.
    refused(first, first.get(path, params), "not started here")
    assert len(oidc.token_requests) == 1

    # A state issued for acme is unknown at another tenant's callback.
    globex = workspace_load(data=GLOBEX).tenant
    sso_configure(tenant=globex, issuer=oidc.url, client_id="g", client_secret="g")
    other = Client()
    response = other.get("/sso/acme/login/")
    _, params = provider_redirect(oidc, response["Location"])
    before = everything()
    refused(other, other.get("/sso/globex/callback/", params), "not started here")
    assert everything() == before


def test_a_tenant_without_a_provider_gets_a_403_page(workspace):
    client = Client()
    before = everything()
    refused(client, client.get("/sso/acme/login/"), "no single sign-on")
    refused(client, client.get("/sso/nope/callback/", {"state": "s"}), "no single sign-on")
    assert everything() == before


def test_the_login_page_offers_the_provider_and_passwords_can_be_turned_off(oidc, workspace):
    page = Client().get("/accounts/login/", {"tenant": "acme", "next": "/inbox/ask/"})
    html = page.content.decode()
    assert "Sign in with Test IdP" in html and "/sso/acme/login/?next=%2Finbox%2Fask%2F" in html
    assert 'name="password"' in html
    assert Client().login(username="sam@acme.test", password="steward-pass-1")

    SsoProvider.objects.filter(tenant=workspace).update(password_login=False)
    page = Client().get("/accounts/login/", {"tenant": "acme"})
    assert 'name="password"' not in page.content.decode()
    assert not Client().login(username="sam@acme.test", password="steward-pass-1")
    response = Client().post(
        "/accounts/login/", {"username": "sam@acme.test", "password": "steward-pass-1"}
    )
    assert response.status_code == 200 and "_auth_user_id" not in response.wsgi_request.session


def test_sso_configure_command(workspace):
    out = io.StringIO()
    call_command(
        "sso",
        "configure",
        "--tenant",
        "acme",
        "--issuer",
        "https://login.example.test/t1/v2.0/",
        "--client-id",
        "cid",
        "--client-secret",
        "sec",
        "--json",
        stdout=out,
    )
    body = json.loads(out.getvalue())
    assert body == {
        "tenant": "acme",
        "issuer": "https://login.example.test/t1/v2.0",
        "clientId": "cid",
        "login": "/sso/acme/login/",
        "callback": "/sso/acme/callback/",
        "passwordLogin": True,
    }
    before = SsoProvider.objects.values().get()
    for issuer in ("http://idp.example.test", "ftp://x", "https://x.test/?a=1"):
        with pytest.raises(CommandError, match="SSO_INVALID"):
            call_command(
                "sso",
                "configure",
                "--tenant",
                "acme",
                "--issuer",
                issuer,
                "--client-id",
                "cid",
                "--client-secret",
                "sec",
            )
    with pytest.raises(CommandError, match="NOT_FOUND"):
        call_command(
            "sso",
            "configure",
            "--tenant",
            "nope",
            "--issuer",
            "https://x.test",
            "--client-id",
            "c",
            "--client-secret",
            "s",
        )
    assert SsoProvider.objects.values().get() == before


def test_a_steward_configures_the_provider_in_the_admin(workspace):
    admin = Client()
    assert admin.login(username="sam@acme.test", password="steward-pass-1")
    url = "/admin/identity/ssoprovider/add/"
    assert admin.get(url).status_code == 200
    form = {
        "issuer": "http://idp.example.test",
        "client_id": "cid",
        "client_secret": "sec",
        "display_name": "Entra ID",
        "password_login": "on",
    }
    bad = admin.post(url, form)
    assert bad.status_code == 200 and "an https URL" in bad.content.decode()
    assert not SsoProvider.objects.exists()
    saved = admin.post(url, {**form, "issuer": "https://login.example.test/t1/v2.0"})
    assert saved.status_code == 302, saved.content
    provider = SsoProvider.objects.get()
    assert (provider.tenant, provider.issuer, provider.client_secret) == (
        workspace,
        "https://login.example.test/t1/v2.0",
        "sec",
    )
    assert admin.get(url).status_code == 403  # one provider per tenant: change it instead
    change = f"/admin/identity/ssoprovider/{provider.pk}/change/"
    kept = admin.post(change, {**form, "issuer": provider.issuer, "client_secret": ""})
    assert kept.status_code == 302
    assert SsoProvider.objects.get().client_secret == "sec"  # empty keeps the secret


def test_a_steward_signs_in_to_the_admin_through_the_provider(oidc, people):
    oidc.claims = {"sub": "sub-sam", "email": "sam@acme.test", "email_verified": True}
    client = Client()
    assert sign_in(client, oidc, next="/admin/")["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


@override_settings(SSO_ALLOW_INSECURE_ISSUER=False)
def test_a_loopback_issuer_is_refused_unless_allowed(workspace):
    before = everything()
    for issuer in (
        "http://127.0.0.1:8080",
        "http://localhost",
        "https://localhost/t",
        "http://[::1]",
    ):
        with pytest.raises(SsoInvalid, match="loopback"):
            sso_configure(tenant=workspace, issuer=issuer, client_id="c", client_secret="s")
    assert not SsoProvider.objects.exists() and everything() == before
    sso_configure(
        tenant=workspace, issuer="https://login.example.test", client_id="c", client_secret="s"
    )


def test_a_discovery_document_naming_another_issuer_is_refused(oidc):
    oidc.claims = ALICE
    genuine = oidc.discovery
    oidc.discovery = lambda: {**genuine(), "issuer": "https://evil.example.test"}  # type: ignore[method-assign]
    client = Client()
    before = everything()
    refused(client, client.get("/sso/acme/login/"), "names another issuer")
    assert oidc.gets == ["/.well-known/openid-configuration"] and oidc.token_requests == []
    assert everything() == before


def test_discovery_and_jwks_are_cached_and_a_new_key_id_refreshes_the_jwks(oidc, people):
    oidc.claims = ALICE
    for _ in range(2):
        client = Client()
        assert sign_in(client, oidc).status_code == 302 and signed_in(client)
    discovery, jwks = "/.well-known/openid-configuration", "/jwks"
    assert (oidc.gets.count(discovery), oidc.gets.count(jwks)) == (1, 1)
    oidc.key = RSAKey.generate_key(2048, {"kid": "k2"})  # the provider rotated its key
    client = Client()
    assert sign_in(client, oidc).status_code == 302 and signed_in(client)
    assert (oidc.gets.count(discovery), oidc.gets.count(jwks)) == (1, 2)


@pytest.mark.parametrize("page", ["/accounts/login/"])
def test_the_login_page_leads_to_the_providers_button(oidc, page):
    # Where the inbox sends a visitor: a field for the organisation, no tenant listed.
    landing = Client().get("/inbox/")
    assert landing.status_code == 302
    html = Client().get(page, {"next": "/inbox/"}).content.decode()
    assert 'name="tenant"' in html and "Sign in with" not in html and "acme" not in html
    unknown = Client().get(page, {"tenant": "nope"}).content.decode()
    assert "No single sign-on is configured" in unknown
    chosen = Client().get(page, {"tenant": "acme", "next": "/admin/"}).content.decode()
    assert "Sign in with Test IdP" in chosen and "/sso/acme/login/?next=%2Fadmin%2F" in chosen
    assert 'name="password"' in chosen
