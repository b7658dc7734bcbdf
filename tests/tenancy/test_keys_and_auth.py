"""API keys and service tokens (CONTRACT §2, §3): hashing, revocation, bindings, rights,
401 UNAUTHENTICATED, and tenant isolation (another tenant's objects are 404, never 403)."""

import hashlib
import json
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, models, transaction
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from common.errors import DomainError, InvalidInput
from tenancy.auth import caller_for_key, caller_of
from tenancy.models import ApiKey, Person
from tenancy.services import api_key_create, api_key_revoke, hash_key, workspace_load

from ..conftest import WORKSPACE, client_for
from ..factories import fact_payload, submission_payload, written_counts

pytestmark = pytest.mark.django_db

GLOBEX = {
    "tenant": "globex",
    "name": "Globex",
    "groups": ["legal", "finance"],
    "people": [
        {"name": "Gina Editor", "email": "gina@globex.test", "role": "editor", "groups": ["legal"]},
        {
            "name": "Stan Steward",
            "email": "stan@globex.test",
            "role": "steward",
            "groups": ["legal", "finance"],
        },
    ],
}


def create_key_cli(*args: str) -> dict:
    out = StringIO()
    call_command("api_key", "create", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


# --- the api_key command ---


def test_cli_create_json_has_exactly_the_contract_keys(workspace):
    data = create_key_cli("--tenant", "acme", "--audience", "ingest", "--name", "worker")
    assert set(data) == {"id", "key", "audience", "person", "role"}
    assert data["audience"] == "ingest" and data["person"] is None and data["role"] is None
    key = ApiKey.objects.get(pk=data["id"])
    assert key.tenant == workspace and key.name == "worker"


def test_cli_create_person_key_defaults_to_the_persons_rights(workspace):
    data = create_key_cli("--tenant", "acme", "--person", "alice@acme.test")
    assert set(data) == {"id", "key", "audience", "person", "role"}
    assert (data["person"], data["role"], data["audience"]) == ("alice@acme.test", "editor", None)


def test_cli_key_authenticates(workspace):
    data = create_key_cli("--tenant", "acme", "--person", "sam@acme.test", "--role", "viewer")
    response = client_for(data["key"]).post("/v1/query", {}, format="json")
    assert response.status_code == 200


def test_secret_is_stored_only_as_its_sha256(workspace, people):
    key, secret = api_key_create(tenant=workspace, person=people["alice"])
    key.refresh_from_db()
    assert key.key_hash == hashlib.sha256(secret.encode()).hexdigest() == hash_key(secret)
    assert secret.startswith(key.prefix) and len(key.prefix) < len(secret) - 20
    # the secret appears in no text column of any table
    for model in apps.get_models():
        for f in model._meta.concrete_fields:
            if isinstance(f, models.CharField | models.TextField):
                hit = model._default_manager.filter(**{f"{f.name}__contains": secret}).exists()
                assert not hit, f"secret found in {model.__name__}.{f.name}"


def test_cli_secret_is_stored_only_as_its_sha256(workspace):
    data = create_key_cli("--tenant", "acme", "--audience", "clarify")
    key = ApiKey.objects.get(pk=data["id"])
    assert key.key_hash == hashlib.sha256(data["key"].encode()).hexdigest()
    assert not ApiKey.objects.filter(key_hash=data["key"]).exists()
    assert not ApiKey.objects.filter(prefix=data["key"]).exists()


def test_two_keys_never_share_a_secret(workspace):
    secrets = {api_key_create(tenant=workspace, audience="ingest")[1] for _ in range(5)}
    assert len(secrets) == 5


def test_cli_revoke_makes_the_key_401(workspace):
    data = create_key_cli("--tenant", "acme", "--audience", "ingest")
    client = client_for(data["key"])
    assert client.post("/v1/query", {}, format="json").status_code == 200
    call_command("api_key", "revoke", data["id"], stdout=StringIO())
    response = client.post("/v1/query", {}, format="json")
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"
    assert set(response.json()) >= {"code", "detail"}
    assert ApiKey.objects.get(pk=data["id"]).revoked_at is not None


def test_revoked_key_cannot_submit_and_nothing_is_written(workspace):
    key, secret = api_key_create(tenant=workspace, audience="ingest")
    api_key_revoke(key=key)
    before = written_counts()
    response = client_for(secret).post("/v1/submissions", submission_payload(), format="json")
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"
    assert written_counts() == before


def test_revoking_twice_is_harmless(workspace):
    key, _ = api_key_create(tenant=workspace, audience="ingest")
    first = api_key_revoke(key=key).revoked_at
    assert api_key_revoke(key=key).revoked_at == first


def test_cli_revoke_unknown_key_exits_1(workspace):
    with pytest.raises(CommandError) as info:
        call_command("api_key", "revoke", "00000000-0000-0000-0000-000000000000")
    assert info.value.returncode == 1


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_AUTHORIZATION": "Bearer tlh_thisKeyDoesNotExist"},
        {"HTTP_AUTHORIZATION": "Bearer"},
        {"HTTP_AUTHORIZATION": "Basic YWxpY2U6c2VjcmV0"},
    ],
    ids=["no key", "unknown key", "empty bearer", "basic auth"],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "/v1/query"), ("get", "/v1/nodes/{id}"), ("post", "/v1/submissions")],
)
def test_no_or_unknown_key_is_401_unauthenticated(workspace, client, headers, method, path):
    before = written_counts()
    url = path.format(id="00000000-0000-0000-0000-000000000000")
    if method == "post":
        body = submission_payload() if "submissions" in url else {}
        response = client.post(url, body, content_type="application/json", **headers)
    else:
        response = client.get(url, **headers)
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"
    assert "detail" in response.json()
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert written_counts() == before


