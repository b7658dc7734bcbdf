"""A local stub of the Bot Framework services a Teams bot talks to: `http.server` in a
thread on 127.0.0.1, port 0.

One server plays every part:

- `GET /openid` — the OpenID metadata (`{"issuer", "jwks_uri": "<stub>/keys", …}`);
- `GET /keys` — a JWKS of the published local RSA keys (`stub.publish(key)`);
- `POST /token` — the client-credentials token endpoint: records the form and answers
  `{"access_token", "expires_in", "token_type"}`;
- `POST /v3/conversations/<id>/activities` — the connector: records the posted activity
  (with its headers) and answers `{"id": "<activity id>"}`. A request whose bearer token
  was not issued by `/token` is answered 401, as the real connector would.

Failures are configurable per endpoint (`stub.fail("activities", status=500, times=2)`;
endpoints: `openid`, `keys`, `token`, `activities`). Signing keys are generated locally
with `cryptography` (`LocalKey`); tokens are signed with PyJWT.
"""

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://api.botframework.com"


@dataclass(frozen=True)
class LocalKey:
    """A locally generated RSA key pair with a key id, and the channels the JWKS says it
    may sign for (`endorsements`; None leaves the field out)."""

    kid: str
    private_key: rsa.RSAPrivateKey
    endorsements: tuple[str, ...] | None = ("msteams",)

    @classmethod
    def generate(cls, kid: str, endorsements: tuple[str, ...] | None = ("msteams",)) -> "LocalKey":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(kid, key, endorsements)

    def jwk(self) -> dict[str, Any]:
        """The public half as a JWK, as the Bot Framework publishes it."""
        public = json.loads(RSAAlgorithm.to_jwk(self.private_key.public_key()))
        jwk = {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}
        if self.endorsements is not None:
            jwk["endorsements"] = list(self.endorsements)
        return jwk

    def sign(self, claims: dict[str, Any], *, kid: str | None = None) -> str:
        """`claims` signed RS256 with this key; the header's `kid` is ours unless
        overridden ("" leaves it out)."""
        headers = {"kid": self.kid if kid is None else kid}
        if kid == "":
            headers = {}
        return jwt.encode(claims, self.private_key, algorithm="RS256", headers=headers)


@dataclass
class Call:
    """One request the stub received."""

    endpoint: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def conversation_id(self) -> str:
        # /v3/conversations/<id>/activities
        return unquote(self.path.split("/")[3]) if self.endpoint == "activities" else ""

    @property
    def bearer(self) -> str:
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" else ""

    @property
    def card(self) -> dict[str, Any]:
        """The Adaptive Card of a posted activity (its first attachment)."""
        [attachment] = self.body.get("attachments") or [{}]
        assert attachment.get("contentType") == "application/vnd.microsoft.card.adaptive"
        return dict(attachment["content"])


@dataclass
class Failure:
    status: int
    times: int | None  # None: every call


@dataclass
class TeamsStub:
    url: str = ""
    keys: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    failures: dict[str, Failure] = field(default_factory=dict)
    issued: list[str] = field(default_factory=list)
    expires_in: int = 3600
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/openid"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/keys"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def service_url(self) -> str:
        """The connector's base URL (an activity's `serviceUrl`)."""
        return f"{self.url}/"

    def publish(self, key: LocalKey) -> None:
        """Serve `key` in the JWKS from now on."""
        with self.lock:
            self.keys.append(key.jwk())

    def fail(self, endpoint: str, *, status: int = 500, times: int | None = None) -> None:
        """Answer `endpoint` with HTTP `status` (the next `times` calls, or every call)."""
        with self.lock:
            self.failures[endpoint] = Failure(status, times)

    def heal(self) -> None:
        with self.lock:
            self.failures.clear()

    def of(self, endpoint: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.endpoint == endpoint]

    # -- request handling (called from the server thread) --

    def _failure(self, endpoint: str) -> int | None:
        failure = self.failures.get(endpoint)
        if failure is None or failure.times == 0:
            return None
        if failure.times is not None:
            failure.times -= 1
        return failure.status

    def handle(
        self, method: str, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, Any]]:
        route = path.split("?", 1)[0].rstrip("/")
        parts = route.split("/")
        if method == "GET" and route == "/openid":
            endpoint = "openid"
        elif method == "GET" and route == "/keys":
            endpoint = "keys"
        elif method == "POST" and route == "/token":
            endpoint = "token"
        elif (
            method == "POST"
            and len(parts) == 5
            and parts[1:3] == ["v3", "conversations"]
            and parts[4] == "activities"
        ):
            endpoint = "activities"
        else:
            return 404, {"error": {"code": "NotFound", "message": f"{method} {route}"}}
        with self.lock:
            call = Call(endpoint, route, body, headers)
            self.calls.append(call)
            status = self._failure(endpoint)
            if status is not None:
                return status, {"error": {"code": "StubFailure", "message": "failing on purpose"}}
            if endpoint == "openid":
                return 200, {
                    "issuer": ISSUER,
                    "authorization_endpoint": "https://invalid.botframework.com",
                    "jwks_uri": self.jwks_url,
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                }
            if endpoint == "keys":
                return 200, {"keys": [dict(k) for k in self.keys]}
            if endpoint == "token":
                if body.get("grant_type") != "client_credentials":
                    return 400, {"error": "unsupported_grant_type"}
                token = f"stub-bot-token-{next(self._ids)}"
                self.issued.append(token)
                return 200, {
                    "token_type": "Bearer",
                    "expires_in": self.expires_in,
                    "ext_expires_in": self.expires_in,
                    "access_token": token,
                }
            if call.bearer not in self.issued:
                return 401, {"message": "Authorization has been denied for this request."}
            return 200, {"id": f"1:activity-{next(self._ids)}"}


def _handler_for(stub: TeamsStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _respond(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8") if length else ""
            content_type = self.headers.get("Content-Type", "")
            body: dict[str, Any]
            if "json" in content_type:
                body = json.loads(raw or "{}")
            else:
                body = {k: v[0] for k, v in parse_qs(raw).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = stub.handle(method, self.path, body, headers)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._respond("GET")

        def do_POST(self) -> None:
            self._respond("POST")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class RunningStub:
    """Start a stub server; `stop()` shuts it down."""

    def __init__(self) -> None:
        self.stub = TeamsStub()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self.stub))
        self.server.daemon_threads = True
        port = self.server.server_address[1]
        self.stub.url = f"http://127.0.0.1:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
