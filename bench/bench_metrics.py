"""`GET /metrics` scrape time at scale (issue 18): 1,000,000 audit events and 100,000
clarifications.

Set-up (PostgreSQL): a tenant of its own ("bench-metrics") and bench_admin's bulk set —
100,000 clarifications over every state and severity, each with its fact node, current
version, `opened` event and routing job — plus 900,000 more audit events (deliveries,
skips with reasons, digests, escalations, responses, state changes), so the audit trail
holds 1,000,000. The routing jobs of the clarifications still asked (open, attested,
partially confirmed) are pending, their escalation window ahead, a thousand of them ready
now and a hundred leased: the queue backlog a live deployment has. VACUUM ANALYZE after.

Measured: the product under gunicorn (2 workers) with `METRICS_ENABLED=1` and
`PROMETHEUS_MULTIPROC_DIR` (multiprocess mode, as in production), after 600 requests of
warm-up traffic spread over the API, the hooks and health so every worker has written its
metric files; then 30 scrapes one after another, each on a new connection; median and
p90 of the whole request. Target: median < 200 ms. Also reported: the database gauges'
share (in-process, median of 15), the plans of their queries (index-only scans on the
partial indexes `clarification_unresolved` and `job_backlog`), and, for comparison, the
group-by over the audit events that /metrics ran before.
"""

from __future__ import annotations

import http.client
import os
import statistics
import tempfile
import time
from typing import Any

from bench import _support
from bench.bench_admin import _bulk, _cleanup

N_EVENTS = 1_000_000
N_CLARIFICATIONS = 100_000  # bench_admin.N
WARMUP_REQUESTS = 600
SCRAPES = 30
TARGET_MS = 200.0
TENANT = "bench-metrics"
KEY = "bench-metrics"
WORKSPACE = {
    "tenant": TENANT,
    "name": "Bench Metrics Corp",
    "groups": ["legal"],
    "people": [
        {"name": f"Editor {n}", "email": f"{n}@bench-metrics.test", "role": "editor"}
        for n in ("one", "two")
    ],
}
EXTRA_EVENTS = """
INSERT INTO clarify_auditevent (tenant_id, clarification_id, at, type, detail)
SELECT %(tenant)s, md5(%(key)s || '-clar-' || (i %% %(n)s))::uuid, %(tx)s + i,
  (ARRAY['delivered', 'skipped', 'digested', 'escalated', 'response_recorded',
         'state_changed', 'delivered', 'skipped'])[i %% 8 + 1],
  CASE i %% 8
    WHEN 1 THEN jsonb_build_object('attempt', 0, 'reason',
      (ARRAY['NO_DELIVERY_ALIAS', 'NOT_READABLE', 'DAILY_CAP'])[i %% 3 + 1])
    WHEN 2 THEN jsonb_build_object('reason', 'DIGESTED')
    WHEN 7 THEN jsonb_build_object('attempt', 1, 'reason', 'NOT_READABLE')
    ELSE jsonb_build_object('attempt', 0)
  END
FROM generate_series(0, %(extra)s - 1) AS i
"""
BACKLOG = """
UPDATE jobs_job SET status = 'pending',
  run_after = now() + interval '47 hours' - (id %% 1000) * interval '1 minute'
WHERE tenant_id = %(tenant)s AND subject IN (
  SELECT id::text FROM clarify_clarification
  WHERE tenant_id = %(tenant)s AND state IN ('open', 'attested', 'partially_confirmed'))
"""
READY = """
UPDATE jobs_job SET run_after = now() - (id %% 600) * interval '1 second'
WHERE id IN (SELECT id FROM jobs_job WHERE tenant_id = %(tenant)s AND status = 'pending'
             ORDER BY id LIMIT 1000)
"""
LEASED = """
UPDATE jobs_job SET status = 'leased', lease_token = gen_random_uuid(),
  lease_holder = 'bench', lease_expires_at = now() + interval '60 seconds'
WHERE id IN (SELECT id FROM jobs_job WHERE tenant_id = %(tenant)s AND status = 'pending'
             ORDER BY id DESC LIMIT 100)
"""
TABLES = ("clarify_auditevent", "clarify_clarification", "jobs_job")


def _populate(tenant: Any, people: dict[str, Any]) -> dict[str, int]:
    from django.db import connection

    from clarify.models import AuditEvent, Clarification
    from common.times import now_us
    from jobs.models import Job

    _bulk(tenant, people, key=KEY)
    params = {
        "tenant": tenant.pk,
        "key": KEY,
        "n": N_CLARIFICATIONS,
        "tx": now_us(),
        "extra": N_EVENTS - N_CLARIFICATIONS,
    }
    with connection.cursor() as cursor:
        for sql in (EXTRA_EVENTS, BACKLOG, READY, LEASED):
            cursor.execute(sql, params)
        for table in TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")
    return {
        "audit_events": AuditEvent.objects.count(),
        "clarifications": Clarification.objects.count(),
        "jobs": Job.objects.count(),
        "jobs_pending": Job.objects.filter(status="pending").count(),
    }


