"""Steward admin render time with 100,000 clarifications in one tenant (issue 6).

Set-up (PostgreSQL): a tenant of its own ("bench-admin", so the other benchmarks'
tenant stays as it was) with a steward, one source version, and 100,000 clarifications
bulk-inserted with what the write path would have left: a fact node and its current
(pending) version each, an `opened` audit event each and a routing job each (done).
States and severities are spread over every combination, so about a third of them need
steward attention. One more clarification goes through the real path (submission API,
two editors answering differently → conflicted, with responses, events and its job):
that is the decide page measured. Everything is ANALYZEd.

Measured with the Django test client as the signed-in steward (session login, the whole
middleware and template stack, no network): the Needs-attention queue (the changelist with
`?attention=yes`) and that clarification's decide page, median of several runs after a
warm-up; target < 300 ms each. Also reported: the plain changelist, a search, the digest,
each page's SQL query count and time, and the plan of the queue's list query.
The bench tenant's rows are deleted afterwards.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

from bench import _support

N = 100_000
BATCH = 5_000
WARMUP = 3
RUNS = 15
TARGET_MS = 300.0
TENANT = "bench-admin"
STATES = (
    "open",
    "attested",
    "partially_confirmed",
    "answered",
    "conflicted",
    "expired",
    "dead_lettered",
    "answered",
    "answered",
    "open",
)
SEVERITIES = ("low", "normal", "normal", "high", "critical")
CANDIDATES = [
    {
        "validFrom": _support.CANDIDATE_FROM,
        "validTo": None,
        "label": "1 Oct 2026 (next quarter)",
        "spanRef": 0,
    },
    {"validFrom": _support.CANDIDATE_FROM_2, "validTo": None, "label": "1 Jan 2027", "spanRef": 0},
]
WORKSPACE = {
    "tenant": TENANT,
    "name": "Bench Admin Corp",
    "groups": ["legal"],
    "people": [
        {
            "name": "Steward Bench",
            "email": "steward@bench-admin.test",
            "role": "steward",
            "groups": ["legal"],
        },
        {
            "name": "Editor One",
            "email": "one@bench-admin.test",
            "role": "editor",
            "groups": ["legal"],
        },
        {
            "name": "Editor Two",
            "email": "two@bench-admin.test",
            "role": "editor",
            "groups": ["legal"],
        },
    ],
}


def _bulk(tenant: Any, people: dict[str, Any], key: str = "bench-admin") -> None:
    """N clarifications with their nodes, current versions, opened events and routing jobs,
    inserted set-wise (INSERT ... SELECT over generate_series: seconds, where bulk_create
    of 500,000 model instances takes minutes on this machine). `key` makes their ids and
    source (`<key>/bulk`) unique to the caller (bench_metrics uses the same set-up)."""
    import json

    from django.db import connection

    from common.times import now_us
    from graph.models import Source, SourceVersion

    text = "Bench admin document. The agreement starts next quarter and runs for two years."
    source = Source.objects.create(
        tenant=tenant,
        system="bench",
        external_id=f"{key}/bulk",
        title="Bulk agreements",
        acl=["group:legal"],
    )
    version = SourceVersion.objects.create(
        source=source, tx=now_us(), content_hash="a" * 64, text=text
    )
    asked = [str(people["one"].pk), str(people["two"].pk)]
    policy = {"requiredConfirmations": 1, "requiredRoles": ["editor"], "allowStewardOverride": True}
    p = {
        "tenant": tenant.pk,
        "source": source.pk,
        "sv": version.pk,
        "svtx": version.tx,
        "n": N,
        "tx": now_us(),
        "valid_from": _support.CANDIDATE_FROM,
        "candidates": json.dumps(CANDIDATES),
        "asked": json.dumps(asked),
        "policy": json.dumps(policy),
        "states": list(STATES),
        "severities": list(SEVERITIES),
        "ranking": json.dumps(asked),
    }
    node = f"md5('{key}-node-' || i)::uuid"
    clar = f"md5('{key}-clar-' || i)::uuid"
    series = "FROM generate_series(0, %(n)s - 1) AS i"
    statements = [
        f"""INSERT INTO graph_node (id, tenant_id, source_id, key, person_id, created_at)
            SELECT {node}, %(tenant)s, %(source)s, 'term-' || i, NULL, now() {series}""",
        f"""INSERT INTO graph_nodeversion (node_id, seq, labels, properties, search_text,
              valid_from, valid_to, tx_from, tx_to, confidence, provenance, pending,
              evidence_class)
            SELECT {node}, 1, '["CONTRACT_TERM"]'::jsonb,
              jsonb_build_object('name', 'Term ' || i || ' of the bulk agreements'),
              'contract_term term ' || i || ' of the bulk agreements', %(valid_from)s, NULL,
              %(tx)s, NULL, 0.45, jsonb_build_object('sourceVersionTx', %(svtx)s), true,
              'system_extraction' {series}""",
        f"""INSERT INTO clarify_clarification (id, tenant_id, target_id, kind, severity,
              state, candidates, asked, quorum_policy, quorum_state, detector_confidence,
              applied_candidate_confidence, extraction_confidence, source_version_id,
              span_start, span_end, dedup_key, fact_version_tx, responses_recorded, cards_issued,
              created_at, updated_at)
            SELECT {clar}, %(tenant)s, {node}, 'relative_date',
              (%(severities)s::text[])[i %% {len(SEVERITIES)} + 1],
              (%(states)s::text[])[i %% {len(STATES)} + 1],
              %(candidates)s::jsonb, %(asked)s::jsonb, %(policy)s::jsonb, 'not_required',
              0.81, 0.45, 0.9, %(sv)s, 0, 40, 'bulk-' || i, NULL, 0, false,
              now() - make_interval(mins => (%(n)s - i)::int), now() {series}""",
        f"""INSERT INTO clarify_auditevent (tenant_id, clarification_id, at, type, detail)
            SELECT %(tenant)s, {clar}, %(tx)s, 'opened',
              jsonb_build_object('ranking', %(ranking)s::jsonb) {series}""",
        f"""INSERT INTO jobs_job (tenant_id, kind, audience, priority, payload, subject,
              status, attempts, max_attempts, run_after, lease_token, lease_holder,
              lease_expires_at, last_error, result, request_id, created_at, updated_at)
            SELECT %(tenant)s, 'clarify:temporal', 'clarify', 2,
              jsonb_build_object('v', 1, 'clarificationId', {clar}::text,
                                 'ranking', %(ranking)s::jsonb),
              {clar}::text, 'done', 1, 3, now(), NULL, '', NULL, '', NULL, '', now(), now()
            {series}""",
    ]
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql, p)


def _decided_one(tenant: Any, people: dict[str, Any]) -> Any:
    """A clarification through the real path: submitted, then answered differently by two
    editors (conflicted)."""
    from rest_framework.test import APIClient

    from clarify.models import Clarification
    from tenancy.models import Audience
    from tenancy.services import api_key_create

    def client(**kw: Any) -> APIClient:
        c = APIClient(HTTP_HOST="127.0.0.1")
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant, **kw)[1]}")
        return c

    data = _support.submission_data(
        external_id="admin/decide", ambiguous=True, author_email="one@bench-admin.test"
    )
    data["ambiguities"][0]["severityHint"] = "critical"
    resp = client(audience=Audience.INGEST).post("/v1/submissions", data, format="json")
    if resp.status_code != 201:
        raise RuntimeError(f"submission failed: {resp.status_code} {resp.content[:300]!r}")
    clar_id = resp.json()["clarifications"][0]["id"]
    for name, index in (("one", 0), ("two", 1)):
        resp = client(person=people[name]).post(
            f"/v1/clarifications/{clar_id}/answer", {"answerIndex": index}, format="json"
        )
        if resp.status_code != 202:
            raise RuntimeError(f"answer failed: {resp.status_code} {resp.content[:300]!r}")
    clar = Clarification.objects.get(pk=clar_id)
    if clar.state != "conflicted":
        raise RuntimeError(f"expected a conflicted clarification, got {clar.state}")
    return clar


def _measure(client: Any, url: str) -> dict[str, Any]:
    from django.db import connection

    for _ in range(WARMUP):
        resp = client.get(url)
        if resp.status_code != 200:
            raise RuntimeError(f"{url}: {resp.status_code}")
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        resp = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        if resp.status_code != 200:
            raise RuntimeError(f"{url}: {resp.status_code}")
    captured: list[tuple[float, str]] = []

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            captured.append(((time.perf_counter() - t) * 1000, sql))

    with connection.execute_wrapper(timed):
        client.get(url)
    sql_ms = sum(ms for ms, _ in captured)
    slowest = max(captured, default=(0.0, ""))
    if os.environ.get("BENCH_ADMIN_PROFILE"):
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.runcall(client.get, url)
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
        print(f"== profile of {url}\n{out.getvalue()}", file=sys.stderr)
    return {
        "median_ms": round(statistics.median(times), 1),
        "p90_ms": round(sorted(times)[int(0.9 * (len(times) - 1))], 1),
        "queries": len(captured),
        "sql_ms": round(sql_ms, 1),
        "slowest_query_ms": round(slowest[0], 1),
        "slowest_query": slowest[1][:300],
        "bytes": len(resp.content),
    }


def _queue_plan(steward: Any) -> list[str]:
    """EXPLAIN ANALYZE of the queue's list query, as the changelist builds it."""
    from django.db import connection
    from django.db.models import JSONField, OuterRef, Subquery

    from clarify.models import Clarification
    from clarify.selectors import needs_steward_attention_q
    from graph.models import NodeVersion

    current = NodeVersion.objects.filter(node_id=OuterRef("target_id"), tx_to__isnull=True)
    qs = (
        Clarification.objects.filter(tenant=steward.tenant)
        .annotate(
            target_properties=Subquery(current.values("properties")[:1], output_field=JSONField())
        )
        .filter(needs_steward_attention_q())
        .order_by("-created_at", "-pk")[:50]
    )
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS OFF) {sql}", params)
        return [row[0] for row in cursor.fetchall()]


