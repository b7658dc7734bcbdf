"""`telha load_workspace` (CONTRACT §2.1): idempotent, and a malformed file loads nothing."""

import copy
import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import CommandError

from telha.tenancy.models import AliasKind, Person, PersonAlias, Tenant, TenantGroup
from telha.tenancy.services import WorkspaceInvalid, workspace_load

from ..conftest import WORKSPACE

User = get_user_model()

pytestmark = pytest.mark.django_db


def counts() -> dict[str, int]:
    return {
        "tenants": Tenant.objects.count(),
        "groups": TenantGroup.objects.count(),
        "auth_groups": Group.objects.count(),
        "people": Person.objects.count(),
        "aliases": PersonAlias.objects.count(),
        "users": User.objects.count(),
    }


def state_of(tenant: Tenant) -> dict[str, object]:
    """Everything a workspace load decides, in a comparable form."""
    people = {}
    for p in Person.objects.filter(tenant=tenant).select_related("user"):
        people[p.email] = {
            "id": p.pk,
            "name": p.name,
            "role": p.role,
            "user_id": p.user_id,
            "groups": sorted(g.name for g in p.groups.all()),
            "user_groups": sorted(g.name for g in p.user.groups.all()),
            "aliases": sorted((a.kind, a.value) for a in p.aliases.all()),
            "is_staff": p.user.is_staff,
            "usable_password": p.user.has_usable_password(),
        }
    return {
        "name": tenant.name,
        "groups": sorted(TenantGroup.objects.filter(tenant=tenant).values_list("name", flat=True)),
        "people": people,
    }


def test_load_creates_people_users_groups_and_aliases():
    result = workspace_load(data=WORKSPACE)
    tenant = result.tenant
    assert (tenant.slug, tenant.name) == ("acme", "Acme Corp")
    assert result.created_people == 5 and result.updated_people == 0
    assert sorted(result.groups) == ["finance", "legal"]
    alice = Person.objects.get(tenant=tenant, email="alice@acme.test")
    assert alice.role == "editor"
    assert alice.user.username == "alice@acme.test" == alice.user.email
    assert sorted(g.name for g in alice.groups.all()) == ["legal"]
    assert sorted(g.name for g in alice.user.groups.all()) == ["acme:legal"]
    assert dict(alice.aliases.values_list("kind", "value")) == {
        AliasKind.EMAIL: "alice@acme.test",
        AliasKind.SLACK_USER_ID: "U0ALICE",
        AliasKind.AAD_OID: "oid-alice",
    }
    sam = Person.objects.get(tenant=tenant, email="sam@acme.test")
    assert sorted(g.name for g in sam.groups.all()) == ["finance", "legal"]


def test_every_user_name_is_the_email():
    tenant = workspace_load(data=WORKSPACE).tenant
    for person in Person.objects.filter(tenant=tenant).select_related("user"):
        assert person.user is not None
        assert person.user.username == person.email


def test_sign_in_disabled_without_password_and_only_stewards_are_staff():
    tenant = workspace_load(data=WORKSPACE).tenant
    people = {p.email: p.user for p in Person.objects.filter(tenant=tenant).select_related("user")}
    sam = people.pop("sam@acme.test")
    assert sam.is_staff and sam.is_active
    assert sam.has_usable_password() and sam.check_password("steward-pass-1")
    assert "steward-pass-1" not in sam.password  # only the hash is stored
    for user in people.values():
        assert not user.has_usable_password(), user.username
        assert not user.is_staff, user.username
        assert not user.is_superuser


def test_password_gives_a_non_steward_sign_in_but_not_staff():
    data = copy.deepcopy(WORKSPACE)
    data["people"][0]["password"] = "alice-pass-1"
    tenant = workspace_load(data=data).tenant
    alice = Person.objects.get(tenant=tenant, email="alice@acme.test").user
    assert alice.check_password("alice-pass-1")
    assert not alice.is_staff


