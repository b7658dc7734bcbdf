"""Shared fixtures: tenants, people, keys and API clients."""

import pytest
from rest_framework.test import APIClient

from telha.tenancy.services import api_key_create, workspace_load

WORKSPACE = {
    "tenant": "acme",
    "name": "Acme Corp",
    "groups": ["legal", "finance"],
    "people": [
        {
            "name": "Alice Author",
            "email": "alice@acme.test",
            "role": "editor",
            "groups": ["legal"],
            "aliases": {"slackUserId": "U0ALICE", "aadOid": "oid-alice"},
        },
        {
            "name": "Bob Named",
            "email": "bob@acme.test",
            "role": "editor",
            "groups": ["legal"],
            "aliases": {"slackUserId": "U0BOB"},
        },
        {"name": "Olga Owner", "email": "olga@acme.test", "role": "editor", "groups": ["finance"]},
        {"name": "Vera Viewer", "email": "vera@acme.test", "role": "viewer", "groups": ["legal"]},
        {
            "name": "Sam Steward",
            "email": "sam@acme.test",
            "role": "steward",
            "groups": ["legal", "finance"],
            "password": "steward-pass-1",
        },
    ],
}


@pytest.fixture
def workspace(db):
    return workspace_load(data=WORKSPACE).tenant


@pytest.fixture
def people(workspace):
    return {p.email.split("@")[0]: p for p in workspace.people.all()}


def client_for(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def ingest_client(workspace):
    _, secret = api_key_create(tenant=workspace, audience="ingest")
    return client_for(secret)


@pytest.fixture
def clarify_client(workspace):
    _, secret = api_key_create(tenant=workspace, audience="clarify")
    return client_for(secret)


@pytest.fixture
def person_client(workspace, people):
    """`person_client("alice")` → an API client acting as that person with their rights."""

    def make(name: str, role: str | None = None) -> APIClient:
        _, secret = api_key_create(tenant=workspace, person=people[name], role=role)
        return client_for(secret)

    return make
