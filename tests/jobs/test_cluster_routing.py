"""django-q2 as the executor: its settings (ORM broker on the default database, its own
retries off) and the production set-up of one cluster per audience (README "Running in
production"): one site name for every process, kicks routed per audience wherever they are
sent, and a cluster that runs only the audiences routed to it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django_q.brokers import get_broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ, Task
from django_q.signing import SignedPackage
from django_q.tasks import async_task

from jobs import checks, dispatch, tasks
from jobs.models import JobStatus
from jobs.services import jobs_sweep

from . import handlers
from .conftest import postgres_only, row
from .test_cluster import ROOT, _database_url, _wait_for

ROUTES = {"clarify": "telha-clarify", "ingest": "telha-ingest"}
ROUTES_ENV = "clarify=telha-clarify,ingest=telha-ingest"
SERVED_KINDS = ("clarify:rec", "ingest:rec", "embed:rec")


def serve_test_kinds(job_kinds) -> None:
    """An in-process handler for each test kind (this test only)."""
    for kind in SERVED_KINDS:
        job_kinds(kind, handler=handlers.complete_handler)


# ---------------------------------------------------------------------------------------
# django-q2's own settings (issue: "ORM broker on the default database; retry larger than
# timeout; django-q2's own retries off")


@pytest.mark.django_db
def test_django_q2_runs_on_the_orm_broker_with_its_retries_off():
    conf = django_settings.Q_CLUSTER
    assert conf["orm"] == "default"
    assert conf["retry"] > conf["timeout"]
    assert (conf["max_attempts"], conf["ack_failures"]) == (1, True)
    # … and django-q2 reads them so (Conf is what its cluster and brokers use).
    assert Conf.ORM == "default"
    assert isinstance(get_broker(), ORM)
    assert get_broker().get_connection().db == "default"
    assert Conf.RETRY > Conf.TIMEOUT
    assert Conf.MAX_ATTEMPTS == 1
    assert Conf.ACK_FAILURES is True
    # The site name is a constant, not Q_CLUSTER_NAME: it is the signing salt.
    assert conf["name"] == Conf.PREFIX == "telha"


@pytest.mark.django_db
def test_a_queued_task_is_a_row_of_the_default_database(job_kinds, settings):
    serve_test_kinds(job_kinds)
    settings.JOBS_DISPATCH = True
    dispatch.kick("clarify:rec")
    [queued] = OrmQ.objects.using("default").all()
    assert queued.task["func"] == "jobs.tasks.work"
    assert queued.task["ack_failure"] is True  # ack_failures: a failed task is not redelivered


# ---------------------------------------------------------------------------------------
# Routing, in process: what the web processes and the sweep send


@pytest.mark.django_db
def test_kicks_go_to_the_audiences_cluster_from_web_and_from_a_clusters_sweep(
    job_kinds, settings, workspace, enqueue, monkeypatch
):
    serve_test_kinds(job_kinds)
    settings.JOBS_DISPATCH = True
    settings.JOB_CLUSTER_FOR_AUDIENCE = ROUTES

    def queued() -> list[tuple[str, str]]:
        rows = OrmQ.objects.order_by("id")
        return [(q.key, q.task["args"][0]) for q in rows]

    # A web process (no Q_CLUSTER_NAME: its own queue is the default one).
    assert dispatch.this_cluster() == "telha"
    for kind in ("clarify:rec", "ingest:rec", "embed:rec"):
        dispatch.kick(kind)
    expected = [
        ("telha-clarify", "clarify:rec"),
        ("telha-ingest", "ingest:rec"),
        ("telha", "embed:rec"),  # an unrouted audience: the default cluster
    ]
    assert queued() == expected

    # The sweep, running in the clarify cluster (or any other): the same routing, never
    # "my own queue".
    OrmQ.objects.all().delete()
    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha-clarify")
    enqueue("clarify:rec")
    enqueue("ingest:rec")
    enqueue("embed:rec")
    assert sorted(jobs_sweep()["kicked"]) == ["clarify:rec", "embed:rec", "ingest:rec"]
    assert sorted(queued()) == sorted(expected)
    # Every queued payload is signed with the site's salt: any cluster can read it.
    for q in OrmQ.objects.all():
        assert SignedPackage.loads(q.payload)["func"] == "jobs.tasks.work"


@pytest.mark.django_db(transaction=True)
def test_a_cluster_runs_only_the_audiences_routed_to_it(job_kinds, settings, enqueue, monkeypatch):
    serve_test_kinds(job_kinds)
    settings.JOB_CLUSTER_FOR_AUDIENCE = ROUTES
    [clarify_job] = enqueue("clarify:rec")
    [ingest_job] = enqueue("ingest:rec")
    [embed_job] = enqueue("embed:rec")

    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha-clarify")
    assert dispatch.serves("clarify:rec") and not dispatch.serves("ingest:rec")
    # A misrouted kick (e.g. from a process with another map) leases nothing.
    assert tasks.work("ingest:rec") == 0
    assert tasks.work("embed:rec") == 0
    assert row(ingest_job).status == row(embed_job).status == JobStatus.PENDING
    assert row(ingest_job).lease_token is None
    assert tasks.work("clarify:rec") == 1
    assert row(clarify_job).status == JobStatus.DONE
    assert row(clarify_job).lease_holder == "cluster:telha-clarify"

    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha-ingest")
    assert tasks.work("ingest:rec") == 1
    assert row(ingest_job).lease_holder == "cluster:telha-ingest"
    assert row(embed_job).status == JobStatus.PENDING

    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha")  # the default cluster
    assert tasks.work("clarify:rec") == 0
    assert tasks.work("embed:rec") == 1
    assert row(embed_job).lease_holder == "cluster:telha"


def test_a_cluster_that_no_audience_is_routed_to_fails_the_system_check(settings, monkeypatch):
    settings.JOB_CLUSTER_FOR_AUDIENCE = {"ingest": "telha-ingest"}
    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha")
    assert checks.check_cluster_routing() == []  # the default cluster
    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha-ingest")
    assert checks.check_cluster_routing() == []
    monkeypatch.setattr(Conf, "CLUSTER_NAME", "telha-clarify")
    [error] = checks.check_cluster_routing()
    assert error.id == "jobs.E001"
    assert "telha-clarify" in error.msg and "ingest=telha-ingest" in error.msg
    assert "every process" in error.hint


# ---------------------------------------------------------------------------------------
# Routing across processes: a cluster started the README's way reads what a web process
# signed, and routes the same way (no database needed)

CHILD = """
import json, sys
import django
django.setup()
from django.core import checks
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.signing import SignedPackage
from jobs import dispatch

