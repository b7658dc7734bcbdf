"""A local OpenID provider for the sign-in tests: `http.server` in a thread on 127.0.0.1,
port 0. It serves discovery (`/.well-known/openid-configuration`), `/authorize` (which
answers at once with a code, as a provider does after the person signed in), `/token`
(client authentication, the PKCE S256 check, an RS256 id_token signed with a key made
for the test) and `/jwks`. Tests say who signs in (`stub.claims`) and how the token is
spoilt (`stub.sign_with`, `stub.override`)."""

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import RSAKey

CLIENT_ID = "telha-test-client"
CLIENT_SECRET = "telha-test-secret"


@dataclass
class Grant:
    params: dict[str, str]  # the authorization request as the provider received it
    used: bool = False


@dataclass
class OidcStub:
    url: str = ""
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, {"kid": "k1"}))
    claims: dict[str, Any] = field(default_factory=dict)  # of the person signing in
    override: dict[str, Any] = field(default_factory=dict)  # spoils a standard claim
    sign_with: RSAKey | None = None  # another key: a badly signed token
    grants: dict[str, Grant] = field(default_factory=dict)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    gets: list[str] = field(default_factory=list)  # the paths of every GET served
    lock: threading.Lock = field(default_factory=threading.Lock)

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        }

    def authorize(self, query: dict[str, str]) -> str:
        """The redirect back to the client: `redirect_uri?code=…&state=…`."""
        code = secrets.token_urlsafe(16)
        with self.lock:
            self.grants[code] = Grant(params=query)
        back = {"code": code, "state": query.get("state", "")}
        return f"{query['redirect_uri']}?{urlencode(back)}"

    def token(self, form: dict[str, str], auth: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.token_requests.append(form)
            grant = self.grants.get(form.get("code", ""))
            if grant is None or grant.used:
                return 400, {"error": "invalid_grant"}
            grant.used = True
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if auth != f"Basic {expected}":
            return 401, {"error": "invalid_client"}
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        if challenge.rstrip(b"=").decode() != grant.params.get("code_challenge"):
            return 400, {"error": "invalid_grant", "error_description": "PKCE check failed"}
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": grant.params.get("nonce"),
            **self.claims,
            **self.override,
        }
        key = self.sign_with or self.key
        id_token = jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)
        return 200, {
            "access_token": "at-" + secrets.token_urlsafe(8),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": id_token,
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.key.as_dict(private=False)]}


def _handler(stub: OidcStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            stub.gets.append(parts.path)
            if parts.path == "/.well-known/openid-configuration":
                return self._json(200, stub.discovery())
            if parts.path == "/jwks":
                return self._json(200, stub.jwks())
            if parts.path == "/authorize":
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                self.send_response(302)
                self.send_header("Location", stub.authorize(query))
                self.end_headers()
                return None
            return self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if urlsplit(self.path).path != "/token":
                return self._json(404, {"error": "not_found"})
            status, body = stub.token(form, self.headers.get("Authorization", ""))
            return self._json(status, body)

    return Handler


def start() -> tuple[OidcStub, ThreadingHTTPServer]:
    stub = OidcStub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return stub, server
