"""Lease queue throughput: leases completed per second, 8 worker processes, PostgreSQL,
against procrastinate on the same database with the same no-op jobs (issue 4).

A fresh database (`telha_bench_queue`, its own so no other benchmark's jobs interfere)
gets the migrations, N ready `ingest:noop` jobs (bulk-inserted Job rows, what
`job_enqueue` writes) and procrastinate's schema with N deferred no-op jobs. Then, each
side in turn, 8 worker processes (forked from one spawned process that did the imports
and `django.setup()`; each opens its own DB connection) connect, wait at a common start
line and drain the queue:

- ours: `job_lease(max_jobs=B)` (one SKIP LOCKED transaction, one token for the batch),
  the no-op per job, `jobs_complete_batch` (one UPDATE for the batch), until a lease
  comes back empty;
- procrastinate: `run_worker_async(wait=False)` with an async no-op task (configuration
  and why in `bench/queue_procrastinate.py`).

Throughput = jobs run / (last job finished - start line). Double leases: every id each
worker leased is collected, each must appear exactly once, and the table must end with
all N done; procrastinate's executions are checked the same way. A side still running
after BENCH_QUEUE_CAP_SECONDS is stopped gracefully and measured over what it ran (ours
then fails its check). Target: ours / procrastinate >= 2.0 with zero double leases.

Knobs: BENCH_QUEUE_JOBS (5000), BENCH_QUEUE_WORKERS (8), BENCH_QUEUE_BATCH (100),
BENCH_QUEUE_CAP_SECONDS (90), BENCH_QUEUE_KEEP_DB (0: the database is dropped after),
and the BENCH_PROCRASTINATE_* ones in `bench/queue_procrastinate.py`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import _support

JOBS = int(os.environ.get("BENCH_QUEUE_JOBS", "5000"))
WORKERS = int(os.environ.get("BENCH_QUEUE_WORKERS", "8"))
BATCH = int(os.environ.get("BENCH_QUEUE_BATCH", "100"))
PROCRASTINATE_CONCURRENCY = int(os.environ.get("BENCH_PROCRASTINATE_CONCURRENCY", "4"))
KEEP_DB = os.environ.get("BENCH_QUEUE_KEEP_DB", "0") == "1"
CAP_SECONDS = float(os.environ.get("BENCH_QUEUE_CAP_SECONDS", "90"))
TARGET_RATIO = 2.0

DB_NAME = "telha_bench_queue"
DATABASE_URL = f"postgres://postgres@{_support.HOST}:{_support.PG_PORT}/{DB_NAME}"
CONNINFO = f"host={_support.HOST} port={_support.PG_PORT} user=postgres dbname={DB_NAME}"
KIND = "ingest:noop"
TENANT_SLUG = "bench-queue"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements-bench.txt"
READY_TIMEOUT = 120.0
STOP_GRACE = 60.0

_CTX = multiprocessing.get_context("spawn")
_T0 = [time.perf_counter()]


def _log(message: str) -> None:
    print(f"   [queue {time.perf_counter() - _T0[0]:5.1f}s] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Child processes (spawned: a fresh interpreter with its own Django and DB connection)


def _django() -> None:
    os.environ["DATABASE_URL"] = DATABASE_URL
    os.environ["DJANGO_SETTINGS_MODULE"] = _support.SETTINGS
    import django

    django.setup()


def _seed_ours(jobs: int, out: Any) -> None:
    """Migrations, the tenant and `jobs` ready no-op jobs."""
    try:
        _django()
        from django.core.management import call_command
        from django.db import connection

        from jobs.models import Job
        from jobs.policies import policy_for_kind
        from tenancy.models import Tenant

        started = time.perf_counter()
        call_command("migrate", verbosity=0, interactive=False)
        migrate_seconds = time.perf_counter() - started
        tenant = Tenant.objects.create(slug=TENANT_SLUG, name="Bench queue")
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            (db_now,) = cursor.fetchone()
        max_attempts = policy_for_kind(KIND).max_attempts
        started = time.perf_counter()
        Job.objects.bulk_create(
            (
                Job(
                    tenant=tenant,
                    kind=KIND,
                    audience="ingest",
                    payload={"seq": i},
                    max_attempts=max_attempts,
                    run_after=db_now,
                )
                for i in range(jobs)
            ),
            batch_size=2_000,
        )
        out.put(
            {"migrate_seconds": migrate_seconds, "enqueue_seconds": time.perf_counter() - started}
        )
    except BaseException:
        out.put({"error": traceback.format_exc()})


def _noop(payload: dict[str, Any]) -> None:
    """The job: nothing (like procrastinate's task, which only records its id)."""


def _ours_worker(idx: int, batch: int, ready: Any, go: Any, stop: Any, out: Any) -> None:
    """One worker process: lease a batch, run it, complete it in one call, repeat until a
    lease comes back empty."""
    try:
        _django()
        from django.db import connection

        from jobs.services import job_lease, jobs_complete_batch

        statements = 0

        def count(execute: Callable[..., Any], *args: Any) -> Any:
            nonlocal statements
            statements += 1
            return execute(*args)

        connection.ensure_connection()
        ready.put((idx, os.getpid()))
        go.wait()
        holder = f"bench-{idx}@{os.getpid()}"
        ids: list[int] = []
        completed = batches = 0
        end = time.monotonic()
        with connection.execute_wrapper(count):
            while not stop.is_set():
                leases = job_lease(
                    tenant=None, audience="ingest", kinds=[KIND], max_jobs=batch, holder=holder
                )
                if not leases:
                    break
                for lease in leases:
                    _noop(lease.job.payload)
                    ids.append(lease.job.pk)
                completed += jobs_complete_batch(tenant=None, leases=leases)
                batches += 1
                end = time.monotonic()
        out.put(
            {
                "idx": idx,
                "ids": ids,
                "completed": completed,
                "batches": batches,
                "statements": statements,
                "end": end,
                "capped": stop.is_set(),
            }
        )
    except BaseException:
        if not go.is_set():
            ready.put((idx, None))  # never leave the parent waiting for a ready signal
        out.put({"idx": idx, "error": traceback.format_exc()})


# ---------------------------------------------------------------------------------------
# Parent side


def _ensure_procrastinate() -> str:
    """Install the pinned procrastinate into this venv if it is missing or differs."""
    from importlib.metadata import PackageNotFoundError, version

    pins = dict(
        line.split("==", 1)
        for line in REQUIREMENTS.read_text().splitlines()
        if "==" in line and not line.lstrip().startswith("#")
    )
    wanted = pins["procrastinate"].strip()
    try:
        if version("procrastinate") == wanted:
            return wanted
    except PackageNotFoundError:
        pass
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            "-r",
            str(REQUIREMENTS),
        ],
        check=True,
    )
    return wanted


