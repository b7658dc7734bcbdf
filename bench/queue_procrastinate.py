"""The procrastinate side of `bench_queue`: the same no-op jobs on the same database.

procrastinate is installed only for the benchmark (bench/requirements-bench.txt). Its
schema goes into the bench database with its own `apply_schema` (tables `procrastinate_*`
next to ours). The configuration is the strongest fair one found on the bench machine
(2 CPUs, PostgreSQL alongside; 2,000-job runs, all within noise of each other at the top):

- 8 worker processes, like ours, each one `run_worker_async(wait=False)` on the queue
  `bench` with 4 jobs in flight (BENCH_PROCRASTINATE_CONCURRENCY; 1 was ~25% slower,
  8 no faster and needs twice the connections) and a pool of concurrency + 1
  connections (BENCH_PROCRASTINATE_POOL);
- an `async def` no-op task (a sync task would pay a thread hop per job);
- pool connections in autocommit (BENCH_PROCRASTINATE_AUTOCOMMIT, default on): every
  procrastinate query is one statement, so this only drops the BEGIN/COMMIT round trips
  psycopg adds around each one (~60% faster than procrastinate's default);
- the pool's per-checkout liveness check off (procrastinate's default pool sends an
  extra round trip each time a job is fetched or finished; BENCH_PROCRASTINATE_POOL_CHECK
  =1 restores it) and LISTEN/NOTIFY off (the queue is full from the start);
- jobs kept after success (`delete_jobs` "never", the default), as ours keep theirs.

Everything here runs in child processes that `bench_queue` drives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import traceback
from typing import Any

QUEUE = "bench"
TASK = "bench_noop"
DEFER_CHUNK = 1_000

_executed: list[int] = []
_last_done = [0.0]


def pool_check_enabled() -> bool:
    return os.environ.get("BENCH_PROCRASTINATE_POOL_CHECK", "0") == "1"


def pool_size(concurrency: int) -> int:
    return int(os.environ.get("BENCH_PROCRASTINATE_POOL", str(concurrency + 1)))


def autocommit_enabled() -> bool:
    return os.environ.get("BENCH_PROCRASTINATE_AUTOCOMMIT", "1") == "1"


def make_app(conninfo: str, *, pool_size: int) -> Any:
    import procrastinate
    import psycopg_pool

    def pool_factory(**kwargs: Any) -> psycopg_pool.AsyncConnectionPool:
        if not pool_check_enabled():
            kwargs.pop("check", None)
        return psycopg_pool.AsyncConnectionPool(**kwargs)

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=conninfo,
            min_size=pool_size,
            max_size=pool_size,
            pool_factory=pool_factory,
            kwargs={"autocommit": autocommit_enabled()},
        )
    )

    @app.task(name=TASK, queue=QUEUE)
    async def bench_noop(seq: int) -> None:
        _executed.append(seq)
        _last_done[0] = time.monotonic()

    return app


def prepare() -> None:
    """In the zygote, before the workers are forked: the imports, no connection."""
    import procrastinate  # noqa: F401
    import psycopg_pool  # noqa: F401


def version() -> str:
    from importlib.metadata import version as dist_version

    return dist_version("procrastinate")


async def _seed(conninfo: str, jobs: int) -> dict[str, Any]:
    app = make_app(conninfo, pool_size=1)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        task = app.tasks[TASK]
        started = time.perf_counter()
        for first in range(0, jobs, DEFER_CHUNK):
            await task.batch_defer_async(
                *({"seq": i} for i in range(first, min(jobs, first + DEFER_CHUNK)))
            )
        return {"defer_seconds": time.perf_counter() - started}


def seed(conninfo: str, jobs: int, out: Any) -> None:
    """Child process: apply procrastinate's schema and defer `jobs` no-op jobs."""
    try:
        out.put(asyncio.run(_seed(conninfo, jobs)))
    except BaseException:
        out.put({"error": traceback.format_exc()})


async def _work(
    idx: int, conninfo: str, concurrency: int, ready: Any, go: Any, stop: Any
) -> dict[str, Any]:
    app = make_app(conninfo, pool_size=pool_size(concurrency))
    async with app.open_async():  # opens the pool and waits for its connections
        await app.job_manager.check_connection_async()
        ready.put((idx, os.getpid()))
        await asyncio.to_thread(go.wait)
        run = asyncio.create_task(
            app.run_worker_async(
                queues=[QUEUE],
                name=f"bench-{idx}",
                concurrency=concurrency,
                wait=False,
                listen_notify=False,
                install_signal_handlers=False,
            )
        )
        capped = False
        while not run.done():
            await asyncio.wait({run}, timeout=0.2)
            if not run.done() and stop.is_set():
                capped = True
                run.cancel()  # graceful: procrastinate finishes the job in hand
                with contextlib.suppress(asyncio.CancelledError):
                    await run
        if not capped:
            run.result()
    return {"idx": idx, "ids": list(_executed), "end": _last_done[0], "capped": capped}


def worker(
    idx: int, conninfo: str, concurrency: int, ready: Any, go: Any, stop: Any, out: Any
) -> None:
    """Child process: one procrastinate worker, started when `go` is set, that stops when
    the queue is empty (or, gracefully, when `stop` is set)."""
    try:
        out.put(asyncio.run(_work(idx, conninfo, concurrency, ready, go, stop)))
    except BaseException:
        if not go.is_set():
            ready.put((idx, None))  # never leave the parent waiting for a ready signal
        out.put({"idx": idx, "error": traceback.format_exc()})
