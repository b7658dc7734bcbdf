"""Shared by the events tests: a clarification run through the real submission path,
the inbox channel and the answer API; the workers run in-process."""

import io
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from django.core.management import ManagementUtility
from django.db import connections

from clarify.models import CLARIFY_JOB_KIND
from events.outbox import WEBHOOK_KIND
from jobs.tasks import work
from tests.clarify.conftest import build_submission

from .receiver import Receiver


def telha(*argv: str) -> SimpleNamespace:
    """A management command run as the command line runs it: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err), mock.patch.object(connections, "close_all"):
        command = ManagementUtility(["telha", *argv]).fetch_command(argv[0])
        try:
            command.run_from_argv(["telha", *argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return SimpleNamespace(code=code, out=out.getvalue(), err=err.getvalue())


def run(kind: str) -> int:
    """One pass of the in-process worker of `kind`."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(kind, max_seconds=5)


def run_clarify() -> int:
    return run(CLARIFY_JOB_KIND)


def send_webhooks() -> int:
    return run(WEBHOOK_KIND)


def answer(client: Any, clar_id: Any, index: int) -> Any:
    return client.post(
        f"/v1/clarifications/{clar_id}/answer", {"answerIndex": index}, format="json"
    )


@pytest.fixture(scope="module")
def receiver():
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def hooks(receiver):
    """The module's receiver, emptied for this test."""
    receiver.got.clear()
    receiver.secrets.clear()
    receiver.modes.clear()
    return receiver


@pytest.fixture
def inbox(settings, people):
    settings.CLARIFY_CHANNELS = ["inbox"]
    for person in people.values():
        person.user.set_password("inbox-pass-" + "y" * 10)
        person.user.save()
    return people


@pytest.fixture
def submit(ingest_client):
    """`submit(name, **kwargs)` → the id of the clarification the submission opened."""

    def do(name: str, **kwargs: Any) -> str:
        data = build_submission(external_id=f"letters/{name}.docx", key=name, **kwargs)
        resp = ingest_client.post("/v1/submissions", data, format="json")
        assert resp.status_code == 201, resp.content
        return str(resp.json()["clarifications"][0]["id"])

    return do


@pytest.fixture
def admin_client_steward(people):
    """The steward admin, signed in as sam (acme's steward)."""
    from django.test import Client

    people["sam"].user.is_staff = True
    people["sam"].user.save()
    client = Client()
    client.force_login(people["sam"].user)
    return client