def _request(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(_support.HOST, port, timeout=60)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _warm_up(port: int, key: str) -> None:
    """Traffic over several endpoints and statuses, so every worker has metric files."""
    paths = ["/healthz", "/v1/clarifications", "/v1/clarifications?state=open", "/nope"]
    for i in range(WARMUP_REQUESTS):
        path = paths[i % len(paths)]
        status, _ = _request(port, path, {"Authorization": f"Bearer {key}"})
        if status >= 500:
            raise RuntimeError(f"warm-up {path}: {status}")


def _scrapes(port: int, token: str) -> tuple[list[float], bytes]:
    times, body = [], b""
    for _ in range(SCRAPES):
        t0 = time.perf_counter()
        status, body = _request(port, "/metrics", {"Authorization": f"Bearer {token}"})
        times.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            raise RuntimeError(f"/metrics: {status} {body[:300]!r}")
    return times, body


def _gauges_in_process() -> dict[str, Any]:
    from telha.metrics import DatabaseGauges

    collector = DatabaseGauges()
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        families = list(collector.collect())
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "median_ms": round(statistics.median(times), 1),
        "samples": sum(len(f.samples) for f in families),
    }


def _plans() -> dict[str, list[str]]:
    from django.db import connection
    from django.db.models import Count

    from clarify.models import UNRESOLVED_STATES, Clarification
    from jobs.models import BACKLOG_STATUSES, Job

    queries = {
        "clarifications": Clarification.objects.filter(state__in=UNRESOLVED_STATES)
        .values_list("state", "severity")
        .annotate(n=Count("*"))
        .order_by(),
        "jobs": Job.objects.filter(status__in=BACKLOG_STATUSES)
        .values_list("kind", "status")
        .annotate(n=Count("*"))
        .order_by(),
    }
    plans = {}
    with connection.cursor() as cursor:
        for name, qs in queries.items():
            sql, params = qs.query.sql_with_params()
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS OFF) {sql}", params)
            plans[name] = [row[0] for row in cursor.fetchall()]
    return plans


def _before_ms() -> float:
    """The group-by over the audit events /metrics ran on every scrape before issue 18."""
    from django.db.models import Count

    from clarify.models import AuditEvent

    delivery = ("delivered", "skipped", "digested", "delivery_failed", "escalated")
    t0 = time.perf_counter()
    list(
        AuditEvent.objects.filter(type__in=delivery)
        .values("type", "detail__reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    return round((time.perf_counter() - t0) * 1000, 1)


def run() -> dict[str, Any]:
    started = time.perf_counter()
    ctx = _support.setup()
    from tenancy.services import workspace_load

    tenant = workspace_load(data=WORKSPACE).tenant
    people = {p.email.split("@")[0]: p for p in tenant.people.all()}
    t0 = time.perf_counter()
    counts = _populate(tenant, people)
    setup_s = time.perf_counter() - t0
    token = "bench-metrics-token"
    saved = {
        k: os.environ.get(k)
        for k in ("METRICS_ENABLED", "METRICS_TOKEN", "PROMETHEUS_MULTIPROC_DIR")
    }
    try:
        with tempfile.TemporaryDirectory(prefix="telha-bench-metrics-") as multiproc:
            os.environ.update(
                METRICS_ENABLED="1", METRICS_TOKEN=token, PROMETHEUS_MULTIPROC_DIR=multiproc
            )
            with _support.Gunicorn(workers=2, threads=1, worker_class="sync") as server:
                _warm_up(server.port, ctx.editor_keys[0])
                times, body = _scrapes(server.port, token)
                files = len(os.listdir(multiproc))
        in_process = _gauges_in_process()
        plans = _plans()
        before = _before_ms()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _cleanup(tenant, key=KEY)
    median = statistics.median(times)
    p90 = sorted(times)[int(0.9 * (len(times) - 1))]
    figures = {
        **counts,
        "setup_seconds": round(setup_s, 1),
        "scrape_median_ms": round(median, 1),
        "scrape_p90_ms": round(p90, 1),
        "scrape_bytes": len(body),
        "multiprocess_files": files,
        "gauges_in_process": in_process,
        "before_audit_group_by_ms": before,
        "plans": plans,
    }
    notes = [
        f"{counts['audit_events']:,} audit events, {counts['clarifications']:,} clarifications, "
        f"{counts['jobs_pending']:,} pending jobs",
        f"database gauges in-process: median {in_process['median_ms']} ms",
        f"before (group-by over the audit events alone): {before} ms",
        *(
            f"{name} plan: " + " | ".join(line.strip() for line in plan[:6])
            for name, plan in plans.items()
        ),
    ]
    return _support.result(
        name="metrics",
        title="GET /metrics with 1,000,000 audit events and 100,000 clarifications",
        figures=figures,
        target=f"scrape median < {TARGET_MS:.0f} ms",
        passed=median < TARGET_MS,
        summary=f"scrape median {median:.0f} ms, p90 {p90:.0f} ms "
        f"(gauges {in_process['median_ms']:.0f} ms; the old group-by alone {before:.0f} ms)",
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2, default=str))