def _admin(*statements: str, dbname: str = "postgres") -> list[Any]:
    import psycopg

    rows: list[Any] = []
    with psycopg.connect(
        host=_support.HOST,
        port=_support.PG_PORT,
        user="postgres",
        dbname=dbname,
        autocommit=True,
    ) as conn:
        for statement in statements:
            cursor = conn.execute(statement)  # type: ignore[arg-type]
            if cursor.description is not None:
                rows.extend(cursor.fetchall())
    return rows


def _in_child(target: Callable[..., None], *args: Any, timeout: float = 300.0) -> dict[str, Any]:
    out = _CTX.Queue()
    proc = _CTX.Process(target=target, args=(*args, out), daemon=True)
    proc.start()
    try:
        answer: dict[str, Any] = out.get(timeout=timeout)
    finally:
        _stop([proc])
    if "error" in answer:
        raise RuntimeError(f"{target.__name__} failed:\n{answer['error']}")
    return answer


def _stop(procs: list[Any]) -> None:
    for proc in procs:
        proc.join(timeout=10)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)


def _zygote(
    prepare: Callable[[], None],
    target: Callable[..., None],
    args: tuple[Any, ...],
    ready: Any,
    go: Any,
    stop: Any,
    out: Any,
) -> None:
    """Spawned once per side: import and set up (`prepare`, no DB connection), then fork
    the WORKERS worker processes, so each starts warm instead of re-importing Django."""
    procs: list[Any] = []

    def on_term(*_: Any) -> None:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        os._exit(143)

    signal.signal(signal.SIGTERM, on_term)
    try:
        prepare()
    except BaseException:
        for idx in range(WORKERS):
            ready.put((idx, None))
            out.put({"idx": idx, "error": traceback.format_exc()})
        return
    fork = multiprocessing.get_context("fork")
    procs.extend(
        fork.Process(target=_forked, args=(target, i, *args, ready, go, stop, out))
        for i in range(WORKERS)
    )
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()


