"""Set-up helpers shared by the benchmarks.

- `setup()`: a fresh PostgreSQL database (127.0.0.1:5432, user postgres), the bench
  settings, `django.setup()`, migrations, the bench workspace and its keys. Idempotent
  within a process, so `run_all.py` pays for it once and a single `bench_*.py` run
  standalone still works.
- `Gunicorn`: start/stop the product under gunicorn on 127.0.0.1:<free port>.
- `drive()`: N concurrent keep-alive HTTP clients (asyncio, raw HTTP/1.1 so the client
  costs far less CPU than the server) for a fixed duration; throughput and p50/p99.
- `submission_data()`: a fully-defaulted submission (the shape the API's serializer
  produces), for calling `submission_plan` / `submission_apply` directly.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VAR = REPO / "var"
GUNICORN = REPO / ".venv" / "bin" / "gunicorn"
HOST = "127.0.0.1"
PG_PORT = int(os.environ.get("BENCH_PG_PORT", "5432"))
DB_NAME = os.environ.get("BENCH_DB_NAME", "telha_bench")
DATABASE_URL = f"postgres://postgres@{HOST}:{PG_PORT}/{DB_NAME}"
SETTINGS = "bench.settings"
EDITORS = 16

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.submissions import Submission  # noqa: E402  (after the repository is on the path)

WORKSPACE: dict[str, Any] = {
    "tenant": "bench",
    "name": "Bench Corp",
    "groups": ["legal", "finance"],
    "people": [
        {
            "name": "Alice Author",
            "email": "alice@bench.test",
            "role": "editor",
            "groups": ["legal"],
            "aliases": {"slackUserId": "U0ALICE"},
        },
        {"name": "Vera Viewer", "email": "vera@bench.test", "role": "viewer", "groups": ["legal"]},
        {
            "name": "Sam Steward",
            "email": "sam@bench.test",
            "role": "steward",
            "groups": ["legal", "finance"],
        },
        *[
            {
                "name": f"Editor {i:02d}",
                "email": f"editor{i:02d}@bench.test",
                "role": "editor",
                "groups": ["legal"],
            }
            for i in range(1, EDITORS + 1)
        ],
    ],
}


# ---------------------------------------------------------------------------------------
# Database and Django


@dataclass
class BenchContext:
    tenant: Any
    people: dict[str, Any]
    ingest_key: str
    editor_keys: list[str]
    setup_seconds: float
    notes: list[str] = field(default_factory=list)


_CONTEXT: BenchContext | None = None


def _admin_execute(*statements: str) -> None:
    import psycopg

    with psycopg.connect(
        host=HOST, port=PG_PORT, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


def database_recreate() -> None:
    """Drop and create the bench database (only ever the bench's own database)."""
    _admin_execute(
        f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)', f'CREATE DATABASE "{DB_NAME}"'
    )


def django_configure() -> None:
    os.environ["DATABASE_URL"] = DATABASE_URL
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
    import django

    django.setup()


def setup() -> BenchContext:
    """Fresh database, Django, migrations, the bench workspace and keys (once per process)."""
    global _CONTEXT
    if _CONTEXT is not None:
        return _CONTEXT
    started = time.perf_counter()
    database_recreate()
    django_configure()
    from django.core.management import call_command

    from bench.baseline import baseline_table_create
    from tenancy.models import Audience
    from tenancy.services import api_key_create, workspace_load

    call_command("migrate", verbosity=0, interactive=False)
    baseline_table_create()
    tenant = workspace_load(data=WORKSPACE).tenant
    people = {p.email.split("@")[0]: p for p in tenant.people.all()}
    _, ingest_key = api_key_create(tenant=tenant, audience=Audience.INGEST, name="bench ingest")
    editor_keys = [
        api_key_create(tenant=tenant, person=people[f"editor{i:02d}"], name=f"bench {i}")[1]
        for i in range(1, EDITORS + 1)
    ]
    _CONTEXT = BenchContext(
        tenant=tenant,
        people=people,
        ingest_key=ingest_key,
        editor_keys=editor_keys,
        setup_seconds=time.perf_counter() - started,
    )
    return _CONTEXT


