"""The OpenAPI schema documents what the job endpoints answer (CONTRACT §3.4)."""

import pytest
from drf_spectacular.generators import SchemaGenerator

from .conftest import LEASED_JOB_KEYS


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def _ok_body(schema, path: str) -> dict:
    """The 200 response body schema of POST `path`, with its component resolved."""
    content = schema["paths"][path]["post"]["responses"]["200"]["content"]
    ref = content["application/json"]["schema"]["$ref"]
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]


@pytest.mark.parametrize(
    ("path", "properties"),
    [
        ("/v1/jobs/{job_id}/heartbeat", {"status": ["leased"], "leaseExpiresAt": None}),
        ("/v1/jobs/{job_id}/complete", {"status": ["done"]}),
        ("/v1/jobs/{job_id}/fail", {"status": ["pending", "dead"], "attempts": None}),
    ],
)
def test_each_action_documents_its_own_response(schema, path, properties):
    body = _ok_body(schema, path)
    assert set(body["properties"]) == set(properties)
    assert set(body["required"]) == set(properties)
    for name, choices in properties.items():
        prop = body["properties"][name]
        if choices is None:
            assert prop["type"] == "integer"
        else:
            # drf-spectacular moves enums into components (behind allOf when described)
            ref = prop.get("$ref") or prop["allOf"][0]["$ref"]
            enum = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["enum"]
            assert enum == choices, prop


def test_lease_documents_the_contract_keys(schema):
    body = _ok_body(schema, "/v1/jobs/lease")
    item = body["properties"]["jobs"]["items"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][item]["properties"]) == LEASED_JOB_KEYS


@pytest.mark.parametrize("action", ["heartbeat", "complete", "fail"])
def test_actions_document_the_fence_and_lease_lost(schema, action):
    responses = schema["paths"][f"/v1/jobs/{{job_id}}/{action}"]["post"]["responses"]
    assert {"403", "409"} <= set(responses)
