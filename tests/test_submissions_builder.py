"""The one submission builder (`tests.submissions`): what it writes into a payload and
what it leaves out, and that every fixture helper built on it sends a submission the
API's serializer accepts as it is (the benchmarks' shape check)."""

from typing import Any

import pytest

from bench._support import submission_data, submission_shape_check
from tests.clarify.conftest import build_submission as clarify_submission
from tests.delivery.conftest import build_submission as delivery_submission
from tests.delivery.conftest_ask import source_derived_submission
from tests.factories import fact_payload, submission_payload
from tests.jobs.conftest import DEFAULT_LINKS
from tests.jobs.conftest import submission as jobs_submission
from tests.steward.conftest import build_submission as steward_submission
from tests.submissions import OMIT, Submission
from tests.test_production import submission as production_submission

TEXT = "The lease of the north warehouse runs from the first of next month."


def test_a_key_left_out_is_absent_and_none_is_sent_as_null():
    sub = Submission("leases/north.docx", TEXT, title=OMIT, restriction=None)
    fact = sub.fact("north", name="North lease", span=sub.span_of("the first", "next month"))
    sub.person("erin@acme.test", edge="OWNED_BY", of=[fact], confidence=1.0)
    sub.ambiguity(fact, candidates=[{"validFrom": 1, "label": "x"}], severity_hint=OMIT)

    body = sub.payload()

    assert body["source"] == {
        "system": "sharepoint",
        "externalId": "leases/north.docx",
        "text": TEXT,
        "acl": ["group:legal"],
        "restriction": None,
    }
    assert body["spans"] == [{"start": TEXT.index("the first"), "end": len(TEXT) - 1}]
    assert body["nodes"][1] == {
        "ref": 1,
        "labels": ["PERSON"],
        "properties": {"email": "erin@acme.test"},
        "confidence": 1.0,
    }
    assert body["edges"] == [{"type": "OWNED_BY", "from": 0, "to": 1}]
    assert "severityHint" not in body["ambiguities"][0]
    assert set(Submission("x", TEXT).payload(omit_empty=True)) == {"source", "nodes"}


def test_the_payload_is_a_copy():
    sub = Submission("leases/north.docx", TEXT)
    sub.fact("north", name="North lease")
    first = sub.payload()
    first["nodes"][0]["key"] = "changed"
    first["source"]["acl"].append("group:finance")
    assert sub.payload()["nodes"][0]["key"] == "north"


HELPERS: dict[str, Any] = {
    "factories.submission_payload": submission_payload,
    "factories.fact_payload": fact_payload,
    "jobs.submission": lambda: jobs_submission(external_id="c/1.docx", links=DEFAULT_LINKS),
    "delivery.build_submission": lambda: delivery_submission(restriction="privileged"),
    "delivery.source_derived_submission": lambda: source_derived_submission(
        external_id="facts/a.docx", name="A fact"
    ),
    "steward.build_submission": steward_submission,
    "clarify.build_submission": lambda: clarify_submission(
        links=[("AUTHORED_BY", "alice"), ("REVIEWED_BY", "bob", "in")]
    ),
    "production.submission": lambda: production_submission("prod-1"),
    "bench.submission_data": lambda: submission_data(external_id="b-1", facts=3, ambiguous=True),
}


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_every_helper_builds_a_submission_the_api_accepts(helper):
    body = HELPERS[helper]()
    if helper.startswith("bench"):
        submission_shape_check(body)  # accepted, and exactly what the serializer returns
    else:
        from ingest.api.serializers import SubmissionInSerializer

        shape = SubmissionInSerializer(data=body)
        assert shape.is_valid(), shape.errors


def test_an_edge_may_run_from_a_person_to_a_fact() -> None:
    sub = Submission("notes/1.txt", "Notes written by Dana.")
    fact = sub.fact("notes-1", name="Notes")
    dana = sub.person("dana@acme.test", of=())
    sub.edge("REVIEWED_BY", dana, fact)
    assert sub.payload()["edges"] == [{"type": "REVIEWED_BY", "from": 1, "to": 0}]
