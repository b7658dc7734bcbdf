"""Period questions find facts by their valid time, past and future (issue 30 item 8):
"what started in 2019?", "which leases end in 2030?", "what starts in 2031?" compare the
asked period with the valid interval of every transaction-current version the asker may
read — never with the time of asking, never with a superseded version."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import delivery.ask.services
from common.times import to_us
from delivery.ask.services import answer_question

from ..graph.test_asof import TX_TO_OR
from .conftest import build_submission
from .conftest_ask import source_derived_submission
from .test_ask_retrieval import fact

pytestmark = pytest.mark.django_db


def us(y: int, m: int = 1, d: int = 1) -> int:
    return to_us(datetime(y, m, d, tzinfo=UTC))


@pytest.fixture
def years(ingest_client) -> dict[str, str]:
    """Leases over the years: one long over, one running now, two in the future."""
    return {
        "old": fact(ingest_client, "old", "Quayside lease", start=us(2019, 6), end=us(2021, 3)),
        "now": fact(ingest_client, "now", "Depot lease", start=us(2024, 2), end=us(2028, 9)),
        "soon": fact(ingest_client, "soon", "Orchard lease", start=us(2031, 7, 15)),
        "far": fact(ingest_client, "far", "Beacon lease", start=us(2040, 1), end=us(2045, 1)),
    }


QUESTIONS = [
    ("What started in 2019?", ["Quayside lease"]),
    ("Which leases ended in 2021?", ["Quayside lease"]),
    ("What was valid in 2020?", ["Quayside lease"]),
    ("Which leases end in 2028?", ["Depot lease"]),
    ("What starts in 2031?", ["Orchard lease"]),
    ("Which leases start in July 2031?", ["Orchard lease"]),
    ("What is valid in 2035?", ["Orchard lease"]),
    ("What starts in 2040?", ["Beacon lease"]),
    ("Which leases end in 2045?", ["Beacon lease"]),
    ("What is valid in 2042?", ["Orchard lease", "Beacon lease"]),
    ("What is valid in 2027?", ["Depot lease"]),
    ("What starts in 2030?", []),
]


@pytest.mark.parametrize("asked_in", [2018, 2026, 2050])
def test_a_period_finds_facts_by_valid_time_whenever_it_is_asked(
    monkeypatch, years, people, asked_in
):
    """The same answers asked before, among and after all of these facts' validity: the
    time of asking filters nothing."""
    monkeypatch.setattr(delivery.ask.services, "now_us", lambda: us(asked_in, 5, 17))
    for question, names in QUESTIONS:
        answer = answer_question(people["alice"], question)
        assert [e.name for e in answer.evidence] == names, question
    text = answer_question(people["alice"], "What starts in 2031?").text
    assert text.startswith("1 fact you can read starts in 2031: “Orchard lease” on 15 July 2031")


def test_the_version_believed_now_answers_not_a_superseded_one(
    ingest_client, person_client, people
):
    """A guess of October 2026 corrected to a start in 2031: the fact is found by 2031
    (its transaction-current version), no longer by 2026 (the version it replaced)."""
    payload = build_submission(external_id="leases/pier.docx", name="Pier lease", links=[])
    [clar] = ingest_client.post("/v1/submissions", payload, format="json").json()["clarifications"]
    alice = person_client("alice")
    assert [e.name for e in answer_question(people["alice"], "What starts in 2026?").evidence] == [
        "Pier lease"
    ]
    custom = {"validFrom": us(2031, 2, 1), "validTo": None, "sourceText": "from February 2031"}
    response = alice.post(
        f"/v1/clarifications/{clar['id']}/answer", {"answerCustom": custom}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert answer_question(people["alice"], "What starts in 2026?").evidence == []
    answer = answer_question(people["alice"], "What starts in February 2031?")
    assert [(e.name, e.verdict) for e in answer.evidence] == [("Pier lease", "human-confirmed")]


def test_a_period_finds_only_what_the_asker_may_read(years, people, ingest_client):
    payload = source_derived_submission(
        external_id="leases/vault.docx", name="Vault lease", acl=["group:finance"], links=[]
    )
    payload["nodes"][0]["validFrom"] = us(2031, 1, 2)
    assert ingest_client.post("/v1/submissions", payload, format="json").status_code == 201
    alice, olga = people["alice"], people["olga"]  # legal; finance
    assert [e.name for e in answer_question(alice, "What starts in 2031?").evidence] == [
        "Orchard lease"
    ]
    assert [e.name for e in answer_question(olga, "What starts in 2031?").evidence] == [
        "Vault lease"
    ]
    assert "Orchard" not in answer_question(olga, "What is valid in 2035?").text


def test_a_period_is_read_from_the_current_versions_without_the_time_of_asking(
    monkeypatch, years, people
):
    """The statements: the current versions by `tx_to IS NULL` (never an `OR tx_to > T`
    scan) and valid time compared with the period only — the time of asking appears in
    none of them."""
    asked = us(2026, 5, 17) + 123_457
    monkeypatch.setattr(delivery.ask.services, "now_us", lambda: asked)
    with CaptureQueriesContext(connection) as ctx:
        answer = answer_question(people["alice"], "Which leases start in 2031?")
    assert [e.name for e in answer.evidence] == ["Orchard lease"]
    versions = [q["sql"] for q in ctx.captured_queries if "graph_nodeversion" in q["sql"]]
    assert versions
    for sql in versions:
        assert not TX_TO_OR.search(sql), sql
        assert str(asked) not in sql, sql
    assert any('"tx_to" IS NULL' in sql and str(us(2031)) in sql for sql in versions)
