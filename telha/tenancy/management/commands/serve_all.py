"""`telha serve_all`: the web server and the job cluster together (what `make run` starts).
Ctrl-C stops both."""

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the web server and the django-q2 cluster; Ctrl-C stops both."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args: Any, **opts: Any) -> None:
        base = f"http://{opts['host']}:{opts['port']}"
        manage = [sys.executable, "manage.py"]
        env = {**os.environ}
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
            "Sign in with the demo logins printed above. Ctrl-C stops everything.\n"
        )
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
