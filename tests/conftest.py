"""Shared fixtures: tenants, people, keys and API clients."""

from typing import Any
from unittest import mock

import pytest
from django.apps import apps
from django.core.management import ManagementUtility
from django.core.management.color import no_style
from django.db import connection, connections, models, transaction
from rest_framework.test import APIClient

from tenancy.models import Tenant
from tenancy.services import api_key_create, workspace_load
from tests import tree_guard
from tests.browser import REPO, A11y, axe_core_install, launched_chromium, screenshots_folder

# What the audit chain (issue 33) adds to an append of audit events, in statements: none
# on PostgreSQL (its trigger links the rows as they go in); on SQLite the chain head's
# lock and move.
CHAIN_STATEMENTS = 0 if connection.vendor == "postgresql" else 2

WORKSPACE = {
    "tenant": "acme",
    "name": "Acme Corp",
    "groups": ["legal", "finance"],
    "people": [
        {
            "name": "Alice Author",
            "email": "alice@acme.test",
            "role": "editor",
            "groups": ["legal"],
            "aliases": {"slackUserId": "U0ALICE", "aadOid": "oid-alice"},
        },
        {
            "name": "Bob Named",
            "email": "bob@acme.test",
            "role": "editor",
            "groups": ["legal"],
            "aliases": {"slackUserId": "U0BOB"},
        },
        {"name": "Olga Owner", "email": "olga@acme.test", "role": "editor", "groups": ["finance"]},
        {"name": "Vera Viewer", "email": "vera@acme.test", "role": "viewer", "groups": ["legal"]},
        {
            "name": "Sam Steward",
            "email": "sam@acme.test",
            "role": "steward",
            "groups": ["legal", "finance"],
            "password": "steward-pass-1",
        },
    ],
}


# --- make test leaves the tree clean (tests/tree_guard.py) ----------------------------------

_TREE_BEFORE = pytest.StashKey[tree_guard.TreeState]()


def pytest_sessionstart(session: pytest.Session) -> None:
    if tree_guard.wanted(session.config):
        state = tree_guard.tree_state(REPO)
        if state is not None:
            session.config.stash[_TREE_BEFORE] = state


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_TREE_BEFORE, None)
    after = tree_guard.tree_state(REPO) if before is not None else None
    if before is None or after is None:
        return
    changed = tree_guard.tree_changes(before, after)
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "the test run wrote into the git tree", red=True)
            for path in changed:
                reporter.write_line(f"  {path}  (tests write to temporary folders)")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


WorkspaceRows = list[tuple[type[models.Model], list[dict[str, Any]]]]


def workspace_rows_written(load: Any) -> WorkspaceRows:
    """Every row `load()` writes, per model (auto-created M2M tables included), as field
    values, in model dependency order. Runs `load()` in a transaction it rolls back."""
    everything = [
        m
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    ]
    written: WorkspaceRows = []
    with transaction.atomic():
        before = {m: set(m._base_manager.values_list("pk", flat=True)) for m in everything}
        load()
        for model in everything:
            fields = [f.attname for f in model._meta.concrete_fields]
            rows = [
                row
                for row in model._base_manager.order_by("pk").values(*fields)
                if row[model._meta.pk.attname] not in before[model]
            ]
            if rows:
                written.append((model, rows))
        transaction.set_rollback(True)
    return written


@pytest.fixture(scope="session")
def workspace_rows(django_db_setup: None, django_db_blocker: Any) -> WorkspaceRows:
    """The rows `workspace_load(data=WORKSPACE)` writes, captured once per test session
    (tests/test_fixtures.py checks that a replay equals a real load)."""
    with django_db_blocker.unblock():
        return workspace_rows_written(lambda: workspace_load(data=WORKSPACE))


def workspace_rows_replay(rows: WorkspaceRows) -> None:
    """Insert captured rows with their own keys (one INSERT per table, in one transaction,
    so deferred foreign keys are checked at its end) and move the tables' id sequences
    past them, as `loaddata` does."""
    with transaction.atomic():
        for model, values in rows:
            model._base_manager.bulk_create([model(**v) for v in values])
        reset = connection.ops.sequence_reset_sql(no_style(), [m for m, _ in rows])
        if reset:
            with connection.cursor() as cursor:
                for sql in reset:
                    cursor.execute(sql)


@pytest.fixture
def workspace(db: None, workspace_rows: WorkspaceRows) -> Tenant:
    """The Acme workspace (WORKSPACE), as `workspace_load` writes it. Replayed from rows
    captured once per session: a real load is ~130 statements, paid by most tests."""
    workspace_rows_replay(workspace_rows)
    return Tenant.objects.get(slug=WORKSPACE["tenant"])


@pytest.fixture
def people(workspace):
    return {p.email.split("@")[0]: p for p in workspace.people.all()}


@pytest.fixture
def job_kinds(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`jobs.policies.register_kind` for this test only: the kinds registered by the apps
    stay, and the registry is restored after the test."""
    from jobs import policies

    monkeypatch.setattr(policies, "_KINDS", dict(policies._KINDS))
    return policies.register_kind


def client_for(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def ingest_client(workspace):
    _, secret = api_key_create(tenant=workspace, audience="ingest")
    return client_for(secret)


@pytest.fixture
def clarify_client(workspace):
    _, secret = api_key_create(tenant=workspace, audience="clarify")
    return client_for(secret)


@pytest.fixture
def person_client(workspace, people):
    """`person_client("alice")` → an API client acting as that person with their rights."""

    def make(name: str, role: str | None = None) -> APIClient:
        _, secret = api_key_create(tenant=workspace, person=people[name], role=role)
        return client_for(secret)

    return make


# --- the browser tests (tests/browser.py) ---------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through Playwright, one per test module."""
    yield from launched_chromium()


@pytest.fixture
def screenshots(tmp_path_factory):
    """The folder a browser test writes its screenshots to: a temporary one, or
    `SCREENSHOTS_DIR` under `make screenshots`."""
    return screenshots_folder(tmp_path_factory)


@pytest.fixture(scope="session")
def axe_script(tmp_path_factory):
    """axe-core's script, installed once per test session (tests/browser.py)."""
    return axe_core_install(tmp_path_factory.mktemp("axe-core"))


@pytest.fixture
def a11y(axe_script):
    """The axe-core audit of a browser test's pages: open contexts with
    `a11y.new_context(browser, …)`, `a11y.check(page)` on each page shown, `a11y.done()`
    at the end."""
    return A11y(axe_script)


@pytest.fixture
def telha_cli(capsys):
    """`telha_cli(*argv)` → (exit status, stdout, stderr) of `telha <argv>` as from a shell:
    argument parsing, CommandError → exit status and the message on stderr."""

    def do(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        # run_from_argv closes every connection when it ends; the test's own must survive.
        with mock.patch.object(connections, "close_all", lambda: None):
            try:
                # Not ManagementUtility.execute(): its django.setup() would reconfigure
                # logging onto this test's captured stderr (closed after the test).
                ManagementUtility(["telha", *argv]).fetch_command(argv[0]).run_from_argv(
                    ["telha", *argv]
                )
                status = 0
            except SystemExit as exc:
                status = int(exc.code or 0)
        out = capsys.readouterr()
        return status, out.out, out.err

    return do
