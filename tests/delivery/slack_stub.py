"""A local stub of the Slack Web API: `http.server` in a thread on 127.0.0.1, port 0.

It implements `chat.postMessage`, `chat.update` and `views.open` (JSON or form bodies),
records every request, and can be told to fail (`stub.fail("chat.postMessage", status=500)`).
A direct message to user `U…` lands in DM channel `D…`, as Slack does.
"""

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


@dataclass
class Call:
    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    response: dict[str, Any] = field(default_factory=dict)  # what the stub answered

    @property
    def blocks(self) -> list[dict[str, Any]]:
        blocks = self.body.get("blocks")
        return json.loads(blocks) if isinstance(blocks, str) else list(blocks or [])

    @property
    def view(self) -> dict[str, Any]:
        view = self.body.get("view")
        return json.loads(view) if isinstance(view, str) else dict(view or {})


@dataclass
class Failure:
    status: int
    error: str
    times: int | None  # None: every call


@dataclass
class SlackStub:
    url: str = ""
    calls: list[Call] = field(default_factory=list)
    failures: dict[str, Failure] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: Any = field(default_factory=lambda: itertools.count(1))

    def fail(
        self,
        method: str,
        *,
        status: int = 500,
        error: str = "internal_error",
        times: int | None = None,
    ) -> None:
        """Make `method` fail: HTTP `status` with `{"ok": false, "error": error}`."""
        self.failures[method] = Failure(status, error, times)

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.failures.clear()

    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    # -- request handling (called from the server thread) --

    def handle(
        self, method: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict]:
        call = Call(method, body, headers)
        status, payload = self._answer(call)
        call.response = payload
        return status, payload

    def _answer(self, call: Call) -> tuple[int, dict]:
        method, body, headers = call.method, call.body, call.headers
        with self.lock:
            self.calls.append(call)
            failure = self.failures.get(method)
            if failure is not None and failure.times != 0:
                if failure.times is not None:
                    failure.times -= 1
                return failure.status, {"ok": False, "error": failure.error}
            if not headers.get("authorization", "").startswith("Bearer "):
                return 200, {"ok": False, "error": "not_authed"}
            ts = f"1700000000.{next(self._ts):06d}"
        if method == "chat.postMessage":
            channel = str(body.get("channel", ""))
            if channel.startswith("U"):
                channel = "D" + channel[1:]
            return 200, {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "chat.update":
            return 200, {"ok": True, "channel": body.get("channel"), "ts": body.get("ts")}
        if method == "views.open":
            return 200, {"ok": True, "view": {"id": "V0STUB", **_maybe_json(body.get("view"))}}
        return 200, {"ok": False, "error": "unknown_method"}


def _maybe_json(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _handler_for(stub: SlackStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8") if length else ""
            content_type = self.headers.get("Content-Type", "")
            if "json" in content_type:
                body = json.loads(raw or "{}")
            else:
                body = {k: v[0] for k, v in parse_qs(raw).items()}
            method = self.path.rstrip("/").rsplit("/", 1)[-1]
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = stub.handle(method, body, headers)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class RunningStub:
    """Start a stub server; `stop()` shuts it down."""

    def __init__(self) -> None:
        self.stub = SlackStub()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self.stub))
        self.server.daemon_threads = True
        port = self.server.server_address[1]
        self.stub.url = f"http://127.0.0.1:{port}/api/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
