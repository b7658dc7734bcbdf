"""The answer's literal statements in clarify.services read and write what the ORM
queries they replace read and write (SQLite and PostgreSQL): `LOCK_SQL`
(`clarification_lock`) and `ANSWER_UPDATE_SQL` (`_save`)."""

import pytest
from django.db import transaction

from clarify import services
from clarify.models import Clarification
from clarify.services import clarification_lock
from telha.graph.models import Node, NodeVersion
from telha.graph.services import node_current_version

pytestmark = pytest.mark.django_db


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_lock_reads_every_column_of_each_model_in_field_order():
    for model in (Clarification, Node, NodeVersion):
        assert services._LOCKED[model] == tuple(f.column for f in model._meta.concrete_fields)


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
    written, literal = _after(services._save, clar_id)

    stamp = orm.pop("updated_at"), literal.pop("updated_at")
    assert literal == orm
    # auto_now stamped on the object and stored exactly, as save() does.
    assert stamp == (saved.updated_at, written.updated_at)
    assert written.updated_at > saved.updated_at