def test_load_twice_is_idempotent():
    first = workspace_load(data=WORKSPACE)
    before_counts, before_state = counts(), state_of(first.tenant)
    sam_hash = User.objects.get(username="sam@acme.test").password
    second = workspace_load(data=copy.deepcopy(WORKSPACE))
    assert second.tenant.pk == first.tenant.pk
    assert second.created_people == 0 and second.updated_people == 5
    assert counts() == before_counts
    assert state_of(second.tenant) == before_state
    # the password was not re-hashed (same salt), so sessions stay valid
    assert User.objects.get(username="sam@acme.test").password == sam_hash


def test_reload_applies_changes_and_removes_dropped_memberships_and_aliases():
    tenant = workspace_load(data=WORKSPACE).tenant
    data = copy.deepcopy(WORKSPACE)
    data["name"] = "Acme Corporation"
    alice = data["people"][0]
    alice["role"] = "steward"
    alice["groups"] = ["finance"]
    alice["aliases"] = {"slackUserId": "U0ALICE2"}
    sam = data["people"][4]
    sam["role"] = "viewer"
    del sam["password"]
    workspace_load(data=data)
    tenant.refresh_from_db()
    assert tenant.name == "Acme Corporation"
    p = Person.objects.select_related("user").get(tenant=tenant, email="alice@acme.test")
    assert p.role == "steward" and p.user.is_staff
    assert [g.name for g in p.groups.all()] == ["finance"]
    assert [g.name for g in p.user.groups.all()] == ["acme:finance"]
    assert dict(p.aliases.values_list("kind", "value")) == {
        AliasKind.EMAIL: "alice@acme.test",
        AliasKind.SLACK_USER_ID: "U0ALICE2",
    }
    s = Person.objects.select_related("user").get(tenant=tenant, email="sam@acme.test")
    assert s.role == "viewer" and not s.user.is_staff
    assert not s.user.has_usable_password()


def test_email_is_matched_case_insensitively():
    workspace_load(data=WORKSPACE)
    before = counts()
    data = copy.deepcopy(WORKSPACE)
    data["people"][0]["email"] = "Alice@ACME.test"
    result = workspace_load(data=data)
    assert result.created_people == 0
    assert counts() == before


def _bad(mutate):
    data = copy.deepcopy(WORKSPACE)
    mutate(data)
    return data


def _set(path, value):
    def mutate(data):
        target = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


