"""Faults (issue 10): the database going away and coming back, SIGKILL of the web server
and of the job cluster during a stream of work, and the embedded SQLite default under
`make run` concurrency.

The end-to-end tests run the product in subprocesses (gunicorn through `bench._support`,
`manage.py qcluster`, `manage.py serve_all`) on 127.0.0.1 against databases of their own,
never the Django test database and never by stopping the shared PostgreSQL server:

- the restart test starts a throwaway PostgreSQL cluster (initdb + pg_ctl) in a temp dir;
- the SIGKILL test uses its own database on the shared server, created and dropped here;
- the SQLite test uses a SQLite file in a temp dir.

Both PostgreSQL tests start from one migrated template database (module fixture), so the
migrations run once. Every process is started in its own process group and killed with
its group in a `finally`.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.db.utils import OperationalError

from bench import _support
from tests.delivery.conftest_slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    block_actions,
    form_body,
    signed_headers,
)
from tests.delivery.slack_stub import RunningStub

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
HOST = "127.0.0.1"
RUN_ID = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
SLOW = pytest.mark.slow


# =======================================================================================
# In-process: the middleware's three paths (fast; no database needed)


def test_api_request_with_the_database_down_is_503_with_the_contract_body(client):
    refused = OperationalError('connection to server at "127.0.0.1", port 5432 failed')
    with mock.patch("tenancy.auth.ApiKeyAuthentication.authenticate", side_effect=refused):
        response = client.get("/v1/clarifications", headers={"Authorization": "Bearer x"})
    assert response.status_code == 503
    assert response.json() == {
        "code": "SERVICE_UNAVAILABLE",
        "detail": "The database is unavailable; retry shortly.",
    }
    assert response["Retry-After"] == "5"
    assert response["X-Request-ID"]


def test_html_page_with_the_database_down_is_a_plain_503_page(client):
    client.cookies["sessionid"] = "x" * 32
    gone = OperationalError("server closed the connection unexpectedly")
    with mock.patch("django.contrib.sessions.backends.db.SessionStore.load", side_effect=gone):
        response = client.get("/inbox/")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert b"Service unavailable" in response.content


def test_slack_hook_500_after_a_database_error_becomes_503(client, settings):
    """slack-bolt catches a listener's or middleware's exception and answers an empty
    500 itself; the database error seen during the request turns that into a 503."""
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    settings.SLACK_BOT_TOKEN = BOT_TOKEN
    settings.SLACK_API_URL = "http://127.0.0.1:9/api/"

    def lookup_fails(nonce: Any) -> None:
        connection.errors_occurred = True  # what Django's error wrapper records
        raise OperationalError("terminating connection due to administrator command")

    value = json.dumps(
        {
            "kind": "clarify_answer",
            "clarificationId": str(uuid.uuid4()),
            "answerIndex": 0,
            "nonce": "n" * 32,
        }
    )
    body = form_body(block_actions(action_id="clarify_answer_0", value=value))
    try:
        with mock.patch("delivery.slack.hooks.delivery_for_nonce", side_effect=lookup_fails):
            response = client.post(
                "/hooks/slack/interactivity",
                body,
                content_type="application/x-www-form-urlencoded",
                headers=signed_headers(body),
            )
    finally:
        connection.errors_occurred = False
    assert response.status_code == 503
    assert response.json()["code"] == "SERVICE_UNAVAILABLE"


def test_a_500_without_a_database_error_stays_500(client):
    client.raise_request_exception = False
    with mock.patch(
        "tenancy.auth.ApiKeyAuthentication.authenticate", side_effect=RuntimeError("bug")
    ):
        response = client.get("/v1/clarifications", headers={"Authorization": "Bearer x"})
    assert response.status_code == 500


@pytest.mark.django_db
def test_worker_leaves_no_active_nonce_when_an_answer_binds_mid_delivery(
    settings, workspace, people, ingest_client, person_client
):
    """Found by the SQLite run below: the worker read the clarification as open, an answer
    bound it (closing every active nonce), then the worker created its delivery with a
    fresh active nonce. Now the delivery row is created under the clarification's lock
    after re-reading its state, and the job is completed instead."""
    from clarify.integrity import integrity_violations
    from delivery import worker
    from delivery.models import Delivery, NonceState
    from jobs.models import Job, JobStatus
    from jobs.services import job_lease

    settings.CLARIFY_CHANNELS = ["inbox"]
    alice = people["alice"].user
    alice.set_password("inbox-pass-0123456789")
    alice.save()
    data = _support.submission_data(
        external_id="race/1", author_email="alice@acme.test", ambiguous=True
    )
    created = ingest_client.post("/v1/submissions", data, format="json")
    assert created.status_code == 201, created.content
    clar_id = created.json()["clarifications"][0]["id"]
    [lease] = job_lease(tenant=None, audience="clarify", kinds=["clarify:"])
    statuses: list[int] = []
    counts = worker._counts  # the round's last read before its transaction

    def answered_meanwhile(people: Any) -> Any:
        reply = person_client("bob").post(
            f"/v1/clarifications/{clar_id}/answer", {"answerIndex": 0}, format="json"
        )
        statuses.append(reply.status_code)
        return counts(people)

    with mock.patch("delivery.worker._counts", side_effect=answered_meanwhile):
        worker.handle_leases([lease])

    assert statuses == [200]
    assert not Delivery.objects.filter(
        clarification_id=clar_id, nonce_state=NonceState.ACTIVE
    ).exists()
    assert Job.objects.get(pk=lease.job.pk).status == JobStatus.DONE
    assert integrity_violations()["nonces"] == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_answer_and_a_worker_leasing_its_job_do_not_deadlock(
    settings, workspace, people, ingest_client, person_client
):
    """Found by the SIGKILL stream (PostgreSQL `deadlock detected`, answered 503): leasing
    locks the job and then the clarification (`on_lease`), the answer locked the
    clarification and then waited for the job (finishing it). Now the answer skips a job
    row another transaction holds, and the worker completes that job itself."""
    if connection.vendor != "postgresql":
        pytest.skip("row-lock deadlocks need PostgreSQL")
    from delivery import worker
    from jobs.models import Job, JobStatus

    clar_id = _clarification_by_alice(ingest_client, "deadlock/1")
    statuses: list[int] = []

    def answer() -> None:
        reply = person_client("bob").post(
            f"/v1/clarifications/{clar_id}/answer", {"answerIndex": 0}, format="json"
        )
        statuses.append(reply.status_code)

    leases, errors = _lease_racing(answer)

    assert not errors, errors
    assert statuses == [200]
    [held] = leases
    worker.handle_leases([held])  # the worker finds the clarification answered
    assert Job.objects.get(pk=held.job.pk).status == JobStatus.DONE


def _clarification_by_alice(ingest_client: Any, external_id: str) -> str:
    """Submit a document by Alice with one ambiguity; the id of the clarification it opens
    (its routing job is ready to lease)."""
    data = _support.submission_data(
        external_id=external_id, author_email="alice@acme.test", ambiguous=True
    )
    created = ingest_client.post("/v1/submissions", data, format="json")
    return str(created.json()["clarifications"][0]["id"])


def _lease_racing(other: Callable[[], Any]) -> tuple[list[Any], list[Any]]:
    """Lease the (one) ready routing job in one thread, holding the job row for a
    second before its lease hook (`on_lease`) locks the clarification, while `other` runs in a
    second thread once the job is locked. Returns (leases, errors)."""
    from django.db import connections

    import clarify.routing
    from jobs.services import job_lease

    barrier = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []
    leases: list[Any] = []
    on_lease = clarify.routing.on_attempts_start  # the kind's on_lease hook

    def slow_on_lease(jobs: Any) -> None:
        barrier.wait()  # the job row is locked now; the other transaction starts
        time.sleep(1.0)  # …and reaches the clarification and the job
        on_lease(jobs)  # → locks the clarification

    def lease() -> None:
        try:
            leases.extend(job_lease(tenant=None, audience="clarify", kinds=["clarify:"]))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    def run_other() -> None:
        try:
            barrier.wait()
            other()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    with mock.patch("clarify.routing.on_attempts_start", side_effect=slow_on_lease):
        threads = [threading.Thread(target=lease), threading.Thread(target=run_other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    return leases, errors


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_steward_reask_and_a_worker_leasing_the_job_do_not_deadlock(
    workspace, people, ingest_client
):
    """A re-ask locks the routing job before the clarification (the order leasing uses),
    so racing a lease it waits for it: the lease completes, then the re-ask supersedes
    the job and enqueues the new ranking."""
    if connection.vendor != "postgresql":
        pytest.skip("row-lock deadlocks need PostgreSQL")
    from clarify.models import AuditEvent, Clarification
    from clarify.stewardship import clarification_reask
    from jobs.models import Job, JobStatus

    clar_id = _clarification_by_alice(ingest_client, "deadlock/reask")
    old_job = Job.objects.get(subject=clar_id)
    reasked: list[Any] = []

    def reask() -> None:
        clar = Clarification.objects.get(pk=clar_id)
        reasked.append(
            clarification_reask(clarification=clar, ranking=[people["bob"]], actor=people["sam"])
        )

    leases, errors = _lease_racing(reask)

    assert not errors, errors
    assert [held.job.pk for held in leases] == [old_job.pk]
    [new_job] = reasked
    assert Job.objects.get(pk=old_job.pk).status == JobStatus.DONE  # superseded after the lease
    assert Job.objects.get(pk=new_job.pk).payload["ranking"] == [str(people["bob"].pk)]
    assert AuditEvent.objects.filter(clarification_id=clar_id, type="reasked").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_gdpr_erasure_and_a_worker_leasing_a_job_do_not_deadlock(
    workspace, people, ingest_client
):
    """Erasure rewrites the subject's jobs before their clarifications (jobs first, like
    leasing), so racing a lease of a job that ranks the subject it waits, then erases."""
    if connection.vendor != "postgresql":
        pytest.skip("row-lock deadlocks need PostgreSQL")
    from clarify.models import Clarification
    from jobs.models import Job
    from privacy.executor import gdpr_erase

    clar_id = _clarification_by_alice(ingest_client, "deadlock/gdpr")
    alice = people["alice"]
    assert str(alice.pk) in Clarification.objects.get(pk=clar_id).asked
    counts: list[dict[str, int]] = []

    leases, errors = _lease_racing(
        lambda: counts.append(gdpr_erase(tenant=workspace, person=alice))
    )

    assert not errors, errors
    assert len(leases) == 1
    [erased] = counts
    assert erased["clarifications"] == 1 and erased["jobs"] == 1
    assert str(alice.pk) not in Clarification.objects.get(pk=clar_id).asked
    assert str(alice.pk) not in json.dumps(Job.objects.get(subject=clar_id).payload)


# =======================================================================================
# Helpers: processes, HTTP


def children(pid: int) -> list[int]:
    out: list[int] = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        with contextlib.suppress(OSError):
            out.extend(int(p) for p in Path(path).read_text().split())
    return out


def descendants(pid: int) -> list[int]:
    found, todo = [], children(pid)
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children(p))
    return found


def kill_group(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGKILL) -> None:
    """Signal the process group `proc` leads (started with start_new_session)."""
    if proc is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def stop_group(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    """TERM the group, then KILL whatever is left of it."""
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        out.write(f"\n=== {time.ctime()} {' '.join(cmd)}\n".encode())
        out.flush()
        return subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def product_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment of a product subprocess (bench settings: DEBUG=0, plain HTTP)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE=_support.SETTINGS,
        PYTHONPATH=str(REPO),
        JOBS_DISPATCH="0",
        HOOK_RATE_LIMIT_PER_MINUTE="100000",
        CLARIFY_PER_PERSON_DAILY_CAP="1000",
    )
    env.update(extra)
    return env


def manage(args: list[str], env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"manage.py {args[0]} failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


@dataclass
class Reply:
    status: int  # 0: no response (connection refused/reset, timeout)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def send(
    port: int,
    method: str,
    path: str,
    *,
    key: str | None = None,
    data: Any = None,
    form: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 20.0,
) -> Reply:
    """One request on a fresh connection (clients must follow a restarted server's port)."""
    hdrs = {"Accept": "application/json", **(headers or {})}
    body: bytes | None = None
    if key:
        hdrs["Authorization"] = f"Bearer {key}"
    if data is not None:
        body = json.dumps(data).encode()
        hdrs["Content-Type"] = "application/json"
    elif form is not None:
        body = form.encode()
        hdrs["Content-Type"] = "application/x-www-form-urlencoded"
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return Reply(resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()})
    except (OSError, http.client.HTTPException) as exc:
        return Reply(0, error=f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()


# =======================================================================================
# Helpers: workspace set-up in a subprocess

DOMAIN = "faults.test"
PASSWORD = "faults-pass-0123456789"
EDITORS = [f"editor{i}" for i in range(1, 6)]


def workspace() -> dict[str, Any]:
    people = [
        {
            "name": "Alice Author",
            "email": f"alice@{DOMAIN}",
            "role": "editor",
            "groups": ["legal"],
            "aliases": {"slackUserId": "U0ALICE"},
            "password": PASSWORD,
        },
        *[
            {
                "name": f"Editor {n}",
                "email": f"{n}@{DOMAIN}",
                "role": "editor",
                "groups": ["legal"],
                "password": PASSWORD,
            }
            for n in EDITORS
        ],
        {
            "name": "Vera Viewer",
            "email": f"vera@{DOMAIN}",
            "role": "viewer",
            "groups": ["legal"],
            "password": PASSWORD,
        },
        {
            "name": "Sam Steward",
            "email": f"sam@{DOMAIN}",
            "role": "steward",
            "groups": ["legal", "finance"],
            "password": PASSWORD,
        },
    ]
    return {
        "tenant": "faults",
        "name": "Faults Corp",
        "groups": ["legal", "finance"],
        "people": people,
    }


def submission(external_id: str, author: str, *, critical: bool = False) -> dict[str, Any]:
    """One fact with a relative-date ambiguity (two candidates), authored by `author`."""
    data = _support.submission_data(
        external_id=external_id, author_email=f"{author}@{DOMAIN}", ambiguous=True
    )
    if critical:
        data["ambiguities"][0]["severityHint"] = "critical"
    return data


SETUP_SCRIPT = r"""
import json, os
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from tenancy.services import api_key_create, workspace_load

from django.test.utils import override_settings

spec = json.loads(os.environ["FAULTS_SETUP"])
# Test-only: a cheap hash for the people's passwords (they only need a usable password for
# the inbox channel; nobody signs in with it here).
with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
    tenant = workspace_load(data=spec["workspace"]).tenant
out = {"ingest": api_key_create(tenant=tenant, audience="ingest", name="faults")[1],
       "people": {}, "sessions": {}, "clarifications": [], "deliveries": []}
for p in tenant.people.select_related("user"):
    name = p.email.split("@")[0]
    out["people"][name] = {"id": str(p.pk),
                           "key": api_key_create(tenant=tenant, person=p, name=name)[1]}
    if name in spec.get("sessions", []):
        s = SessionStore()
        s[SESSION_KEY] = str(p.user.pk)
        s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        s[HASH_SESSION_KEY] = p.user.get_session_auth_hash()
        s.create()
        out["sessions"][name] = s.session_key
if spec.get("submissions"):
    from ingest.services import submission_apply, submission_plan
    for data in spec["submissions"]:
        body = submission_apply(tenant=tenant, plan=submission_plan(data))
        out["clarifications"] += [str(c["id"]) for c in body["clarifications"]]
if spec.get("deliver"):
    from delivery.models import Delivery
    from jobs.tasks import work
    work("clarify:temporal")
    for d in Delivery.objects.filter(clarification_id__in=out["clarifications"]):
        out["deliveries"].append({"clarification": str(d.clarification_id), "nonce": d.nonce,
                                  "messageRef": d.message_ref, "channel": d.channel,
                                  "person": str(d.person_id)})
print("FAULTS-SETUP " + json.dumps(out))
"""


def setup_workspace(env: dict[str, str], **spec: Any) -> dict[str, Any]:
    spec.setdefault("workspace", workspace())
    out = manage(["shell", "-c", SETUP_SCRIPT], {**env, "FAULTS_SETUP": json.dumps(spec)})
    line = next(x for x in out.splitlines() if x.startswith("FAULTS-SETUP "))
    return json.loads(line.removeprefix("FAULTS-SETUP "))


def check_integrity(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [PYTHON, "manage.py", "check_integrity", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"check_integrity printed nothing ({done.returncode}):\n{done.stderr[-3000:]}"
    report = json.loads(lines[-1])
    assert (done.returncode == 0) == report["ok"], done.stderr
    return report


# =======================================================================================
# Helpers: PostgreSQL


def shared_pg() -> dict[str, Any]:
    """Where the shared PostgreSQL server is (DATABASE_URL's, else 127.0.0.1:5432)."""
    url = urlsplit(os.environ.get("DATABASE_URL", ""))
    if url.scheme.startswith("postgres"):
        return {
            "host": url.hostname or HOST,
            "port": url.port or 5432,
            "user": url.username or "postgres",
        }
    return {"host": HOST, "port": 5432, "user": "postgres"}


def pg_url(server: dict[str, Any], dbname: str) -> str:
    return f"postgres://{server['user']}@{server['host']}:{server['port']}/{dbname}"


def pg_connect(server: dict[str, Any], dbname: str = "postgres") -> Any:
    import psycopg

    return psycopg.connect(**server, dbname=dbname, autocommit=True, connect_timeout=5)


def pg_available(server: dict[str, Any]) -> bool:
    try:
        with pg_connect(server):
            return True
    except Exception:
        return False


def pg_bin() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(Path(candidate) / "initdb", os.X_OK):
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@contextlib.contextmanager
def scratch_pg_database(name: str) -> Iterator[tuple[dict[str, Any], str]]:
    """A database `name` of its own on the shared PostgreSQL server (skipped without one),
    dropped afterwards: the server and the database's URL."""
    server = shared_pg()
    if not pg_available(server):
        pytest.skip(f"no PostgreSQL server at {server['host']}:{server['port']}")
    with pg_connect(server) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server, pg_url(server, name)
    finally:
        with pg_connect(server) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def pg_template() -> Iterator[dict[str, Any]]:
    """A migrated database on the shared server, the template of the PostgreSQL tests."""
    name = f"telha_faults_tmpl_{RUN_ID}"
    with scratch_pg_database(name) as (server, url):
        manage(["migrate", "--noinput", "-v0"], product_env(url), timeout=300)
        yield {"server": server, "name": name}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class ThrowawayPostgres:
    """A PostgreSQL cluster of our own in a temp dir (initdb, pg_ctl), trust auth on
    127.0.0.1:<free port>. As root, the server runs as the `postgres` user."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="telha-faults-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, user="postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.server = {"host": HOST, "port": self.port, "user": "postgres"}

    def run(self, *args: str, timeout: float = 60) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=timeout)

    def init(self) -> None:
        self.run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        )

    def start(self) -> None:
        opts = (
            f"-p {self.port} -k {self.dir} -c listen_addresses={HOST} -c fsync=off "
            "-c full_page_writes=off -c max_connections=50"
        )
        self.run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            opts,
            "start",
        )

    def stop(self, mode: str = "immediate") -> None:
        self.run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def copy_from(self, template: dict[str, Any], dbname: str) -> None:
        """pg_dump the migrated template from the shared server into a new database here."""
        with pg_connect(self.server) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
        src = template["server"]
        dump = subprocess.Popen(
            [
                str(self.bindir / "pg_dump"),
                "-h",
                src["host"],
                "-p",
                str(src["port"]),
                "-U",
                src["user"],
                "--no-owner",
                "-Fc",
                template["name"],
            ],
            stdout=subprocess.PIPE,
        )
        restore = subprocess.run(
            [
                str(self.bindir / "pg_restore"),
                "-h",
                HOST,
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "--no-owner",
                "-d",
                dbname,
            ],
            stdin=dump.stdout,
            capture_output=True,
            timeout=120,
        )
        assert dump.stdout is not None
        dump.stdout.close()
        assert dump.wait(timeout=60) == 0 and restore.returncode == 0, restore.stderr[-2000:]


def start_gunicorn(
    monkeypatch: pytest.MonkeyPatch, database_url: str, log: Path, *, workers: int, threads: int
) -> _support.Gunicorn:
    """bench._support's gunicorn, pointed at `database_url` (its env is os.environ plus
    the module's DATABASE_URL, patched here for this test)."""
    monkeypatch.setattr(_support, "DATABASE_URL", database_url)
    server = _support.Gunicorn(workers=workers, threads=threads, worker_class="gthread")
    server.log_path = log
    server.start(timeout=60)
    return server


def set_product_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def kill_server(server: _support.Gunicorn) -> None:
    """SIGKILL the master and its workers (its process group), then forget them."""
    proc = server.proc
    if proc is not None:
        kill_group(proc)
    server.stop()  # the master is gone: this only unregisters it


# =======================================================================================
# 1. PostgreSQL goes away and comes back


@SLOW
def test_database_restart_503_while_down_and_recovery_without_app_restart(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("initdb not found (/usr/lib/postgresql/*/bin): cannot run a throwaway cluster")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as postgres")
    try:  # copy the migrated template when the shared server is there, else migrate here
        template: dict[str, Any] | None = request.getfixturevalue("pg_template")
    except pytest.skip.Exception:
        template = None
    pg = ThrowawayPostgres(bindir)
    stub = RunningStub()
    server: _support.Gunicorn | None = None
    cluster: QCluster | None = None
    try:
        pg.init()
        pg.start()
        env = product_env(
            pg_url(pg.server, "telha"),
            SLACK_SIGNING_SECRET=SIGNING_SECRET,
            SLACK_BOT_TOKEN=BOT_TOKEN,
            SLACK_API_URL=stub.stub.url,
            CLARIFY_CHANNELS="slack,inbox",
            JOBS_DISPATCH="1",
        )
        if template is not None:
            pg.copy_from(template, "telha")
        else:
            with pg_connect(pg.server) as conn:
                conn.execute('CREATE DATABASE "telha"')
            manage(["migrate", "--noinput", "-v0"], env, timeout=300)
        ctx = setup_workspace(
            env,
            sessions=["alice"],
            submissions=[
                submission("restart/before-1", "alice"),
                submission("restart/before-2", "editor1"),
            ],
            deliver=True,
        )
        [tapped, answered] = ctx["clarifications"]
        [card] = [
            d for d in ctx["deliveries"] if d["clarification"] == tapped and d["channel"] == "slack"
        ]
        editor = ctx["people"]["editor1"]

        set_product_env(monkeypatch, env)
        server = start_gunicorn(
            monkeypatch, env["DATABASE_URL"], tmp_path / "gunicorn.log", workers=2, threads=4
        )
        assert server.proc is not None
        master = server.proc.pid
        workers_before = sorted(children(master))
        cluster = QCluster(env, tmp_path / "qcluster.log")
        cluster.start()
        cluster.wait_running()
        port = server.port
        taps = iter(range(1, 1000))

        def tap(index: int) -> Reply:
            channel, _, ts = (card["messageRef"] or "D0ALICE:1700000000.000001").partition(":")
            n = next(taps)
            value = json.dumps(
                {
                    "kind": "clarify_answer",
                    "clarificationId": tapped,
                    "answerIndex": index,
                    "nonce": card["nonce"],
                }
            )
            body = form_body(
                block_actions(
                    action_id=f"clarify_answer_{index}",
                    value=value,
                    user="U0ALICE",
                    channel=channel,
                    ts=ts,
                    action_ts=f"1700000100.{n:06d}",
                    trigger_id=f"{n}.trigger",
                )
            )
            return send(
                port, "POST", "/hooks/slack/interactivity", form=body, headers=signed_headers(body)
            )

        subs = iter(range(1, 1000))
        operations: dict[str, Callable[[], Reply]] = {
            "healthz": lambda: send(port, "GET", "/healthz"),
            "list": lambda: send(port, "GET", "/v1/clarifications", key=editor["key"]),
            "detail": lambda: send(
                port, "GET", f"/v1/clarifications/{answered}", key=editor["key"]
            ),
            "submission": lambda: send(
                port,
                "POST",
                "/v1/submissions",
                key=ctx["ingest"],
                data=submission(f"restart/during-{next(subs)}", "editor2"),
            ),
            "answer": lambda: send(
                port,
                "POST",
                f"/v1/clarifications/{answered}/answer",
                key=editor["key"],
                data={"answerIndex": 0},
            ),
            "inbox": lambda: send(
                port,
                "GET",
                "/inbox/",
                headers={"Cookie": f"sessionid={ctx['sessions']['alice']}", "Accept": "text/html"},
            ),
            "slack-tap": lambda: tap(0),
        }
        reads = ("healthz", "list", "detail", "inbox")

        # Up: every read works (each worker thread opens its persistent connection).
        for _ in range(3):
            for name in reads:
                reply = operations[name]()
                assert reply.status == 200, (name, reply)

        pg.stop("immediate")
        down: dict[str, list[Reply]] = {name: [] for name in operations}
        for _ in range(3):  # several rounds: threads with stale and with no connections
            for name, call in operations.items():
                down[name].append(call())
        for name, replies in down.items():
            statuses = [r.status for r in replies]
            assert statuses == [503] * len(replies), (name, replies)
            for r in replies:
                assert r.headers.get("retry-after") or name == "healthz", (name, r)
                if name == "inbox":
                    assert r.headers["content-type"].startswith("text/html")
                elif name == "healthz":
                    assert r.json() == {"status": "degraded", "database": "unavailable"}
                else:
                    assert r.json() == {
                        "code": "SERVICE_UNAVAILABLE",
                        "detail": "The database is unavailable; retry shortly.",
                    }

        pg.start()
        # Back: the very first requests succeed (no restart, no warm-up), on every thread.
        for _ in range(6):
            for name in reads:
                reply = operations[name]()
                assert reply.status == 200, (name, reply)
        sub = operations["submission"]()
        assert sub.status == 201, sub
        answer = operations["answer"]()
        assert answer.status == 200 and answer.json()["outcome"] == "bound", answer
        tapped_reply = tap(0)
        assert tapped_reply.status == 200, tapped_reply
        # The cluster lived through the outage too: the new clarification gets its card.
        new_clarification = sub.json()["clarifications"][0]["id"]
        deadline = time.monotonic() + 45
        delivered = 0
        while not delivered and time.monotonic() < deadline:
            time.sleep(1.0)
            with pg_connect(pg.server, "telha") as conn:
                delivered = conn.execute(
                    "SELECT count(*) FROM delivery_delivery WHERE clarification_id = %s",
                    (new_clarification,),
                ).fetchone()[0]
        assert delivered, f"no delivery after the restart\n{tail(tmp_path / 'qcluster.log')}"
        assert cluster.alive() and cluster.proc is not None

        assert server.proc.pid == master and server.proc.poll() is None
        assert sorted(children(master)) == workers_before, "a gunicorn worker was replaced"
        with pg_connect(pg.server, "telha") as conn:
            rows = conn.execute(
                "SELECT c.id::text, r.channel, c.state FROM clarify_responserecord r "
                "JOIN clarify_clarification c ON c.id = r.clarification_id"
            ).fetchall()
        assert sorted(rows) == sorted(
            [(answered, "api", "answered"), (tapped, "slack", "answered")]
        )
        log_text = (tmp_path / "gunicorn.log").read_text(errors="replace")
        assert "Internal Server Error" not in log_text
        report = check_integrity(env)
        assert report["ok"], json.dumps(report["violations"])[:3000]
    finally:
        if server is not None:
            server.stop()
        if cluster is not None:
            kill_group(cluster.proc)
        stub.stop()
        pg.cleanup()


# =======================================================================================
# 2. SIGKILL of the web server and of the cluster during a stream of work

STREAM_SECONDS = 25.0
KILL_EVERY = (2.5, 4.5)
KILL_KINDS = ("web-worker", "cluster-worker", "cluster", "web-master")
RESPONDERS = [*EDITORS, "vera"]


def answer_index_for(clarification: str, responder: str) -> int:
    """Each responder always gives the same answer to a clarification (mostly 0)."""
    digest = hashlib.sha256(f"{clarification}:{responder}".encode()).digest()
    return 0 if digest[0] < 205 else 1


@dataclass
class Stream:
    port: Callable[[], int]
    ctx: dict[str, Any]
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    created: list[str] = field(default_factory=list)
    seen_answers: list[tuple[str, str, int, int, Any]] = field(default_factory=list)
    first_body: dict[tuple[str, str], tuple[int, bytes]] = field(default_factory=dict)
    replay_mismatches: list[str] = field(default_factory=list)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    kills: list[tuple[str, int]] = field(default_factory=list)
    counter: Any = field(default_factory=lambda: iter(range(1, 10**9)))

    def note(self, op: str, reply: Reply) -> None:
        with self.lock:
            self.statuses[(op, reply.status)] += 1
            if reply.status >= 500:
                self.server_errors.append(f"{op} → {reply.status} {reply.body[:300]!r}")

    def submitter(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            n = next(self.counter)
            data = submission(
                f"stream/{seed}/{n}", rng.choice(EDITORS), critical=rng.random() < 0.4
            )
            reply = send(self.port(), "POST", "/v1/submissions", key=self.ctx["ingest"], data=data)
            self.note("submission", reply)
            if reply.status == 201:
                with self.lock:
                    self.created.extend(c["id"] for c in reply.json()["clarifications"])
            elif reply.status == 0:
                time.sleep(0.2)

    def answerer(self, seed: int) -> None:
        rng = random.Random(seed)
        mine: list[tuple[str, str]] = []
        while not self.stop.is_set():
            with self.lock:
                pool = self.created[-40:]
            if not pool:
                time.sleep(0.1)
                continue
            if mine and rng.random() < 0.25:
                clar, who = rng.choice(mine)  # a replay of an answer sent before
            else:
                clar, who = rng.choice(pool), rng.choice(RESPONDERS)
                mine.append((clar, who))
            index = answer_index_for(clar, who)
            person = self.ctx["people"][who]
            reply = send(
                self.port(),
                "POST",
                f"/v1/clarifications/{clar}/answer",
                key=person["key"],
                data={"answerIndex": index},
            )
            self.note("answer", reply)
            if 200 <= reply.status < 300:
                with self.lock:
                    self.seen_answers.append(
                        (clar, person["id"], index, reply.status, reply.json())
                    )
                    first = self.first_body.setdefault((clar, who), (reply.status, reply.body))
                    if first != (reply.status, reply.body):
                        self.replay_mismatches.append(
                            f"{clar} {who}: {first} then {(reply.status, reply.body)}"
                        )
            elif reply.status == 0:
                time.sleep(0.2)

    def reader(self, seed: int) -> None:
        rng = random.Random(seed)
        key = self.ctx["people"]["editor1"]["key"]
        while not self.stop.is_set():
            with self.lock:
                pool = self.created[-100:]
            if pool and rng.random() < 0.6:
                reply = send(self.port(), "GET", f"/v1/clarifications/{rng.choice(pool)}", key=key)
                self.note("detail", reply)
            else:
                reply = send(self.port(), "GET", "/v1/clarifications", key=key)
                self.note("list", reply)
            if reply.status == 0:
                time.sleep(0.2)


class QCluster:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # INFO: django-q2's "Q Cluster … running." line is what wait_running() looks for.
        env = {**self.env, "LOG_LEVEL": "INFO"}
        self.proc = spawn([PYTHON, "manage.py", "qcluster"], env, self.log)

    def wait_running(self, timeout: float = 90.0) -> None:
        """Until django-q2 logs "Q Cluster … running." (its sentinel is guarding the
        workers). A cluster whose database vanishes before that exits, as it should, for
        its supervisor to restart it; outages are tested on a running cluster."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.alive(), f"the cluster exited while starting\n{tail(self.log)}"
            if self.log.exists() and " running." in self.log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise AssertionError(f"the cluster did not start in {timeout:.0f}s\n{tail(self.log)}")

    def workers(self) -> list[int]:
        """The sentinel's children (workers, monitor, pusher), which its guard replaces."""
        if self.proc is None:
            return []
        return [p for sentinel in children(self.proc.pid) for p in children(sentinel)]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@SLOW
def test_sigkill_of_web_server_and_cluster_loses_no_committed_answer(
    pg_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server_info = pg_template["server"]
    dbname = f"telha_faults_{RUN_ID}"
    with pg_connect(server_info) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}" TEMPLATE "{pg_template["name"]}"')
    env = product_env(
        pg_url(server_info, dbname), JOBS_DISPATCH="1", CLARIFY_CHANNELS="inbox", Q_WORKERS="2"
    )
    server: _support.Gunicorn | None = None
    cluster = QCluster(env, tmp_path / "qcluster.log")
    threads: list[threading.Thread] = []
    stream: Stream | None = None
    try:
        ctx = setup_workspace(env)
        set_product_env(monkeypatch, env)
        server = start_gunicorn(
            monkeypatch, env["DATABASE_URL"], tmp_path / "gunicorn.log", workers=2, threads=4
        )
        cluster.start()
        web = server
        stream = Stream(port=lambda: web.port, ctx=ctx)
        s = stream
        for i, role in enumerate(
            ["submitter", "submitter", "answerer", "answerer", "answerer", "answerer", "reader"]
        ):
            t = threading.Thread(target=getattr(s, role), args=(1000 + i,), daemon=True)
            t.start()
            threads.append(t)

        rng = random.Random(4242)
        # Every kind once (the blocking gunicorn restart last), then random ones until the
        # stream's time is up; the points in the work they hit are random.
        deadline = time.monotonic() + STREAM_SECONDS
        time.sleep(2.0)
        give_up = deadline + 60
        while time.monotonic() < deadline or len(s.kills) < len(KILL_KINDS):
            assert time.monotonic() < give_up, f"could not kill every kind: {s.kills}"
            n = len(s.kills)
            kind = KILL_KINDS[n] if n < len(KILL_KINDS) else rng.choice(KILL_KINDS)
            pid = 0
            if kind == "web-worker" and web.proc is not None:
                candidates = children(web.proc.pid)
                if candidates:
                    pid = rng.choice(candidates)
                    os.kill(pid, signal.SIGKILL)
            elif kind == "web-master" and web.proc is not None:
                pid = web.proc.pid
                kill_server(web)
                web.start(timeout=60)
            elif kind == "cluster-worker":
                candidates = cluster.workers()
                if candidates:
                    pid = rng.choice(candidates)
                    os.kill(pid, signal.SIGKILL)
            elif kind == "cluster" and cluster.proc is not None:
                pid = cluster.proc.pid
                kill_group(cluster.proc)
                cluster.start()
            if not pid:  # the target is still starting: try again shortly
                time.sleep(0.5)
                continue
            s.kills.append((kind, pid))
            time.sleep(rng.uniform(*KILL_EVERY))

        # Settle: everything up again, the stream runs a little longer, then stops.
        if web.proc is None or web.proc.poll() is not None:
            kill_server(web)
            web.start(timeout=60)
        if not cluster.alive():
            kill_group(cluster.proc)
            cluster.start()
        time.sleep(2.0)
        s.stop.set()
        for t in threads:
            t.join(timeout=30)
        # The last fault: both go down hard (no graceful shutdown) before the checks.
        kill_server(web)
        kill_group(cluster.proc)

        report = check_integrity(env)
        assert report["ok"], json.dumps(report["violations"])[:3000]
        with pg_connect(server_info, dbname) as conn:
            records = {
                (str(c), str(r), i)
                for c, r, i in conn.execute(
                    "SELECT clarification_id, responder, answer_index FROM clarify_responserecord"
                )
            }
            duplicate_records = conn.execute(
                "SELECT clarification_id, responder, interval_from, interval_to, count(*) "
                "FROM clarify_responserecord GROUP BY 1, 2, 3, 4 HAVING count(*) > 1"
            ).fetchall()
            duplicate_bindings = conn.execute(
                "SELECT clarification_id, count(*) FROM clarify_clarificationbinding "
                "GROUP BY 1 HAVING count(*) > 1"
            ).fetchall()
            stored = {str(x) for (x,) in conn.execute("SELECT id FROM clarify_clarification")}
            deliveries = conn.execute("SELECT count(*) FROM delivery_delivery").fetchone()[0]
            states = dict(
                conn.execute(
                    "SELECT state, count(*) FROM clarify_clarification GROUP BY 1"
                ).fetchall()
            )

        lost = [a for a in s.seen_answers if (a[0], a[1], a[2]) not in records]
        summary = (
            f"kills={s.kills} statuses={dict(s.statuses)} states={states} "
            f"deliveries={deliveries} answers_seen={len(s.seen_answers)}"
        )
        assert not lost, f"committed answers missing: {lost[:5]}; {summary}"
        assert not duplicate_records, f"duplicate responses: {duplicate_records[:5]}"
        assert not duplicate_bindings, duplicate_bindings
        assert not [c for c in s.created if c not in stored], "a 201 submission was lost"
        assert not s.replay_mismatches, s.replay_mismatches[:5]
        assert not s.server_errors, f"{s.server_errors[:5]}; {summary}"
        assert {k for k, _ in s.kills} == set(KILL_KINDS), summary
        assert len(s.seen_answers) >= 20 and deliveries > 0, summary
        assert states.get("answered", 0) > 0, summary
        print(summary)
    except BaseException:
        for log in (tmp_path / "gunicorn.log", tmp_path / "qcluster.log"):
            print(f"--- {log.name}\n{tail(log)}")
        raise
    finally:
        if stream is not None:
            stream.stop.set()
        for t in threads:
            t.join(timeout=30)
        if server is not None:
            kill_server(server)
        kill_group(cluster.proc)
        with pg_connect(server_info) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


# =======================================================================================
# 3. Embedded SQLite under `make run`: web server + cluster + 8 API clients

SQLITE_SECONDS = 18.0
SQLITE_CLIENTS = 8


@SLOW
def test_sqlite_make_run_with_eight_clients_has_no_database_locked(tmp_path: Path) -> None:
    db_file = tmp_path / "telha.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.update(
        DATABASE_URL=f"sqlite:///{db_file}",
        DJANGO_SETTINGS_MODULE="telha.settings",
        DEBUG="1",  # as `make run`
        PYTHONPATH=str(REPO),
        MEDIA_ROOT=str(tmp_path / "uploads"),
    )
    for k in ("JOBS_DISPATCH", "CLARIFY_CHANNELS", "SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN"):
        env.pop(k, None)
    manage(["migrate", "--noinput", "-v0"], env, timeout=300)
    ctx = setup_workspace(env)
    port = free_port()
    log = tmp_path / "serve_all.log"
    proc = spawn([PYTHON, "manage.py", "serve_all", "--host", HOST, "--port", str(port)], env, log)
    stop = threading.Event()
    lock = threading.Lock()
    created: list[str] = []
    statuses: Counter[tuple[str, int]] = Counter()
    failures: list[str] = []

    def client(seed: int) -> None:
        rng = random.Random(seed)
        n = 0
        while not stop.is_set():
            n += 1
            with lock:
                pool = created[-30:]
            roll = rng.random()
            who = rng.choice(RESPONDERS)
            key = ctx["people"][who]["key"]
            if roll < 0.3 or not pool:
                op = "submission"
                reply = send(
                    port,
                    "POST",
                    "/v1/submissions",
                    key=ctx["ingest"],
                    data=submission(
                        f"sqlite/{seed}/{n}", rng.choice(EDITORS), critical=rng.random() < 0.3
                    ),
                )
                if reply.status == 201:
                    with lock:
                        created.extend(c["id"] for c in reply.json()["clarifications"])
            elif roll < 0.45:
                op = "list"
                reply = send(port, "GET", "/v1/clarifications", key=key)
            elif roll < 0.6:
                op = "detail"
                reply = send(port, "GET", f"/v1/clarifications/{rng.choice(pool)}", key=key)
            else:
                op = "answer"
                clar = rng.choice(pool)
                reply = send(
                    port,
                    "POST",
                    f"/v1/clarifications/{clar}/answer",
                    key=key,
                    data={"answerIndex": answer_index_for(clar, who)},
                )
            with lock:
                statuses[(op, reply.status)] += 1
                if reply.status == 0 or reply.status >= 500:
                    failures.append(f"{op} → {reply.status} {reply.error} {reply.body[:300]!r}")

    threads = [
        threading.Thread(target=client, args=(i,), daemon=True) for i in range(SQLITE_CLIENTS)
    ]
    try:
        deadline = time.monotonic() + 60
        while send(port, "GET", "/healthz", timeout=2).status != 200:
            assert proc.poll() is None, tail(log)
            assert time.monotonic() < deadline, f"serve_all did not come up\n{tail(log)}"
            time.sleep(0.3)
        for t in threads:
            t.start()
        time.sleep(SQLITE_SECONDS)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        time.sleep(1.0)  # let the cluster finish the deliveries it has in hand
    finally:
        stop.set()
        stop_group(proc, grace=5)

    text = log.read_text(errors="replace")
    summary = f"statuses={dict(statuses)}\n{tail(log, 20)}"
    assert "database is locked" not in text, summary
    assert not failures, f"{failures[:5]}; {summary}"
    for op in ("submission", "list", "detail", "answer"):
        assert sum(n for (o, st), n in statuses.items() if o == op and 200 <= st < 300), summary
    with contextlib.closing(sqlite3.connect(db_file)) as db:
        deliveries = db.execute("SELECT count(*) FROM delivery_delivery").fetchone()[0]
        bound = db.execute("SELECT count(*) FROM clarify_clarificationbinding").fetchone()[0]
    assert deliveries > 0 and bound > 0, summary  # the cluster wrote alongside the clients
    report = check_integrity(env)
    assert report["ok"], json.dumps(report["violations"])[:3000]
    print(f"statuses={dict(statuses)} deliveries={deliveries} bindings={bound}")