task = SignedPackage.loads(sys.stdin.read())
kinds = ("clarify:rec", "ingest:rec", "embed:rec")
print(json.dumps({
    "prefix": Conf.PREFIX,
    "cluster": Conf.CLUSTER_NAME,
    "queue": get_broker().list_key,
    "task": [task["func"], list(task["args"])],
    "routes": {k: dispatch.cluster_for(k) for k in kinds},
    "serves": [k for k in kinds if dispatch.serves(k)],
    "checks": [m.id for m in checks.run_checks(tags=["jobs"])],
    "signed": SignedPackage.dumps({"func": "from-the-cluster"}),
}))
"""


def _cluster_process(**env: str) -> dict:
    """What a process started as `Q_CLUSTER_NAME=… telha qcluster` sees, given a task
    package signed here (in a web-configured process)."""
    pack = SignedPackage.dumps({"func": "jobs.tasks.work", "args": ("clarify:rec",)})
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=pack,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={
            **{k: v for k, v in os.environ.items() if k not in ("Q_CLUSTER_NAME",)},
            "DJANGO_SETTINGS_MODULE": "tests.jobs.routing_settings",
            "DATABASE_URL": "sqlite://:memory:",
            "PYTHONPATH": str(ROOT),
            **env,
        },
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_per_audience_cluster_reads_what_the_web_signed_and_routes_the_same_way():
    seen = _cluster_process(Q_CLUSTER_NAME="telha-clarify", JOB_CLUSTER_FOR_AUDIENCE=ROUTES_ENV)
    # Its queue is its own; its signing salt is the site's.
    assert (seen["prefix"], seen["cluster"], seen["queue"]) == (
        "telha",
        "telha-clarify",
        "telha-clarify",
    )
    assert seen["task"] == ["jobs.tasks.work", ["clarify:rec"]]
    assert SignedPackage.loads(seen["signed"]) == {"func": "from-the-cluster"}
    assert seen["routes"] == {
        "clarify:rec": "telha-clarify",
        "ingest:rec": "telha-ingest",
        "embed:rec": "telha",
    }
    assert seen["serves"] == ["clarify:rec"]
    assert seen["checks"] == []


def test_a_cluster_started_without_the_routing_map_is_refused_by_the_check():
    """The README's old set-up (the map on the web processes only): the cluster would
    serve nothing, and its system check says so before `qcluster` starts."""
    seen = _cluster_process(Q_CLUSTER_NAME="telha-clarify", JOB_CLUSTER_FOR_AUDIENCE="")
    assert seen["prefix"] == "telha"
    assert seen["serves"] == []
    assert seen["checks"] == ["jobs.E001"]


# ---------------------------------------------------------------------------------------
# Two real clusters, one per audience (PostgreSQL: they share the test database)


def _start_cluster(name: str, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "DJANGO_SETTINGS_MODULE": "tests.jobs.routing_settings",
        "JOB_CLUSTER_FOR_AUDIENCE": ROUTES_ENV,
        "Q_CLUSTER_NAME": name,
        "PYTHONPATH": str(ROOT),
    }
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.mark.postgres
@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_clusters_each_run_their_own_audience(job_kinds, settings, enqueue, tmp_path):
    serve_test_kinds(job_kinds)
    settings.JOBS_DISPATCH = True
    settings.JOB_CLUSTER_FOR_AUDIENCE = ROUTES
    logs = {name: tmp_path / f"{name}.log" for name in ROUTES.values()}
    procs = [_start_cluster(name, log) for name, log in logs.items()]
    both = tmp_path / "both.log"

    def log_tail() -> Path:
        both.write_text("\n".join(f"== {n}\n{p.read_text()[-3000:]}" for n, p in logs.items()))
        return both

    try:
        # A misrouted kick: the ingest worker task lands in the clarify cluster's queue.
        # That cluster reads it (same salt) and leaves the ingest job alone.
        [stray] = enqueue("ingest:rec")
        task_id = async_task(
            "jobs.tasks.work", "ingest:rec", q_options={"cluster": "telha-clarify"}
        )
        _wait_for(
            lambda: Task.objects.filter(id=task_id).exists(), 60, "the stray task", log_tail()
        )
        assert Task.objects.get(id=task_id).success
        assert Task.objects.get(id=task_id).result == 0
        assert (row(stray).status, row(stray).lease_token) == (JobStatus.PENDING, None)

        # Kicks sent the web's way (what job_enqueue's callers do on commit) …
        [clarify_job] = enqueue("clarify:rec")
        dispatch.kick("clarify:rec")
        dispatch.kick("ingest:rec")
        _wait_for(
            lambda: {row(clarify_job).status, row(stray).status} == {JobStatus.DONE},
            60,
            "both clusters to run their jobs",
            log_tail(),
        )
        assert row(clarify_job).lease_holder == "cluster:telha-clarify"
        assert row(stray).lease_holder == "cluster:telha-ingest"

        # … and by the sweep (wherever it runs) reach the same clusters.
        [clarify_2] = enqueue("clarify:rec")
        [ingest_2] = enqueue("ingest:rec")
        jobs_sweep()
        _wait_for(
            lambda: {row(clarify_2).status, row(ingest_2).status} == {JobStatus.DONE},
            60,
            "the swept jobs to run",
            log_tail(),
        )
        assert row(clarify_2).lease_holder == "cluster:telha-clarify"
        assert row(ingest_2).lease_holder == "cluster:telha-ingest"
        for name, log in logs.items():
            assert "BadSignature" not in log.read_text(), name
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
        for proc in procs:
            # A graceful stop is not what this test is about (test_cluster.py covers a
            # killed cluster): a cluster still stopping after a few seconds is killed.
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(timeout=10)
    assert connection.vendor == "postgresql"
