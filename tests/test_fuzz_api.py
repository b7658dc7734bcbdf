"""Schemathesis over the served OpenAPI schema (issue 10, "Hostile input").

The schema is loaded in-process from `GET /v1/schema/` of the WSGI application
(`schemathesis.openapi.from_wsgi`) and every operation is fuzzed, in positive and
negative generation modes, once per kind of caller: no key, an `ingest` service token, a
`clarify` service token, an editor's key and a steward's key. Each call is checked for

- no 5xx (`not_a_server_error`);
- conformance to the schema: the status code is documented, the content type and the
  body match the declared response (`status_code_conformance`,
  `content_type_conformance`, `response_headers_conformance`,
  `response_schema_conformance`), and a request the schema says is invalid is refused
  (`negative_data_rejection`);
- every 4xx body has the contract's error shape `{"code": "UPPER_SNAKE", "detail": …}`;
- a refused request wrote nothing: every table's row count, and every row of the tables
  that hold mutable state, are the same before and after a 4xx.

Examples per (operation, caller): `FUZZ_EXAMPLES` (25 under `make test`, derandomized so
CI is repeatable; `make fuzz` runs 500 with fresh randomness).

Path parameters are drawn both from the generator and from rows that exist (the seeded
clarification, its fact and person nodes, a leased job with its lease token), so the
success paths are reached too, not only 404s.
"""

import base64
import contextlib
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from clarify.models import Clarification
from jobs.models import Job
from telha.wsgi import application
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for
from tests.factories import submission_payload
from tests.test_hostile_input import changed, db_state

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
DERANDOMIZE = "FUZZ_EXAMPLES" not in os.environ
CALLERS = ("none", "ingest", "clarify", "editor", "steward")
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
ERROR_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")