class _CallerEchoView(APIView):
    """Reads the caller although its permission lets a request without a key in."""

    permission_classes = [AllowAny]

    def get(self, request):
        return Response({"tenant": caller_of(request).tenant.slug})


def test_caller_of_without_a_key_is_the_contracts_401(workspace, client):
    response = _CallerEchoView.as_view()(APIRequestFactory().get("/anything"))
    reference = client.post("/v1/query", {}, content_type="application/json")
    assert response.status_code == reference.status_code == 401
    assert (
        response.data
        == reference.json()
        == {
            "code": "UNAUTHENTICATED",
            "detail": "Authentication credentials were not provided.",
        }
    )
    assert response["WWW-Authenticate"] == reference["WWW-Authenticate"]


def test_caller_of_is_the_keys_caller(workspace):
    _, secret = api_key_create(tenant=workspace, audience="ingest")
    request = APIRequestFactory().get("/anything", HTTP_AUTHORIZATION=f"Bearer {secret}")
    response = _CallerEchoView.as_view()(request)
    assert response.status_code == 200 and response.data == {"tenant": workspace.slug}


def test_erased_persons_key_stops_working(workspace, people):
    _, secret = api_key_create(tenant=workspace, person=people["alice"])
    Person.objects.filter(pk=people["alice"].pk).update(erased_at="2026-01-01T00:00:00Z")
    response = client_for(secret).post("/v1/query", {}, format="json")
    assert response.status_code == 401


# --- bindings and rights ---


def test_a_key_cannot_be_bound_to_a_person_and_an_audience(workspace, people):
    before = written_counts()
    with pytest.raises(InvalidInput):
        api_key_create(tenant=workspace, person=people["alice"], audience="ingest")
    assert written_counts() == before


def test_the_database_refuses_a_key_with_person_and_audience(workspace, people):
    with pytest.raises(IntegrityError), transaction.atomic():
        ApiKey.objects.create(
            tenant=workspace,
            prefix="tlh_x",
            key_hash="0" * 64,
            person=people["alice"],
            role="editor",
            audience="ingest",
        )


def test_cli_refuses_person_and_audience_together(workspace):
    before = written_counts()
    with pytest.raises(CommandError) as info:
        create_key_cli("--tenant", "acme", "--person", "alice@acme.test", "--audience", "ingest")
    assert info.value.returncode == 2
    assert written_counts() == before


def test_role_needs_a_person(workspace):
    before = written_counts()
    with pytest.raises(InvalidInput):
        api_key_create(tenant=workspace, role="viewer")
    with pytest.raises(CommandError):
        create_key_cli("--tenant", "acme", "--role", "viewer")
    assert written_counts() == before


@pytest.mark.parametrize(
    ("name", "role"), [("vera", "editor"), ("vera", "steward"), ("alice", "steward")]
)
def test_a_key_role_above_the_persons_rights_is_refused(workspace, people, name, role):
    before = written_counts()
    with pytest.raises(DomainError):
        api_key_create(tenant=workspace, person=people[name], role=role)
    with pytest.raises(CommandError) as info:
        create_key_cli("--tenant", "acme", "--person", f"{name}@acme.test", "--role", role)
    assert info.value.returncode == 1
    assert written_counts() == before


