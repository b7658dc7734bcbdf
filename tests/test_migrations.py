"""The migrations match the models, and the lease queue's partial indexes exist with their
conditions (and serve the lease and reap queries)."""

import io
import re

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models.functions import Now

from telha.jobs.models import Job, JobStatus

pytestmark = pytest.mark.django_db


def test_migrations_are_in_sync_with_the_models():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit:  # --check exits 1 when a model change has no migration
        pytest.fail(f"makemigrations --check found changes without a migration:\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()


def _index_sql(name: str) -> str:
    """The index's definition as the database stores it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        else:
            cursor.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = %s", [name]
            )
        found = cursor.fetchone()
    assert found is not None, f"index {name} does not exist"
    return re.sub(r"\s+", " ", found[0].replace('"', "")).lower()


@pytest.mark.parametrize(
    ("name", "columns", "condition"),
    [
        ("job_lease_ready", "audience, priority, run_after, id", "status = 'pending'"),
        ("job_reap_expired", "lease_expires_at", "status = 'leased'"),
    ],
)
def test_the_partial_indexes_exist_with_their_conditions(name, columns, condition):
    sql = _index_sql(name)
    assert f"({columns})" in sql, sql
    where = sql.split(" where ", 1)
    assert len(where) == 2, f"{name} is not partial: {sql}"
    assert condition in where[1].replace("::text", "").replace("(", "").replace(")", ""), sql
    introspected = connection.introspection.get_constraints(connection.cursor(), Job._meta.db_table)
    assert introspected[name]["index"]
    assert introspected[name]["columns"] == [c.strip() for c in columns.split(",")]


def _plan(queryset) -> str:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # a tiny table: make the planner show its hand
                cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


def test_the_lease_and_reap_queries_use_the_partial_indexes():
    lease = Job.objects.filter(
        status=JobStatus.PENDING, audience="clarify", run_after__lte=Now()
    ).order_by("priority", "run_after", "id")
    assert "job_lease_ready" in _plan(lease[:10])
    reap = Job.objects.filter(status=JobStatus.LEASED, lease_expires_at__lt=Now()).order_by(
        "lease_expires_at"
    )
    assert "job_reap_expired" in _plan(reap[:500])
