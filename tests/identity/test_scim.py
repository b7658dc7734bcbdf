"""SCIM 2.0 provisioning (CONTRACT §3.7): discovery, Users and Groups with create, read,
replace, PATCH and delete, filters, pagination, SCIM error bodies, tenant isolation, and
the mapping onto people, aliases, roles, groups and memberships — with every change
re-resolving the tenant's source ACLs as a workspace load does."""

from typing import Any

import pytest
from django.contrib.auth import authenticate, get_user_model

from identity.models import ProvisionedUser
from tenancy.models import Person, PersonAlias, Tenant, TenantGroup
from tenancy.services import api_key_create, api_key_revoke, workspace_load

from ..conftest import client_for
from ..factories import fact_payload, written_counts
from ..tenancy.test_workspace_acl import reads, submit
from .conftest import GROUP, SCIM_JSON, Scim, assert_scim_error, user_body

pytestmark = pytest.mark.django_db

NORA = user_body(
    "Nora@Corp.Acme.Test",
    emails=[{"value": "Nora@Acme.test", "type": "work", "primary": True}],
    displayName="Nora Newcomer",
    active=True,
    externalId="OID-NORA",
    roles=[{"value": "editor"}],
)


def everything() -> dict[str, int]:
    """Row counts of all a SCIM request could write."""
    return {
        **written_counts(),
        "TenantGroup": TenantGroup.objects.count(),
        "ProvisionedUser": ProvisionedUser.objects.count(),
        "User": get_user_model().objects.count(),
        "Memberships": Person.groups.through.objects.count(),
    }


def create(scim: Scim, body: dict[str, Any]) -> dict[str, Any]:
    response = scim.post("Users", body)
    assert response.status_code == 201, response.content
    assert response["Location"].endswith(f"/scim/v2/Users/{response.json()['id']}")
    return response.json()


def aliases(person: Person) -> dict[str, str]:
    return dict(PersonAlias.objects.filter(person=person).values_list("kind", "value"))


# --- discovery and authentication -----------------------------------------------------


def test_discovery_describes_users_and_groups(scim):
    spc = scim.get("ServiceProviderConfig")
    assert spc.status_code == 200 and spc["Content-Type"].startswith(SCIM_JSON)
    assert spc.json()["patch"]["supported"] is True
    assert spc.json()["filter"] == {"supported": True, "maxResults": 200}
    types = scim.get("ResourceTypes").json()
    assert [t["endpoint"] for t in types["Resources"]] == ["/Users", "/Groups"]
    assert scim.get("ResourceTypes/User").json()["schema"].endswith(":User")
    schemas = {s["id"]: s for s in scim.get("Schemas").json()["Resources"]}
    user = schemas["urn:ietf:params:scim:schemas:core:2.0:User"]
    roles = next(a for a in user["attributes"] if a["name"] == "roles")
    assert roles["subAttributes"][0]["canonicalValues"] == ["viewer", "editor", "steward"]
    assert scim.get(f"Schemas/{GROUP}").json()["name"] == "Group"
    assert_scim_error(scim.get("Schemas/urn:nope"), 404)
    assert_scim_error(scim.get("NoSuchEndpoint"), 404)


def test_only_a_scim_token_may_call_scim_and_it_may_call_nothing_else(
    workspace, ingest_client, person_client
):
    steward = person_client("sam")
    key, secret = api_key_create(tenant=workspace, audience="scim")
    before = everything()
    response = Scim(None).get("Users")
    assert_scim_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert_scim_error(Scim("tlh_not-a-key").post("Users", NORA), 401)
    assert_scim_error(ingest_client.get("/scim/v2/Users"), 403)
    assert_scim_error(steward.post("/scim/v2/Users", NORA, format="json"), 403)
    assert client_for(secret).get("/v1/clarifications").status_code == 403
    api_key_revoke(key=key)
    assert_scim_error(Scim(secret).get("Users"), 401)
    assert everything() == before


# --- Users ------------------------------------------------------------------------------