def test_a_person_of_another_tenant_cannot_be_bound(workspace, people):
    globex = workspace_load(data=GLOBEX).tenant
    before = written_counts()
    with pytest.raises(DomainError):
        api_key_create(tenant=globex, person=people["alice"])
    assert written_counts() == before


@pytest.mark.parametrize(
    ("name", "key_role", "rights"),
    [
        ("sam", "steward", "steward"),
        ("sam", "editor", "editor"),
        ("sam", "viewer", "viewer"),
        ("alice", "editor", "editor"),
        ("alice", "viewer", "viewer"),
        ("vera", None, "viewer"),
    ],
)
def test_rights_are_the_lower_of_key_role_and_person_role(
    workspace, people, name, key_role, rights
):
    key, _ = api_key_create(tenant=workspace, person=people[name], role=key_role)
    caller = caller_for_key(key)
    assert caller.rights == rights
    assert caller.is_steward == (rights == "steward")


def test_rights_follow_a_later_demotion_of_the_person(workspace, people):
    key, _ = api_key_create(tenant=workspace, person=people["sam"], role="steward")
    data = json.loads(json.dumps(WORKSPACE))
    data["people"][4]["role"] = "editor"
    workspace_load(data=data)
    key = ApiKey.objects.select_related("person").get(pk=key.pk)
    assert caller_for_key(key).rights == "editor"


def test_a_stewards_lower_key_does_not_see_the_whole_tenant(workspace, people, ingest_client):
    """min(key role, person role) decides: sam is a steward, but his editor key reads
    only what the ACL grants him."""
    payload = fact_payload(acl=["email:alice@acme.test"])
    node_id = ingest_client.post("/v1/submissions", payload, format="json").json()["nodes"][0]["id"]
    _, steward_secret = api_key_create(tenant=workspace, person=people["sam"], role="steward")
    _, editor_secret = api_key_create(tenant=workspace, person=people["sam"], role="editor")
    assert client_for(steward_secret).get(f"/v1/nodes/{node_id}").status_code == 200
    assert client_for(editor_secret).get(f"/v1/nodes/{node_id}").status_code == 404


# --- tenant isolation ---


