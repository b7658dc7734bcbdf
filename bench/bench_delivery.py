"""Clarify delivery to Slack (issue 5; report only, no target).

1. Cards/s by one worker: N (200) open normal clarifications whose first candidate has a
   verified `slackUserId` and read permission on the source (group `legal` ACL) are
   created through `submission_plan` + `submission_apply` (25 ambiguous facts per
   submission, the authors spread over the 16 editors), then
   `jobs.tasks.work("clarify:temporal")` runs in this one process until every job
   is handled. Checked afterwards: the stub received exactly N `chat.postMessage` calls
   carrying the N clarification ids in their button values, and N delivery rows are
   `sent`. A warm-up batch of 10 goes first. Also per card: the worker's own CPU, its SQL
   statements and their wall time (the most expensive ones listed), the Slack send's
   wall time.
2. Commit → first card with the cluster running: `manage.py qcluster` (JOBS_DISPATCH=1,
   so a submission's commit kicks the worker through django-q2's ORM broker) and
   gunicorn; M (20) submissions with one ambiguity each, one at a time over HTTP with the
   ingest key. Commit time = the 201 response received; card time = the stub received the
   `chat.postMessage` whose button value names that clarification. The next submission
   goes out only once the previous card arrived.

Isolation: everything runs in a child process against its own database
(`<bench db>_delivery`, recreated and migrated by `_support.setup()` there, dropped at
the end unless BENCH_DELIVERY_KEEP_DB=1), because the worker leases every ready
`clarify:temporal` job and the shared bench database holds other benchmarks' open
clarifications. The Slack Web API stub (`tests/delivery/slack_stub.py`) runs in a third
process so its request handling does not share the worker's GIL; it timestamps each
request on arrival with the system-wide monotonic clock. Settings come from the
environment for the child, gunicorn and the cluster alike: CLARIFY_CHANNELS=slack, the
Slack secret/token/API URL pointing at the stub, and the per-person daily cap and digest
threshold raised out of the way (digests and caps are not what is measured).

The worker is the product's: `work()` leases up to 50 jobs a round and hands them to
the round handler (`delivery.worker.handle_leases`), which sends Slack cards
`delivery.worker.SEND_THREADS` at a time; BENCH_DELIVERY_SEND_THREADS=1 measures it with
the sends one by one. The result names the round size and the send threads.

Knobs: BENCH_DELIVERY_CARDS (200), BENCH_DELIVERY_CREATE_BUDGET_SECONDS (20; fewer
cards, at least 50, when creating them takes longer), BENCH_DELIVERY_SUBMISSIONS (20),
BENCH_DELIVERY_WORK_CAP_SECONDS (45), BENCH_DELIVERY_KEEP_DB (0),
BENCH_DELIVERY_SEND_THREADS (the product's default), BENCH_DELIVERY_PROFILE (a file for
the worker's cProfile stats; off).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import _support

CARDS = int(os.environ.get("BENCH_DELIVERY_CARDS", "200"))
SUBMISSIONS = int(os.environ.get("BENCH_DELIVERY_SUBMISSIONS", "20"))
WORK_CAP_SECONDS = float(os.environ.get("BENCH_DELIVERY_WORK_CAP_SECONDS", "45"))
KEEP_DB = os.environ.get("BENCH_DELIVERY_KEEP_DB", "0") == "1"
SEND_THREADS = os.environ.get("BENCH_DELIVERY_SEND_THREADS", "")
PROFILE = os.environ.get("BENCH_DELIVERY_PROFILE", "")
FACTS_PER_SUBMISSION = 25
WARMUP_CARDS = 10
MIN_CARDS = 50
CREATE_BUDGET_SECONDS = float(os.environ.get("BENCH_DELIVERY_CREATE_BUDGET_SECONDS", "20"))
WARMUP_SUBMISSIONS = 2
FIRST_CARD_TIMEOUT = 60.0  # the cluster's start-up is in it
CARD_TIMEOUT = 30.0
CHILD_TIMEOUT = 240.0
STOP_GRACE = 15.0

KIND = "clarify:temporal"
DB_NAME = f"{_support.DB_NAME}_delivery"
SIGNING_SECRET = "bench-signing-secret-" + "s" * 20
BOT_TOKEN = "xoxb-bench-telha-clarify"
QCLUSTER_LOG = _support.VAR / "bench-qcluster.log"
CAP = "1000000"

_T0 = [time.perf_counter()]


def _log(message: str) -> None:
    print(
        f"   [delivery {time.perf_counter() - _T0[0]:5.1f}s] {message}", file=sys.stderr, flush=True
    )


# ---------------------------------------------------------------------------------------
# The Slack stub process: `python -m bench.bench_delivery --stub`. Prints {"url": …} once,
# then answers one JSON line per command line on stdin.


def _card_ids(call: Any) -> list[str]:
    """Clarification ids named by the card action payloads in a message's buttons."""
    ids: set[str] = set()
    for block in call.blocks:
        for element in block.get("elements") or []:
            value = element.get("value") if isinstance(element, dict) else None
            if not isinstance(value, str):
                continue
            try:
                data = json.loads(value)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("kind") == "clarify_answer":
                ids.add(str(data.get("clarificationId")))
    return sorted(ids)


