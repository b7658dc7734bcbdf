"""A tenant's user names are its own (issue 28, item 2): a SCIM `userName` (and an email)
held in another tenant is free in this one, and nothing another tenant holds shows in any
SCIM answer — no 409, no filter match, no resource. Two identity providers run the
sequences scim2-tester runs (create, query, replace, PATCH, delete, create again) on the
same names, interleaved."""

from typing import Any

import pytest

from tenancy.models import Person, PersonAlias, Tenant
from tenancy.services import api_key_create, workspace_load

from .conftest import Scim, assert_scim_error, user_body

pytestmark = pytest.mark.django_db

NAMES = ["nora@corp.test", "gus@corp.test"]


def person_body(user_name: str, email: str, **extra: Any) -> dict[str, Any]:
    return user_body(user_name, emails=[{"value": email, "primary": True}], active=True, **extra)


def tenant_scim(slug: str) -> Scim:
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
    return Scim(api_key_create(tenant=tenant, audience="scim")[1])


def snapshot(slug: str) -> dict[str, Any]:
    """Everything of a tenant's people a SCIM request could change."""
    people = Person.objects.filter(tenant__slug=slug).select_related("user").order_by("pk")
    return {
        str(p.pk): (
            p.email,
            p.name,
            p.role,
            p.deactivated_at,
            p.deleted_by_provider,
            p.user.username if p.user else None,
            p.user.is_active if p.user else None,
            sorted(PersonAlias.objects.filter(person=p).values_list("kind", "value")),
        )
        for p in people
    }


def found(scim: Scim, expression: str) -> list[dict[str, Any]]:
    response = scim.get("Users", filter=expression)
    assert response.status_code == 200, response.content
    return response.json()["Resources"]


def test_a_name_taken_in_another_tenant_is_free_here_and_never_seen(workspace, people):
    """Acme's provider holds the names first; Globex's finds none of them, takes them all
    (userName and email alike), and Acme's people are untouched by anything it does."""
    acme = Scim(api_key_create(tenant=workspace, audience="scim")[1])
    nora = acme.post("Users", person_body(NAMES[0], "nora@acme.test", externalId="oid-n"))
    assert nora.status_code == 201, nora.content
    workspace_load(data={"tenant": "globex", "people": []})
    globex = tenant_scim("globex")
    acme_before = snapshot("acme")

    for expression in (
        f'userName eq "{NAMES[0]}"',
        'userName eq "alice@acme.test"',  # a workspace person's userName (her email)
        'userName sw "nora"',
        'emails[value eq "nora@acme.test"]',
        'emails.value co "acme"',
        'externalId eq "oid-n"',
        f'id eq "{nora.json()["id"]}"',
        "userName pr",
    ):
        assert found(globex, expression) == [], expression
    assert globex.get("Users").json()["totalResults"] == 0
    assert_scim_error(globex.get(f"Users/{nora.json()['id']}"), 404)

    # The same userName, the same email, the same externalId: a person of Globex.
    twin = globex.post("Users", person_body(NAMES[0], "nora@acme.test", externalId="oid-n"))
    assert twin.status_code == 201, twin.content
    alice = globex.post("Users", person_body("alice@acme.test", "alice@acme.test"))
    assert alice.status_code == 201, alice.content
    assert twin.json()["id"] != nora.json()["id"]
    assert twin.json()["userName"] == NAMES[0] and twin.json()["externalId"] == "oid-n"
    # Renamed to another of Acme's names, by PUT and by PATCH: still free.
    renamed = globex.put(
        f"Users/{twin.json()['id']}", person_body("olga@acme.test", "nora@acme.test")
    )
    assert renamed.status_code == 200, renamed.content
    patched = globex.patch(
        f"Users/{renamed.json()['id']}",
        {"op": "replace", "path": "userName", "value": NAMES[0]},
    )
    assert patched.status_code == 200 and patched.json()["userName"] == NAMES[0]
    assert [u["id"] for u in found(globex, f'userName eq "{NAMES[0]}"')] == [twin.json()["id"]]
    assert [u["id"] for u in found(acme, f'userName eq "{NAMES[0]}"')] == [nora.json()["id"]]
    assert snapshot("acme") == acme_before