@pytest.fixture
def acme_facts(workspace, ingest_client):
    """Tenant A (acme) with a contract term, its clarification and alice's PERSON node."""
    response = ingest_client.post("/v1/submissions", submission_payload(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    return {
        "fact": body["nodes"][0]["id"],
        "person": body["nodes"][1]["id"],
        "clarification": body["clarifications"][0]["id"],
    }


@pytest.fixture
def globex_clients(db):
    tenant = workspace_load(data=GLOBEX).tenant
    people = {p.email.split("@")[0]: p for p in tenant.people.all()}
    return {
        "ingest": client_for(api_key_create(tenant=tenant, audience="ingest")[1]),
        "clarify": client_for(api_key_create(tenant=tenant, audience="clarify")[1]),
        "unbound": client_for(api_key_create(tenant=tenant)[1]),
        "steward": client_for(api_key_create(tenant=tenant, person=people["stan"])[1]),
        "editor": client_for(api_key_create(tenant=tenant, person=people["gina"])[1]),
    }


CALLERS = ["ingest", "clarify", "unbound", "steward", "editor"]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("what", ["fact", "person"])
def test_another_tenants_node_is_404(acme_facts, globex_clients, caller, what):
    client = globex_clients[caller]
    node_id = acme_facts[what]
    for url in (f"/v1/nodes/{node_id}", f"/v1/nodes/{node_id}/history"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert response.json()["code"] == "NOT_FOUND"


def test_another_tenants_node_looks_exactly_like_a_missing_one(acme_facts, globex_clients):
    client = globex_clients["steward"]
    foreign = client.get(f"/v1/nodes/{acme_facts['fact']}")
    missing = client.get("/v1/nodes/00000000-0000-0000-0000-000000000000")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()


@pytest.mark.parametrize("caller", CALLERS)
def test_another_tenants_clarification_is_404(acme_facts, globex_clients, caller):
    client = globex_clients[caller]
    clar = acme_facts["clarification"]
    response = client.get(f"/v1/clarifications/{clar}")
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"
    listing = client.get("/v1/clarifications")
    assert listing.status_code == 200
    assert clar not in {c["id"] for c in listing.json()["results"]}


@pytest.mark.parametrize(
    ("caller", "extra"),
    [
        ("steward", {}),
        ("editor", {}),
        ("steward", {"stewardOverride": True}),
        ("clarify", {"responder": "stan", "rights": "steward"}),
    ],
)
def test_another_tenants_clarification_cannot_be_answered(
    acme_facts, globex_clients, caller, extra
):
    """Callers that pass trust resolution get 404 for acme's clarification, never 403,
    and nothing is written."""
    if extra.get("responder") == "stan":
        extra = {**extra, "responder": str(Person.objects.get(email="stan@globex.test").pk)}
    before = written_counts()
    response = globex_clients[caller].post(
        f"/v1/clarifications/{acme_facts['clarification']}/answer",
        {"answerIndex": 0, **extra},
        format="json",
    )
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"
    assert written_counts() == before


@pytest.mark.parametrize("caller", CALLERS)
def test_query_returns_nothing_of_another_tenant(acme_facts, globex_clients, caller):
    client = globex_clients[caller]
    for body in ({}, {"labels": ["CONTRACT_TERM"]}, {"labels": ["PERSON"]}, {"text": "msa"}):
        response = client.post("/v1/query", body, format="json")
        assert response.status_code == 200
        assert response.json()["records"] == [], body


def test_the_same_query_sees_its_own_tenant(acme_facts, ingest_client):
    """The control for the isolation tests: acme's own token does see the facts."""
    response = ingest_client.post("/v1/query", {}, format="json")
    ids = {r["id"] for r in response.json()["records"]}
    assert {acme_facts["fact"], acme_facts["person"]} <= ids


def test_same_source_identity_in_two_tenants_stays_separate(acme_facts, globex_clients):
    response = globex_clients["ingest"].post(
        "/v1/submissions",
        submission_payload(
            source_acl=[], nodes=submission_payload()["nodes"][:1], edges=[], ambiguities=[]
        ),
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["nodes"][0]["id"] != acme_facts["fact"]


def test_person_alias_resolution_is_tenant_scoped(acme_facts, globex_clients):
    """Naming acme's alice from globex must not resolve to (or reveal) acme's person."""
    payload = fact_payload(
        labels=["PERSON"], properties={"email": "alice@acme.test"}, key="p", acl=[]
    )
    response = globex_clients["ingest"].post("/v1/submissions", payload, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["nodes"][0]["id"] != acme_facts["person"]


# --- the unbound API key (no person, no audience) ---


def test_an_unbound_key_reads_the_whole_tenant_and_writes_nothing(workspace, people, ingest_client):
    """Decision (CONTRACT §2 binds only principal keys to a principal's grants): a key with
    neither person nor audience is the tenant's read-only integration key. It reads every
    source of its tenant — here a finance-only fact that a legal editor cannot see — and
    every write path refuses it without writing."""
    body = ingest_client.post(
        "/v1/submissions", submission_payload(source_acl=["group:finance"]), format="json"
    ).json()
    fact, clar = body["nodes"][0]["id"], body["clarifications"][0]["id"]
    unbound = client_for(api_key_create(tenant=workspace)[1])
    editor = client_for(api_key_create(tenant=workspace, person=people["vera"])[1])
    assert unbound.get(f"/v1/nodes/{fact}").status_code == 200
    assert editor.get(f"/v1/nodes/{fact}").status_code == 404
    assert fact in {r["id"] for r in unbound.post("/v1/query", {}, format="json").json()["records"]}
    assert unbound.get(f"/v1/clarifications/{clar}").status_code == 200

    before = written_counts()
    answer = unbound.post(f"/v1/clarifications/{clar}/answer", {"answerIndex": 0}, format="json")
    assert (answer.status_code, answer.json()["code"]) == (403, "RESPONDER_NOT_AUTHORISED")
    submission = unbound.post("/v1/submissions", fact_payload(), format="json")
    assert (submission.status_code, submission.json()["code"]) == (403, "PERMISSION_DENIED")
    lease = unbound.post("/v1/jobs/lease", {"kinds": ["clarify:"]}, format="json")
    assert (lease.status_code, lease.json()["code"]) == (403, "JOB_KIND_FORBIDDEN")
    assert written_counts() == before