def test_a_created_user_is_a_person_with_aliases_role_and_sign_in_name(scim, workspace):
    doc = create(scim, NORA)
    person = Person.objects.get(pk=doc["id"])
    assert (person.tenant, person.email, person.name, person.role) == (
        workspace,
        "nora@acme.test",
        "Nora Newcomer",
        "editor",
    )
    # The Django user is named by the person's id; userName and email are sign-in names
    # within the tenant (identity.backends).
    assert person.user.username == str(person.pk)
    assert not person.user.has_usable_password() and not person.user.is_staff
    person.user.set_password("nora-pass-1")
    person.user.save()
    for name in ("Nora@Corp.Acme.Test", "nora@acme.test"):
        assert authenticate(username=name, password="nora-pass-1", tenant="acme") == person.user
    assert aliases(person) == {
        "email": "nora@acme.test",
        "upn": "nora@corp.acme.test",
        "aadOid": "oid-nora",
    }
    assert doc["userName"] == "nora@corp.acme.test" and doc["externalId"] == "oid-nora"
    assert doc["emails"] == [{"value": "nora@acme.test"}] and doc["active"] is True
    assert doc["roles"] == [{"value": "editor"}]
    assert doc["meta"]["resourceType"] == "User" and doc["meta"]["location"].endswith(doc["id"])
    assert scim.get(f"Users/{doc['id']}").json() == doc


def test_a_user_without_roles_is_a_viewer_and_an_email_user_name_is_the_email(scim):
    doc = create(scim, user_body("pat@acme.test"))
    person = Person.objects.get(pk=doc["id"])
    assert (person.email, person.role, person.name) == ("pat@acme.test", "viewer", "pat@acme.test")
    assert "roles" not in doc and "displayName" not in doc  # as the provider sent it


def test_put_replaces_email_role_name_and_aliases(scim, workspace):
    doc = create(scim, NORA)
    body = user_body(
        "nora@corp.acme.test",
        emails=[{"value": "nora.n@acme.test"}],
        displayName="Nora N.",
        roles=[{"value": "viewer"}, {"value": "steward"}],
    )
    response = scim.put(f"Users/{doc['id']}", body)
    assert response.status_code == 200, response.content
    person = Person.objects.get(pk=doc["id"])
    assert (person.email, person.name, person.role) == ("nora.n@acme.test", "Nora N.", "steward")
    assert person.user.is_staff  # stewards enter the admin
    assert aliases(person) == {"email": "nora.n@acme.test", "upn": "nora@corp.acme.test"}
    assert "externalId" not in response.json()


def test_patch_replace_add_and_remove_as_entra_sends_them(scim):
    doc = create(scim, NORA)
    response = scim.patch(
        f"Users/{doc['id']}",
        {"op": "Replace", "path": "displayName", "value": "Nora Q. Newcomer"},
        {"op": "replace", "path": 'emails[type eq "work"].value', "value": "nq@acme.test"},
        {"op": "add", "path": "roles", "value": [{"value": "steward"}]},
        {"op": "remove", "path": "externalId"},
    )
    assert response.status_code == 200, response.content
    person = Person.objects.get(pk=doc["id"])
    assert (person.name, person.email, person.role) == (
        "Nora Q. Newcomer",
        "nq@acme.test",
        "steward",
    )
    assert "aadOid" not in aliases(person)
    assert response.json()["emails"] == [{"value": "nq@acme.test"}]


def test_a_workspace_person_is_a_user_too_and_keeps_their_chat_aliases(scim, people):
    alice = people["alice"]
    found = scim.get("Users", filter='userName eq "ALICE@acme.test"').json()
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == str(alice.pk)
    assert {g["display"] for g in found["Resources"][0]["groups"]} == {"legal"}
    response = scim.patch(
        f"Users/{alice.pk}", {"op": "replace", "path": "roles", "value": [{"value": "viewer"}]}
    )
    assert response.status_code == 200, response.content
    alice.refresh_from_db()
    assert alice.role == "viewer"
    assert aliases(alice)["slackUserId"] == "U0ALICE"  # not the provider's to remove