def _forked(target: Callable[..., None], *args: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the zygote's handler
    target(*args)


def _prepare_ours() -> None:
    _django()
    from django.db import connections

    import jobs.services  # noqa: F401

    connections.close_all()


def _drain(
    prepare: Callable[[], None], target: Callable[..., None], *args: Any
) -> tuple[float, list[dict[str, Any]]]:
    """WORKERS worker processes: wait until all are connected, release them together;
    after CAP_SECONDS ask them to stop (gracefully). Returns (seconds from the start
    line to the last job any of them finished, their reports)."""
    ready, go, stop, out = _CTX.Queue(), _CTX.Event(), _CTX.Event(), _CTX.Queue()
    zygote = _CTX.Process(target=_zygote, args=(prepare, target, args, ready, go, stop, out))
    pids: list[int] = []
    try:
        zygote.start()
        for _ in range(WORKERS):
            _, pid = ready.get(timeout=READY_TIMEOUT)
            if pid is not None:
                pids.append(pid)
        _log(f"{WORKERS} {target.__module__.rsplit('.', 1)[-1]} worker processes ready")
        start = time.monotonic()
        go.set()
        reports: list[dict[str, Any]] = []
        deadline = start + CAP_SECONDS
        while len(reports) < WORKERS:
            now = time.monotonic()
            if now >= deadline and not stop.is_set():
                stop.set()
                deadline = now + STOP_GRACE
            elif now >= deadline:
                raise RuntimeError(f"workers did not stop within {STOP_GRACE:.0f}s of the cap")
            try:
                reports.append(out.get(timeout=max(0.05, min(1.0, deadline - now))))
            except queue.Empty:
                continue
        _log("drained" if not stop.is_set() else "stopped at the cap")
    finally:
        go.set()
        stop.set()
        _stop([zygote])
        for pid in pids:  # a worker the zygote could not reap
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise RuntimeError(f"{len(errors)} worker(s) failed:\n{errors[0]}")
    return max(r["end"] for r in reports) - start, reports


def _double(reports: list[dict[str, Any]]) -> tuple[int, int]:
    """(distinct ids run, ids run more than once)."""
    seen = Counter(i for r in reports for i in r["ids"])
    return len(seen), sum(1 for c in seen.values() if c > 1)


def _prepare_tables() -> None:
    _admin(
        "VACUUM ANALYZE jobs_job",
        "VACUUM ANALYZE procrastinate_jobs",
        "CHECKPOINT",
        dbname=DB_NAME,
    )


def _measure_ours() -> dict[str, Any]:
    seconds, reports = _drain(_prepare_ours, _ours_worker, BATCH)
    distinct, double = _double(reports)
    leased = sum(len(r["ids"]) for r in reports)
    completed = sum(r["completed"] for r in reports)
    status = dict(
        _admin(
            f"SELECT status, count(*) FROM jobs_job WHERE kind = '{KIND}' GROUP BY status",
            dbname=DB_NAME,
        )
    )
    per_worker = sorted(len(r["ids"]) for r in reports)
    return {
        "per_second": round(completed / seconds, 1),
        "seconds": round(seconds, 3),
        "batch": BATCH,
        "batches": sum(r["batches"] for r in reports),
        "sql_statements_per_job_excl_begin_commit": round(
            sum(r["statements"] for r in reports) / max(1, leased), 3
        ),
        "jobs_per_worker_min_max": [per_worker[0], per_worker[-1]],
        "leased": leased,
        "completed": completed,
        "double_leases": double,
        "table_status": status,
        "drained": status == {"done": JOBS},
        "ok": double == 0 and distinct == leased == completed == JOBS and status == {"done": JOBS},
    }


def _measure_procrastinate(pq: Any) -> dict[str, Any]:
    seconds, reports = _drain(pq.prepare, pq.worker, CONNINFO, PROCRASTINATE_CONCURRENCY)
    distinct, double = _double(reports)
    executed = sum(len(r["ids"]) for r in reports)
    status = dict(
        _admin(
            "SELECT status::text, count(*) FROM procrastinate_jobs "
            f"WHERE queue_name = '{pq.QUEUE}' GROUP BY status",
            dbname=DB_NAME,
        )
    )
    return {
        "version": pq.version(),
        "per_second": round(executed / seconds, 1),
        "seconds": round(seconds, 3),
        "processes": WORKERS,
        "concurrency_per_process": PROCRASTINATE_CONCURRENCY,
        "pool_size": pq.pool_size(PROCRASTINATE_CONCURRENCY),
        "autocommit": pq.autocommit_enabled(),
        "pool_check": pq.pool_check_enabled(),
        "executed": executed,
        "double_executions": double,
        "table_status": status,
        # Capped (a slow machine): measured over the jobs it ran before the cap.
        "drained": status == {"succeeded": JOBS},
        "ok": double == 0 and status.get("succeeded") == distinct == executed,
    }


def run() -> dict[str, Any]:
    from bench import queue_procrastinate as pq

    started = _T0[0] = time.perf_counter()
    pinned = _ensure_procrastinate()
    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)', f'CREATE DATABASE "{DB_NAME}"')
    try:
        seeded = _in_child(_seed_ours, JOBS)
        _log(f"migrated, {JOBS:,} jobs enqueued")
        seeded_p = _in_child(pq.seed, CONNINFO, JOBS)
        _log(f"procrastinate schema applied, {JOBS:,} jobs deferred")
        _prepare_tables()
        ours = _measure_ours()
        _log(f"ours: {ours['per_second']:,.0f} jobs/s")
        _prepare_tables()
        theirs = _measure_procrastinate(pq)
        _log(f"procrastinate: {theirs['per_second']:,.0f} jobs/s")
    finally:
        if not KEEP_DB:
            _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')

    ratio = ours["per_second"] / theirs["per_second"]
    passed = bool(ours.pop("ok") and theirs.pop("ok") and ratio >= TARGET_RATIO)
    cpus = os.cpu_count()
    figures = {
        "jobs": JOBS,
        "workers": WORKERS,
        "cpus": cpus,
        "load_average_1m": round(os.getloadavg()[0], 1),
        "ours": ours,
        "procrastinate": theirs,
        "ratio": round(ratio, 2),
        "double_leases": ours["double_leases"],
        "setup": {
            "migrate_seconds": round(seeded["migrate_seconds"], 1),
            "enqueue_seconds": round(seeded["enqueue_seconds"], 2),
            "procrastinate_defer_seconds": round(seeded_p["defer_seconds"], 2),
        },
    }
    notes = [
        f"{WORKERS} worker processes each side on {cpus} CPUs, PostgreSQL on the same "
        f"machine (1-min load {figures['load_average_1m']}); procrastinate "
        f"{theirs['version']}: async no-op task, {PROCRASTINATE_CONCURRENCY} jobs in flight "
        f"per process, pool {theirs['pool_size']}, autocommit "
        f"{'on' if theirs['autocommit'] else 'off'}, pool check "
        f"{'on' if theirs['pool_check'] else 'off'}, LISTEN/NOTIFY off"
    ]
    if pinned != theirs["version"]:
        notes.append(f"procrastinate {theirs['version']} differs from the pin {pinned}")
    if not ours["drained"]:
        notes.append(f"ours did not drain: table {ours['table_status']}")
    if not theirs["drained"]:
        notes.append(
            f"procrastinate stopped at the {CAP_SECONDS:.0f}s cap after {theirs['executed']:,} "
            f"of {JOBS:,} jobs; its rate is over those"
        )
    summary = (
        f"ours {ours['per_second']:,.0f} jobs/s vs procrastinate "
        f"{theirs['per_second']:,.0f} jobs/s = {ratio:.2f}x, double leases "
        f"{ours['double_leases']} ({JOBS:,} no-op jobs, {WORKERS} worker processes)"
    )
    return _support.result(
        name="queue",
        title="Lease queue: leases completed per second vs procrastinate",
        figures=figures,
        target=f"ratio ≥ {TARGET_RATIO:.1f}, zero double leases",
        passed=passed,
        summary=summary,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2, default=str))
