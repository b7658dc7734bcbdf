"""The migrations match the models, and the lease queue's partial indexes exist with their
conditions (and serve the lease and reap queries)."""

import io
import re
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models.functions import Now

from jobs.models import Job, JobStatus

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


def _queue_as_it_runs() -> None:
    """A queue with the shape it has in production: the finished jobs pile up, a few are
    ready for each audience, a few are leased; statistics gathered. On an empty table any
    index (or none) costs the same and the planner's choice says nothing."""
    from django.utils import timezone

    from tests.factories import TenantFactory

    tenant = TenantFactory()
    now = timezone.now()
    shapes = [(JobStatus.DONE, 4000), (JobStatus.DEAD, 200), (JobStatus.LEASED, 40)]
    shapes += [(JobStatus.PENDING, 60)]
    jobs = []
    for status, count in shapes:
        for i in range(count):
            audience = ("clarify", "delivery", "ingest")[i % 3]
            leased = status == JobStatus.LEASED
            jobs.append(
                Job(
                    tenant=tenant,
                    kind=f"{audience}:work",
                    audience=audience,
                    priority=i % 3,
                    status=status,
                    run_after=now - timedelta(seconds=i),
                    lease_token=uuid.uuid4() if leased else None,
                    lease_expires_at=now + timedelta(seconds=i - 20) if leased else None,
                )
            )
    Job.objects.bulk_create(jobs)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Job._meta.db_table}")


def _plan(queryset) -> str:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # a small table: make the planner show its hand
                cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


def test_the_lease_and_reap_queries_use_the_partial_indexes():
    _queue_as_it_runs()
    lease = Job.objects.filter(
        status=JobStatus.PENDING, audience="clarify", run_after__lte=Now()
    ).order_by("priority", "run_after", "id")
    assert "job_lease_ready" in _plan(lease[:10])
    reap = Job.objects.filter(status=JobStatus.LEASED, lease_expires_at__lt=Now()).order_by(
        "lease_expires_at"
    )
    assert "job_reap_expired" in _plan(reap[:500])


# Tables written on every answer: each foreign key is served by an index that leads with
# it, and no index duplicates another's leading column for nothing.
HOT_TABLES = {
    "graph_nodeversion": {"node_id"},
    "clarify_auditevent": {"clarification_id", "tenant_id"},
    "clarify_responserecord": {"clarification_id"},
    "jobs_job": {"tenant_id", "subject"},
}


def _indexes(table: str) -> dict[str, dict]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {name: c for name, c in found.items() if c["index"] or c["unique"]}


@pytest.mark.parametrize("table", sorted(HOT_TABLES))
def test_hot_tables_have_no_single_column_index_a_wider_one_covers(table):
    indexes = _indexes(table)
    for column in HOT_TABLES[table]:
        leading = {n: c for n, c in indexes.items() if c["columns"] and c["columns"][0] == column}
        assert leading, f"{table}.{column} has no index leading with it"
        plain_single = [
            n
            for n, c in leading.items()
            if c["columns"] == [column] and not c["unique"] and not c["primary_key"]
        ]
        wider = [n for n, c in leading.items() if len(c["columns"]) > 1]
        assert not (plain_single and wider), (table, column, plain_single, wider)
    if connection.vendor == "postgresql":
        assert not [n for n in indexes if n.endswith("_like")], indexes


def test_the_one_current_version_index_survived_the_index_clean_up():
    sql = _index_sql("nodeversion_one_current")
    assert sql.startswith("create unique index"), sql
    assert "(node_id)" in sql and "tx_to is null" in sql.replace("(", "").replace(")", ""), sql
    assert "(subject)" in _index_sql("job_subject")