def analyze(*tables: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {table}")


# ---------------------------------------------------------------------------------------
# Submissions

CANDIDATE_FROM = 1_790_812_800_000_000  # 1 Oct 2026
CANDIDATE_FROM_2 = 1_798_761_600_000_000  # 1 Jan 2027


def submission_data(
    *,
    external_id: str,
    facts: int = 1,
    author_email: str | None = "alice@bench.test",
    ambiguous: bool = False,
    acl: tuple[str, ...] = ("group:legal",),
) -> dict[str, Any]:
    """A submission exactly as `SubmissionInSerializer.validated_data` would give it:
    `facts` fact nodes sharing one span, each with an AUTHORED_BY edge to one PERSON node
    (resolving to a known person, so no new node for it), and, if `ambiguous`, one
    relative-date ambiguity per fact (which opens a clarification)."""
    text = (
        f"Bench document {external_id}. The master services agreement starts next quarter "
        "and runs for two years unless terminated earlier by either party."
    )
    sub = Submission(
        external_id,
        text,
        system="bench",
        title=f"Bench {external_id}",
        uri="",
        acl=acl,
        restriction=None,
    )
    span = sub.span(0, min(60, len(text)))
    terms = [
        sub.fact(f"term-{i}", name=f"Term {i} of {external_id}", confidence=0.9, span=span)
        for i in range(facts)
    ]
    if author_email is not None:
        # one PERSON node, resolving to a known person, authoring every fact
        extra = {"validFrom": None, "validTo": None, "confidence": 1.0, "spanRef": None}
        sub.person(author_email, of=terms, **extra)
    for term in terms if ambiguous else []:
        sub.ambiguity(
            term,
            candidates=[
                {
                    "validFrom": CANDIDATE_FROM,
                    "validTo": None,
                    "label": "1 Oct 2026 (next quarter)",
                    "spanRef": 0,
                },
                {
                    "validFrom": CANDIDATE_FROM_2,
                    "validTo": None,
                    "label": "1 Jan 2027",
                    "spanRef": 0,
                },
            ],
        )
    return sub.payload()


def submission_shape_check(data: dict[str, Any]) -> None:
    """Assert `data` is what the API's serializer would hand to `submission_plan`."""
    from ingest.api.serializers import SubmissionInSerializer

    shape = SubmissionInSerializer(data=data)
    if not shape.is_valid():
        raise AssertionError(f"bench submission is invalid: {shape.errors}")
    if json.loads(json.dumps(shape.validated_data)) != data:
        raise AssertionError("bench submission differs from the serializer's validated data")


# ---------------------------------------------------------------------------------------
# gunicorn

_SERVERS: list[Gunicorn] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class Gunicorn:
    """The product (bench settings) under gunicorn on 127.0.0.1; a context manager.

    Defaults: gthread, 2 workers x 8 threads (16 request slots for 16 clients on a
    2-core machine); override with BENCH_WORKERS / BENCH_THREADS / BENCH_WORKER_CLASS."""

    def __init__(
        self,
        *,
        workers: int | None = None,
        threads: int | None = None,
        worker_class: str | None = None,
    ) -> None:
        self.workers = workers or int(os.environ.get("BENCH_WORKERS", "2"))
        self.threads = threads or int(os.environ.get("BENCH_THREADS", "8"))
        self.worker_class = worker_class or os.environ.get("BENCH_WORKER_CLASS", "gthread")
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = VAR / "bench-gunicorn.log"

    @property
    def describe(self) -> str:
        if self.worker_class == "gthread":
            return f"gunicorn gthread {self.workers}wx{self.threads}t"
        return f"gunicorn {self.worker_class} {self.workers}w"

    def __enter__(self) -> Gunicorn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 30.0) -> None:
        VAR.mkdir(exist_ok=True)
        self.port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": DATABASE_URL,
            "DJANGO_SETTINGS_MODULE": SETTINGS,
            "PYTHONPATH": str(REPO),
        }
        cmd = [
            str(GUNICORN),
            "telha.wsgi:application",
            "--bind",
            f"{HOST}:{self.port}",
            "--workers",
            str(self.workers),
            "--worker-class",
            self.worker_class,
            "--threads",
            str(self.threads),
            "--chdir",
            str(REPO),
            "--keep-alive",
            "10",
            "--timeout",
            "60",
            "--graceful-timeout",
            "5",
            "--backlog",
            "512",
            "--log-level",
            "warning",
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        log.write(f"\n=== {time.ctime()} {' '.join(cmd)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        _SERVERS.append(self)
        deadline = time.monotonic() + timeout
        url = f"http://{HOST}:{self.port}/healthz"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited ({self.proc.returncode}); see {self.log_path}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gunicorn did not become healthy in {timeout}s; see {self.log_path}")

    def stop(self) -> None:
        """Graceful TERM to the master we started; KILL its process group if it lingers."""
        proc, self.proc = self.proc, None
        if self in _SERVERS:
            _SERVERS.remove(self)
        if proc is None or proc.poll() is not None:
            return
        pgid = proc.pid  # start_new_session: the master leads its own group
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)  # any orphaned worker of that master


def stop_all_servers() -> None:
    for server in list(_SERVERS):
        server.stop()


atexit.register(stop_all_servers)


# ---------------------------------------------------------------------------------------
# Load driver

# (method, path, JSON body or None, bearer key)
Call = tuple[str, str, Any, str]


@dataclass
class LoadResult:
    clients: int
    count: int
    errors: int
    elapsed: float
    latencies_ms: list[float]
    statuses: Counter[int]
    error_samples: list[str]

    @property
    def throughput(self) -> float:
        return self.count / self.elapsed if self.elapsed > 0 else 0.0

    def pct(self, q: float) -> float:
        return percentile(self.latencies_ms, q)

    def merged(self, other: LoadResult) -> LoadResult:
        return LoadResult(
            clients=self.clients,
            count=self.count + other.count,
            errors=self.errors + other.errors,
            elapsed=self.elapsed + other.elapsed,
            latencies_ms=self.latencies_ms + other.latencies_ms,
            statuses=self.statuses + other.statuses,
            error_samples=(self.error_samples + other.error_samples)[:5],
        )

    def figures(self) -> dict[str, Any]:
        return {
            "requests": self.count,
            "errors": self.errors,
            "seconds": round(self.elapsed, 2),
            "per_second": round(self.throughput, 1),
            "p50_ms": round(self.pct(0.50), 2),
            "p99_ms": round(self.pct(0.99), 2),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
        }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[bytes, bytes], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        if b":" in line:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        return status, headers, b"".join(chunks)
    body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
    return status, headers, body


def _raw_request(port: int, call: Call) -> bytes:
    method, path, body, key = call
    payload = b"" if body is None else json.dumps(body).encode()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        f"Authorization: Bearer {key}\r\nAccept: application/json\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


async def _drive(
    port: int,
    clients: int,
    next_call: Callable[[int], Call | None],
    duration: float,
    ok: tuple[int, ...],
    check: Callable[[int, bytes], bool] | None,
) -> LoadResult:
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    samples: list[str] = []
    errors = 0
    started = time.perf_counter()
    deadline = started + duration
    last_done = started

    async def client(idx: int) -> None:
        nonlocal errors, last_done
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        try:
            while time.perf_counter() < deadline:
                call = next_call(idx)
                if call is None:
                    break
                raw = _raw_request(port, call)
                t0 = time.perf_counter()
                for attempt in (0, 1):
                    fresh = writer is None
                    try:
                        if writer is None:
                            reader, writer = await asyncio.open_connection(HOST, port)
                        assert reader is not None
                        writer.write(raw)
                        await writer.drain()
                        status, headers, body = await _read_response(reader)
                        break
                    except (ConnectionError, asyncio.IncompleteReadError) as exc:
                        if writer is not None:
                            writer.close()
                        reader = writer = None
                        # Retry only a reused keep-alive connection the server had closed.
                        if fresh or attempt == 1:
                            errors += 1
                            statuses[0] += 1
                            if len(samples) < 5:
                                samples.append(f"{call[1]}: {exc!r}")
                            status = 0
                            break
                if status == 0:
                    continue
                elapsed_ms = (time.perf_counter() - t0) * 1000
                statuses[status] += 1
                last_done = time.perf_counter()
                if status in ok and (check is None or check(status, body)):
                    latencies.append(elapsed_ms)
                else:
                    errors += 1
                    if len(samples) < 5:
                        samples.append(f"{call[1]} → {status} {body[:200]!r}")
                if headers.get(b"connection", b"").lower() == b"close" and writer is not None:
                    writer.close()
                    reader = writer = None
        finally:
            if writer is not None:
                writer.close()

    await asyncio.gather(*(client(i) for i in range(clients)))
    return LoadResult(
        clients=clients,
        count=len(latencies),
        errors=errors,
        elapsed=max(last_done - started, 1e-9),
        latencies_ms=latencies,
        statuses=statuses,
        error_samples=samples,
    )


def drive(
    *,
    port: int,
    clients: int,
    next_call: Callable[[int], Call | None],
    duration: float,
    ok: tuple[int, ...] = (200, 201, 202),
    check: Callable[[int, bytes], bool] | None = None,
) -> LoadResult:
    """`clients` concurrent keep-alive connections, each sending `next_call(i)` back to
    back until `duration` seconds pass or its calls run out. Only responses with a status
    in `ok` (and passing `check`) count towards throughput and latency."""
    return asyncio.run(_drive(port, clients, next_call, duration, ok, check))


# ---------------------------------------------------------------------------------------
# Results


def result(
    *,
    name: str,
    title: str,
    figures: dict[str, Any],
    target: str | None,
    passed: bool | None,
    summary: str,
    seconds: float,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The dict every benchmark's `run()` returns (`passed` None = no target)."""
    return {
        "name": name,
        "title": title,
        "summary": summary,
        "target": target,
        "passed": passed,
        "figures": figures,
        "notes": notes or [],
        "seconds": round(seconds, 1),
    }