def stub_main() -> int:
    from tests.delivery.slack_stub import Call, RunningStub

    running = RunningStub()
    stub = running.stub
    arrived: dict[str, float] = {}  # clarification id → first chat.postMessage carrying it
    cond = threading.Condition()
    original = stub.handle

    def handle(method: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict]:
        t = time.monotonic()
        if method == "chat.postMessage":
            ids = _card_ids(Call(method, body, headers))
            with cond:
                for cid in ids:
                    arrived.setdefault(cid, t)
                cond.notify_all()
        return original(method, body, headers)

    stub.handle = handle  # type: ignore[method-assign]
    print(json.dumps({"url": stub.url}), flush=True)
    try:
        for line in sys.stdin:
            command, *args = line.split()
            reply: Any
            if command == "reset":
                stub.reset()
                with cond:
                    arrived.clear()
                reply = {"ok": True}
            elif command == "summary":
                posts = stub.of("chat.postMessage")
                per_call = [_card_ids(c) for c in posts]
                ids = [cid for call_ids in per_call for cid in call_ids]
                with cond:
                    times = sorted(arrived.values())
                reply = {
                    "methods": sorted({c.method for c in stub.calls}),
                    "postMessage": len(posts),
                    "withOneCard": sum(1 for call_ids in per_call if len(call_ids) == 1),
                    "ids": ids,
                    "bearer": all(
                        c.headers.get("authorization") == f"Bearer {BOT_TOKEN}" for c in posts
                    ),
                    "first": times[0] if times else None,
                    "last": times[-1] if times else None,
                }
            elif command == "wait":
                cid, timeout = args[0], float(args[1])
                with cond:
                    cond.wait_for(lambda cid=cid: cid in arrived, timeout=timeout)
                    reply = {"t": arrived.get(cid)}
            elif command == "stop":
                break
            else:
                reply = {"error": f"unknown command {command!r}"}
            print(json.dumps(reply), flush=True)
    finally:
        running.stop()
    return 0


