"""The answer's literal statements (`clarify.sql`) read and write what the ORM queries they
replace read and write (SQLite and PostgreSQL): `LOCK_SQL` (`clarification_lock_read`,
through `clarification_lock`), `ANSWER_UPDATE_SQL` (`clarification_answer_update`),
`RESPONSE_INSERT_SQL` (`response_insert`) and `EVENTS_INSERT_SQL`
(`audit_events_insert`)."""

import uuid

import pytest
from django.db import transaction

from clarify import sql
from clarify.models import AuditEvent, Clarification, ResponseRecord
from clarify.services import clarification_lock
from graph.models import Node, NodeVersion
from graph.services import node_current_version

pytestmark = pytest.mark.django_db


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_lock_reads_every_column_of_each_model_in_field_order():
    for model in (Clarification, Node, NodeVersion):
        assert sql.LOCKED[model] == tuple(f.column for f in model._meta.concrete_fields)


def test_the_lock_reads_what_the_orm_reads(submit):
    s = submit()
    clar = s.clar
    with transaction.atomic():
        locked, current = clarification_lock(clar.tenant, clar.pk, None)
    orm = Clarification.objects.select_related("target").get(pk=clar.pk)
    assert _fields(locked) == _fields(orm)
    assert _fields(locked.target) == _fields(orm.target)
    assert current is not None
    assert _fields(current) == _fields(node_current_version(orm.target_id))
    # Read from the database, as the ORM reads them: marked saved, JSON decoded.
    assert not locked._state.adding and locked._state.db == "default"
    assert isinstance(locked.candidates, list) and isinstance(current.labels, list)


def test_the_lock_reads_no_version_when_the_target_has_none(submit):
    s = submit()
    NodeVersion.objects.filter(node_id=s.node_id).delete()
    with transaction.atomic():
        locked, current = clarification_lock(s.clar.tenant, s.clar.pk, None)
    assert current is None and str(locked.target_id) == s.node_id


def _after(write, clar_id):
    """The clarification's row (and the object written) after `write(obj)`; rolled back."""
    with transaction.atomic():
        obj = Clarification.objects.get(pk=clar_id)
        obj.state, obj.quorum_state = "answered", "satisfied"
        obj.fact_version_tx, obj.responses_recorded = 1_800_000_000_000_000, 3
        write(obj)
        row = Clarification.objects.filter(pk=clar_id).values().get()
        transaction.set_rollback(True)
    return obj, row


def test_the_answer_update_writes_what_save_update_fields_writes(submit):
    clar_id = submit().clar_id
    fields = ["state", "quorum_state", "fact_version_tx", "responses_recorded", "updated_at"]
    saved, orm = _after(lambda obj: obj.save(update_fields=fields), clar_id)
    written, literal = _after(sql.clarification_answer_update, clar_id)

    stamp = orm.pop("updated_at"), literal.pop("updated_at")
    assert literal == orm
    # auto_now stamped on the object and stored exactly, as save() does.
    assert stamp == (saved.updated_at, written.updated_at)
    assert written.updated_at > saved.updated_at


def _rows(model, pks, *, without=("id",)):
    rows = model.objects.filter(pk__in=pks).order_by("pk").values()
    return [{k: v for k, v in row.items() if k not in without} for row in rows]


def test_the_audit_insert_writes_what_bulk_create_writes(submit):
    clar = submit().clar

    def events():
        details = [{"a": [1, "é ✓", None]}, {}, {"nested": {"x": 1.5}}]
        return [
            AuditEvent(tenant=clar.tenant, clarification=clar, at=i, type="test", detail=d)
            for i, d in enumerate(details)
        ] + [AuditEvent(tenant=clar.tenant, clarification=None, at=9, type="t", detail={})]

    created = AuditEvent.objects.bulk_create(events())
    appended = events()
    sql.audit_events_insert(appended)

    # The chain's link is each row's own (PostgreSQL's insert trigger sets it on both).
    link = ("id", "seq", "prev_hash", "hash")
    assert _rows(AuditEvent, [e.pk for e in appended], without=link) == _rows(
        AuditEvent, [e.pk for e in created], without=link
    )
    # The keys come back in row order, and the events are marked saved, as bulk_create does.
    stored = AuditEvent.objects.in_bulk([e.pk for e in appended])
    assert [stored[e.pk].at for e in appended] == [0, 1, 2, 9]
    assert not any(e._state.adding for e in appended)


def test_the_response_insert_writes_what_save_writes(submit):
    clar = submit().clar

    def record(seq):
        return ResponseRecord(
            clarification=clar,
            seq=seq,
            responder=uuid.uuid4(),
            rights_at_answer_time="editor",
            answer_index=None,
            answer_custom={"validFrom": 1, "validTo": None, "sourceText": "é"},
            interval_from=1,
            interval_to=None,
            channel="api",
            message_ref="",
            response_tx=7,
            binding_status="binding_candidate",
            outcome_status=202,
            outcome={"status": "partial", "list": [1, None]},
        )

    saved, inserted = record(1), record(2)
    saved.save(force_insert=True)
    sql.response_insert(inserted)
    without = ("id", "seq", "responder")
    assert _rows(ResponseRecord, [inserted.pk], without=without) == _rows(
        ResponseRecord, [saved.pk], without=without
    )
    assert ResponseRecord.objects.get(pk=inserted.pk).responder == inserted.responder
    assert not inserted._state.adding