def test_two_providers_run_the_same_sequence_on_the_same_names():
    """scim2-tester's order of work, by two tenants' providers interleaved step by step on
    the same user names and emails: every step succeeds in both, each sees only its own."""
    providers = {slug: tenant_scim(slug) for slug in ("acme", "globex")}
    ids: dict[tuple[str, str], str] = {}
    for name in NAMES:  # create
        for slug, scim in providers.items():
            assert found(scim, f'userName eq "{name}"') == []
            response = scim.post("Users", person_body(name, name, displayName=f"{name} {slug}"))
            assert response.status_code == 201, (slug, response.content)
            ids[slug, name] = response.json()["id"]
    for name in NAMES:  # read and query
        for slug, scim in providers.items():
            doc = scim.get(f"Users/{ids[slug, name]}").json()
            assert (doc["userName"], doc["displayName"]) == (name, f"{name} {slug}")
            assert [u["id"] for u in found(scim, f'userName eq "{name}"')] == [ids[slug, name]]
            assert scim.get("Users").json()["totalResults"] == len(NAMES)
    for name in NAMES:  # replace, then PATCH add, replace and remove
        for slug, scim in providers.items():
            path = f"Users/{ids[slug, name]}"
            put = scim.put(path, person_body(name, name, displayName=f"{slug} put"))
            assert put.status_code == 200, put.content
            for op in (
                {"op": "add", "path": "roles", "value": [{"value": "editor"}]},
                {"op": "replace", "path": "displayName", "value": f"{slug} patched"},
                {"op": "remove", "path": "roles"},
            ):
                assert scim.patch(path, op).status_code == 200, (slug, op)
            assert scim.get(path).json()["displayName"] == f"{slug} patched"
    # Acme's provider deletes its people; Globex's keep theirs, by name and by id.
    for name in NAMES:
        assert providers["acme"].delete(f"Users/{ids['acme', name]}").status_code == 204
        assert_scim_error(providers["acme"].get(f"Users/{ids['acme', name]}"), 404)
        assert found(providers["acme"], f'userName eq "{name}"') == []
        doc = providers["globex"].get(f"Users/{ids['globex', name]}").json()
        assert (doc["userName"], doc["active"]) == (name, True)
    # Created again (the same email): the same person of Acme, Globex's still apart.
    again = providers["acme"].post("Users", person_body(NAMES[0], NAMES[0]))
    assert again.status_code == 201 and again.json()["id"] == ids["acme", NAMES[0]]
    for name in NAMES:
        globex_person = Person.objects.get(pk=ids["globex", name])
        acme_person = Person.objects.get(pk=ids["acme", name])
        assert globex_person.user_id != acme_person.user_id
        assert globex_person.deactivated_at is None


def test_refusals_within_a_tenant_are_unchanged_by_another_tenants_names(workspace, people):
    """What stays refused is this tenant's own clash, and the refusal writes nothing in
    either tenant."""
    workspace_load(data={"tenant": "globex", "people": [{"name": "G", "email": "g@globex.test"}]})
    acme = Scim(api_key_create(tenant=workspace, audience="scim")[1])
    before = {slug: snapshot(slug) for slug in ("acme", "globex")}
    clash = acme.post("Users", person_body("alice@acme.test", "someone@acme.test"))
    assert_scim_error(clash, 409, "uniqueness")
    assert clash.json()["detail"] == "userName alice@acme.test already belongs to another user."
    assert {slug: snapshot(slug) for slug in ("acme", "globex")} == before
    assert acme.post("Users", person_body("g@globex.test", "g@globex.test")).status_code == 201
    assert snapshot("globex") == before["globex"]