@contextlib.contextmanager
def requests_keep_the_connection() -> Iterator[None]:
    """Like Django's test client: a request must not close the test's connection (inside
    the test transaction, `close_old_connections` would end it)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


with requests_keep_the_connection():
    SCHEMA = schemathesis.openapi.from_wsgi("/v1/schema/", application)
OPERATIONS = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}


# --- fixtures: a workspace with data and a key of each kind ------------------------------


@pytest.fixture
def world(db) -> dict[str, Any]:
    tenant = workspace_load(
        data={
            "tenant": "acme",
            "name": "Acme",
            "groups": ["legal"],
            "people": [
                {
                    "name": "Alice",
                    "email": "alice@acme.test",
                    "role": "editor",
                    "groups": ["legal"],
                    "aliases": {"slackUserId": "U0ALICE"},
                },
                {"name": "Vera", "email": "vera@acme.test", "role": "viewer", "groups": ["legal"]},
                {"name": "Sam", "email": "sam@acme.test", "role": "steward", "groups": ["legal"]},
            ],
        }
    ).tenant
    people = {p.email.split("@")[0]: p for p in tenant.people.all()}
    keys = {"none": None}
    keys["ingest"] = api_key_create(tenant=tenant, audience="ingest")[1]
    keys["clarify"] = api_key_create(tenant=tenant, audience="clarify")[1]
    keys["editor"] = api_key_create(tenant=tenant, person=people["alice"], role="editor")[1]
    keys["steward"] = api_key_create(tenant=tenant, person=people["sam"], role="steward")[1]

    # Another tenant's clarification: must be a 404 for every caller here.
    other = workspace_load(
        data={
            "tenant": "globex",
            "name": "Globex",
            "groups": ["legal"],
            "people": [
                {"name": "Gil", "email": "gil@globex.test", "role": "editor", "groups": ["legal"]}
            ],
        }
    ).tenant
    other_ingest = client_for(api_key_create(tenant=other, audience="ingest")[1])
    resp = other_ingest.post("/v1/submissions", submission_payload(), format="json")
    assert resp.status_code == 201, resp.content
    foreign = resp.json()["clarifications"][0]["id"]

    ingest = client_for(keys["ingest"])
    resp = ingest.post("/v1/submissions", submission_payload(), format="json")
    assert resp.status_code == 201, resp.content
    created = resp.json()
    clarification_ids = [c["id"] for c in created["clarifications"]]
    node_ids = [n["id"] for n in created["nodes"]]
    second = submission_payload(source_externalId="contracts/second.docx")
    resp = ingest.post("/v1/submissions", second, format="json")
    assert resp.status_code == 201, resp.content
    clarification_ids += [c["id"] for c in resp.json()["clarifications"]]

    # A leased clarify job, so heartbeat/complete/fail can succeed with a real token.
    clarify = client_for(keys["clarify"])
    resp = clarify.post("/v1/jobs/lease", {"kinds": ["clarify:"], "max": 1}, format="json")
    assert resp.status_code == 200, resp.content
    leased = resp.json()["jobs"]
    job_ids = [str(j.pk) for j in Job.objects.order_by("pk")]
    assert Clarification.objects.filter(pk__in=clarification_ids).count() == 2
    assert leased, "the seeded clarification has a delivery job to lease"
    lease = leased[0]
    token = {"leaseToken": lease["leaseToken"]}
    # Well-formed bodies the generator would rarely hit, so outcomes beyond the refusals
    # are reached too: answers by index, custom interval, override, asserted responder;
    # leases inside and outside the fence; the lease protocol with the live token.
    answers: list[dict[str, Any]] = [
        {"answerIndex": 0},
        {"answerIndex": 1, "channel": "api", "messageRef": "<script>alert(1)</script>"},
        {"answerIndex": 0, "stewardOverride": True},
        {
            "answerCustom": {
                "validFrom": "2026-06-12T00:00:00Z",
                "validTo": None,
                "sourceText": "'; DROP TABLE x;--",
            }
        },
        {"answerIndex": 0, "responder": str(people["alice"].pk), "rights": "editor"},
        {"answerIndex": 1, "responder": str(people["vera"].pk), "rights": "viewer"},
    ]
    bodies = {
        "POST /v1/clarifications/{clarification_id}/answer": answers,
        "POST /v1/jobs/lease": [{"kinds": ["clarify:"]}, {"kinds": ["ingest:"], "max": 5}],
        "POST /v1/jobs/{job_id}/heartbeat": [{**token, "leaseSeconds": 30}],
        "POST /v1/jobs/{job_id}/complete": [token],
        "POST /v1/jobs/{job_id}/fail": [{**token, "retryable": True, "reason": "BUSY"}],
    }
    return {
        "keys": keys,
        "query": {"GET /v1/clarifications": cursor_queries(client_for(keys["steward"]))},
        "path": {
            "clarification_id": [*clarification_ids, foreign],
            "node_id": node_ids,
            "job_id": [str(lease["id"]), *job_ids],
        },
        "bodies": bodies,
    }


def cursor_queries(client: Any) -> list[dict[str, str]]:
    """Cursors for the paginated list: one the API issued, the same tampered (a payload
    byte, the signature cut), DRF's unsigned `p=garbage` (a 500 before issue 19), an
    empty one."""
    issued = client.get("/v1/clarifications", {"limit": 1}).json()["next"]
    assert issued, "two clarifications: the first page of one has a next"
    payload, signature = issued.rsplit(":", 1)
    flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
    cursors = [issued, f"{flipped}:{signature}", f"{payload}:{signature[:-2]}"]
    cursors += [base64.b64encode(b"p=garbage").decode(), ""]
    return [{"cursor": cursor} for cursor in cursors]


def case_strategy(operation: Any, world: dict[str, Any]) -> st.SearchStrategy:
    """Generated cases (positive and negative), the same with path parameters naming rows
    that exist, the well-formed bodies of `world["bodies"]` on those rows, and the
    queries of `world["query"]` (cursors issued, tampered and hand-made)."""
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    strategies = [operation.as_strategy(generation_mode=mode) for mode in modes]
    names = [p.name for p in operation.path_parameters]
    known_paths: list[dict[str, str]] = [
        {name: value} for name in names for value in world["path"].get(name, [])
    ]
    for path in known_paths:
        for mode in modes:
            strategies.append(operation.as_strategy(generation_mode=mode, path_parameters=path))
    for body in world["bodies"].get(operation.label, []):
        for path in known_paths or [{}]:
            strategies.append(operation.as_strategy(path_parameters=path, body=body))
    for query in world["query"].get(operation.label, []):
        strategies.append(operation.as_strategy(query=query))
    return st.one_of(strategies)


def check_error_shape(response: Any) -> None:
    if not 400 <= response.status_code < 500:
        return
    content_type = (response.headers.get("content-type") or [""])[0]
    assert content_type.startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body, dict), body
    assert isinstance(body.get("code"), str) and ERROR_CODE.match(body["code"]), body
    assert isinstance(body.get("detail"), str), body


def fuzz(operation: Any, world: dict[str, Any], caller: str) -> None:
    """`FUZZ_EXAMPLES` generated calls of `operation` as `caller`, each checked."""
    secret = world["keys"][caller]

    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        derandomize=DERANDOMIZE,
        database=None if DERANDOMIZE else settings.default.database,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(case=case_strategy(operation, world))
    def run(case: Any) -> None:
        headers = dict(case.headers or {})
        headers.pop("Authorization", None)
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        case.headers = headers
        before = db_state()
        with requests_keep_the_connection():
            response = case.call()
        after = db_state()
        case.validate_response(response, checks=CHECKS)
        check_error_shape(response)
        if 400 <= response.status_code < 500:
            assert not changed(before, after), (
                f"{response.status_code} {response.text[:300]} but wrote to "
                f"{changed(before, after)}"
            )

    try:
        run()
    except BaseException as exc:
        exc.add_note(f"caller: {caller}")
        raise


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_fuzz_operation(world, label):
    """Every operation, as each kind of caller (one workspace per operation)."""
    for caller in CALLERS:
        fuzz(OPERATIONS[label], world, caller)
