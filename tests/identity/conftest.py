"""SCIM fixtures: the tenant's `scim` token as a client speaking application/scim+json."""

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tenancy.services import api_key_create

SCIM_JSON = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


class Scim:
    """A SCIM client of one tenant (the identity provider)."""

    def __init__(self, secret: str | None) -> None:
        self.http = APIClient()
        if secret is not None:
            self.http.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": SCIM_JSON}
        return getattr(self.http, method)(f"/scim/v2/{path}", **kwargs)

    def get(self, path: str, **query: Any) -> Any:
        return self.http.get(f"/scim/v2/{path}", query)

    def post(self, path: str, body: Any) -> Any:
        return self.call("post", path, body)

    def put(self, path: str, body: Any) -> Any:
        return self.call("put", path, body)

    def patch(self, path: str, *operations: dict[str, Any]) -> Any:
        return self.call("patch", path, {"schemas": [PATCH], "Operations": list(operations)})

    def delete(self, path: str) -> Any:
        return self.http.delete(f"/scim/v2/{path}")


def user_body(user_name: str, **extra: Any) -> dict[str, Any]:
    return {"schemas": [USER], "userName": user_name, **extra}


@pytest.fixture
def scim(workspace) -> Scim:
    _, secret = api_key_create(tenant=workspace, audience="scim")
    return Scim(secret)


def assert_scim_error(response: Any, status: int, scim_type: str | None = None) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(SCIM_JSON)
    body = response.json()
    assert body["schemas"] == [ERROR] and body["status"] == str(status) and body["detail"]
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
