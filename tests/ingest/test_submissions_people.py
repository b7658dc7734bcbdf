"""PERSON nodes that match no known person (CONTRACT §3.1): read only under the ACL of the
document that named them, never duplicated, and adopted as the person's one node when the
person becomes known — by a workspace load or at the next resolution."""

import copy

import pytest

from graph.models import Edge, Node, Source
from tenancy.models import Person, PersonAlias
from tenancy.services import api_key_create, workspace_load

from ..conftest import WORKSPACE, client_for
from ..factories import PersonFactory, fact_payload, submission_payload, written_counts

pytestmark = pytest.mark.django_db

NORA = {"name": "Nora Newcomer", "email": "nora@acme.test", "role": "editor"}


def submit(client, payload) -> dict:
    response = client.post("/v1/submissions", payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def key_of(email: str):
    person = Person.objects.get(email=email)
    return client_for(api_key_create(tenant=person.tenant, person=person)[1])


def stranger_in(external_id: str, acl: list[str], **properties: str) -> dict:
    """A contract term AUTHORED_BY a person the workspace does not know."""
    payload = fact_payload(external_id=external_id, acl=acl, key="term")
    payload["nodes"].append(
        {
            "ref": 1,
            "labels": ["PERSON"],
            "properties": {"email": "nora@acme.test", **properties},
        }
    )
    payload["edges"] = [{"type": "AUTHORED_BY", "from": 0, "to": 1}]
    return payload


def load_nora(**extra: object) -> Person:
    data = copy.deepcopy(WORKSPACE)
    data["people"].append({**NORA, **extra})
    workspace_load(data=data)
    return Person.objects.get(email="nora@acme.test")


# --- reading an unresolved person node ---


def test_an_unresolved_person_node_is_read_under_its_documents_acl(ingest_client, people):
    body = submit(
        ingest_client,
        stranger_in("board/minutes.md", ["group:finance"], title="Outside counsel, Project X"),
    )
    stranger = body["nodes"][1]["id"]
    node = Node.objects.get(pk=stranger)
    assert (node.source_id, node.person_id) == (None, None)
    assert node.origin == Source.objects.get(external_id="board/minutes.md")
    # olga (finance) may read the minutes, alice and vera (legal) may not
    assert key_of("olga@acme.test").get(f"/v1/nodes/{stranger}").status_code == 200
    for email in ("alice@acme.test", "vera@acme.test"):
        client = key_of(email)
        assert client.get(f"/v1/nodes/{stranger}").status_code == 404
        assert client.get(f"/v1/nodes/{stranger}/history").status_code == 404
        records = client.post("/v1/query", {"labels": ["PERSON"]}, format="json").json()
        assert stranger not in {r["id"] for r in records["records"]}
        assert "Project X" not in str(records)
    steward = key_of("sam@acme.test").post("/v1/query", {"text": "project x"}, format="json")
    assert [r["id"] for r in steward.json()["records"]] == [stranger]


def test_a_known_persons_node_is_read_by_the_whole_tenant(ingest_client, people):
    body = submit(ingest_client, submission_payload(source_acl=["group:finance"]))
    alice_node = body["nodes"][1]["id"]
    assert key_of("vera@acme.test").get(f"/v1/nodes/{alice_node}").status_code == 200


def test_an_unknown_person_named_twice_is_one_node_under_the_first_documents_acl(
    ingest_client,
):
    first = submit(ingest_client, stranger_in("a.md", ["group:finance"]))
    second = submit(ingest_client, stranger_in("b.md", ["group:legal"]))
    assert first["nodes"][1]["id"] == second["nodes"][1]["id"]
    assert Node.objects.filter(key="email:nora@acme.test").count() == 1
    assert Node.objects.get(key="email:nora@acme.test").origin.external_id == "a.md"
    # both documents' facts point at it
    assert Edge.objects.filter(to_node_id=first["nodes"][1]["id"]).count() == 2


# --- adoption when the person becomes known ---


def test_a_workspace_load_adopts_the_alias_keyed_node(ingest_client):
    body = submit(ingest_client, stranger_in("a.md", ["group:finance"]))
    stranger, fact = body["nodes"][1]["id"], body["nodes"][0]["id"]
    nora = load_nora()
    node = Node.objects.get(pk=stranger)
    assert (node.person, node.key) == (nora, f"person:{nora.pk}")
    current = node.versions.get(tx_to__isnull=True)
    assert current.properties == {"name": "Nora Newcomer", "email": "nora@acme.test"}
    assert node.versions.count() == 2  # the document's version stays in the history
    assert Edge.objects.get(from_node_id=fact).to_node_id == node.pk
    # the next submission naming her resolves to that node: never a second one
    before = written_counts()
    again = submit(ingest_client, stranger_in("b.md", ["group:legal"]))
    assert again["nodes"][1]["id"] == stranger
    assert Node.objects.filter(person=nora).count() == 1
    assert not Node.objects.filter(key="email:nora@acme.test").exists()
    assert written_counts()["Node"] == before["Node"] + 1  # b.md's fact only


def test_an_adopted_node_stays_under_its_origins_acl(ingest_client):
    body = submit(ingest_client, stranger_in("a.md", ["group:finance"], title="Secret role"))
    load_nora()
    stranger = body["nodes"][1]["id"]
    assert key_of("alice@acme.test").get(f"/v1/nodes/{stranger}/history").status_code == 404
    assert key_of("olga@acme.test").get(f"/v1/nodes/{stranger}/history").status_code == 200


def test_resolution_adopts_the_alias_keyed_node_when_the_person_has_none(ingest_client, workspace):
    """A person who exists without a node (added outside a workspace load) and is named by
    an alias with an unresolved node: the submission adopts that node."""
    body = submit(ingest_client, stranger_in("a.md", ["group:finance"]))
    nora = PersonFactory(tenant=workspace, name="Nora", email="nora@acme.test")
    PersonAlias.objects.create(tenant=workspace, person=nora, kind="email", value=nora.email)
    again = submit(ingest_client, stranger_in("b.md", ["group:legal"]))
    assert again["nodes"][1]["id"] == body["nodes"][1]["id"]
    assert Node.objects.get(person=nora).pk == Node.objects.get(pk=body["nodes"][1]["id"]).pk
    assert Node.objects.filter(tenant=workspace, key__startswith="email:").count() == 0


def test_a_new_alias_of_a_person_with_a_node_merges_the_edges_onto_it(ingest_client, people):
    alice_node = submit(ingest_client, submission_payload())["nodes"][1]["id"]
    payload = fact_payload(external_id="c.md", key="term")
    payload["nodes"].append({"ref": 1, "labels": ["PERSON"], "properties": {"upn": "a@corp.test"}})
    payload["edges"] = [{"type": "AUTHORED_BY", "from": 0, "to": 1}]
    body = submit(ingest_client, payload)
    orphan = body["nodes"][1]["id"]
    assert orphan != alice_node
    data = copy.deepcopy(WORKSPACE)
    data["people"][0]["aliases"]["upn"] = "a@corp.test"
    workspace_load(data=data)
    assert str(Edge.objects.get(from_node_id=body["nodes"][0]["id"]).to_node_id) == alice_node
    assert not Edge.objects.filter(to_node_id=orphan).exists()
    assert Node.objects.filter(person=people["alice"]).count() == 1
    again = submit(ingest_client, payload)
    assert again["nodes"][1]["id"] == alice_node


def test_an_unchanged_reload_adopts_nothing(ingest_client):
    submit(ingest_client, stranger_in("a.md", ["group:finance"]))
    workspace_load(data=copy.deepcopy(WORKSPACE))
    assert Node.objects.get(key="email:nora@acme.test").person is None
