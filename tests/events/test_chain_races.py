"""The chain under concurrent appends on PostgreSQL (issue 33 item 3): writers of one
tenant queue on its head row and every link still holds; another tenant's writer is not
held up by them (no global lock)."""

import threading
import time

import pytest
from django.db import connection, connections, transaction

from clarify.audit import audit_events_append
from clarify.models import AuditEvent
from clarify.services import audit_event_append
from events.chain import chain_verify
from tenancy.models import Tenant

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row-lock races need PostgreSQL"),
]

WRITERS = 8
BATCHES = 5


def _in_thread(target, *args):
    errors: list[BaseException] = []

    def run():
        try:
            target(*args)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def test_concurrent_appends_of_one_tenant_form_one_chain():
    tenant = Tenant.objects.create(slug="race", name="Race")
    barrier = threading.Barrier(WRITERS)

    def writer(n: int) -> None:
        barrier.wait(timeout=30)
        for batch in range(BATCHES):
            with transaction.atomic():
                audit_event_append(tenant=tenant, type="note", detail={"w": n, "b": batch})
                audit_event_append(tenant=tenant, type="note", detail={"w": n, "b": -batch})

    started = [_in_thread(writer, n) for n in range(WRITERS)]
    for thread, errors in started:
        thread.join(timeout=60)
        assert not thread.is_alive() and errors == []

    verdict = chain_verify(tenant)
    assert verdict.ok, verdict.first_break
    assert verdict.events == WRITERS * BATCHES * 2 == verdict.head["seq"]
    seqs = sorted(AuditEvent.objects.filter(tenant=tenant).values_list("seq", flat=True))
    assert seqs == list(range(1, WRITERS * BATCHES * 2 + 1))


def test_a_held_tenant_chain_does_not_hold_up_another_tenant():
    held, free = (Tenant.objects.create(slug=s, name=s) for s in ("held", "free"))
    appended, release = threading.Event(), threading.Event()

    def holder() -> None:
        with transaction.atomic():
            audit_event_append(tenant=held, type="note", detail={"holding": True})
            appended.set()
            assert release.wait(timeout=30)

    thread, errors = _in_thread(holder)
    try:
        assert appended.wait(timeout=30)
        other, other_errors = _in_thread(
            lambda: audit_event_append(tenant=free, type="note", detail={"free": True})
        )
        other.join(timeout=30)
        # Done while the first tenant's head is still locked by an open transaction.
        assert not other.is_alive() and other_errors == []
        assert thread.is_alive()
    finally:
        release.set()
        thread.join(timeout=30)
    assert errors == []
    assert chain_verify(held).ok and chain_verify(free).ok


def _waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def test_appends_of_two_tenants_in_opposite_orders_do_not_deadlock():
    """Two appends of tenants A and B's events — one given A first, the other B first —
    both queue behind a third transaction holding A's head: each takes the heads in the
    same order (the append sorts tenants), so when A is released neither waits for the
    other in a circle (unsorted, the second would hold B while waiting for A)."""
    a, b = (Tenant.objects.create(slug=s, name=s) for s in ("aaa-order", "bbb-order"))
    if str(a.pk) > str(b.pk):
        a, b = b, a  # `a` is the tenant sorted first
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with transaction.atomic():
            audit_event_append(tenant=a, type="note", detail={"holding": True})
            held.set()
            assert release.wait(timeout=30)

    def both(first: Tenant, second: Tenant) -> None:
        with transaction.atomic():
            events = [
                AuditEvent(tenant=t, at=1, type="note", detail={"n": i})
                for i, t in enumerate((first, second))
            ]
            audit_events_append(events)

    holding, holder_errors = _in_thread(holder)
    assert held.wait(timeout=30)
    writers = [_in_thread(both, a, b), _in_thread(both, b, a)]
    try:
        for _ in range(300):  # both queued behind the holder
            if _waiting_on_locks() >= 2:
                break
            time.sleep(0.01)
        assert _waiting_on_locks() == 2
    finally:
        release.set()
        holding.join(timeout=30)
    for thread, errors in writers:
        thread.join(timeout=30)
        assert not thread.is_alive() and errors == []  # no deadlock was detected
    assert holder_errors == []
    assert chain_verify(a).ok and chain_verify(b).ok
    assert chain_verify(a).events == 3 and chain_verify(b).events == 2
