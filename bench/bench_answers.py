"""Answer throughput against a minimal DRF insert, 16 concurrent clients (issue 3).

Set-up: a pool of open `relative_date` clarifications (normal severity, so one editor's
answer binds) created through `submission_plan` + `submission_apply`, on sources whose
ACL is `group:legal`; 16 editors of that group, each with a person-bound key.

Load (one gunicorn, the same 16 keep-alive clients for both endpoints):
- answers: `POST /v1/clarifications/{id}/answer` `{"answerIndex": 0}`, every request a
  DISTINCT clarification (each client works through its own share of the pool), counted
  only when it is `200 {"outcome": "bound"}`;
- baseline: `POST /bench/create` (bench/baseline.py: DRF's minimal create endpoint, a
  `CreateAPIView` + `ModelSerializer` with the same default authentication and
  permission classes, saving one row through the ORM and answering 201), same keys,
  same body;
- raw baseline, reported beside it: `POST /bench/insert` (an `APIView` that skips the
  serializer and the ORM: one raw INSERT).
A warm-up of each, then alternating measured rounds (baseline, raw, answers, three times)
so drift and background load hit all alike; each round's ratio is reported too.

Targets: answers/s ÷ baseline/s ≥ 0.5 and answer p99 ≤ 4 x p50. Also reported: the
ratio to the raw baseline, SQL queries and serial in-process latency of one answer and
one request of each baseline (the first thing to look at when the ratio is missed).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, deque
from typing import Any

from bench import _support

CLIENTS = 16
INITIAL_POOL = int(os.environ.get("BENCH_ANSWER_POOL", "300"))  # enough for the warm-up
POOL_MARGIN = 2.5  # before each round: this x (best rate so far x round seconds)
BATCH = 100  # fact nodes (and so clarifications) per pre-created submission
WARMUP_SECONDS = 2.0
ROUND_SECONDS = 5.0
ROUNDS = 3
TARGET_RATIO = 0.5
TARGET_TAIL = 4.0
BODY = {"answerIndex": 0}


class Pool:
    """Open clarifications, created through the real submission path in batches of
    `BATCH`, dealt out round-robin to the clients' queues (each id is answered once)."""

    def __init__(self, ctx: _support.BenchContext) -> None:
        self.ctx = ctx
        self.batches = 0
        self.created = 0
        self.seconds = 0.0
        self.queues: list[deque[str]] = [deque() for _ in range(CLIENTS)]
        _support.submission_shape_check(
            _support.submission_data(external_id="answers-check", facts=2, ambiguous=True)
        )

    def remaining(self) -> int:
        return sum(len(q) for q in self.queues)

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            self.top_up(n)
            out.append(max(self.queues, key=len).popleft())
        return out

    def top_up(self, wanted: int) -> None:
        """Create clarifications until every client's queue holds ≥ wanted / CLIENTS."""
        from ingest.services import submission_apply, submission_plan

        started = time.perf_counter()
        per_client = -(-wanted // CLIENTS)
        grew = False
        while min(len(q) for q in self.queues) < per_client:
            data = _support.submission_data(
                external_id=f"answers-{self.batches}", facts=BATCH, ambiguous=True
            )
            self.batches += 1
            body = submission_apply(tenant=self.ctx.tenant, plan=submission_plan(data))
            for c in body["clarifications"]:
                if c["state"] == "open" and not c["deduplicated"]:
                    min(self.queues, key=len).append(str(c["id"]))
                    self.created += 1
            grew = True
        if grew:
            _support.analyze(
                "clarify_clarification",
                "clarify_responserecord",
                "clarify_auditevent",
                "graph_node",
                "graph_nodeversion",
                "jobs_job",
            )
        self.seconds += time.perf_counter() - started


def _bound(status: int, body: bytes) -> bool:
    try:
        return status == 200 and json.loads(body).get("outcome") == "bound"
    except ValueError:
        return False


def _serial_probe(ctx: _support.BenchContext, clar_ids: list[str]) -> dict[str, Any]:
    """In-process, one request at a time (no server, no concurrency): wall and CPU time
    of each endpoint, their SQL, and what the answer's lock statement costs with the
    caller's ACL and without. CPU time is the figure least disturbed by other load."""
    from django.db import connection, transaction
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from clarify.services import clarification_lock
    from tenancy.auth import caller_for_key
    from tenancy.models import ApiKey
    from tenancy.services import hash_key

    client = Client()
    secret = ctx.editor_keys[0]
    headers = {"Authorization": f"Bearer {secret}", "Host": _support.HOST}

    def call(path: str) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        resp = client.post(path, BODY, content_type="application/json", headers=headers)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if resp.status_code not in (200, 201):
            raise RuntimeError(f"{path} → {resp.status_code} {resp.content[:300]!r}")
        return wall * 1000, cpu * 1000

    def sql_of(path: str) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            call(path)
        return [q["sql"] for q in captured.captured_queries]

    *timed, last = clar_ids
    call(f"/v1/clarifications/{timed[0]}/answer")  # warms caches
    call("/bench/create")
    call("/bench/insert")
    answer: list[tuple[float, float]] = []
    base: list[tuple[float, float]] = []
    raw: list[tuple[float, float]] = []
    for clar_id in timed[1:]:
        answer.append(call(f"/v1/clarifications/{clar_id}/answer"))
        base.append(call("/bench/create"))
        raw.append(call("/bench/insert"))
    answer_sql = sql_of(f"/v1/clarifications/{last}/answer")
    base_sql = sql_of("/bench/create")
    raw_sql = sql_of("/bench/insert")

    caller = caller_for_key(
        ApiKey.objects.select_related("tenant", "person", "person__user").get(
            key_hash=hash_key(secret)
        )
    )

    def guarded() -> None:  # the answer's own lock statement, under the caller's ACL
        with transaction.atomic():
            clarification_lock(caller.tenant, last, caller)

    def plain() -> None:
        with transaction.atomic():
            clarification_lock(caller.tenant, last, None)

    def cpu_ms(fn: Any, n: int = 50) -> float:
        fn()
        c0 = time.process_time()
        for _ in range(n):
            fn()
        return round((time.process_time() - c0) / n * 1000, 2)

    def med(pairs: list[tuple[float, float]], i: int) -> float:
        return round(_support.percentile([p[i] for p in pairs], 0.5), 2)

    return {
        "samples": len(answer),
        "answer_queries": len(answer_sql),
        "baseline_queries": len(base_sql),
        "raw_baseline_queries": len(raw_sql),
        "answer_serial_ms": med(answer, 0),
        "baseline_serial_ms": med(base, 0),
        "raw_baseline_serial_ms": med(raw, 0),
        "answer_serial_cpu_ms": med(answer, 1),
        "baseline_serial_cpu_ms": med(base, 1),
        "raw_baseline_serial_cpu_ms": med(raw, 1),
        "answer_lock_acl_cpu_ms": cpu_ms(guarded),
        "answer_lock_plain_cpu_ms": cpu_ms(plain),
        "answer_query_kinds": dict(Counter(_sql_kind(q) for q in answer_sql).most_common()),
        "answer_sql": [q[:160] for q in answer_sql],
    }


def _sql_kind(sql: str) -> str:
    words = sql.split()
    verb = words[0].upper() if words else "?"
    table = ""
    for keyword in ("FROM", "INTO", "UPDATE"):
        if keyword in words:
            i = words.index(keyword)
            if i + 1 < len(words):
                table = words[i + 1].strip('"')
                break
    return f"{verb} {table}".strip()


def run() -> dict[str, Any]:
    started = time.perf_counter()
    ctx = _support.setup()
    from bench.baseline import (
        baseline_model_row_count,
        baseline_row_count,
        baseline_table_create,
    )
    from clarify.models import ClarificationBinding

    pool = Pool(ctx)
    pool.top_up(INITIAL_POOL)
    probe = _serial_probe(ctx, pool.take(12))
    bindings_before = ClarificationBinding.objects.count()
    baseline_table_create()

    queues = pool.queues
    keys = ctx.editor_keys

    ran_dry: set[int] = set()

    def answer_call(i: int) -> _support.Call | None:
        # Its own share first; a client that got through it takes from the longest share
        # (still each clarification once: the event loop pops one at a time).
        queue = queues[i] or max(queues, key=len)
        if not queue:
            ran_dry.add(i)
            return None
        return ("POST", f"/v1/clarifications/{queue.popleft()}/answer", BODY, keys[i])

    def baseline_call(i: int) -> _support.Call:
        return ("POST", "/bench/create", BODY, keys[i])

    def raw_call(i: int) -> _support.Call:
        return ("POST", "/bench/insert", BODY, keys[i])

    # The three endpoints: what each client sends next, the expected status, a body check.
    endpoints: dict[str, tuple[Any, tuple[int, ...], Any]] = {
        "baseline": (baseline_call, (201,), None),
        "raw": (raw_call, (201,), None),
        "answers": (answer_call, (200,), _bound),
    }
    merged: dict[str, _support.LoadResult] = {}
    round_ratios: list[float] = []  # answers ÷ baseline of each round (this VM is noisy)
    with _support.Gunicorn() as server:

        def measure(name: str, seconds: float) -> _support.LoadResult:
            next_call, ok, check = endpoints[name]
            return _support.drive(
                port=server.port,
                clients=CLIENTS,
                next_call=next_call,
                duration=seconds,
                ok=ok,
                check=check,
            )

        warm = {name: measure(name, WARMUP_SECONDS) for name in endpoints}
        if any(w.errors for w in warm.values()):
            samples = [e for w in warm.values() for e in w.error_samples]
            raise RuntimeError(f"warm-up failed: {samples}")
        ran_dry.clear()  # a warm-up cut short by the initial pool is still a warm-up
        rate = warm["answers"].throughput
        for _ in range(ROUNDS):
            # Enough distinct clarifications for the round (created while the server idles).
            pool.top_up(max(int(rate * ROUND_SECONDS * POOL_MARGIN), CLIENTS * 50))
            this_round = {}
            for name in endpoints:  # alternating: baseline, raw, answers
                result = this_round[name] = measure(name, ROUND_SECONDS)
                merged[name] = merged[name].merged(result) if name in merged else result
            round_ratios.append(
                round(this_round["answers"].throughput / this_round["baseline"].throughput, 3)
            )
            rate = max(rate, merged["answers"].throughput)
        describe = server.describe
    answers, baseline, raw = merged["answers"], merged["baseline"], merged["raw"]

    # Every counted answer bound exactly one fact version; every baseline call one row.
    bindings = ClarificationBinding.objects.count() - bindings_before
    rows = baseline_model_row_count()
    raw_rows = baseline_row_count()
    ratio = answers.throughput / baseline.throughput
    raw_ratio = answers.throughput / raw.throughput
    tail = answers.pct(0.99) / answers.pct(0.50)
    exhausted = bool(ran_dry)
    figures = {
        "clients": CLIENTS,
        "server": describe,
        "clarifications_created": pool.created,
        "precreate_seconds": round(pool.seconds, 1),
        "answers": answers.figures(),
        "baseline": baseline.figures(),
        "raw_baseline": raw.figures(),
        "ratio_answers_to_baseline": round(ratio, 3),
        "ratio_answers_to_raw_baseline": round(raw_ratio, 3),
        "ratio_per_round": round_ratios,
        "answer_p99_over_p50": round(tail, 2),
        "baseline_p99_over_p50": round(baseline.pct(0.99) / baseline.pct(0.50), 2),
        "bindings_written": bindings,
        "baseline_rows_written": rows,
        "raw_baseline_rows_written": raw_rows,
        "pool_exhausted": exhausted,
        "serial_probe": probe,
        "loadavg_after": os.getloadavg(),
    }
    passed = (
        ratio >= TARGET_RATIO
        and tail <= TARGET_TAIL
        and answers.errors == 0
        and baseline.errors == 0
        and raw.errors == 0
    )
    notes = [
        f"serial, one request: answer {probe['answer_queries']} SQL queries, "
        f"{probe['answer_serial_ms']:.1f} ms ({probe['answer_serial_cpu_ms']:.1f} ms CPU); "
        f"baseline {probe['baseline_queries']} queries, {probe['baseline_serial_ms']:.1f} ms "
        f"({probe['baseline_serial_cpu_ms']:.1f} ms CPU); raw baseline "
        f"{probe['raw_baseline_queries']} queries, {probe['raw_baseline_serial_ms']:.1f} ms "
        f"({probe['raw_baseline_serial_cpu_ms']:.1f} ms CPU); answer lock under the ACL "
        f"{probe['answer_lock_acl_cpu_ms']:.1f} ms CPU vs plain "
        f"{probe['answer_lock_plain_cpu_ms']:.1f} ms"
    ]
    if answers.errors or baseline.errors or raw.errors:
        notes.append(
            f"errors: answers {answers.errors} {answers.error_samples}, "
            f"baseline {baseline.errors} {baseline.error_samples}, "
            f"raw baseline {raw.errors} {raw.error_samples}"
        )
    if exhausted:
        notes.append("the clarification pool ran out before a round ended (raise POOL_MARGIN)")
    summary = (
        f"answers {answers.throughput:.0f}/s (p50 {answers.pct(0.5):.0f}ms, "
        f"p99 {answers.pct(0.99):.0f}ms, p99/p50 {tail:.1f}) vs baseline "
        f"{baseline.throughput:.0f}/s (p50 {baseline.pct(0.5):.0f}ms): ratio {ratio:.2f} "
        f"(rounds {' '.join(f'{r:.2f}' for r in round_ratios)}); "
        f"raw INSERT baseline {raw.throughput:.0f}/s: ratio {raw_ratio:.2f}"
    )
    return _support.result(
        name="answers",
        title=f"Answers vs minimal DRF insert, {CLIENTS} HTTP clients (PostgreSQL)",
        figures=figures,
        target=f"ratio ≥ {TARGET_RATIO}, p99 ≤ {TARGET_TAIL:.0f}xp50",
        passed=passed,
        summary=summary,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))