class StubProcess:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_delivery", "--stub"],
            cwd=_support.REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(_support.REPO)},
        )
        self.url = str(self._read()["url"])

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Slack stub process exited ({self.proc.poll()})")
        return dict(json.loads(line))

    def ask(self, *command: object) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(" ".join(str(c) for c in command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.write("stop\n")
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


# ---------------------------------------------------------------------------------------
# The cluster


class QCluster:
    """`manage.py qcluster` with the bench settings on the bench's own database."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        _support.VAR.mkdir(exist_ok=True)
        cmd = [sys.executable, str(_support.REPO / "manage.py"), "qcluster"]
        env = {
            **os.environ,
            "DATABASE_URL": _support.DATABASE_URL,
            "DJANGO_SETTINGS_MODULE": _support.SETTINGS,
            "PYTHONPATH": str(_support.REPO),
            "JOBS_DISPATCH": "1",
        }
        log = open(QCLUSTER_LOG, "ab")  # noqa: SIM115 - handed to the child
        log.write(f"\n=== {time.ctime()} {' '.join(cmd)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            cmd,
            cwd=_support.REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """TERM to the cluster we started (it stops its workers); KILL its group after."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # any worker left of that cluster


# ---------------------------------------------------------------------------------------
# Child: the benchmark proper (its own database, Django set up here)


def _editor_emails() -> list[str]:
    return [f"editor{i:02d}@bench.test" for i in range(1, _support.EDITORS + 1)]


def _slack_aliases(ctx: _support.BenchContext) -> None:
    """Every editor gets a verified Slack identity (Alice has one from the workspace)."""
    from tenancy.models import AliasKind, PersonAlias

    for i in range(1, _support.EDITORS + 1):
        PersonAlias.objects.get_or_create(
            tenant=ctx.tenant,
            person=ctx.people[f"editor{i:02d}"],
            kind=AliasKind.SLACK_USER_ID,
            defaults={"value": f"U0EDITOR{i:02d}"},
        )


def _create_clarifications(
    ctx: _support.BenchContext, prefix: str, count: int, budget: float | None = None
) -> list[str]:
    """`count` open clarifications through the real submission path, or fewer (whole
    submissions, at least MIN_CARDS) when `budget` seconds run out first."""
    from ingest.services import submission_apply, submission_plan

    emails = _editor_emails()
    ids: list[str] = []
    n = 0
    deadline = None if budget is None else time.perf_counter() + budget
    while len(ids) < count:
        if deadline is not None and len(ids) >= MIN_CARDS and time.perf_counter() > deadline:
            break
        facts = min(FACTS_PER_SUBMISSION, count - len(ids))
        data = _support.submission_data(
            external_id=f"{prefix}-{n}",
            facts=facts,
            author_email=emails[n % len(emails)],
            ambiguous=True,
        )
        body = submission_apply(tenant=ctx.tenant, plan=submission_plan(data))
        ids += [str(c["id"]) for c in body["clarifications"]]
        n += 1
    return ids


def _pending(ids: list[str]) -> int:
    from jobs.models import Job, JobStatus

    return Job.objects.filter(kind=KIND, subject__in=ids, status=JobStatus.PENDING).count()


@contextlib.contextmanager
def _profiled() -> Any:
    """With BENCH_DELIVERY_PROFILE=<file>, the measured work under cProfile, its stats
    written to that file (`python -m pstats <file>`); the figures are then slower."""
    if not PROFILE:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(PROFILE)


def cards_per_second(ctx: _support.BenchContext, stub: StubProcess) -> dict[str, Any]:
    from django.db import connection

    import delivery.worker
    from delivery.models import Delivery, DeliveryStatus
    from delivery.slack.channel import SlackChannel
    from jobs.tasks import ROUND_LEASES, work

    if SEND_THREADS:
        delivery.worker.SEND_THREADS = int(SEND_THREADS)

    # Warm-up batch: imports, first connections, the statements per card.
    warm = _create_clarifications(ctx, "warm", WARMUP_CARDS)
    warm_done = work(KIND, max_seconds=WORK_CAP_SECONDS)
    warm_sent = Delivery.objects.filter(
        clarification_id__in=warm, status=DeliveryStatus.SENT
    ).count()
    if warm_sent != WARMUP_CARDS:
        raise RuntimeError(f"warm-up: {warm_sent}/{WARMUP_CARDS} cards sent ({warm_done} leases)")

    t0 = time.perf_counter()
    ids = _create_clarifications(ctx, "cards", CARDS, budget=CREATE_BUDGET_SECONDS)
    create_seconds = time.perf_counter() - t0
    cards = len(ids)
    if _pending(ids) != cards:
        raise RuntimeError(f"expected {cards} pending jobs, got {_pending(ids)}")
    _support.analyze("jobs_job", "delivery_delivery", "clarify_clarification")
    _log(f"{cards} clarifications in {create_seconds:.1f}s; one worker delivering")
    stub.ask("reset")

    spent = {"sql": 0.0, "slack": 0.0}
    statements: dict[str, list[float]] = {}  # statement text → [count, seconds]

    def sql_timer(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            took = time.perf_counter() - t
            spent["sql"] += took
            entry = statements.setdefault(sql, [0, 0.0])
            entry[0] += 1
            entry[1] += took

    original_send = SlackChannel.send_card

    def timed_send(self: SlackChannel, *, address: str, card: Any) -> str:
        t = time.perf_counter()
        try:
            return original_send(self, address=address, card=card)
        finally:
            spent["slack"] += time.perf_counter() - t

    SlackChannel.send_card = timed_send  # type: ignore[method-assign]
    try:
        with connection.execute_wrapper(sql_timer):
            started = time.perf_counter()
            cpu0 = time.process_time()
            mono0 = time.monotonic()
            leases = 0
            deadline = started + WORK_CAP_SECONDS
            with _profiled():
                while time.perf_counter() < deadline:
                    done = work(KIND, max_seconds=max(0.0, deadline - time.perf_counter()))
                    leases += done
                    if done == 0:
                        break
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - cpu0
    finally:
        SlackChannel.send_card = original_send  # type: ignore[method-assign]

    summary = stub.ask("summary")
    sent = Delivery.objects.filter(clarification_id__in=ids, status=DeliveryStatus.SENT).count()
    posted_ids = summary["ids"]
    checks = {
        "postMessage_calls": summary["postMessage"],
        "each_call_one_card": summary["withOneCard"] == summary["postMessage"],
        "distinct_ids_match": sorted(set(posted_ids)) == sorted(ids)
        and len(posted_ids) == len(ids),
        "bot_token_sent": summary["bearer"],
        "deliveries_sent": sent,
        "jobs_still_pending": _pending(ids),
        "other_methods": [m for m in summary["methods"] if m != "chat.postMessage"],
    }
    ok = (
        checks["postMessage_calls"] == cards
        and checks["each_call_one_card"]
        and checks["distinct_ids_match"]
        and checks["bot_token_sent"]
        and sent == cards
        and checks["jobs_still_pending"] == 0
    )
    per = max(1, summary["postMessage"])
    stub_span = summary["last"] - summary["first"] if summary["first"] is not None else float("nan")
    return {
        "cards": cards,
        "cards_asked_for": CARDS,
        "cards_sent": summary["postMessage"],
        "leases": leases,
        "seconds": round(elapsed, 2),
        "cards_per_second": round(summary["postMessage"] / elapsed, 1) if elapsed else 0.0,
        "round_leases": ROUND_LEASES,
        "send_threads": delivery.worker.SEND_THREADS,
        "ms_per_card": round(elapsed * 1000 / max(1, summary["postMessage"]), 2),
        "worker_cpu_ms_per_card": round(cpu * 1000 / max(1, summary["postMessage"]), 2),
        "worker_cpu_share": round(cpu / elapsed, 2) if elapsed else None,
        # Where a card's wall time goes (sums over the run ÷ cards): SQL statements
        # (round trips included), the Slack send (blocks + HTTP to the stub), the rest.
        "sql_wall_ms_per_card": round(spent["sql"] * 1000 / per, 2),
        "slack_send_wall_ms_per_card": round(spent["slack"] * 1000 / per, 2),
        "queries_per_card": round(sum(c for c, _ in statements.values()) / per, 1),
        "top_statements": [
            {
                "sql": " ".join(sql.split())[:160],
                "per_card": round(count / per, 2),
                "ms_per_card": round(seconds * 1000 / per, 2),
                "mean_ms": round(seconds * 1000 / count, 2),
            }
            for sql, (count, seconds) in sorted(
                statements.items(), key=lambda item: item[1][1], reverse=True
            )[:6]
        ],
        "stub_first_to_last_s": round(stub_span, 2),
        "start_to_first_card_ms": round((summary["first"] - mono0) * 1000, 1)
        if summary["first"] is not None
        else None,
        "setup_create_seconds": round(create_seconds, 1),
        "checks": checks,
        "ok": ok,
    }


def _submit(conn: http.client.HTTPConnection, key: str, data: dict[str, Any]) -> tuple[str, float]:
    payload = json.dumps(data).encode()
    conn.request(
        "POST",
        "/v1/submissions",
        body=payload,
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )
    resp = conn.getresponse()
    body = resp.read()
    committed = time.monotonic()
    if resp.status != 201:
        raise RuntimeError(f"submission → {resp.status} {body[:300]!r}")
    [clar] = json.loads(body)["clarifications"]
    return str(clar["id"]), committed


def commit_to_card(ctx: _support.BenchContext, stub: StubProcess) -> dict[str, Any]:
    emails = _editor_emails()
    cluster = QCluster()
    os.environ["JOBS_DISPATCH"] = "1"  # for gunicorn (this process's settings are loaded)
    try:
        cluster.start()
        with _support.Gunicorn(workers=1, threads=4) as server:
            conn = http.client.HTTPConnection(_support.HOST, server.port, timeout=30)
            latencies: list[float] = []
            responses: list[float] = []
            try:
                for n in range(WARMUP_SUBMISSIONS + SUBMISSIONS):
                    data = _support.submission_data(
                        external_id=f"latency-{n}",
                        author_email=emails[n % len(emails)],
                        ambiguous=True,
                    )
                    sent_at = time.monotonic()
                    cid, committed = _submit(conn, ctx.ingest_key, data)
                    timeout = FIRST_CARD_TIMEOUT if n == 0 else CARD_TIMEOUT
                    card = stub.ask("wait", cid, timeout)["t"]
                    if card is None:
                        alive = "running" if cluster.alive() else "exited"
                        raise RuntimeError(
                            f"no card for submission {n} within {timeout:.0f}s "
                            f"(cluster {alive}; see {QCLUSTER_LOG})"
                        )
                    if n == 0:
                        _log(
                            f"cluster delivering (first card {card - committed:.1f}s after commit)"
                        )
                    if n >= WARMUP_SUBMISSIONS:
                        latencies.append((card - committed) * 1000)
                        responses.append((committed - sent_at) * 1000)
            finally:
                conn.close()
            describe = server.describe
    finally:
        cluster.stop()
        os.environ["JOBS_DISPATCH"] = "0"
    pct = _support.percentile
    return {
        "submissions": len(latencies),
        "p50_ms": round(pct(latencies, 0.5), 1),
        "p99_ms": round(pct(latencies, 0.99), 1),
        "min_ms": round(min(latencies), 1),
        "max_ms": round(max(latencies), 1),
        "mean_ms": round(sum(latencies) / len(latencies), 1),
        "submission_response_p50_ms": round(pct(responses, 0.5), 1),
        "latencies_ms": [round(x, 1) for x in latencies],
        "server": describe,
        "cluster": "manage.py qcluster (Q_WORKERS default 2, ORM broker poll 0.5 s)",
    }


def child_main(result_path: str) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stub = StubProcess()
    try:
        os.environ.update(
            {
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_API_URL": stub.url,
                "CLARIFY_CHANNELS": "slack",
                "CLARIFY_PER_PERSON_DAILY_CAP": CAP,
                "CLARIFY_DIGEST_THRESHOLD": CAP,
                "JOBS_DISPATCH": "0",
            }
        )
        ctx = _support.setup()
        _slack_aliases(ctx)
        _log(f"database {_support.DB_NAME} ready in {ctx.setup_seconds:.1f}s; stub {stub.url}")
        latency = commit_to_card(ctx, stub)
        _log(f"commit → card p50 {latency['p50_ms']:.0f} ms; now the cards, one worker")
        throughput = cards_per_second(ctx, stub)
        Path(result_path).write_text(
            json.dumps({"throughput": throughput, "latency": latency, "setup": ctx.setup_seconds})
        )
    finally:
        _support.stop_all_servers()
        stub.stop()
    return 0


# ---------------------------------------------------------------------------------------
# Parent: `run()` (run_all's process keeps its own database and Django untouched)


def run() -> dict[str, Any]:
    started = time.perf_counter()
    _T0[0] = started
    with tempfile.TemporaryDirectory(prefix="bench-delivery-") as tmp:
        result_path = Path(tmp) / "result.json"
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_delivery", "--child", str(result_path)],
            cwd=_support.REPO,
            env={**os.environ, "BENCH_DB_NAME": DB_NAME, "PYTHONPATH": str(_support.REPO)},
        )
        try:
            code = child.wait(timeout=CHILD_TIMEOUT)
        finally:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
                try:
                    child.wait(timeout=STOP_GRACE + 10)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait(timeout=5)
            if not KEEP_DB:
                with contextlib.suppress(Exception):
                    _support._admin_execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        if code != 0 or not result_path.exists():
            raise RuntimeError(f"the delivery benchmark process failed (exit {code})")
        data = json.loads(result_path.read_text())
    throughput, latency = data["throughput"], data["latency"]
    notes = [
        f"own database {DB_NAME} ({'kept' if KEEP_DB else 'dropped after'}); "
        f"set-up {data['setup']:.0f}s"
    ]
    if not throughput["ok"]:
        notes.append(f"delivery check failed: {throughput['checks']}")
    summary = (
        f"one worker {throughput['cards_per_second']:.1f} cards/s "
        f"({throughput['cards_sent']}/{throughput['cards']} to the stub, "
        f"{throughput['worker_cpu_ms_per_card']:.0f} ms CPU and "
        f"{throughput['queries_per_card']:.1f} SQL per card; rounds of "
        f"{throughput['round_leases']}, {throughput['send_threads']} send threads); "
        "commit → first card with the "
        f"cluster p50 {latency['p50_ms']:.0f} ms, p99 {latency['p99_ms']:.0f} ms "
        f"({latency['submissions']} submissions)"
    )
    return _support.result(
        name="delivery",
        title="Cards/s by one worker to the Slack stub; commit → first card with the cluster",
        figures={"cards_per_second": throughput, "commit_to_first_card": latency},
        target=None,
        passed=None if throughput["ok"] else False,
        summary=summary,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stub"]:
        sys.exit(stub_main())
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child_main(sys.argv[2]))
    print(json.dumps(run(), indent=2))