MALFORMED = {
    "bad slug": _set(["tenant"], "Acme Corp!"),
    "missing slug": lambda d: d.pop("tenant"),
    "unknown top-level field": _set(["colour"], "blue"),
    "unknown person field": _set(["people", 1, "nickname"], "Bobby"),
    "duplicate email": _set(["people", 1, "email"], "ALICE@acme.test"),
    "invalid email": _set(["people", 1, "email"], "not-an-email"),
    "unknown group": _set(["people", 2, "groups"], ["finance", "marketing"]),
    "bad group name": _set(["groups"], ["legal", "has space"]),
    "bad role": _set(["people", 3, "role"], "admin"),
    "alias used twice": _set(["people", 1, "aliases"], {"slackUserId": "U0ALICE"}),
    "alias used twice, differing case": _set(["people", 1, "aliases"], {"aadOid": "OID-ALICE"}),
    "unknown alias kind": _set(["people", 1, "aliases"], {"skype": "bob"}),
    "empty alias": _set(["people", 1, "aliases"], {"slackUserId": "  "}),
    "short password": _set(["people", 4, "password"], "short"),
    "person missing name": lambda d: d["people"][2].pop("name"),
    "person not an object": _set(["people", 2], "olga@acme.test"),
    "people not a list": _set(["people"], {"alice": {}}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_file_is_refused_and_nothing_is_written(case):
    data = _bad(MALFORMED[case])
    before = counts()
    with pytest.raises(WorkspaceInvalid) as info:
        workspace_load(data=data)
    assert info.value.code == "WORKSPACE_INVALID"
    assert info.value.extra["errors"], "every refusal names its problems"
    assert counts() == before


@pytest.mark.parametrize("document", [[], "acme", None, 42])
def test_document_that_is_not_an_object_is_refused(document):
    before = counts()
    with pytest.raises(WorkspaceInvalid) as info:
        workspace_load(data=document)
    assert info.value.extra["errors"] == ["$: expected a JSON object"]
    assert counts() == before


@pytest.mark.parametrize("case", ["bad role", "short password", "unknown group"])
def test_malformed_reload_changes_nothing_already_loaded(case):
    tenant = workspace_load(data=WORKSPACE).tenant
    before_counts, before_state = counts(), state_of(tenant)
    data = _bad(MALFORMED[case])
    data["people"][0]["role"] = "steward"  # a valid change that must not be half-applied
    with pytest.raises(WorkspaceInvalid):
        workspace_load(data=data)
    assert counts() == before_counts
    assert state_of(tenant) == before_state


def test_error_messages_point_at_the_offending_entry():
    data = _bad(_set(["people", 3, "role"], "admin"))
    with pytest.raises(WorkspaceInvalid) as info:
        workspace_load(data=data)
    assert any(e.startswith("people[3].role") for e in info.value.extra["errors"])


def test_alias_owned_by_someone_already_loaded_is_refused_without_writes():
    """The clash is only visible against the database (alice keeps U0ALICE in the DB,
    the new file gives it to a new person while alice is not in the file)."""
    tenant = workspace_load(data=WORKSPACE).tenant
    before_counts, before_state = counts(), state_of(tenant)
    data = {
        "tenant": "acme",
        "groups": ["legal", "finance"],
        "people": [
            {"name": "Newcomer", "email": "new@acme.test", "aliases": {"slackUserId": "U0ALICE"}}
        ],
    }
    with pytest.raises(WorkspaceInvalid):
        workspace_load(data=data)
    assert counts() == before_counts
    assert state_of(tenant) == before_state


def test_email_of_another_tenants_person_is_refused_without_writes():
    workspace_load(data=WORKSPACE)
    before = counts()
    data = {
        "tenant": "globex",
        "people": [{"name": "Alice Elsewhere", "email": "alice@acme.test"}],
    }
    with pytest.raises(WorkspaceInvalid):
        workspace_load(data=data)
    assert counts() == before
    assert not Tenant.objects.filter(slug="globex").exists()


# --- the command ---


def write(tmp_path, data, name="workspace.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def test_command_loads_and_is_idempotent(tmp_path):
    path = write(tmp_path, WORKSPACE)
    out = StringIO()
    call_command("load_workspace", path, "--json", stdout=out)
    assert json.loads(out.getvalue()) == {
        "tenant": "acme",
        "created": 5,
        "updated": 0,
        "groups": ["legal", "finance"],
    }
    before = counts()
    out = StringIO()
    call_command("load_workspace", path, "--json", stdout=out)
    assert json.loads(out.getvalue())["created"] == 0
    assert counts() == before


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(_bad(MALFORMED["bad role"])),
        json.dumps(_bad(MALFORMED["bad slug"])),
        json.dumps([WORKSPACE]),
        '{"tenant": "acme", ',  # not JSON
    ],
    ids=["bad role", "bad slug", "not an object", "not json"],
)
def test_command_exits_1_on_a_malformed_file(tmp_path, content):
    path = write(tmp_path, content)
    before = counts()
    with pytest.raises(CommandError) as info:
        call_command("load_workspace", path, stdout=StringIO(), stderr=StringIO())
    assert info.value.returncode == 1
    assert "WORKSPACE_INVALID" in str(info.value)
    assert counts() == before


def test_command_exits_2_on_a_missing_file(tmp_path):
    before = counts()
    with pytest.raises(CommandError) as info:
        call_command("load_workspace", str(tmp_path / "nope.json"), stdout=StringIO())
    assert info.value.returncode == 2
    assert counts() == before
