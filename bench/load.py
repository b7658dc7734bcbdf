"""`make load`: the mixed workload against gunicorn on PostgreSQL, 32 concurrent clients.

    .venv/bin/python bench/load.py          # = make load; table on stdout, var/load-results.json

Operations (each client picks one at random per request, by weight; counted only when
the response is the one expected):

- submission: `POST /v1/submissions`, one fact with one ambiguity → 201;
- list: `GET /v1/clarifications?state=open` → 200;
- detail: `GET /v1/clarifications/{id}` → 200;
- answer: `POST /v1/clarifications/{id}/answer` `{"answerIndex": 0}` by an editor's
  person-bound key, a distinct open clarification each time → 200 `bound`;
- slack_tap: `POST /hooks/slack/interactivity`, a signed `block_actions` tap on a real card
  (its delivery's nonce, tapped by the card's recipient) → 200.

Set-up (not measured): a fresh database `telha_load` (bench._support, 127.0.0.1:5432), the
bench workspace with a Slack id for every editor, a local stub of the Slack Web API
(tests/delivery/slack_stub.py, in a process of its own) that the product really calls
(chat.postMessage when the delivery worker sends a card, chat.update when a tap answers
it), and two pools of open clarifications made through the real submission path:

- tap pool: the delivery worker (`jobs.tasks.work`, in this process, against the
  stub) sends every card first, so each tap has its Delivery row, nonce and message;
- answer pool: answered through the API (clarifications created by the load's own
  submissions join it as they come).

Then gunicorn (bench._support.Gunicorn: gthread, 2 workers x 8 threads by default), a
warm-up of `LOAD_WARMUP_SECONDS` (5) whose rates size the pools (topped up, unmeasured, to
1.6 x what the measured run should use), and a measured run of `LOAD_SECONDS` (30) with
`LOAD_CLIENTS` (32) keep-alive clients (asyncio, raw HTTP/1.1, like bench._support.drive)
in two phases: "saturation", a closed loop (each client sends its next request as soon as
the last one is answered: the server's capacity), then "paced", the same 32 clients each
pausing 0.5-1.5 x `LOAD_THINK_SECONDS` (1 s) between requests, as locust users do. The
target, answer p99 under 200 ms at 32 clients, is judged on "paced"; a closed loop of 32
clients on two cores cannot meet it (mean latency = clients / throughput). Exit status 1
when it is missed, a request failed or `check_integrity`'s invariants do not hold
afterwards.

Test-only settings for the load server (environment): no per-person daily cap and no
digests (so every tap card is sent), the hook rate limit raised (every client is
127.0.0.1), `JOBS_DISPATCH=0` (no cluster: the worker ran before the load).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Before bench._support is imported (it reads BENCH_DB_NAME) and Django is set up.
os.environ.setdefault("BENCH_DB_NAME", "telha_load")

from bench import _support  # noqa: E402
from bench.bench_delivery import StubProcess  # noqa: E402
from tests.delivery.conftest_slack import (  # noqa: E402
    BOT_TOKEN,
    SIGNING_SECRET,
    block_actions,
    form_body,
    signed_headers,
)

RESULTS = REPO / "var" / "load-results.json"
CLIENTS = int(os.environ.get("LOAD_CLIENTS", "32"))
SECONDS = float(os.environ.get("LOAD_SECONDS", "30"))
WARMUP_SECONDS = float(os.environ.get("LOAD_WARMUP_SECONDS", "5"))
# Pools before the warm-up; after it they are topped up to POOL_MARGIN x (the warm-up's
# rate x LOAD_SECONDS), so a fast machine does not run out and a slow one does not wait.
ANSWER_POOL = int(os.environ.get("LOAD_ANSWER_POOL", "240"))
TAP_POOL = int(os.environ.get("LOAD_TAP_POOL", "96"))
POOL_MARGIN = 1.6
MAX_POOL = int(os.environ.get("LOAD_MAX_POOL", "6000"))
BATCH = 40  # facts (clarifications) per pre-created submission
TARGET_ANSWER_P99_MS = 200.0
# Two measured phases after the warm-up: "saturation", a closed loop (every client sends its
# next request as soon as the last is answered: the server's capacity), then "paced", the
# same clients each pausing LOAD_THINK_SECONDS on average between requests (locust-style
# users: a person tapping cards, a script between calls). The target is judged on "paced".
THINK_SECONDS = float(os.environ.get("LOAD_THINK_SECONDS", "1.0"))
PHASES = [("saturation", 0.0), ("paced", THINK_SECONDS)]
VERDICT_PHASE = "paced"
WEIGHTS = {"submission": 10, "list": 15, "detail": 25, "answer": 35, "slack_tap": 15}
OPERATIONS = list(WEIGHTS)
OK_STATUS = {"submission": 201, "list": 200, "detail": 200, "answer": 200, "slack_tap": 200}


def slack_id(n: int) -> str:
    return f"U0ED{n:02d}"


def configure_environment(stub_url: str) -> None:
    os.environ.update(
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_API_URL=stub_url,
        CLARIFY_CHANNELS="slack,inbox",
        CLARIFY_PER_PERSON_DAILY_CAP="1000000",
        CLARIFY_DIGEST_THRESHOLD="1000000",
        HOOK_RATE_LIMIT_PER_MINUTE="100000000",
        JOBS_DISPATCH="0",
    )


# ---------------------------------------------------------------------------------------
# Set-up: workspace, pools


@dataclass
class Card:
    clarification: str
    nonce: str
    user: str
    channel: str
    ts: str


@dataclass
class Pools:
    answers: deque[str] = field(default_factory=deque)
    cards: deque[Card] = field(default_factory=deque)
    known: list[str] = field(default_factory=list)  # every clarification id, for reads
    seconds: float = 0.0
    rounds: int = 0
    exhausted: Counter[str] = field(default_factory=Counter)


def editors_on_slack(ctx: _support.BenchContext) -> list[Any]:
    """Give every bench editor a Slack id (the workspace file is idempotent)."""
    from tenancy.services import workspace_load

    data = json.loads(json.dumps(_support.WORKSPACE))
    for person in data["people"]:
        email = person["email"]
        if email.startswith("editor"):
            person["aliases"] = {"slackUserId": slack_id(int(email[6:8]))}
    workspace_load(data=data)
    return [ctx.people[f"editor{i:02d}"] for i in range(1, _support.EDITORS + 1)]


def create(ctx: _support.BenchContext, prefix: str, total: int, authors: list[str]) -> list[str]:
    """`total` open clarifications through the real submission path, authors round-robin."""
    from ingest.services import submission_apply, submission_plan

    ids: list[str] = []
    batch = 0
    while len(ids) < total:
        author = authors[batch % len(authors)]
        data = _support.submission_data(
            external_id=f"{prefix}-{batch}",
            facts=min(BATCH, total - len(ids)),
            author_email=author,
            ambiguous=True,
        )
        batch += 1
        body = submission_apply(tenant=ctx.tenant, plan=submission_plan(data))
        ids += [str(c["id"]) for c in body["clarifications"] if not c["deduplicated"]]
    return ids


def deliver_cards(ids: list[str]) -> list[Card]:
    """Run the delivery worker until every tap-pool card is sent to the stub."""
    from delivery.models import Delivery, DeliveryKind, DeliveryStatus
    from jobs.tasks import work

    while work("clarify:temporal", max_seconds=300):
        pass
    cards = []
    deliveries = Delivery.objects.filter(
        clarification_id__in=ids,
        kind=DeliveryKind.QUESTION,
        channel="slack",
        status=DeliveryStatus.SENT,
    ).select_related("person")
    aliases = {slack_id(n): f"editor{n:02d}@bench.test" for n in range(1, _support.EDITORS + 1)}
    by_email = {v: k for k, v in aliases.items()}
    for d in deliveries:
        channel, _, ts = (d.message_ref or "").partition(":")
        user = by_email.get(d.person.email)
        if user and channel and ts:
            cards.append(Card(str(d.clarification_id), d.nonce, user, channel, ts))
    return cards


def top_up(ctx: _support.BenchContext, pools: Pools, *, answers: int, taps: int) -> None:
    """Add open clarifications until the pools hold `answers` and `taps` (capped)."""
    started = time.perf_counter()
    editors = [f"editor{i:02d}@bench.test" for i in range(1, _support.EDITORS + 1)]
    pools.rounds += 1
    want_taps = min(MAX_POOL, taps) - len(pools.cards)
    if want_taps > 0:
        tap_ids = create(ctx, f"load-tap-{pools.rounds}", want_taps, editors)
        cards = deliver_cards(tap_ids)
        random.Random(pools.rounds).shuffle(cards)
        pools.cards.extend(cards)
        pools.known.extend(tap_ids)
    want_answers = min(MAX_POOL, answers) - len(pools.answers)
    if want_answers > 0:
        answer_ids = create(ctx, f"load-answer-{pools.rounds}", want_answers, ["alice@bench.test"])
        random.Random(-pools.rounds).shuffle(answer_ids)
        pools.answers.extend(answer_ids)
        pools.known.extend(answer_ids)
    _support.analyze(
        "clarify_clarification",
        "clarify_responserecord",
        "clarify_auditevent",
        "graph_node",
        "graph_nodeversion",
        "jobs_job",
        "delivery_delivery",
    )
    pools.seconds += time.perf_counter() - started


# ---------------------------------------------------------------------------------------
# The driver (asyncio keep-alive clients; per-operation figures)


@dataclass
class OpStats:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: int = 0
    samples: list[str] = field(default_factory=list)

    def figures(self, elapsed: float) -> dict[str, Any]:
        return {
            "requests": len(self.latencies_ms),
            "errors": self.errors,
            "per_second": round(len(self.latencies_ms) / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(_support.percentile(self.latencies_ms, 0.50), 1),
            "p99_ms": round(_support.percentile(self.latencies_ms, 0.99), 1),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "error_samples": self.samples[:3],
        }


class Workload:
    def __init__(self, ctx: _support.BenchContext, pools: Pools, port: int) -> None:
        self.ctx, self.pools, self.port = ctx, pools, port
        self.rng = random.Random(7)
        self.counter = 0
        self.taps = 0
        self.loop_lag_ms: list[float] = []  # the clients' own event-loop lag, last run

    def next_request(self) -> tuple[str, bytes, Any]:
        """(operation, raw HTTP request, context for the response check)."""
        op = self.rng.choices(OPERATIONS, weights=[WEIGHTS[o] for o in OPERATIONS])[0]
        if op == "answer" and not self.pools.answers:
            self.pools.exhausted["answer"] += 1
            op = "detail"
        if op == "slack_tap" and not self.pools.cards:
            self.pools.exhausted["slack_tap"] += 1
            op = "detail"
        editor_key = self.rng.choice(self.ctx.editor_keys)
        if op == "submission":
            self.counter += 1
            data = _support.submission_data(
                external_id=f"load-live-{os.getpid()}-{self.counter}", ambiguous=True
            )
            return op, self.raw("POST", "/v1/submissions", self.ctx.ingest_key, data), None
        if op == "list":
            return op, self.raw("GET", "/v1/clarifications?state=open", editor_key), None
        if op == "detail":
            clar = self.rng.choice(self.pools.known)
            return op, self.raw("GET", f"/v1/clarifications/{clar}", editor_key), None
        if op == "answer":
            clar = self.pools.answers.popleft()
            body = {"answerIndex": 0}
            return op, self.raw("POST", f"/v1/clarifications/{clar}/answer", editor_key, body), None
        card = self.pools.cards.popleft()
        self.taps += 1
        value = json.dumps(
            {
                "kind": "clarify_answer",
                "clarificationId": card.clarification,
                "answerIndex": 0,
                "nonce": card.nonce,
            }
        )
        payload = block_actions(
            action_id="clarify_answer_0",
            value=value,
            user=card.user,
            channel=card.channel,
            ts=card.ts,
            action_ts=f"{int(time.time())}.{self.taps:06d}",
            trigger_id=f"{self.taps}.{os.getpid()}.trigger",
        )
        return op, self.raw_form("/hooks/slack/interactivity", form_body(payload)), None

    def raw(self, method: str, path: str, key: str, body: Any = None) -> bytes:
        payload = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {_support.HOST}:{self.port}\r\n"
            f"Authorization: Bearer {key}\r\nAccept: application/json\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload

    def raw_form(self, path: str, body: str) -> bytes:
        headers = "".join(f"{k}: {v}\r\n" for k, v in signed_headers(body).items())
        data = body.encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {_support.HOST}:{self.port}\r\n{headers}"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        return head.encode() + data

    def accept(self, op: str, status: int, body: bytes) -> bool:
        if status != OK_STATUS[op]:
            return False
        if op == "submission":
            try:
                created = json.loads(body)["clarifications"]
            except (ValueError, KeyError):
                return False
            ids = [str(c["id"]) for c in created if not c.get("deduplicated")]
            self.pools.answers.extend(ids)
            self.pools.known.extend(ids)
        elif op == "answer":
            try:
                return bool(json.loads(body).get("outcome") == "bound")
            except ValueError:
                return False
        return True


async def run_clients(
    work: Workload, clients: int, seconds: float, think: float = 0.0
) -> tuple[dict[str, OpStats], float]:
    """`clients` keep-alive clients for `seconds`. `think` > 0: before each request a client
    waits uniformly between 0.5 x and 1.5 x `think` seconds (locust's `between`), like a
    person or a script between calls; 0 is a closed loop with no pause."""
    stats = {op: OpStats() for op in OPERATIONS}
    started = time.perf_counter()
    deadline = started + seconds

    async def client() -> None:
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        try:
            while time.perf_counter() < deadline:
                if think > 0:
                    # Think first, so the clients start spread out like users arriving
                    # (all 32 firing at t=0 would be a burst no paced user makes).
                    await asyncio.sleep(random.uniform(0.5 * think, 1.5 * think))
                    if time.perf_counter() >= deadline:
                        break
                op, raw, _ = work.next_request()
                st = stats[op]
                t0 = time.perf_counter()
                status, body = 0, b""
                for attempt in (0, 1):
                    fresh = writer is None
                    try:
                        if writer is None:
                            reader, writer = await asyncio.open_connection(_support.HOST, work.port)
                        assert reader is not None
                        writer.write(raw)
                        await writer.drain()
                        status, headers, body = await _support._read_response(reader)
                        if headers.get(b"connection", b"").lower() == b"close":
                            writer.close()
                            reader = writer = None
                        break
                    except (ConnectionError, asyncio.IncompleteReadError) as exc:
                        if writer is not None:
                            writer.close()
                        reader = writer = None
                        if fresh or attempt == 1:  # retry only a reused keep-alive connection
                            status, body = 0, repr(exc).encode()
                            break
                elapsed_ms = (time.perf_counter() - t0) * 1000
                st.statuses[status] += 1
                if status and work.accept(op, status, body):
                    st.latencies_ms.append(elapsed_ms)
                else:
                    st.errors += 1
                    if len(st.samples) < 3:
                        st.samples.append(f"{status} {body[:200]!r}")
        finally:
            if writer is not None:
                writer.close()

    async def lag_monitor() -> None:
        """How late a 10 ms timer fires in the clients' loop: a late loop reads responses
        late, and that delay would be counted as server latency."""
        work.loop_lag_ms = []
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await asyncio.sleep(0.01)
            work.loop_lag_ms.append((time.perf_counter() - t0 - 0.01) * 1000)

    await asyncio.gather(lag_monitor(), *(client() for _ in range(clients)))
    return stats, time.perf_counter() - started


# ---------------------------------------------------------------------------------------
# Report


def server_cpu_seconds(server: _support.Gunicorn) -> float:
    """CPU time (user + system) of the gunicorn master and its workers so far."""
    if server.proc is None:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [server.proc.pid]
    for path in Path(f"/proc/{server.proc.pid}/task").glob("*/children"):
        pids += [int(p) for p in path.read_text().split()]
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def table(rows: dict[str, dict[str, Any]], total: dict[str, Any]) -> str:
    head = (
        f"{'operation':<12} {'requests':>8} {'errors':>6} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8}"
    )
    lines = [head, "-" * len(head)]
    for name, f in [*rows.items(), ("all", total)]:
        lines.append(
            f"{name:<12} {f['requests']:>8} {f['errors']:>6} {f['per_second']:>7} "
            f"{f['p50_ms']:>8} {f['p99_ms']:>8}"
        )
    return "\n".join(lines)


def verify(ctx: _support.BenchContext) -> dict[str, Any]:
    """What the load wrote: responses per channel, and the integrity invariants."""
    from django.db import close_old_connections
    from django.db.models import Count

    from clarify.integrity import integrity_violations
    from clarify.models import ResponseRecord

    close_old_connections()
    channels = dict(
        ResponseRecord.objects.values_list("channel").annotate(n=Count("id")).order_by()
    )
    violations = integrity_violations()
    return {
        "responses_by_channel": channels,
        "integrity_ok": not any(violations.values()),
        "integrity_violations": {k: v[:5] for k, v in violations.items() if v},
    }


def phase_figures(
    name: str, stats: dict[str, OpStats], elapsed: float, think: float, cpu_used: float
) -> dict[str, Any]:
    """The per-operation table of one phase, its total, verdict and notes."""
    rows = {op: stats[op].figures(elapsed) for op in OPERATIONS}
    everything = OpStats()
    for st in stats.values():
        everything.latencies_ms += st.latencies_ms
        everything.statuses += st.statuses
        everything.errors += st.errors
    total = everything.figures(elapsed)
    notes = []
    if think == 0:
        # Closed loop (no think time): mean latency = clients / throughput (Little's law),
        # so p99 < 200 ms at 32 clients needs well over 160 requests/s from the server.
        little = round(CLIENTS / total["per_second"] * 1000, 1) if total["per_second"] else None
        notes.append(
            f"closed loop: mean latency = clients / throughput = {little} ms at "
            f"{total['per_second']} req/s (a mean under 200 ms needs > {CLIENTS / 0.2:.0f} req/s)"
        )
    cpu_ms = round(cpu_used * 1000 / total["requests"], 1) if total["requests"] else None
    notes.append(
        f"gunicorn CPU: {cpu_ms} ms per counted request ({cpu_used:.1f}s over the phase; "
        "PostgreSQL's and the clients' CPU come on top)"
    )
    return {
        "phase": name,
        "think_seconds": think,
        "seconds": round(elapsed, 1),
        "operations": rows,
        "total": total,
        "answer_p99_ms": rows["answer"]["p99_ms"],
        "passed": rows["answer"]["p99_ms"] < TARGET_ANSWER_P99_MS,
        "server_cpu_ms_per_request": cpu_ms,
        "notes": notes,
    }


def main() -> int:
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    stub = StubProcess()  # its own process: the stub never takes the clients' CPU
    phases: list[dict[str, Any]] = []
    loads: list[float] = []
    try:
        configure_environment(stub.url)
        ctx = _support.setup()
        print(f"database {_support.DATABASE_URL}: set up in {ctx.setup_seconds:.1f}s", flush=True)
        editors_on_slack(ctx)
        pools = Pools()
        top_up(ctx, pools, answers=ANSWER_POOL, taps=TAP_POOL)
        with _support.Gunicorn() as server:
            work = Workload(ctx, pools, server.port)
            warm, warm_seconds = asyncio.run(run_clients(work, CLIENTS, WARMUP_SECONDS))
            for name, think in PHASES:
                # Pools for the phase, made while the server idles: the warm-up's closed-loop
                # rate bounds what any phase can use.
                expected = {
                    op: POOL_MARGIN * len(warm[op].latencies_ms) / warm_seconds * SECONDS
                    + 2 * CLIENTS
                    for op in ("answer", "slack_tap")
                }
                top_up(ctx, pools, answers=int(expected["answer"]), taps=int(expected["slack_tap"]))
                print(
                    f"{name}: {len(pools.answers)} clarifications to answer, "
                    f"{len(pools.cards)} Slack cards to tap (pools made in {pools.seconds:.1f}s)",
                    flush=True,
                )
                pools.exhausted.clear()
                loads.append(os.getloadavg()[0])
                cpu_start = server_cpu_seconds(server)
                # The clients are the instrument: no collector pause inside a measurement.
                gc.collect()
                gc.disable()
                try:
                    stats, elapsed = asyncio.run(run_clients(work, CLIENTS, SECONDS, think))
                finally:
                    gc.enable()
                cpu_used = server_cpu_seconds(server) - cpu_start
                loads.append(os.getloadavg()[0])
                figures = phase_figures(name, stats, elapsed, think, cpu_used)
                lag = sorted(work.loop_lag_ms) or [0.0]
                figures["client_loop_lag_ms"] = {
                    "p50": round(_support.percentile(lag, 0.5), 1),
                    "p99": round(_support.percentile(lag, 0.99), 1),
                    "max": round(lag[-1], 1),
                }
                figures["notes"].append(
                    "client event-loop lag (a 10 ms timer firing late): p50 "
                    f"{figures['client_loop_lag_ms']['p50']} ms, p99 "
                    f"{figures['client_loop_lag_ms']['p99']} ms, max "
                    f"{figures['client_loop_lag_ms']['max']} ms"
                )
                if pools.exhausted:
                    figures["notes"].append(
                        "pool ran out during the phase (replaced by detail reads): "
                        f"{dict(pools.exhausted)}"
                    )
                phases.append(figures)
            describe = server.describe
        checks = verify(ctx)
    finally:
        stub.stop()
        _support.stop_all_servers()

    cpus = os.cpu_count() or 1
    notes = []
    if max(loads, default=0.0) > cpus:
        notes.append(
            f"machine busy: 1-min load average up to {max(loads):.1f} on {cpus} CPUs "
            "(shared VM); absolute latencies are unreliable"
        )
    verdict = next(p for p in phases if p["phase"] == VERDICT_PHASE)
    errors = sum(p["total"]["errors"] for p in phases)
    passed = bool(verdict["passed"])
    result = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "database": _support.DATABASE_URL,
        "server": describe,
        "clients": CLIENTS,
        "weights": WEIGHTS,
        "phases": {p["phase"]: p for p in phases},
        "target": (
            f"answer p99 < {TARGET_ANSWER_P99_MS:.0f} ms at {CLIENTS} clients "
            f"(phase {VERDICT_PHASE!r}: think time {THINK_SECONDS:g} s mean)"
        ),
        "answer_p99_ms": verdict["answer_p99_ms"],
        "passed": passed,
        "checks": checks,
        "machine": {
            "cpus": cpus,
            "load_before": round(load_before, 2),
            "load_during": [round(x, 2) for x in loads],
        },
        "pool_seconds": round(pools.seconds, 1),
        "notes": notes,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")

    for p in phases:
        pause = (
            f"think time {0.5 * p['think_seconds']:g}-{1.5 * p['think_seconds']:g} s"
            if p["think_seconds"]
            else "closed loop, no think time"
        )
        print(f"\n{p['phase']}: {describe}, {CLIENTS} clients, {pause}, {p['seconds']}s\n")
        print(table(p["operations"], p["total"]))
        for note in p["notes"]:
            print(f"note: {note}")
    print(
        f"\nanswer p99 ({VERDICT_PHASE}) {verdict['answer_p99_ms']} ms — target < "
        f"{TARGET_ANSWER_P99_MS:.0f} ms: {'PASS' if passed else 'FAIL'}"
    )
    print(
        f"responses written: {checks['responses_by_channel']}; "
        f"integrity {'ok' if checks['integrity_ok'] else checks['integrity_violations']}"
    )
    for note in notes:
        print(f"note: {note}")
    print(f"results: {RESULTS.relative_to(REPO)}")
    return 0 if passed and not errors and checks["integrity_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
