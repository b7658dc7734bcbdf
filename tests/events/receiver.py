"""A real local webhook receiver for the tests: stdlib `http.server` in a thread, checking
every request's signature with the `standardwebhooks` library (the endpoint's secret),
answering as each endpoint's `mode` says: "ok" (204), "fail" (500), "slow" (answers after
`slow_seconds`, past the sender's timeout)."""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook


@dataclass
class Received:
    endpoint: str
    headers: dict[str, str]
    body: bytes
    payload: Any  # the verified, parsed body; None when the signature did not verify


@dataclass
class Receiver:
    secrets: dict[str, str] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)
    got: list[Received] = field(default_factory=list)
    slow_seconds: float = 1.0
    server: ThreadingHTTPServer | None = None

    def url(self, name: str) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook/{name}"

    def verified(self, name: str) -> list[Any]:
        """The verified messages `name` accepted (2xx), in arrival order."""
        return [r.payload for r in self.got if r.endpoint == name and r.payload is not None]

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                name = self.path.rsplit("/", 1)[-1]
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                mode = receiver.modes.get(name, "ok")
                if mode == "slow":
                    time.sleep(receiver.slow_seconds)
                try:
                    payload = Webhook(receiver.secrets[name]).verify(body, headers)
                except Exception:
                    payload = None
                accepted = mode == "ok" and payload is not None
                receiver.got.append(Received(name, headers, body, payload if accepted else None))
                self.send_response(204 if accepted else 500 if mode == "fail" else 401)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
