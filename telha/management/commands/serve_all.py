"""`telha serve_all`: the web server and the job cluster together (what `make run` starts).
Ctrl-C stops both.

Both run with `PUBLIC_BASE_URL` — the address the links in cards and messages are built
on — set to the address served (`http://HOST:PORT`; `127.0.0.1` for a wildcard host), so
`PORT=8100 make run` links to port 8100. A `PUBLIC_BASE_URL` set in the environment (or in
var/dev.env) wins: the stack behind a proxy or on another name."""

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]"}


def public_base_url(host: str, port: str) -> str:
    """`PUBLIC_BASE_URL` from the environment when set there, else the address served."""
    chosen = os.environ.get("PUBLIC_BASE_URL", "").strip()
    if chosen:
        return chosen.rstrip("/")
    return f"http://{'127.0.0.1' if host in WILDCARD_HOSTS else host}:{port}"


class Command(BaseCommand):
    help = "Run the web server and the django-q2 cluster; Ctrl-C stops both."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args: Any, **opts: Any) -> None:
        base = f"http://{opts['host']}:{opts['port']}"
        manage = [sys.executable, "manage.py"]
        env = {**os.environ, "PUBLIC_BASE_URL": public_base_url(opts["host"], opts["port"])}
        procs = [
            subprocess.Popen(
                [*manage, "runserver", f"{opts['host']}:{opts['port']}", "--noreload"], env=env
            ),
            subprocess.Popen([*manage, "qcluster"], env=env),
        ]
        self.stdout.write(
            "\nTelha clarify is running:\n"
            f"  inbox (people answer here):  {base}/inbox/\n"
            f"  steward admin:               {base}/admin/\n"
            f"  API docs:                    {base}/v1/docs/\n"
            f"  health:                      {base}/healthz\n"
            f"Links in cards and messages point at {env['PUBLIC_BASE_URL']} (PUBLIC_BASE_URL).\n"
            "Sign in with the demo logins printed above. Ctrl-C stops everything.\n"
        )
        self.stdout.flush()  # seen now, also when the output goes to a file or a pipe
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(p.poll() is None for p in procs):
                time.sleep(0.5)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 10
            for p in procs:
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
