"""`telha load_workspace` (CONTRACT §2.1): idempotent, and a malformed file loads nothing."""

import copy
import json
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenancy.models import AliasKind, Person, PersonAlias, Tenant, TenantGroup
from tenancy.services import WorkspaceInvalid, workspace_load

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
    assert alice.user.username == str(alice.pk) and alice.user.email == "alice@acme.test"
    assert alice.user.first_name == "Alice Author"  # the admin greets her by name
    assert sorted(g.name for g in alice.groups.all()) == ["legal"]
    assert sorted(g.name for g in alice.user.groups.all()) == ["acme:legal"]
    assert dict(alice.aliases.values_list("kind", "value")) == {
        AliasKind.EMAIL: "alice@acme.test",
        AliasKind.UPN: "alice@acme.test",  # her SCIM userName: the email, as none is given
        AliasKind.SLACK_USER_ID: "U0ALICE",
        AliasKind.AAD_OID: "oid-alice",
    }
    sam = Person.objects.get(tenant=tenant, email="sam@acme.test")
    assert sorted(g.name for g in sam.groups.all()) == ["finance", "legal"]


def test_every_user_is_named_by_the_person_and_signs_in_by_email():
    tenant = workspace_load(data=WORKSPACE).tenant
    for person in Person.objects.filter(tenant=tenant).select_related("user"):
        assert person.user is not None
        assert person.user.username == str(person.pk) and person.user.email == person.email
    sam = Person.objects.get(tenant=tenant, email="sam@acme.test")
    assert authenticate(username="Sam@Acme.test", password="steward-pass-1") == sam.user


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
    sam_hash = User.objects.get(email="sam@acme.test").password
    second = workspace_load(data=copy.deepcopy(WORKSPACE))
    assert second.tenant.pk == first.tenant.pk
    assert second.created_people == 0 and second.updated_people == 5
    assert counts() == before_counts
    assert state_of(second.tenant) == before_state
    # the password was not re-hashed (same salt), so sessions stay valid
    assert User.objects.get(email="sam@acme.test").password == sam_hash


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
        AliasKind.UPN: "alice@acme.test",  # kept: a file naming no upn keeps the one she has
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
    # every field of the wrong JSON type is a clear error, never a traceback
    "tenant a number": _set(["tenant"], 5),
    "slug with a trailing newline": _set(["tenant"], "acme\n"),
    "tenant name a number": _set(["name"], 5),
    "tenant name too long": _set(["name"], "A" * 201),
    "groups a string": _set(["groups"], "legal"),
    "group name a number": _set(["groups"], ["legal", 5]),
    "email a number": _set(["people", 1, "email"], 5),
    "email an object": _set(["people", 1, "email"], {"address": "bob@acme.test"}),
    "email a list": _set(["people", 1, "email"], ["bob@acme.test"]),
    "email missing": lambda d: d["people"][1].pop("email"),
    "email null": _set(["people", 1, "email"], None),
    "email too long for a user name": _set(["people", 1, "email"], "b" * 141 + "@acme.test"),
    "person name a number": _set(["people", 1, "name"], 7),
    "person name too long": _set(["people", 1, "name"], "B" * 201),
    "role a number": _set(["people", 1, "role"], 2),
    "role a list": _set(["people", 1, "role"], ["editor"]),
    "role null": _set(["people", 1, "role"], None),
    "person groups a string": _set(["people", 1, "groups"], "legal"),
    "person group a number": _set(["people", 1, "groups"], [1]),
    "person group an object": _set(["people", 1, "groups"], [{"name": "legal"}]),
    "aliases a list": _set(["people", 1, "aliases"], ["U0BOB"]),
    "alias value a number": _set(["people", 1, "aliases"], {"slackUserId": 42}),
    "alias value an object": _set(["people", 1, "aliases"], {"aadOid": {"id": "x"}}),
    "password a number": _set(["people", 4, "password"], 123456789),
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


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
FIELD_PATHS = [
    ["tenant"],
    ["name"],
    ["groups"],
    ["groups", 0],
    ["people"],
    ["people", 0],
    *[["people", 1, f] for f in ("name", "email", "role", "groups", "aliases", "password")],
    ["people", 1, "groups", 0],
    ["people", 0, "aliases", "aadOid"],
    ["people", 0, "aliases", "slackUserId"],
]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=st.sampled_from(FIELD_PATHS), value=JSON_VALUES)
def test_any_json_value_in_any_field_loads_or_is_refused_cleanly(path, value):
    """Whatever JSON value a field holds, the load either succeeds or raises
    WORKSPACE_INVALID having written nothing: never a traceback."""
    data = _bad(_set(path, value))
    before = counts()
    try:
        with transaction.atomic():
            workspace_load(data=data)
            transaction.set_rollback(True)  # each example starts from the same database
    except WorkspaceInvalid as exc:
        assert exc.extra["errors"]
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


def test_the_email_of_another_tenants_person_is_this_tenants_own():
    """A tenant's names are its own: the same email (and so the same userName) is a
    different person, with a different user, in another tenant; neither load touches the
    other tenant's person."""
    workspace_load(data=WORKSPACE)
    acme_alice = Person.objects.select_related("user").get(
        tenant__slug="acme", email="alice@acme.test"
    )
    before = state_of(acme_alice.tenant)
    data = {
        "tenant": "globex",
        "people": [{"name": "Alice Elsewhere", "email": "alice@acme.test", "role": "steward"}],
    }
    result = workspace_load(data=data)
    assert result.created_people == 1
    globex_alice = Person.objects.select_related("user").get(tenant=result.tenant)
    assert globex_alice.pk != acme_alice.pk and globex_alice.user_id != acme_alice.user_id
    assert dict(globex_alice.aliases.values_list("kind", "value")) == {
        AliasKind.EMAIL: "alice@acme.test",
        AliasKind.UPN: "alice@acme.test",
    }
    assert globex_alice.user.is_staff
    workspace_load(data=copy.deepcopy(WORKSPACE))
    assert state_of(acme_alice.tenant) == before
    assert state_of(result.tenant)["people"]["alice@acme.test"]["role"] == "steward"


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
        json.dumps(_bad(MALFORMED["email a number"])),
        json.dumps(_bad(MALFORMED["email an object"])),
        json.dumps(_bad(MALFORMED["role a list"])),
        json.dumps(_bad(MALFORMED["alias value a number"])),
        json.dumps([WORKSPACE]),
        '{"tenant": "acme", ',  # not JSON
    ],
    ids=[
        "bad role",
        "bad slug",
        "email a number",
        "email an object",
        "role a list",
        "alias value a number",
        "not an object",
        "not json",
    ],
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
