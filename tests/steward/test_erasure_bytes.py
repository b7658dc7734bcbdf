"""Erasure leaves no bytes (issue 19, item 4): on a file-backed SQLite database, after
`telha gdpr_erase` a raw byte scan of the database file and its WAL, and of the stored
uploads' names and bytes, finds none of the person's email, name or aliases (nor their
forms in stored file names, issue 28 item 3) — while the in-tenant executor alone (no
secure_delete, no checkpoint) leaves them in both. Each run is a child process with its own database
(`tests/steward/erasure_bytes_child.py`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clarify.models import AuditEvent
from delivery.actions import DROPPED, CardTap, card_tap_process
from delivery.identity import ChatIdentity
from delivery.models import Delivery
from tenancy.models import Person
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for

from .conftest import PASSWORD, cli, run_worker, submit_with

REPO = Path(__file__).resolve().parents[2]
_SCRUB = {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY", "DEBUG", "CACHE_URL"}


def erase_in_child(mode: str, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(
        DJANGO_SETTINGS_MODULE="telha.settings",
        DEBUG="1",
        SECRET_KEY="erasure-bytes-" + "k" * 40,
        DATABASE_URL=f"sqlite:///{tmp_path / 'telha.sqlite3'}",
        MEDIA_ROOT=str(tmp_path / "media"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.steward.erasure_bytes_child", mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_gdpr_erase_leaves_no_bytes_in_the_sqlite_file_or_its_wal(tmp_path):
    result = erase_in_child("cli", tmp_path)
    # Before: every needle is in the files (the scan can find them).
    before = {n for hits in result["before"].values() for n in hits}
    needles = {"email", "name", "slackUserId", "teamsUserId", "aadOid", "upn", "searchTerm"}
    needles |= {"storedName", "storedEmail"}  # uploads' stored names (issue 28 item 3)
    assert before == needles, result
    assert any(path.startswith("documents/") for path in result["before"]), result
    assert result["after"] == {}, result
    assert "telha.sqlite3" in result["files"]


def test_a_checkpoint_blocked_by_a_reader_is_reported_not_passed_off_as_done(tmp_path):
    """A reader holding a snapshot blocks the WAL truncation at every retry: the command
    prints the counts with `walCheckpointPending: 1` and exits with status 2."""
    result = erase_in_child("blocked", tmp_path)
    assert result["counts"]["walCheckpointPending"] == 1, result
    assert result["status"] == 2 and result["message"].startswith("CHECKPOINT_PENDING"), result


@pytest.mark.slow
def test_without_secure_delete_and_a_checkpoint_the_bytes_stay(tmp_path):
    """The control: the same erasure by the in-tenant executor alone leaves them."""
    result = erase_in_child("plain", tmp_path)
    left = {n for hits in result["after"].values() for n in hits}
    assert {"email", "slackUserId"} <= left, result


# --- identifiers recorded by other tenants ------------------------------------------------


def test_her_chat_ids_in_another_tenants_audit_are_erased(people, settings):
    """Alice (acme; Slack U0ALICE, Entra oid-alice) taps a globex card, where her Slack id
    maps to nobody: globex audits the drop naming her identity. Erasing her in acme erases
    it there too — but not an identifier a globex person holds as well (globex's own
    person, whom only globex's erasure concerns), and nothing else of globex's changes."""
    globex = workspace_load(
        data={
            "tenant": "globex",
            "name": "Globex",
            "groups": ["legal"],
            "people": [
                {
                    "name": "Gil Globex",
                    "email": "gil@globex.test",
                    "role": "editor",
                    "groups": ["legal"],
                    "password": PASSWORD,
                },
                # The same human as acme's alice, known to globex by her Entra id only.
                {
                    "name": "Ally",
                    "email": "ally@globex.test",
                    "role": "viewer",
                    "groups": ["legal"],
                    "aliases": {"aadOid": "oid-alice"},
                },
            ],
        }
    ).tenant
    globex_ingest = client_for(api_key_create(tenant=globex, audience="ingest")[1])
    submit_with(globex_ingest, links=[("AUTHORED_BY", "gil@globex.test")])
    assert run_worker() >= 1
    card = Delivery.objects.get(tenant=globex, kind="question")
    identity = ChatIdentity.of_aliases("slack:T0GLOBEX:U0ALICE", ("slackUserId", "U0ALICE"))
    reply = card_tap_process(
        CardTap(
            channel="slack",
            identity=identity,
            clarification_id=card.clarification_id,
            nonce=card.nonce,
            answer_index=0,
        )
    )
    assert (reply.status, reply.reason) == (DROPPED, "UNMAPPED_IDENTITY")
    AuditEvent.objects.create(  # globex's own record of its own person, by her Entra id
        tenant=globex, at=1, type="note", detail={"aad": "oid-alice", "who": "Ally"}
    )
    globex_events = AuditEvent.objects.filter(tenant=globex)
    naming = globex_events.filter(detail__icontains="U0ALICE")
    assert [e.detail["identity"] for e in naming] == ["slack:T0GLOBEX:U0ALICE"]
    shape = list(globex_events.order_by("pk").values_list("pk", "type", "clarification_id"))

    out = cli("gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test", "--json")

    assert out["otherTenantsAuditEvents"] == 1
    assert not globex_events.filter(detail__icontains="U0ALICE").exists()
    [drop] = globex_events.filter(type="card_action_dropped")
    assert drop.detail["identity"] == "slack:T0GLOBEX:erased"
    assert globex_events.get(type="note").detail == {"aad": "oid-alice", "who": "Ally"}
    assert list(globex_events.order_by("pk").values_list("pk", "type", "clarification_id")) == shape
    assert Person.objects.get(tenant=globex, email="ally@globex.test").erased_at is None
    assert people["alice"].pk not in {p.pk for p in Person.objects.filter(erased_at=None)}


def test_the_erasure_reclaims_storage_only_after_it_commits(
    people, django_capture_on_commit_callbacks, caplog
):
    """The checkpoint (SQLite) or VACUUM (PostgreSQL) is an on-commit callback: inside a
    transaction that has not committed for real (this test's) it does nothing."""
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        cli("gdpr_erase", "--tenant", "acme", "--person", "bob@acme.test")
    assert callbacks
    assert "storage reclaim skipped: still inside a transaction" in caplog.text


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_the_erased_tables_are_vacuumed_after_the_erasure(people):
    if connection.vendor != "postgresql":
        pytest.skip("VACUUM is PostgreSQL's")

    def vacuums() -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT relname, vacuum_count FROM pg_stat_user_tables")
            return dict(cursor.fetchall())

    before = vacuums()
    with CaptureQueriesContext(connection) as ctx:
        cli("gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test")
    vacuumed = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("VACUUM")]
    tables = {"tenancy_person", "tenancy_personalias", "clarify_auditevent", "auth_user"}
    assert {f'VACUUM "{t}"' for t in tables} <= set(vacuumed), vacuumed
    after = vacuums()
    assert all(after[t] == before.get(t, 0) + 1 for t in tables), (before, after)
