"""The public SCIM compliance checker (scim2-tester) against the live server: discovery,
then create, read, query, replace, PATCH (add, replace, remove) and delete of Users and
Groups. No check may end in ERROR or CRITICAL."""

import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

from telha.tenancy.models import Person, Tenant, TenantGroup
from telha.tenancy.services import api_key_create


@pytest.fixture
def scim_client(live_server, transactional_db):
    tenant = Tenant.objects.create(slug="scimco", name="SCIM Co")
    _, secret = api_key_create(tenant=tenant, audience="scim")
    http = httpx2.Client(
        base_url=f"{live_server.url}/scim/v2",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )
    yield tenant, SyncSCIMClient(http)
    http.close()


def test_scim2_tester_finds_no_error_against_the_live_server(scim_client):
    tenant, client = scim_client
    results = check_server(client)
    bad = [
        f"{r.status.name} {r.resource_type or ''} {r.title}: {r.reason}"
        for r in results
        if r.status in (Status.ERROR, Status.CRITICAL)
    ]
    assert bad == [], "\n".join(bad)
    succeeded = {(r.resource_type, r.title) for r in results if r.status == Status.SUCCESS}
    for kind in ("User", "Group"):
        for check in (
            "object_creation",
            "object_query",
            "object_replacement",
            "object_deletion",
            "check_add_attribute",
            "check_replace_attribute",
            "check_remove_attribute",
        ):
            assert (kind, check) in succeeded
    # Everything the checker created it deleted again: groups are gone, people are
    # deprovisioned and no longer SCIM resources (what they did stays as evidence).
    assert not TenantGroup.objects.filter(tenant=tenant).exists()
    assert not Person.objects.filter(tenant=tenant, deleted_by_provider=False).exists()
