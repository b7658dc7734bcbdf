"""What one binding answer costs, and the shortcuts that keep it there: the bound
version's search text is its predecessor's (same labels, properties and cited spans — it
is not re-derived from the source text), and the responder's own key is the reader the
lock checks (no second read of the person's tenant)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.services import search_text_for, span_texts
from tests.conftest import CHAIN_STATEMENTS

from .conftest import versions_of

pytestmark = pytest.mark.django_db

# BEGIN/COMMIT aside: the key, the locking read, the responses' insert, the clarification's
# update, the version's close and insert, the binding, the audit events, the job's finish;
# the webhook outbox's read of the tenant's endpoints (issue 33: the answer's events
# announce something); and the audit chain's (`CHAIN_STATEMENTS`).
ANSWER_STATEMENTS = 12 + CHAIN_STATEMENTS


def test_bound_version_keeps_the_search_text_its_spans_give(submit, clients, answer):
    s = submit()
    before = versions_of(s.node_id)[-1]
    assert before.search_text  # the cited span's text is in it
    resp = answer(clients.alice, s.clar_id, answerIndex=1)
    assert resp.json()["outcome"] == "bound"
    bound = versions_of(s.node_id)[-1]
    assert bound.pk != before.pk and bound.provenance["clarification"] == str(s.clar_id)
    derived = search_text_for(
        bound.labels, bound.properties, span_texts(bound.node.source_id, bound.provenance)
    )
    assert bound.search_text == derived == before.search_text


def test_a_binding_answer_stays_within_its_statements(submit, clients, answer):
    s = submit()
    answer(clients.bob, submit(external_id="contracts/warm.docx").clar_id, answerIndex=1)
    with CaptureQueriesContext(connection) as ctx:
        resp = answer(clients.alice, s.clar_id, answerIndex=1)
    assert resp.json()["outcome"] == "bound"
    statements = [
        q["sql"]
        for q in ctx.captured_queries
        if q["sql"].split()[0].upper() not in {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}
    ]
    assert len(statements) <= ANSWER_STATEMENTS, "\n".join(statements)
    read_from = [q.split(" FROM ", 1)[1].split()[0] for q in statements if " FROM " in q]
    assert '"tenancy_tenant"' not in read_from  # the key's join gave it
    assert '"graph_sourceversion"' not in read_from  # the search text is the current's