@pytest.mark.parametrize(
    "expression",
    [
        'userName eq "nora@corp.acme.test"',
        'userName eq "NORA@CORP.ACME.TEST"',
        'externalId eq "oid-nora"',
        'emails.value eq "nora@acme.test"',
        'emails[value eq "nora@acme.test"]',
        'displayName eq "Nora Newcomer"',
        'displayName sw "Nora" and active eq true',
        'roles.value eq "editor" and not (userName eq "alice@acme.test") and userName sw "nora"',
        'userName eq "nobody" or externalId eq "oid-nora"',
    ],
)
def test_filters_find_the_user(scim, expression):
    doc = create(scim, NORA)
    found = scim.get("Users", filter=expression).json()
    assert [r["id"] for r in found["Resources"]] == [doc["id"]]
    assert found["totalResults"] == 1


def test_filters_on_groups(scim, people):
    legal = TenantGroup.objects.get(name="legal")
    by_name = scim.get("Groups", filter='displayName eq "LEGAL"').json()
    assert [r["id"] for r in by_name["Resources"]] == [str(legal.pk)]
    by_member = scim.get("Groups", filter=f'members.value eq "{people["olga"].pk}"').json()
    assert [r["displayName"] for r in by_member["Resources"]] == ["finance"]


@pytest.mark.parametrize(
    "expression, scim_type",
    [
        ('title eq "x"', "invalidFilter"),
        ('nickName eq "x"', "invalidFilter"),
        ('userName eq "x', "invalidFilter"),
        ("userName eq", "invalidFilter"),
    ],
)
def test_a_bad_filter_is_a_scim_400(scim, expression, scim_type):
    assert_scim_error(scim.get("Users", filter=expression), 400, scim_type)


def test_pagination_with_start_index_and_count(scim, workspace):
    total = Person.objects.filter(tenant=workspace).count()
    page = scim.get("Users", startIndex=2, count=2).json()
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (total, 2, 2)
    everyone = scim.get("Users").json()["Resources"]
    assert [r["id"] for r in page["Resources"]] == [r["id"] for r in everyone[1:3]]
    assert scim.get("Users", startIndex=total, count=10).json()["itemsPerPage"] == 1
    assert scim.get("Users", count=0).json()["Resources"] == []
    attrs = scim.get("Users", attributes="userName", count=1).json()["Resources"][0]
    assert set(attrs) == {"schemas", "id", "userName"}


def test_another_tenants_users_and_groups_are_404_and_never_match(scim, workspace):
    workspace_load(
        data={
            "tenant": "globex",
            "groups": ["ops"],
            "people": [{"name": "Gus", "email": "gus@globex.test", "groups": ["ops"]}],
        }
    )
    gus = Person.objects.get(email="gus@globex.test")
    ops = TenantGroup.objects.get(tenant__slug="globex", name="ops")
    before = everything()
    for path in (f"Users/{gus.pk}", f"Groups/{ops.pk}"):
        assert_scim_error(scim.get(path), 404)
        assert_scim_error(scim.put(path, {**NORA, "displayName": "x"}), 404)
        assert_scim_error(
            scim.patch(path, {"op": "replace", "path": "displayName", "value": "x"}), 404
        )
        assert_scim_error(scim.delete(path), 404)
    assert scim.get("Users", filter='userName eq "gus@globex.test"').json()["totalResults"] == 0
    assert scim.get("Groups", filter='displayName eq "ops"').json()["totalResults"] == 0
    assert_scim_error(
        scim.post(
            "Groups", {"schemas": [GROUP], "displayName": "x", "members": [{"value": str(gus.pk)}]}
        ),
        400,
        "invalidValue",
    )
    assert everything() == before
    assert Person.objects.get(pk=gus.pk).deactivated_at is None


