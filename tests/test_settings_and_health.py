"""Settings from the environment (CONTRACT §1), the SQLite transaction mode, the OpenAPI
schema and docs, and `GET /healthz` (CONTRACT §3.6)."""

import json
import os
import re
import secrets
import subprocess
import sys
import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.db import DatabaseError, connection

BASE_DIR = Path(__file__).resolve().parent.parent
PYTHON = str(BASE_DIR / ".venv" / "bin" / "python")
if not Path(PYTHON).exists():  # e.g. run from an installed environment
    PYTHON = sys.executable

# Variables that would leak the test run's configuration into a child process.
_SCRUB = {"DJANGO_SETTINGS_MODULE", "SECRET_KEY", "DEBUG", "DATABASE_URL", "ALLOWED_HOSTS"}
_SCRUB |= {k for k in os.environ if k.startswith(("SECURE_", "SESSION_", "CSRF_", "DB_PREPARE"))}


def run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    clean.update(env)
    return subprocess.run(
        args, cwd=BASE_DIR, env=clean, capture_output=True, text=True, timeout=120
    )


# --- settings ---


def test_debug_off_without_secret_key_refuses_to_start(tmp_path):
    result = run(
        [PYTHON, "-c", "import telha.settings"],
        DEBUG="0",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_debug_on_without_secret_key_starts_with_a_dev_key(tmp_path):
    """The control for the test above: the import itself works."""
    code = "import telha.settings as s; print(s.SECRET_KEY.startswith('dev-insecure-'))"
    result = run(
        [PYTHON, "-c", code], DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_check_deploy_is_clean_for_a_production_configuration(tmp_path):
    result = run(
        [PYTHON, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(64)[:60],
        ALLOWED_HOSTS="example.com",
        DJANGO_SETTINGS_MODULE="telha.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'x.sqlite3'}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNINGS" not in result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_a_redis_cache_url_is_djangos_redis_cache_with_short_timeouts():
    from telha.settings import cache_config

    config = cache_config("redis://redis.example.com:6380/2?key_prefix=acme-prod&timeout=30")
    assert config["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert config["LOCATION"] == "redis://redis.example.com:6380/2"
    assert (config["KEY_PREFIX"], config["TIMEOUT"]) == ("acme-prod", 30)
    assert "key_prefix" not in config and "timeout" not in config
    options = config["OPTIONS"]
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (1.0, 1.0)
    assert options["retry"].get_retries() == 1
    slow = cache_config("redis://127.0.0.1:6379/0?socket_timeout=2.5")
    assert slow["OPTIONS"]["socket_timeout"] == 2.5  # the URL wins
    assert cache_config("locmemcache://telha")["BACKEND"].endswith("LocMemCache")


def test_clarify_settings_come_from_the_environment(tmp_path):
    code = textwrap.dedent(
        """
        import json, telha.settings as s
        print(json.dumps({k: s.CLARIFY[k] for k in (
            "ENABLED", "ESCALATION_WINDOW_HOURS", "MAX_CANDIDATES", "QUORUM_REQUIRED_ROLES",
            "SEVERITY_ELEVATE", "MIN_DETECTOR_CONFIDENCE")}))
        """
    )
    result = run(
        [PYTHON, "-c", code],
        DEBUG="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        CLARIFY_ENABLED="0",
        CLARIFY_ESCALATION_WINDOW_HOURS="1.5",
        CLARIFY_MAX_CANDIDATES="7",
        CLARIFY_QUORUM_REQUIRED_ROLES="editor,steward",
        CLARIFY_SEVERITY_ELEVATE="conflicting_dates=high,undated=critical",
        CLARIFY_MIN_DETECTOR_CONFIDENCE="0.25",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "ENABLED": False,
        "ESCALATION_WINDOW_HOURS": 1.5,
        "MAX_CANDIDATES": 7,
        "QUORUM_REQUIRED_ROLES": ["editor", "steward"],
        "SEVERITY_ELEVATE": {"conflicting_dates": "high", "undated": "critical"},
        "MIN_DETECTOR_CONFIDENCE": 0.25,
    }


def test_database_url_selects_the_database(tmp_path):
    code = "from django.conf import settings as s; print(s.DATABASES['default']['ENGINE'])"
    result = run(
        [PYTHON, "-c", "import django; django.setup(); " + code],
        DJANGO_SETTINGS_MODULE="telha.settings",
        DEBUG="1",
        DATABASE_URL="postgres://u:p@db.example:5432/telha",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "django.db.backends.postgresql"


# --- SQLite: IMMEDIATE transactions, WAL, busy timeout ---

SQLITE_PROBE = textwrap.dedent(
    """
    import sqlite3, sys
    import django
    django.setup()
    from django.db import connection, transaction

    path = connection.settings_dict["NAME"]
    with connection.cursor() as c:
        c.execute("CREATE TABLE IF NOT EXISTS t (x int)")
        c.execute("PRAGMA journal_mode")
        print("journal_mode", c.fetchone()[0])
        c.execute("PRAGMA busy_timeout")
        print("busy_timeout", c.fetchone()[0])
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    with transaction.atomic():
        # An IMMEDIATE transaction holds the write lock from BEGIN, before any write:
        # a second writer cannot start. (A DEFERRED one would hold nothing yet.)
        try:
            other.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            print("second_writer", "blocked", exc)
        else:
            other.execute("ROLLBACK")
            print("second_writer", "allowed")
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    print("after_commit", "allowed")
    """
)


def test_sqlite_uses_immediate_transactions_wal_and_a_busy_timeout(tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite-only settings")
    options = connection.settings_dict["OPTIONS"]
    assert options["transaction_mode"] == "IMMEDIATE"
    assert options["timeout"] >= 5
    result = run(
        [PYTHON, "-c", SQLITE_PROBE],
        DJANGO_SETTINGS_MODULE="telha.settings",
        DEBUG="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'probe.sqlite3'}",
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.strip().splitlines())
    assert lines["journal_mode"] == "wal"
    assert int(lines["busy_timeout"]) >= 5000
    assert lines["second_writer"].startswith("blocked")
    assert lines["after_commit"] == "allowed"


# --- health ---


def test_healthz_is_ok_without_auth(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_healthz_ignores_a_bad_key(client, db):
    response = client.get("/healthz", HTTP_AUTHORIZATION="Bearer tlh_nonsense")
    assert response.status_code == 200


def test_healthz_reports_an_unavailable_database(client, db, monkeypatch):
    class Down:
        def cursor(self):
            raise DatabaseError("down")

    monkeypatch.setattr("telha.health.connection", Down())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] != "ok"


def test_healthz_is_get_only(client, db):
    assert client.post("/healthz").status_code == 405


# --- OpenAPI ---


def test_schema_is_public(client, db):
    """Decision: the schema describes the API, not data, so it is served without a key."""
    response = client.get("/v1/schema/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")


def test_schema_with_a_key_is_the_same(ingest_client, client):
    anonymous = client.get("/v1/schema/", {"format": "json"})
    authenticated = ingest_client.get("/v1/schema/", {"format": "json"})
    assert anonymous.status_code == authenticated.status_code == 200
    assert anonymous.content == authenticated.content


def test_schema_describes_the_foundation_endpoints(client, db):
    schema = client.get("/v1/schema/", {"format": "json"}).json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in (
        "/v1/submissions",
        "/v1/nodes/{node_id}",
        "/v1/nodes/{node_id}/history",
        "/v1/query",
    ):
        assert path in paths, sorted(paths)
    assert "post" in paths["/v1/submissions"]
    assert "bearerKey" in schema["components"]["securitySchemes"]


def test_schema_generates_without_warnings_and_validates(db):
    out = StringIO()
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out
    )
    assert json.loads(out.getvalue())["info"]["title"] == "Telha clarify API"


def test_interactive_docs_exist(client, db):
    response = client.get("/v1/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
    # The start script is a file of its own (no inline script under the CSP); it loads the
    # schema.
    assert b'<script src="/v1/docs/?script="></script>' in response.content
    start = client.get("/v1/docs/?script=")
    assert start.status_code == 200 and b"/v1/schema/" in start.content


def test_interactive_docs_load_only_local_static_assets(client, db):
    """Offline `make run` shows working docs: swagger-ui comes from the sidecar's static
    files, never a CDN, and every asset the page references exists."""
    page = client.get("/v1/docs/").content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets), assets
    assert any(a.endswith("swagger-ui.css") for a in assets), assets
    assets.remove("/v1/docs/?script=")  # swagger-ui's start script (test above)
    for asset in assets:
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not a static file"
    assert "cdn.jsdelivr" not in page and "unpkg.com" not in page


# --- PostgreSQL: prepared statements ---

PG_OPTIONS_PROBE = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {})))"
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, {"server_side_binding": True, "prepare_threshold": 5}),
        ({"DB_PREPARE_THRESHOLD": "1"}, {"server_side_binding": True, "prepare_threshold": 1}),
        ({"DB_PREPARED_STATEMENTS": "0"}, {}),
    ],
)
def test_postgresql_connections_prepare_repeated_statements_unless_switched_off(env, expected):
    result = run(
        [PYTHON, "-c", PG_OPTIONS_PROBE],
        DJANGO_SETTINGS_MODULE="telha.settings",
        DEBUG="1",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/not_connected",
        **env,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected


@pytest.mark.django_db
def test_a_statement_repeated_on_a_postgresql_connection_is_prepared():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL-only settings")
    threshold = connection.settings_dict["OPTIONS"]["prepare_threshold"]
    with connection.cursor() as c:
        for _ in range(threshold + 1):
            c.execute("SELECT count(*) FROM tenancy_tenant WHERE slug = %s", ["none"])
        c.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%FROM tenancy_tenant WHERE slug = $1%"],
        )
        assert c.fetchone()[0] == 1
