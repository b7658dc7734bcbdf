"""The audit hash chain (issue 33, CONTRACT §2 `telha audit verify|export`): every event
of a tenant chained in its append, tampering named at its first break, an erasure that
keeps the chain verifiable, the migration that chains older events, the head published."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection

from clarify.audit import audit_events_append
from clarify.models import AuditEvent
from clarify.services import audit_event_append
from events.models import ChainHead
from telha.metrics import render_metrics
from tenancy.models import Tenant

from .conftest import answer, run_clarify, telha

VERIFY_SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "audit_verify.py"


def broken(pk: int, reason: str) -> tuple[int, dict]:
    """What `telha audit verify --json` says of a chain that first breaks at event `pk`."""
    return 1, {"ok": False, "firstBreak": {"id": pk, "reason": reason}}


def verify(slug: str = "acme") -> tuple[int, dict]:
    result = telha("audit", "verify", "--tenant", slug, "--json")
    assert result.code in (0, 1), result.err
    return result.code, json.loads(result.out)


@pytest.fixture
def trail(inbox, submit, person_client):
    """A tenant's trail with answers in it: alice bound one clarification, bob answered
    another; the events in chain order."""
    first, second = submit("harbour-lease"), submit("quarry-lease")
    assert run_clarify() == 2
    assert answer(person_client("alice"), first, 1).json()["outcome"] == "bound"
    assert answer(person_client("bob"), second, 2).json()["outcome"] == "bound"
    audit_event_append(tenant=inbox["alice"].tenant, type="note", detail={"said": "by hand"})
    return list(AuditEvent.objects.filter(tenant__slug="acme").order_by("seq"))


def test_every_event_is_chained_and_verifies(trail):
    assert [e.seq for e in trail] == list(range(1, len(trail) + 1))
    assert all(e.salt and e.commitment and e.hash for e in trail)
    code, verdict = verify()
    assert code == 0
    assert verdict == {
        "ok": True,
        "events": len(trail),
        "erasedDetails": 0,
        "head": {"tenant": "acme", "seq": len(trail), "hash": trail[-1].hash},
    }
    plain = telha("audit", "verify", "--tenant", "acme")
    assert plain.code == 0 and plain.out.startswith(f"Intact: {len(trail)} events")


def test_an_edited_event_is_the_first_break(trail):
    victim = trail[5]
    AuditEvent.objects.filter(pk=victim.pk).update(detail={**victim.detail, "edited": 1})
    assert verify() == broken(victim.pk, "DETAIL_MISMATCH")
    AuditEvent.objects.filter(pk=victim.pk).update(detail=victim.detail, type="forged")
    assert verify() == broken(victim.pk, "HASH_MISMATCH")
    result = telha("audit", "verify", "--tenant", "acme")
    assert result.code == 1 and "AUDIT_CHAIN_BROKEN" in result.err and str(victim.pk) in result.err


def test_a_deleted_event_breaks_at_its_successor(trail):
    AuditEvent.objects.filter(pk=trail[3].pk).delete()
    assert verify() == broken(trail[4].pk, "SEQ_GAP")


def test_reordered_events_break_where_the_order_changed(trail):
    a, b = trail[6], trail[7]
    AuditEvent.objects.filter(pk=a.pk).update(seq=-1)
    AuditEvent.objects.filter(pk=b.pk).update(seq=a.seq)
    AuditEvent.objects.filter(pk=a.pk).update(seq=b.seq)
    assert verify() == broken(b.pk, "PREV_HASH_MISMATCH")


def test_a_chain_cut_short_disagrees_with_its_head(trail):
    AuditEvent.objects.filter(pk=trail[-1].pk).delete()
    assert verify() == broken(trail[-2].pk, "HEAD_MISMATCH")


def test_erasing_a_person_keeps_the_chain_verifiable(trail, inbox):
    alice = inbox["alice"]
    naming = [e.pk for e in trail if str(alice.pk) in json.dumps(e.detail)]
    assert naming

    result = telha("gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test")
    assert result.code == 0, result.err

    code, verdict = verify()
    assert code == 0, verdict
    assert verdict["erasedDetails"] >= len(naming)
    erased = AuditEvent.objects.filter(pk__in=naming)
    # The data and the salt are gone; the commitment and every hash stay.
    assert all(str(alice.pk) not in json.dumps(e.detail) for e in erased)
    assert set(erased.values_list("salt", flat=True)) == {""}
    kept = {e.pk: (e.commitment, e.hash) for e in trail}
    assert all(kept[e.pk] == (e.commitment, e.hash) for e in erased)


def test_the_migration_chains_older_events(trail):
    migration = __import__(
        "events.migrations.0002_chain_existing_events", fromlist=["chain_existing"]
    )
    migration.unchain(apps, None)
    assert verify()[1]["firstBreak"]["reason"] == "UNCHAINED"
    migration.chain_existing(apps, None)
    code, verdict = verify()
    assert code == 0 and verdict["events"] == len(trail)
    order = list(
        AuditEvent.objects.filter(tenant__slug="acme").order_by("seq").values_list("pk", flat=True)
    )
    assert order == sorted(order)  # chained in the order they were written


def test_tenants_have_chains_of_their_own(trail):
    other = Tenant.objects.create(slug="globex", name="Globex")
    audit_event_append(tenant=other, type="note", detail={"who": "nobody"})
    assert verify("globex")[1]["head"]["seq"] == 1
    assert verify()[1]["head"]["seq"] == len(trail)
    missing = telha("audit", "verify", "--tenant", "nope")
    assert missing.code == 1 and "NOT_FOUND" in missing.err


def test_one_append_of_two_tenants_chains_each_in_the_order_given(trail):
    """Events of two tenants interleaved in one append: each tenant's are chained in the
    order given (the append groups them by tenant, a fixed order, for the heads' locks)."""
    acme, other = Tenant.objects.get(slug="acme"), Tenant.objects.create(slug="globex", name="G")
    events = [
        AuditEvent(tenant=t, at=1, type="note", detail={"n": i})
        for i, t in enumerate((other, acme, other, acme))
    ]
    audit_events_append(events)
    assert all(e.pk for e in events)
    for tenant, given in ((other, [0, 2]), (acme, [1, 3])):
        chained = AuditEvent.objects.filter(tenant=tenant, detail__has_key="n").order_by("seq")
        assert [e.detail["n"] for e in chained] == given
    assert verify("globex")[0] == 0 and verify()[0] == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the insert trigger is PostgreSQL's")
def test_events_linked_by_the_application_and_by_the_trigger_form_one_chain(trail, monkeypatch):
    """During an upgrade a process of the release before links its events itself (head
    locked and moved by the application); the trigger leaves such a row as it is and
    links the next one after it."""
    acme = Tenant.objects.get(slug="acme")
    with monkeypatch.context() as patched:
        patched.setattr("events.chain.linked_on_insert", lambda: False)
        audit_event_append(tenant=acme, type="note", detail={"by": "the application"})
    audit_event_append(tenant=acme, type="note", detail={"by": "the trigger"})
    code, verdict = verify()
    assert code == 0 and verdict["events"] == len(trail) + 2, verdict
    last = AuditEvent.objects.filter(tenant=acme).order_by("-seq")[:2]
    assert [e.detail["by"] for e in last] == ["the trigger", "the application"]


def test_the_head_is_published_as_a_metric(trail):
    text = render_metrics().decode()
    head = ChainHead.objects.get(tenant__slug="acme")
    assert f'telha_audit_chain_length{{tenant="acme"}} {float(head.seq)}' in text
    assert (
        f'telha_audit_chain_head{{hash="{head.hash}",seq="{head.seq}",tenant="acme"}} 1.0' in text
    )


def test_the_auditors_script_checks_an_export_without_the_product(trail, tmp_path):
    export = telha("audit", "export", "--tenant", "acme")
    assert export.code == 0
    path = tmp_path / "acme.jsonl"
    path.write_text(export.out)
    run = subprocess.run(
        [sys.executable, "-I", str(VERIFY_SCRIPT), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"OK {len(trail)} events")

    lines = export.out.splitlines()
    tampered = json.loads(lines[2])
    tampered["at"] += 1
    lines[2] = json.dumps(tampered)
    path.write_text("\n".join(lines) + "\n")
    run = subprocess.run(
        [sys.executable, "-I", str(VERIFY_SCRIPT), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and f"event {tampered['id']}" in run.stdout