def _cleanup(tenant: Any, key: str = "bench-admin") -> None:
    """Delete the bench tenant's rows: the bulk ones with raw deletes (the ORM's cascade
    collection over 100,000 rows would be slow), the rest through the ORM."""
    from django.db import connection

    from graph.models import Source

    tid = tenant.pk
    bulk = Source.objects.get(tenant=tenant, external_id=f"{key}/bulk")
    statements = [
        ("DELETE FROM clarify_auditevent WHERE tenant_id = %s", [tid]),
        ("DELETE FROM jobs_job WHERE tenant_id = %s", [tid]),
        (
            "DELETE FROM clarify_clarification WHERE source_version_id IN "
            "(SELECT id FROM graph_sourceversion WHERE source_id = %s)",
            [bulk.pk],
        ),
        (
            "DELETE FROM graph_nodeversion WHERE node_id IN "
            "(SELECT id FROM graph_node WHERE source_id = %s)",
            [bulk.pk],
        ),
        ("DELETE FROM graph_node WHERE source_id = %s", [bulk.pk]),
    ]
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
    from clarify.models import Clarification

    Clarification.objects.filter(tenant=tenant).delete()  # the decided one (PROTECT on its
    tenant.delete()  # source version), then the tenant's small rest


def run() -> dict[str, Any]:
    started = time.perf_counter()
    _support.setup()
    from django.test import Client

    from tenancy.services import workspace_load

    tenant = workspace_load(data=WORKSPACE).tenant
    people = {p.email.split("@")[0]: p for p in tenant.people.all()}
    t0 = time.perf_counter()
    _bulk(tenant, people)
    clar = _decided_one(tenant, people)
    _support.analyze(
        "clarify_clarification",
        "graph_node",
        "graph_nodeversion",
        "clarify_auditevent",
        "clarify_responserecord",
        "jobs_job",
    )
    setup_s = time.perf_counter() - t0

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(people["steward"].user)
    pages = {
        "queue": "/admin/clarify/clarification/?attention=yes",
        "decide": f"/admin/clarify/clarification/{clar.pk}/change/",
        "all": "/admin/clarify/clarification/",
        "search": "/admin/clarify/clarification/?q=term+4242",
        "digest": "/admin/clarify/clarification/digest/",
    }
    figures: dict[str, Any] = {"clarifications": N + 1, "setup_seconds": round(setup_s, 1)}
    try:
        for name, url in pages.items():
            figures[name] = _measure(client, url)
        plan = _queue_plan(people["steward"])
    finally:
        _cleanup(tenant)
    queue, decide = figures["queue"]["median_ms"], figures["decide"]["median_ms"]
    passed = queue < TARGET_MS and decide < TARGET_MS
    notes = [
        f"{name}: median {f['median_ms']} ms, {f['queries']} queries, {f['sql_ms']} ms SQL "
        f"(slowest {f['slowest_query_ms']} ms)"
        for name, f in figures.items()
        if isinstance(f, dict)
    ]
    notes.append("queue plan: " + " | ".join(line.strip() for line in plan[:12]))
    figures["queue_plan"] = plan
    return _support.result(
        name="admin",
        title="Steward admin render time, 100,000 clarifications",
        figures=figures,
        target=f"queue and decide pages < {TARGET_MS:.0f} ms (median)",
        passed=passed,
        summary=f"queue {queue:.0f} ms, decide {decide:.0f} ms "
        f"({figures['queue']['queries']}/{figures['decide']['queries']} queries)",
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2, default=str))