@pytest.mark.parametrize(
    "body, status, scim_type",
    [
        ({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"]}, 400, None),
        (user_body("x@acme.test", roles=[{"value": "admin"}]), 400, "invalidValue"),
        (user_body("not-an-email"), 400, "invalidValue"),
        (user_body("x@acme.test", emails=[{"value": "not an email"}]), 400, "invalidValue"),
        (user_body("alice@acme.test"), 409, "uniqueness"),  # alice's email
        (user_body("zed@acme.test", emails=[{"value": "bob@acme.test"}]), 409, "uniqueness"),
        (user_body("sam@acme.test", emails=[{"value": "new@acme.test"}]), 409, "uniqueness"),
        (user_body("y@acme.test", externalId="oid-alice"), 409, "uniqueness"),
        ([1, 2], 400, None),
    ],
    ids=[
        "no userName",
        "bad role",
        "no email",
        "bad email",
        "email taken",
        "email taken 2",
        "userName taken",
        "externalId taken",
        "not an object",
    ],
)
def test_a_refused_user_writes_nothing(scim, workspace, body, status, scim_type):
    before = everything()
    assert_scim_error(scim.post("Users", body), status, scim_type)
    assert everything() == before


def test_malformed_json_and_bad_patches_write_nothing(scim, people):
    alice = people["alice"]
    before = everything()
    bad = scim.http.post("/scim/v2/Users", data="{not json", content_type=SCIM_JSON)
    assert_scim_error(bad, 400, "invalidSyntax")
    assert_scim_error(scim.patch(f"Users/{alice.pk}", {"op": "explode", "path": "x"}), 400)
    assert_scim_error(
        scim.patch(
            f"Users/{alice.pk}", {"op": "replace", "path": "roles", "value": [{"value": "god"}]}
        ),
        400,
        "invalidValue",
    )
    assert_scim_error(scim.call("patch", f"Users/{alice.pk}", {"Operations": []}), 400)
    assert_scim_error(scim.get("Users/not-a-uuid"), 404)
    assert everything() == before


# --- Groups -----------------------------------------------------------------------------


def test_groups_and_memberships_re_resolve_source_acls(scim, workspace, ingest_client, people):
    node = submit(ingest_client, fact_payload(external_id="acl/audit.md", acl=["group:auditors"]))
    node_id = node["nodes"][0]["id"]
    vera, olga = people["vera"], people["olga"]
    assert reads("vera@acme.test", node_id) == 404
    response = scim.post(
        "Groups",
        {
            "schemas": [GROUP],
            "displayName": "auditors",
            "externalId": "g-1",
            "members": [{"value": str(vera.pk)}],
        },
    )
    assert response.status_code == 201, response.content
    group = response.json()
    assert group["members"][0]["value"] == str(vera.pk) and group["externalId"] == "g-1"
    assert reads("vera@acme.test", node_id) == 200  # granted in the same transaction
    assert TenantGroup.objects.get(pk=group["id"]).auth_group.user_set.get() == vera.user

    path = f"Groups/{group['id']}"
    patched = scim.patch(
        path,
        {"op": "add", "path": "members", "value": [{"value": str(olga.pk)}]},
        {"op": "remove", "path": f'members[value eq "{vera.pk}"]'},
    )
    assert patched.status_code == 200, patched.content
    assert [m["value"] for m in patched.json()["members"]] == [str(olga.pk)]
    assert (reads("vera@acme.test", node_id), reads("olga@acme.test", node_id)) == (404, 200)
    assert "auditors" in {g["display"] for g in scim.get(f"Users/{olga.pk}").json()["groups"]}

    # Renamed: `group:auditors` names no one any more.
    renamed = scim.patch(path, {"op": "replace", "path": "displayName", "value": "audit"})
    assert renamed.status_code == 200, renamed.content
    assert reads("olga@acme.test", node_id) == 404
    scim.patch(path, {"op": "replace", "path": "displayName", "value": "auditors"})
    assert reads("olga@acme.test", node_id) == 200
    assert scim.delete(path).status_code == 204
    assert reads("olga@acme.test", node_id) == 404
    assert_scim_error(scim.get(path), 404)


def test_a_user_alias_change_re_resolves_acls(scim, ingest_client):
    node = submit(ingest_client, fact_payload(external_id="acl/oid.md", acl=["aad:oid-nora"]))
    node_id = node["nodes"][0]["id"]
    doc = create(scim, {**NORA, "roles": [{"value": "viewer"}]})
    assert reads("nora@acme.test", node_id) == 200
    scim.patch(f"Users/{doc['id']}", {"op": "replace", "path": "externalId", "value": "oid-other"})
    assert reads("nora@acme.test", node_id) == 404


@pytest.mark.parametrize(
    "body, status",
    [
        ({"schemas": [GROUP], "displayName": "has space"}, 400),
        ({"schemas": [GROUP], "displayName": "legal"}, 409),
        ({"schemas": [GROUP], "displayName": "new", "members": [{"value": "nobody"}]}, 400),
        ({"schemas": [GROUP]}, 400),
    ],
    ids=["bad name", "taken", "unknown member", "no name"],
)
def test_a_refused_group_writes_nothing(scim, workspace, body, status):
    before = everything()
    assert_scim_error(scim.post("Groups", body), status)
    assert everything() == before


def test_the_tenant_of_the_token_is_the_one_provisioned(workspace):
    other = Tenant.objects.create(slug="initech", name="Initech")
    _, secret = api_key_create(tenant=other, audience="scim")
    doc = create(Scim(secret), NORA)
    assert Person.objects.get(pk=doc["id"]).tenant == other


def test_the_scim_token_is_made_by_the_cli(workspace):
    import io
    import json

    from django.core.management import call_command

    out = io.StringIO()
    call_command(
        "api_key", "create", "--tenant", "acme", "--audience", "scim", "--json", stdout=out
    )
    body = json.loads(out.getvalue())
    assert (body["audience"], body["person"], body["role"]) == ("scim", None, None)
    assert Scim(body["key"]).get("Users").status_code == 200


def test_a_concurrent_duplicate_is_a_409_not_a_500(scim, monkeypatch):
    from django.db import IntegrityError

    import identity.services

    def lost_the_race(**kwargs: Any) -> Any:
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(identity.services, "person_upsert", lost_the_race)
    before = everything()
    assert_scim_error(scim.post("Users", NORA), 409, "uniqueness")
    assert everything() == before


def test_group_membership_patches_as_entra_sends_them(scim, people):
    legal = TenantGroup.objects.get(name="legal")
    olga, alice = people["olga"], people["alice"]
    path = f"Groups/{legal.pk}"
    added = scim.patch(path, {"op": "Add", "path": "members", "value": [{"value": str(olga.pk)}]})
    assert added.status_code == 200, added.content
    assert olga.groups.filter(pk=legal.pk).exists()
    assert legal.auth_group.user_set.filter(pk=olga.user_id).exists()
    removed = scim.patch(
        path, {"op": "Remove", "path": "members", "value": [{"value": str(alice.pk)}]}
    )
    assert removed.status_code == 200, removed.content
    assert not alice.groups.filter(pk=legal.pk).exists()
    assert not legal.auth_group.user_set.filter(pk=alice.user_id).exists()
    assert str(alice.pk) not in {m["value"] for m in removed.json()["members"]}


def test_test_domains_are_accepted_only_with_the_setting(monkeypatch, scim):
    import email_validator
    from django.apps import apps
    from django.test import override_settings

    monkeypatch.setattr(email_validator, "TEST_ENVIRONMENT", False)
    with override_settings(SCIM_ALLOW_TEST_DOMAINS=False):
        apps.get_app_config("identity").ready()
    assert email_validator.TEST_ENVIRONMENT is False
    before = everything()
    assert_scim_error(scim.post("Users", NORA), 400)
    assert everything() == before
    with override_settings(SCIM_ALLOW_TEST_DOMAINS=True):
        apps.get_app_config("identity").ready()
    assert email_validator.TEST_ENVIRONMENT is True
    assert scim.post("Users", NORA).status_code == 201


def test_a_user_name_taken_in_this_tenant_is_a_409_and_nothing_is_written(scim, people):
    doc = create(scim, NORA)
    before = everything()
    taken = [
        scim.post("Users", {**NORA, "emails": [{"value": "nora2@acme.test"}]}),
        scim.post(
            "Users", {**NORA, "userName": "OLGA@acme.test", "emails": [{"value": "x@acme.test"}]}
        ),
        scim.put(f"Users/{people['olga'].pk}", {**NORA, "emails": [{"value": "o@acme.test"}]}),
        scim.patch(
            f"Users/{doc['id']}", {"op": "replace", "path": "userName", "value": "olga@acme.test"}
        ),
    ]
    for response in taken:
        assert_scim_error(response, 409, "uniqueness")
        assert "already belongs to another user" in response.json()["detail"]
    assert everything() == before
    assert aliases(people["olga"])["upn"] == "olga@acme.test"
    assert aliases(Person.objects.get(pk=doc["id"]))["upn"] == "nora@corp.acme.test"
