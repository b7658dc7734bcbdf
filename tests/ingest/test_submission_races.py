"""Batches racing on PostgreSQL (issue 22): concurrent batches naming the same new
sources and the same unknown person leave one source, one source version per content,
one alias-keyed node and one clarification per dedup identity — no error, every
document applied."""

import threading
from typing import Any

import pytest
from django.db import connection

from clarify.models import Clarification
from graph.models import Node, Source, SourceVersion
from ingest.services import submission_plan, submissions_apply

from .test_submission_statements import one_node

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (real concurrency)"
    ),
    pytest.mark.django_db(transaction=True),
]

THREADS = 4


def run_together(target, n: int = THREADS) -> list[Any]:
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = target(i)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def test_concurrent_batches_of_the_same_documents_write_them_once(workspace):
    def datas() -> list[dict]:
        out = []
        for i in range(10):
            data = one_node(f"race-{i}", ambiguous=True)
            data["nodes"][1]["properties"] = {"email": "stranger@example.test"}
            out.append(data)
        return out

    def apply(_: int) -> list:
        return submissions_apply(tenant=workspace, plans=[submission_plan(d) for d in datas()])

    results = run_together(apply)
    assert all(a.error is None for applied in results for a in applied)
    assert Source.objects.count() == 10
    assert SourceVersion.objects.count() == 10
    assert Node.objects.filter(source__isnull=True, key="email:stranger@example.test").count() == 1
    assert Clarification.objects.count() == 10
    ids = {str(a.result["nodes"][0]["id"]) for applied in results for a in applied}
    assert len(ids) == 10  # every thread saw the same fact nodes
    opened = sum(
        not c["deduplicated"]
        for applied in results
        for a in applied
        for c in a.result["clarifications"]
    )
    assert opened == 10
