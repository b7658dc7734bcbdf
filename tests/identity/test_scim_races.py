"""Concurrent SCIM requests (PostgreSQL only). PATCHes of one resource: each keeps the
other's change. Creates of one userName: a race within a tenant only.

One PATCH (the "paused" one) stops right after it read the resource it patches, until the
other has either finished or is waiting on a row lock. Without a lock the other finishes
first and the paused one then writes its stale copy back; with the lock the other waits
and then patches what the paused one wrote. Both orders of the same two changes are run.
"""

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

import identity.scim
import identity.services
from tenancy.models import AliasKind, Person, PersonAlias, Tenant, TenantGroup
from tenancy.services import api_key_create

from .conftest import Scim, user_body

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row-lock races need PostgreSQL"),
]

PAUSED = "scim-paused"


def _waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", [pid])
        return cursor.fetchone() is not None


def _race(monkeypatch, secret: str, paused: Callable[[Scim], Any], other: Callable[[Scim], Any]):
    """Run `paused` and `other` (each given its own SCIM client) at once, `paused` held
    after its first read of a resource document until `other` is done or blocked."""
    other_pid: list[int] = []
    other_done = threading.Event()
    started = threading.Barrier(2)
    held = threading.local()

    def hold(render: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            doc = render(*args, **kwargs)
            if threading.current_thread().name == PAUSED and not getattr(held, "done", False):
                held.done = True
                for _ in range(3000):  # bounded: a failure, never a hang
                    if other_done.is_set() or _waiting_on_a_lock(other_pid[0]):
                        break
                    time.sleep(0.01)
            return doc

        return wrapper

    monkeypatch.setattr(identity.scim, "user_doc", hold(identity.scim.user_doc))
    monkeypatch.setattr(identity.scim, "group_doc", hold(identity.scim.group_doc))
    responses: dict[str, Any] = {}
    errors: list[BaseException] = []

    def work(name: str, call: Callable[[Scim], Any]) -> None:
        try:
            connection.ensure_connection()
            if name != PAUSED:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    other_pid.append(cursor.fetchone()[0])
            started.wait(timeout=60)
            responses[name] = call(Scim(secret))
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            if name != PAUSED:
                other_done.set()
            connection.close()

    threads = [
        threading.Thread(target=work, args=(name, call), name=name)
        for name, call in ((PAUSED, paused), ("scim-other", other))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    for name, response in responses.items():
        assert response.status_code == 200, (name, response.content)


def _members(path: str, op: str, person: Person) -> Callable[[Scim], Any]:
    return lambda s: s.patch(
        path, {"op": op, "path": "members", "value": [{"value": str(person.pk)}]}
    )


@pytest.mark.parametrize("paused_op", ["Add", "Remove"])
def test_concurrent_member_patches_of_a_group_keep_both(monkeypatch, workspace, people, paused_op):
    _, secret = api_key_create(tenant=workspace, audience="scim")
    legal = TenantGroup.objects.get(name="legal")
    olga, alice = people["olga"], people["alice"]
    path = f"Groups/{legal.pk}"
    add, remove = _members(path, "Add", olga), _members(path, "Remove", alice)
    paused, other = (add, remove) if paused_op == "Add" else (remove, add)
    _race(monkeypatch, secret, paused, other)
    assert olga.groups.filter(pk=legal.pk).exists()
    assert not alice.groups.filter(pk=legal.pk).exists()
    assert legal.auth_group.user_set.filter(pk=olga.user_id).exists()
    assert not legal.auth_group.user_set.filter(pk=alice.user_id).exists()


def _replace(path: str, attribute: str, value: Any) -> Callable[[Scim], Any]:
    return lambda s: s.patch(path, {"op": "replace", "path": attribute, "value": value})


@pytest.mark.parametrize("paused_attribute", ["active", "displayName"])
def test_deactivation_racing_a_rename_keeps_both(monkeypatch, workspace, people, paused_attribute):
    _, secret = api_key_create(tenant=workspace, audience="scim")
    olga = people["olga"]
    path = f"Users/{olga.pk}"
    off, rename = _replace(path, "active", False), _replace(path, "displayName", "Olga Renamed")
    paused, other = (off, rename) if paused_attribute == "active" else (rename, off)
    _race(monkeypatch, secret, paused, other)
    olga.refresh_from_db()
    olga.user.refresh_from_db()
    assert olga.name == "Olga Renamed"
    assert olga.deactivated_at is not None
    assert olga.user.is_active is False


def _create_at_once(monkeypatch, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each `(secret, body)` POSTed to /Users from its own thread, every request held just
    after its uniqueness check (at `person_upsert`) until all have passed theirs: the
    database's constraints, not the check, decide."""
    checked = threading.Barrier(len(calls))
    upsert = identity.services.person_upsert

    def held(**kwargs: Any) -> Any:
        checked.wait(timeout=60)
        return upsert(**kwargs)

    monkeypatch.setattr(identity.services, "person_upsert", held)
    responses: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def work(i: int, secret: str, body: dict[str, Any]) -> None:
        try:
            responses[i] = Scim(secret).post("Users", body)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i, *call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return responses


def _body(user_name: str, email: str) -> dict[str, Any]:
    return user_body(user_name, emails=[{"value": email, "primary": True}])


def test_two_tenants_creating_one_user_name_at_once_both_succeed(monkeypatch, workspace):
    """Issue 28 item 2: no installation-wide name to race for."""
    other = Tenant.objects.create(slug="globex", name="Globex")
    calls = [
        (api_key_create(tenant=tenant, audience="scim")[1], _body("kim@corp.test", "kim@corp.test"))
        for tenant in (workspace, other)
    ]
    responses = _create_at_once(monkeypatch, calls)
    assert [r.status_code for r in responses] == [201, 201], [r.content for r in responses]
    held = PersonAlias.objects.filter(kind=AliasKind.UPN, value="kim@corp.test")
    assert sorted(held.values_list("tenant__slug", flat=True)) == ["acme", "globex"]


def test_one_tenant_creating_one_user_name_twice_at_once_gets_one_person(monkeypatch, workspace):
    """Both requests pass the check; the per-tenant constraint (`alias_unique_value`) lets
    one person hold the name and answers the other 409, with nothing of it written."""
    secret = api_key_create(tenant=workspace, audience="scim")[1]
    before = Person.objects.count(), get_user_model().objects.count()
    responses = _create_at_once(
        monkeypatch,
        [
            (secret, _body("kim@corp.test", "kim@acme.test")),
            (secret, _body("kim@corp.test", "k@acme.test")),
        ],
    )
    assert sorted(r.status_code for r in responses) == [201, 409], [r.content for r in responses]
    loser = next(r for r in responses if r.status_code == 409)
    assert loser.json()["scimType"] == "uniqueness"
    assert (
        PersonAlias.objects.filter(
            tenant=workspace, kind=AliasKind.UPN, value="kim@corp.test"
        ).count()
        == 1
    )
    assert (Person.objects.count(), get_user_model().objects.count()) == (
        before[0] + 1,
        before[1] + 1,
    )
