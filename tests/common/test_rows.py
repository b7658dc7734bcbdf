"""telha.common.rows writes and reads rows exactly as the ORM does (SQLite and PostgreSQL).

Each write is compared with the same object saved through the ORM, read back through the
ORM; each read with the ORM's own instance of the same row. Refusals write nothing."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.db.models import F

from clarify.models import Clarification
from telha.common.rows import row_columns, row_insert, row_update, rows_insert
from telha.graph.models import Node, NodeVersion
from telha.jobs.models import Job
from telha.tenancy.models import Tenant

from ..factories import NodeFactory, NodeVersionFactory, TenantFactory

pytestmark = pytest.mark.django_db

RUN_AFTER = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def _job(tenant, **overrides):
    fields = {
        "tenant": tenant,
        "kind": "test:rows",
        "audience": "ingest",
        "payload": {"v": 1, "nested": {"list": [1, "two", None]}, "text": "é ✓"},
        "subject": "subject-1",
        "run_after": RUN_AFTER,
        "last_error": "",
    }
    return Job(**{**fields, **overrides})


def _stored(model, pk, *, without=()):
    row = model.objects.filter(pk=pk).values().get()
    return {k: v for k, v in row.items() if k not in {"id", *without}}


def test_insert_stores_what_save_stores():
    tenant = TenantFactory()
    saved = _job(tenant)
    saved.save()
    started = datetime.now(UTC)
    inserted = row_insert(_job(tenant))
    stamps = ("created_at", "updated_at")
    assert _stored(Job, inserted.pk, without=stamps) == _stored(Job, saved.pk, without=stamps)
    row = Job.objects.get(pk=inserted.pk)
    # auto_now_add / auto_now stamped by the same pre_save the ORM calls, object and row.
    assert started <= row.created_at <= datetime.now(UTC)
    assert (inserted.created_at, inserted.updated_at) == (row.created_at, row.updated_at)
    # Marked saved: a later save() updates the row instead of inserting another.
    assert isinstance(inserted.pk, int) and not inserted._state.adding
    inserted.status = "done"
    inserted.save()
    assert Job.objects.filter(kind="test:rows").count() == 2
    assert Job.objects.get(pk=inserted.pk).status == "done"


def test_insert_keeps_an_own_primary_key():
    tenant = row_insert(Tenant(slug="rows-own-key", name="Rows"))
    assert Tenant.objects.get(pk=tenant.pk).slug == "rows-own-key"


def test_rows_insert_returns_the_keys_in_row_order():
    node = NodeFactory()
    versions = [
        NodeVersion(
            node=node,
            seq=seq,
            labels=["A", f"L{seq}"],
            properties={"n": seq},
            search_text=f"row {seq}",
            tx_from=seq,
            tx_to=seq + 1,
            confidence=seq / 10,
            provenance={},
            pending=seq % 2 == 0,
        )
        for seq in (1, 2, 3)
    ]
    with transaction.atomic():
        rows_insert(versions)
    assert [v.pk for v in versions] == sorted(v.pk for v in versions)
    for v in versions:
        stored = NodeVersion.objects.get(pk=v.pk)
        assert (stored.seq, stored.labels, stored.properties, stored.pending) == (
            v.seq,
            v.labels,
            v.properties,
            v.pending,
        )


def test_statements_are_counted_like_the_orms(django_assert_num_queries):
    tenant = TenantFactory()
    with django_assert_num_queries(1):
        job = row_insert(_job(tenant))
    with django_assert_num_queries(1):
        row_update(job, ["status"])


def test_update_writes_only_the_named_fields_and_stamps_auto_now():
    job = row_insert(_job(TenantFactory()))
    before = Job.objects.get(pk=job.pk)
    job.status, job.last_error, job.attempts = "done", "finished", 7  # attempts not named
    job.updated_at = datetime(2000, 1, 1, tzinfo=UTC)
    assert row_update(job, ["status", "last_error", "updated_at"]) is True
    after = Job.objects.get(pk=job.pk)
    assert (after.status, after.last_error, after.attempts) == ("done", "finished", 0)
    assert after.updated_at > before.updated_at - timedelta(seconds=1)
    assert after.updated_at == job.updated_at != datetime(2000, 1, 1, tzinfo=UTC)


def test_update_where_null_leaves_a_set_column_alone():
    version = NodeVersionFactory(tx_to=None)
    closing = NodeVersion(pk=version.pk, tx_to=version.tx_from + 10)
    assert row_update(closing, ["tx_to"], where_null=["tx_to"]) is True
    again = NodeVersion(pk=version.pk, tx_to=version.tx_from + 20)
    assert row_update(again, ["tx_to"], where_null=["tx_to"]) is False
    assert NodeVersion.objects.get(pk=version.pk).tx_to == version.tx_from + 10


def test_refusals_write_nothing():
    tenant = TenantFactory()
    node = NodeFactory(tenant=tenant)
    job = row_insert(_job(tenant))
    jobs_before = list(Job.objects.order_by("pk").values())
    with pytest.raises(TypeError, match="expressions"):
        row_insert(_job(tenant, attempts=F("max_attempts") + 1))
    with pytest.raises(TypeError, match="one model"):
        rows_insert([_job(tenant), NodeVersion(node=node, seq=1, tx_from=1)])
    keyless = Tenant(slug="b", name="b")
    keyless.pk = None
    with pytest.raises(TypeError, match="primary key"):
        rows_insert([Tenant(slug="a", name="a"), keyless])
    job.attempts = F("attempts") + 1
    with pytest.raises(TypeError, match="expressions"):
        row_update(job, ["attempts"])
    with pytest.raises(TypeError, match="non-key"):
        row_update(job, ["id"])
    with pytest.raises(TypeError, match="non-key"):
        row_update(job, [])
    assert list(Job.objects.order_by("pk").values()) == jobs_before
    assert not NodeVersion.objects.filter(node=node).exists()
    assert not Tenant.objects.filter(slug__in=["a", "b"]).exists()


def _read(model, table, sql_tail, params):
    columns = row_columns(model, table, connection.alias)
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns.sql} FROM {q(model._meta.db_table)} {sql_tail}", params)
        return columns, cursor.fetchone()


def _values(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_row_columns_read_what_the_orm_reads():
    version = NodeVersionFactory(
        labels=["CONTRACT_TERM"],
        properties={"name": "Term ✓", "n": 2, "deep": {"a": [True, None]}},
        provenance={"spans": [{"start": 0, "end": 5}]},
        pending=True,
        confidence=0.4,
    )
    q = connection.ops.quote_name
    table = NodeVersion._meta.db_table
    columns, row = _read(NodeVersion, table, f"WHERE {q('id')} = %s", [version.pk])
    read = columns.instance(row)
    orm = NodeVersion.objects.get(pk=version.pk)
    assert _values(read) == _values(orm)
    assert read._state.db == "default" and not read._state.adding

    node_columns, node_row = _read(
        Node,
        Node._meta.db_table,
        f"WHERE {q('id')} = %s",
        [Node._meta.pk.get_db_prep_value(version.node_id, connection)],
    )
    assert _values(node_columns.instance(node_row)) == _values(Node.objects.get(pk=version.node_id))


def test_row_columns_of_an_absent_outer_join_row_is_none():
    columns = row_columns(Clarification, "c", connection.alias)
    assert columns.instance([None] * columns.width) is None


def test_rows_insert_batches_like_bulk_create(django_assert_num_queries):
    """Where a statement's parameters are limited (SQLite), one INSERT per batch of
    bulk_create's size; every row stored, keys in order."""
    tenant = TenantFactory()
    jobs = [_job(tenant, subject=f"batch-{i}") for i in range(300)]
    fields = [f for f in Job._meta.local_concrete_fields if f is not Job._meta.auto_field]
    batch = connection.ops.bulk_batch_size(fields, jobs)
    with django_assert_num_queries(-(-len(jobs) // batch)):
        rows_insert(jobs)
    assert [j.pk for j in jobs] == sorted(j.pk for j in jobs)
    stored = dict(Job.objects.filter(tenant=tenant).values_list("pk", "subject"))
    assert stored == {j.pk: j.subject for j in jobs}
