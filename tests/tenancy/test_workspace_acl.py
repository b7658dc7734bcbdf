"""Source ACLs follow the workspace: a principal named by a source before the person, alias
or group existed is granted when a workspace load brings it, and a removed alias or
membership loses its grant — in the load's transaction, in bulk."""

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.models import SourceGroupObjectPermission, SourceUserObjectPermission
from graph.services import source_acls_sync
from tenancy.models import Person
from tenancy.services import WorkspaceInvalid, api_key_create, workspace_load

from ..conftest import WORKSPACE, client_for
from ..factories import fact_payload, written_counts

pytestmark = pytest.mark.django_db

NEWCOMER = {"name": "Nora Newcomer", "email": "nora@acme.test", "role": "editor"}


def submit(client, payload) -> dict:
    response = client.post("/v1/submissions", payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def reads(email: str, node_id: str) -> int:
    """The status a key of the person gets for the node."""
    person = Person.objects.get(email=email)
    _, secret = api_key_create(tenant=person.tenant, person=person)
    return client_for(secret).get(f"/v1/nodes/{node_id}").status_code


def load_with(*people: dict, groups: list[str] | None = None) -> None:
    data = copy.deepcopy(WORKSPACE)
    data["people"] += [copy.deepcopy(p) for p in people]
    if groups is not None:
        data["groups"] = groups
    workspace_load(data=data)


def fact(ingest_client, acl: list[str], external_id: str = "acl/doc.md") -> str:
    body = submit(ingest_client, fact_payload(external_id=external_id, acl=acl))
    return body["nodes"][0]["id"]


@pytest.mark.parametrize(
    "principal, person",
    [
        ("email:nora@acme.test", NEWCOMER),
        ("email:NORA@Acme.Test", NEWCOMER),
        ("aad:OID-NORA", {**NEWCOMER, "aliases": {"aadOid": "oid-nora"}}),
    ],
    ids=["email", "email case", "aadOid"],
)
def test_a_person_loaded_after_the_source_may_then_read_it(
    workspace, ingest_client, principal, person
):
    node_id = fact(ingest_client, [principal])
    load_with(person)
    assert reads("nora@acme.test", node_id) == 200
    assert reads("olga@acme.test", node_id) == 404  # nobody else was granted


def test_an_alias_added_to_a_known_person_grants_the_source(workspace, ingest_client):
    node_id = fact(ingest_client, ["aad:oid-olga"])
    assert reads("olga@acme.test", node_id) == 404
    data = copy.deepcopy(WORKSPACE)
    data["people"][2]["aliases"] = {"aadOid": "oid-olga"}
    workspace_load(data=data)
    assert reads("olga@acme.test", node_id) == 200


def test_a_removed_alias_loses_its_grant(workspace, ingest_client):
    node_id = fact(ingest_client, ["aad:oid-alice"])  # alice holds oid-alice (conftest)
    assert reads("alice@acme.test", node_id) == 200
    data = copy.deepcopy(WORKSPACE)
    del data["people"][0]["aliases"]["aadOid"]
    workspace_load(data=data)
    assert reads("alice@acme.test", node_id) == 404
    assert not SourceUserObjectPermission.objects.exists()


def test_a_changed_alias_moves_the_grant(workspace, ingest_client):
    node_id = fact(ingest_client, ["aad:oid-shared-desk"])
    data = copy.deepcopy(WORKSPACE)
    data["people"][2]["aliases"] = {"aadOid": "oid-shared-desk"}
    workspace_load(data=data)
    assert reads("olga@acme.test", node_id) == 200
    data["people"][2]["aliases"] = {}
    data["people"][3]["aliases"] = {"aadOid": "oid-shared-desk"}
    workspace_load(data=data)
    assert reads("olga@acme.test", node_id) == 404
    assert reads("vera@acme.test", node_id) == 200


def test_a_group_loaded_after_the_source_grants_its_members(workspace, ingest_client):
    node_id = fact(ingest_client, ["group:board"])
    load_with({**NEWCOMER, "groups": ["board"]}, groups=[*WORKSPACE["groups"], "board"])
    assert reads("nora@acme.test", node_id) == 200
    assert reads("alice@acme.test", node_id) == 404
    assert SourceGroupObjectPermission.objects.count() == 1


def test_a_membership_removed_by_a_load_loses_the_read(workspace, ingest_client):
    node_id = fact(ingest_client, ["group:finance"])
    assert reads("olga@acme.test", node_id) == 200
    data = copy.deepcopy(WORKSPACE)
    data["people"][2]["groups"] = []
    workspace_load(data=data)
    assert reads("olga@acme.test", node_id) == 404


def test_an_unchanged_reload_writes_no_permission_rows(workspace, ingest_client):
    fact(ingest_client, ["group:legal", "email:bob@acme.test", "aad:oid-alice"])
    before = written_counts()
    rows = list(SourceUserObjectPermission.objects.values_list("pk", flat=True))
    workspace_load(data=copy.deepcopy(WORKSPACE))
    assert written_counts() == before
    assert list(SourceUserObjectPermission.objects.values_list("pk", flat=True)) == rows


def test_a_refused_load_grants_nothing(workspace, ingest_client):
    fact(ingest_client, ["email:nora@acme.test"])
    before = written_counts()
    bad = {**NEWCOMER, "role": "admin"}
    with pytest.raises(WorkspaceInvalid):
        load_with(bad)
    assert written_counts() == before


def test_resubmitting_an_identical_source_repairs_its_grants(workspace, ingest_client):
    """The grants are re-resolved on every submission of the source, even when its ACL
    did not change (here a grant row lost behind the service's back)."""
    payload = fact_payload(acl=["email:bob@acme.test"])
    node_id = submit(ingest_client, payload)["nodes"][0]["id"]
    SourceUserObjectPermission.objects.all().delete()
    assert reads("bob@acme.test", node_id) == 404
    submit(ingest_client, payload)
    assert reads("bob@acme.test", node_id) == 200


def test_acls_are_re_resolved_in_bulk(workspace, ingest_client):
    """Re-resolving a tenant's ACLs (what every load does) costs the same number of queries
    for one source as for 25, all grants to insert included."""

    def sync_queries() -> int:
        SourceUserObjectPermission.objects.all().delete()
        SourceGroupObjectPermission.objects.all().delete()
        with CaptureQueriesContext(connection) as ctx:
            source_acls_sync(tenant=workspace)
        return len(ctx.captured_queries)

    acl = ["email:bob@acme.test", "aad:oid-alice", "group:legal", "email:nobody@acme.test"]
    fact(ingest_client, acl, external_id="acl/0.md")
    one = sync_queries()
    for i in range(1, 25):
        fact(ingest_client, acl, external_id=f"acl/{i}.md")
    assert sync_queries() == one
    assert SourceUserObjectPermission.objects.count() == 2 * 25
    assert SourceGroupObjectPermission.objects.count() == 25
    with CaptureQueriesContext(connection) as ctx:
        assert source_acls_sync(tenant=workspace) == 0  # all in place: reads only
    assert all(q["sql"].lstrip().upper().startswith("SELECT") for q in ctx.captured_queries)


def test_many_principals_resolve_without_a_long_in_list(workspace, ingest_client):
    """Past 500 distinct principals the tenant's aliases and groups are read whole
    (SQLite caps bound parameters): the grants are the same."""
    strangers = [f"email:stranger{i}@elsewhere.test" for i in range(300)]
    groups = [f"group:unknown{i}" for i in range(250)]
    acl = [*strangers, *groups, "email:bob@acme.test", "aad:OID-ALICE", "group:finance"]
    node_id = fact(ingest_client, acl)
    assert reads("bob@acme.test", node_id) == 200
    assert reads("alice@acme.test", node_id) == 200
    assert reads("olga@acme.test", node_id) == 200  # finance
    assert reads("vera@acme.test", node_id) == 404
    assert SourceUserObjectPermission.objects.count() == 2
    assert SourceGroupObjectPermission.objects.count() == 1
