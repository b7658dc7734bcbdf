"""The shared `workspace` fixture replays rows captured from one real `workspace_load`
(tests/conftest.py). These tests keep that replay honest: it writes exactly the captured
rows, and a real load writes the same tables, the same number of rows and the same
observable workspace."""

from typing import Any

import pytest
from django.db import models

from tenancy.models import Person, Tenant
from tenancy.services import api_key_create, workspace_load

from .conftest import WORKSPACE, WorkspaceRows, workspace_rows_replay, workspace_rows_written

pytestmark = pytest.mark.django_db


def _shape(rows: WorkspaceRows) -> dict[str, int]:
    return {model._meta.label: len(values) for model, values in rows}


def _described(tenant: Tenant) -> dict[str, Any]:
    """What tests rely on, without generated keys and timestamps."""
    people = {}
    for p in Person.objects.filter(tenant=tenant).select_related("user"):
        people[p.email] = {
            "name": p.name,
            "role": p.role,
            "groups": sorted(g.name for g in p.groups.all()),
            "user": (
                p.user.username == str(p.pk),
                p.user.email,
                p.user.first_name,
                p.user.is_staff,
                p.user.is_active,
            ),
            "user_groups": sorted(g.name for g in p.user.groups.all()),
            "usable_password": p.user.has_usable_password(),
            "aliases": sorted((a.kind, a.value) for a in p.aliases.all()),
        }
    return {
        "tenant": (tenant.slug, tenant.name),
        "groups": sorted(g.name for g in tenant.groups.all()),
        "people": people,
    }


def _without_save_times(rows: WorkspaceRows) -> WorkspaceRows:
    """Rows without `auto_now`/`auto_now_add` fields (a replay stamps them anew)."""
    out: WorkspaceRows = []
    for model, values in rows:
        stamped = {
            f.attname
            for f in model._meta.concrete_fields
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
        }
        out.append((model, [{k: v for k, v in row.items() if k not in stamped} for row in values]))
    return out


def test_replay_writes_exactly_the_captured_rows(workspace_rows):
    replayed = workspace_rows_written(lambda: workspace_rows_replay(workspace_rows))
    assert _without_save_times(replayed) == _without_save_times(workspace_rows)
    assert len(replayed) == len(workspace_rows) >= 5


def test_a_real_load_writes_the_same_tables_rows_and_workspace(workspace_rows):
    described: dict[str, Any] = {}

    def real() -> None:
        described["real"] = _described(workspace_load(data=WORKSPACE).tenant)

    def replay() -> None:
        workspace_rows_replay(workspace_rows)
        described["replay"] = _described(Tenant.objects.get(slug=WORKSPACE["tenant"]))

    assert _shape(workspace_rows_written(real)) == _shape(workspace_rows)
    workspace_rows_written(replay)
    assert described["replay"] == described["real"]
    assert described["real"]["people"]["sam@acme.test"]["usable_password"] is True


def test_the_fixture_is_usable_for_new_rows_after_the_replay(workspace, people):
    """The id sequences were moved past the replayed keys: new rows of the same tables
    (a group membership, a user, an alias) insert without key clashes."""
    workspace_load(
        data={
            **WORKSPACE,
            "people": [
                *WORKSPACE["people"],
                {"name": "New Person", "email": "new@acme.test", "groups": ["legal", "finance"]},
            ],
        }
    )
    new = Person.objects.get(email="new@acme.test")
    assert sorted(g.name for g in new.user.groups.all()) == ["acme:finance", "acme:legal"]
    key, _ = api_key_create(tenant=workspace, person=people["alice"])
    assert key.pk is not None


def test_models_with_rows_include_the_m2m_tables(workspace_rows):
    labels = {model._meta.label for model, _ in workspace_rows}
    assert {"tenancy.Tenant", "tenancy.Person", "auth.User"} <= labels
    assert any(model._meta.auto_created for model, _ in workspace_rows)
    assert all(issubclass(model, models.Model) for model, _ in workspace_rows)
