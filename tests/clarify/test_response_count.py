"""`Clarification.responses_recorded`: every path of the answer matrix keeps it equal to
the latest response's seq (under the clarification's lock), so a first answer does not
read the responses; the migration counts the responses recorded before it."""

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clarify.integrity import check_states
from clarify.models import Clarification, ResponseRecord

from .conftest import responses_of

pytestmark = pytest.mark.django_db


def _counted(clar_id) -> int:
    return Clarification.objects.get(pk=clar_id).responses_recorded


def _assert_counted(clar_id) -> None:
    seqs = [r.seq for r in responses_of(clar_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert _counted(clar_id) == len(seqs)
    assert list(check_states()) == []


def test_every_outcome_counts_its_response(submit, clients, answer):
    # attestation (viewer), then the editor's binding answer
    s = submit()
    assert _counted(s.clar_id) == 0
    assert answer(clients.vera, s.clar_id, answerIndex=1).json()["outcome"] == "attestation"
    _assert_counted(s.clar_id)
    assert answer(clients.alice, s.clar_id, answerIndex=1).json()["outcome"] == "bound"
    _assert_counted(s.clar_id)
    # post-binding conflict, then the steward upholds the binding
    assert answer(clients.bob, s.clar_id, answerIndex=2).json()["postBinding"] is True
    _assert_counted(s.clar_id)
    upheld = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert upheld.json()["outcome"] == "bound"
    _assert_counted(s.clar_id)
    assert _counted(s.clar_id) == 4

    # critical: partial confirmation, conflict, then the steward's override binds
    c = submit(external_id="contracts/critical.docx", severity_hint="critical")
    assert answer(clients.alice, c.clar_id, answerIndex=1).json()["outcome"] == (
        "partial_confirmation"
    )
    _assert_counted(c.clar_id)
    assert answer(clients.bob, c.clar_id, answerIndex=2).json()["outcome"] == "conflict"
    _assert_counted(c.clar_id)
    bound = answer(clients.sam, c.clar_id, answerIndex=1, stewardOverride=True)
    assert bound.json()["outcome"] == "bound"
    _assert_counted(c.clar_id)
    assert _counted(c.clar_id) == 3


def test_a_replay_and_a_refusal_count_nothing(submit, clients, answer):
    s = submit()
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200  # replay
    assert answer(clients.bob, s.clar_id, answerIndex=1).status_code == 409  # agreeing late
    assert answer(clients.bob, s.clar_id, answerIndex=99).status_code == 422
    assert _counted(s.clar_id) == 1
    _assert_counted(s.clar_id)


def _reads_responses(client, clar_id, answer, **body) -> bool:
    with CaptureQueriesContext(connection) as captured:
        answer(client, clar_id, **body)
    table = ResponseRecord._meta.db_table
    return any(
        q["sql"].lstrip().upper().startswith("SELECT") and f'FROM "{table}"' in q["sql"]
        for q in captured.captured_queries
    )


def test_only_a_clarification_with_responses_reads_them(submit, clients, answer):
    s = submit()
    assert not _reads_responses(clients.vera, s.clar_id, answer, answerIndex=1)
    assert _reads_responses(clients.alice, s.clar_id, answer, answerIndex=1)
    assert [r.binding_status for r in responses_of(s.clar_id)] == ["attestation", "bound"]


def test_the_migration_counts_existing_responses(submit, clients, answer):
    s = submit()
    untouched = submit(external_id="contracts/other.docx")
    answer(clients.vera, s.clar_id, answerIndex=1)
    answer(clients.alice, s.clar_id, answerIndex=1)
    Clarification.objects.update(responses_recorded=0)
    migration = importlib.import_module("clarify.migrations.0005_clarification_responses_recorded")
    migration.count_recorded(apps, None)
    assert _counted(s.clar_id) == 2
    assert _counted(untouched.clar_id) == 0
