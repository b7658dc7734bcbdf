"""Submissions applied per second (issue 2; report only, no target).

The unit is the issue's "one node, one edge, one span": a submission with a new source
(distinct externalId), one span, one fact node and one AUTHORED_BY edge to a PERSON node
that resolves to a known person (that node exists after the first submission, so each
submission creates exactly one fact node, one version and one edge).

1. Direct: `submission_plan` + `submission_apply` in-process, back to back, after a
   warm-up — the service cost without HTTP. Also with one relative-date ambiguity per
   submission (which opens a clarification and enqueues its routing job), and the SQL
   query count of each variant.
2. HTTP: `POST /v1/submissions` with an ingest key against gunicorn, a few concurrent
   clients (the full path: auth, JSON parsing, the shape serializer, plan, apply).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from bench import _support

WARMUP = 30
DIRECT_SECONDS = 6.0
AMBIGUOUS_SECONDS = 4.0
HTTP_CLIENTS = 4
HTTP_WARMUP_SECONDS = 2.0
HTTP_SECONDS = 8.0


def _direct(tenant: Any, prefix: str, seconds: float, ambiguous: bool) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ingest.services import submission_apply, submission_plan

    def one(i: int) -> dict[str, Any]:
        data = _support.submission_data(external_id=f"{prefix}-{i}", ambiguous=ambiguous)
        return submission_apply(tenant=tenant, plan=submission_plan(data))

    _support.submission_shape_check(
        _support.submission_data(external_id=f"{prefix}-check", ambiguous=ambiguous)
    )
    counter = itertools.count()
    for _ in range(WARMUP):
        one(next(counter))
    with CaptureQueriesContext(connection) as captured:
        body = one(next(counter))
    assert len(body["nodes"]) == 2 and len(body["clarifications"]) == (1 if ambiguous else 0)
    latencies: list[float] = []
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        one(next(counter))
        latencies.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - started
    return {
        "submissions": len(latencies),
        "seconds": round(elapsed, 2),
        "per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(_support.percentile(latencies, 0.5), 2),
        "p99_ms": round(_support.percentile(latencies, 0.99), 2),
        "queries_per_submission": len(captured.captured_queries),
    }


def _http(ctx: _support.BenchContext) -> dict[str, Any]:
    counter = itertools.count()

    def next_call(client: int) -> _support.Call:
        data = _support.submission_data(external_id=f"http-{next(counter)}")
        return ("POST", "/v1/submissions", data, ctx.ingest_key)

    with _support.Gunicorn() as server:
        warm = _support.drive(
            port=server.port,
            clients=HTTP_CLIENTS,
            next_call=next_call,
            duration=HTTP_WARMUP_SECONDS,
            ok=(201,),
        )
        if warm.errors:
            raise RuntimeError(f"submissions failed during warm-up: {warm.error_samples}")
        load = _support.drive(
            port=server.port,
            clients=HTTP_CLIENTS,
            next_call=next_call,
            duration=HTTP_SECONDS,
            ok=(201,),
        )
        describe = server.describe
    return {**load.figures(), "clients": HTTP_CLIENTS, "server": describe}


def run() -> dict[str, Any]:
    started = time.perf_counter()
    ctx = _support.setup()
    direct = _direct(ctx.tenant, "direct", DIRECT_SECONDS, ambiguous=False)
    ambiguous = _direct(ctx.tenant, "direct-amb", AMBIGUOUS_SECONDS, ambiguous=True)
    http = _http(ctx)
    figures = {"direct": direct, "direct_with_ambiguity": ambiguous, "http": http}
    summary = (
        f"direct {direct['per_second']:.0f}/s (p50 {direct['p50_ms']:.1f}ms, "
        f"{direct['queries_per_submission']} queries); with ambiguity "
        f"{ambiguous['per_second']:.0f}/s; HTTP {HTTP_CLIENTS} clients "
        f"{http['per_second']:.0f}/s (p50 {http['p50_ms']:.1f}ms, p99 {http['p99_ms']:.1f}ms)"
    )
    notes = []
    if http["errors"]:
        notes.append(f"HTTP errors: {http['errors']} ({http['statuses']})")
    return _support.result(
        name="submissions",
        title="Submissions applied per second (one node, one edge, one span)",
        figures=figures,
        target=None,
        passed=None if not http["errors"] else False,
        summary=summary,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
