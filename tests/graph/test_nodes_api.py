"""Facts and queries over HTTP (CONTRACT §3.3): the record shape, as-of reads by validAt and
txAt, history, and the read restriction to sources the caller may read."""

import pytest
from django.core.signals import request_started
from django.db import connection, reset_queries
from django.test.utils import CaptureQueriesContext

from common.times import now_us
from graph.models import Node, NodeVersion, Source
from tenancy.services import api_key_create

from ..conftest import client_for
from ..factories import JAN_2027, OCT_2026, fact_payload, submission_payload
from .test_asof import assert_as_of_form, version_sql

pytestmark = pytest.mark.django_db

RECORD_KEYS = {
    "id",
    "labels",
    "properties",
    "validFrom",
    "validTo",
    "txFrom",
    "txTo",
    "confidence",
    "source",
    "provenance",
    "evidenceClass",
    "pendingClarification",
}
SOURCE_KEYS = {"system", "externalId", "title"}
PROVENANCE_KEYS = {"sourceVersionTx", "spans", "clarification"}
PENDING_KEYS = {
    "id",
    "state",
    "severity",
    "candidates",
    "appliedCandidateConfidence",
    "quorumState",
}


def submit(client, payload):
    response = client.post("/v1/submissions", payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def assert_record_shape(record):
    assert set(record) == RECORD_KEYS
    if record["source"] is not None:
        assert set(record["source"]) == SOURCE_KEYS
    assert set(record["provenance"]) == PROVENANCE_KEYS
    if record["pendingClarification"] is not None:
        assert set(record["pendingClarification"]) == PENDING_KEYS


# --- the record ---


def test_node_record_shape_for_a_pending_best_guess(ingest_client):
    body = submit(ingest_client, submission_payload())
    node = body["nodes"][0]
    clar = body["clarifications"][0]
    response = ingest_client.get(f"/v1/nodes/{node['id']}")
    assert response.status_code == 200
    record = response.json()
    assert_record_shape(record)
    payload = submission_payload()
    span = payload["spans"][0]
    assert record == {
        "id": node["id"],
        "labels": ["CONTRACT_TERM"],
        "properties": {"name": "MSA effective period"},
        "validFrom": OCT_2026,
        "validTo": None,
        "txFrom": node["versionTx"],
        "txTo": None,
        "confidence": 0.45,
        "source": {
            "system": "sharepoint",
            "externalId": "contracts/msa.docx",
            "title": "Master services agreement",
        },
        "provenance": {
            "sourceVersionTx": body["sourceVersionTx"],
            "spans": [{"start": span["start"], "end": span["end"]}],
            "clarification": clar["id"],
        },
        "evidenceClass": "system_extraction",
        "pendingClarification": {
            "id": clar["id"],
            "state": "open",
            "severity": clar["severity"],
            "candidates": [
                {
                    "index": 0,
                    "validFrom": OCT_2026,
                    "validTo": None,
                    "label": "1 Oct 2026 (next quarter)",
                },
                {"index": 1, "validFrom": JAN_2027, "validTo": None, "label": "1 Jan 2027"},
            ],
            "appliedCandidateConfidence": 0.45,
            "quorumState": record["pendingClarification"]["quorumState"],
        },
    }
    assert isinstance(record["pendingClarification"]["quorumState"], str)


def test_node_record_shape_for_a_confirmed_fact(ingest_client):
    body = submit(ingest_client, fact_payload(valid_from=1_000, valid_to=2_000))
    node = body["nodes"][0]
    record = ingest_client.get(f"/v1/nodes/{node['id']}", {"validAt": 1_500}).json()
    assert record == {
        "id": node["id"],
        "labels": ["CONTRACT_TERM"],
        "properties": {"name": "Plain fact"},
        "validFrom": 1_000,
        "validTo": 2_000,
        "txFrom": node["versionTx"],
        "txTo": None,
        "confidence": 1.0,
        "source": {"system": "notes", "externalId": "notes/plain.md", "title": ""},
        "provenance": {
            "sourceVersionTx": body["sourceVersionTx"],
            "spans": [],
            "clarification": None,
        },
        "evidenceClass": "system_extraction",
        "pendingClarification": None,
    }


def test_query_records_have_the_same_shape(ingest_client):
    body = submit(ingest_client, submission_payload())
    response = ingest_client.post("/v1/query", {"labels": ["CONTRACT_TERM"]}, format="json")
    assert response.status_code == 200
    assert set(response.json()) == {"records"}
    records = response.json()["records"]
    assert [r["id"] for r in records] == [body["nodes"][0]["id"]]
    assert_record_shape(records[0])
    assert records[0] == ingest_client.get(f"/v1/nodes/{records[0]['id']}").json()


def test_unknown_or_malformed_node_id_is_404(ingest_client):
    for node_id in ("00000000-0000-0000-0000-000000000000", "not-a-uuid"):
        response = ingest_client.get(f"/v1/nodes/{node_id}")
        assert response.status_code == 404
        assert response.json()["code"] == "NOT_FOUND"
        assert ingest_client.get(f"/v1/nodes/{node_id}/history").status_code == 404


# --- as-of via the API ---


@pytest.fixture
def two_versions(ingest_client):
    """A fact written twice: v1 valid [1000, 2000) named "first", v2 valid [1500, ∞)."""
    first = submit(ingest_client, fact_payload(valid_from=1_000, valid_to=2_000))
    second = submit(
        ingest_client,
        fact_payload(
            text="A plain fact, revised.",
            properties={"name": "second"},
            valid_from=1_500,
        ),
    )
    assert first["nodes"][0]["id"] == second["nodes"][0]["id"]
    return {
        "id": first["nodes"][0]["id"],
        "tx1": first["nodes"][0]["versionTx"],
        "tx2": second["nodes"][0]["versionTx"],
    }


def test_tx_at_returns_the_version_recorded_then(ingest_client, two_versions):
    url = f"/v1/nodes/{two_versions['id']}"
    tx1, tx2 = two_versions["tx1"], two_versions["tx2"]
    assert tx2 > tx1
    old = ingest_client.get(url, {"txAt": tx1, "validAt": 1_200}).json()
    assert (old["properties"], old["txFrom"], old["txTo"]) == ({"name": "Plain fact"}, tx1, tx2)
    old_edge = ingest_client.get(url, {"txAt": tx2 - 1, "validAt": 1_200}).json()
    assert old_edge["txFrom"] == tx1
    new = ingest_client.get(url, {"txAt": tx2, "validAt": 1_600}).json()
    assert (new["properties"], new["txFrom"], new["txTo"]) == ({"name": "second"}, tx2, None)
    default = ingest_client.get(url, {"validAt": 1_600}).json()
    assert default["txFrom"] == tx2


def test_before_the_first_version_is_404(ingest_client, two_versions):
    url = f"/v1/nodes/{two_versions['id']}"
    response = ingest_client.get(url, {"txAt": two_versions["tx1"] - 1, "validAt": 1_200})
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("tx", "valid_at", "visible"),
    [
        ("tx1", 999, False),
        ("tx1", 1_000, True),
        ("tx1", 1_999, True),
        ("tx1", 2_000, False),
        ("tx2", 1_499, False),
        ("tx2", 1_500, True),
        ("tx2", 10**15, True),
    ],
)
def test_valid_at_outside_the_interval_is_404(ingest_client, two_versions, tx, valid_at, visible):
    response = ingest_client.get(
        f"/v1/nodes/{two_versions['id']}", {"txAt": two_versions[tx], "validAt": valid_at}
    )
    assert response.status_code == (200 if visible else 404)


def test_default_valid_time_is_now(ingest_client):
    past = submit(ingest_client, fact_payload(valid_from=1_000, valid_to=2_000))
    future = submit(
        ingest_client, fact_payload(external_id="notes/future.md", valid_from=now_us() + 10**12)
    )
    assert ingest_client.get(f"/v1/nodes/{past['nodes'][0]['id']}").status_code == 404
    assert ingest_client.get(f"/v1/nodes/{future['nodes'][0]['id']}").status_code == 404
    current = submit(ingest_client, fact_payload(external_id="notes/now.md", valid_from=1_000))
    assert ingest_client.get(f"/v1/nodes/{current['nodes'][0]['id']}").status_code == 200


def test_as_of_times_accept_rfc3339(ingest_client, two_versions):
    url = f"/v1/nodes/{two_versions['id']}"
    response = ingest_client.get(url, {"validAt": "1970-01-01T00:00:00.001200Z"})
    assert response.status_code == 404  # v2 is valid from 1500 µs
    response = ingest_client.get(url, {"validAt": "1970-01-01T00:00:00.001600+00:00"})
    assert response.status_code == 200
    assert response.json()["properties"] == {"name": "second"}


@pytest.mark.parametrize("bad", ["-1", "yesterday", "99999999999999999999", "1.5"])
def test_bad_as_of_times_are_refused(ingest_client, two_versions, bad):
    response = ingest_client.get(f"/v1/nodes/{two_versions['id']}", {"txAt": bad})
    assert response.status_code in (400, 422)
    assert response.json()["code"] == "INVALID_INPUT"


def test_history_is_every_version_oldest_first(ingest_client, two_versions):
    submit(ingest_client, fact_payload(text="Third text.", properties={"name": "third"}))
    response = ingest_client.get(f"/v1/nodes/{two_versions['id']}/history")
    assert response.status_code == 200
    records = response.json()["records"]
    assert [r["properties"]["name"] for r in records] == ["Plain fact", "second", "third"]
    for record in records:
        assert_record_shape(record)
    assert records[0]["txFrom"] == two_versions["tx1"]
    assert [r["txTo"] for r in records[:-1]] == [r["txFrom"] for r in records[1:]]
    assert records[-1]["txTo"] is None
    assert len(records) == NodeVersion.objects.filter(node_id=two_versions["id"]).count()


def test_query_at_an_old_tx_returns_the_old_version(ingest_client, two_versions):
    body = {"labels": ["CONTRACT_TERM"], "validAt": 1_200, "txAt": two_versions["tx1"]}
    records = ingest_client.post("/v1/query", body, format="json").json()["records"]
    assert [(r["id"], r["properties"]["name"]) for r in records] == [
        (two_versions["id"], "Plain fact")
    ]
    body = {"labels": ["CONTRACT_TERM"], "validAt": 1_200, "txAt": two_versions["tx2"]}
    assert ingest_client.post("/v1/query", body, format="json").json()["records"] == []
    body = {"labels": ["CONTRACT_TERM"], "validAt": 1_600}
    records = ingest_client.post("/v1/query", body, format="json").json()["records"]
    assert [r["properties"]["name"] for r in records] == ["second"]


def test_query_filters_by_all_labels_and_by_text(ingest_client):
    a = submit(
        ingest_client,
        fact_payload(
            external_id="a", labels=["CONTRACT_TERM", "RENEWAL"], properties={"name": "Alpha"}
        ),
    )["nodes"][0]["id"]
    b = submit(
        ingest_client,
        fact_payload(external_id="b", labels=["CONTRACT_TERM"], properties={"name": "Beta"}),
    )["nodes"][0]["id"]
    c = submit(
        ingest_client,
        fact_payload(external_id="c", labels=["MILESTONE"], properties={"name": "Alphabet"}),
    )["nodes"][0]["id"]

    def ids(body):
        response = ingest_client.post("/v1/query", body, format="json")
        assert response.status_code == 200
        return {r["id"] for r in response.json()["records"]}

    assert ids({"labels": ["CONTRACT_TERM"]}) == {a, b}
    assert ids({"labels": ["CONTRACT_TERM", "RENEWAL"]}) == {a}
    assert ids({"labels": ["RENEW"]}) == set()  # whole labels, not substrings
    assert ids({"text": "alpha"}) == {a}  # words, not substrings: "Alphabet" is another
    assert ids({"text": "ALPHABETS", "labels": ["MILESTONE"]}) == {c}  # stemmed, any case
    assert ids({"text": "alphabet", "labels": ["CONTRACT_TERM"]}) == set()
    assert ids({}) == {a, b, c}


def test_as_of_reads_over_http_use_the_as_of_probe(ingest_client, two_versions):
    """`GET /v1/nodes/{id}?txAt=` and `POST /v1/query` with `txAt` read node versions
    only through `tx_from <= T ORDER BY tx_from DESC LIMIT 1`, never `OR tx_to > T`."""
    # Django empties the query log when a request starts: keep it for the capture.
    request_started.disconnect(reset_queries)
    try:
        url = f"/v1/nodes/{two_versions['id']}"
        params = {"txAt": two_versions["tx1"], "validAt": 1_200}
        responses = []
        single = version_sql(lambda: responses.append(ingest_client.get(url, params)))
        body = {"labels": ["CONTRACT_TERM"], "validAt": 1_200, "txAt": two_versions["tx1"]}
        query = version_sql(
            lambda: responses.append(ingest_client.post("/v1/query", body, format="json"))
        )
    finally:
        request_started.connect(reset_queries)
    assert responses[0].json()["properties"] == {"name": "Plain fact"}
    assert_as_of_form(single)
    as_of = [sql for sql in query if "tx_from" in sql]  # not the records' caveat lookups
    assert_as_of_form(as_of)
    assert [r["properties"]["name"] for r in responses[1].json()["records"]] == ["Plain fact"]


def test_query_labels_match_case_insensitively(ingest_client):
    a = submit(ingest_client, fact_payload(labels=["CONTRACT_TERM"]))["nodes"][0]["id"]
    for labels in (["contract_term"], ["Contract_Term"], ["CONTRACT_TERM"]):
        records = ingest_client.post("/v1/query", {"labels": labels}, format="json").json()
        assert [r["id"] for r in records["records"]] == [a], labels


def test_query_is_cut_at_limit_in_node_id_order(ingest_client):
    ids = sorted(
        submit(ingest_client, fact_payload(external_id=f"l/{i}.md"))["nodes"][0]["id"]
        for i in range(3)
    )

    def query(**body):
        response = ingest_client.post("/v1/query", body, format="json")
        assert response.status_code == 200, response.json()
        return [r["id"] for r in response.json()["records"]]

    assert query() == ids
    assert query(limit=2) == ids[:2]
    assert query(limit=1000) == ids


def test_query_returns_at_most_100_records_by_default(ingest_client, workspace):
    source = Source.objects.create(tenant=workspace, system="bulk", external_id="many")
    for i in range(101):
        node = Node.objects.create(tenant=workspace, source=source, key=f"k{i}")
        NodeVersion.objects.create(node=node, seq=1, labels=["BULK"], tx_from=1)
    records = ingest_client.post("/v1/query", {"labels": ["BULK"]}, format="json").json()
    assert len(records["records"]) == 100


@pytest.mark.parametrize("limit", [0, 1001, "all"])
def test_query_refuses_a_limit_out_of_range(ingest_client, limit):
    response = ingest_client.post("/v1/query", {"limit": limit}, format="json")
    assert response.status_code in (400, 422)
    assert response.json()["code"] == "INVALID_INPUT"
    assert any(e["path"] == "limit" for e in response.json()["errors"])


def test_query_refuses_unknown_fields(ingest_client):
    response = ingest_client.post("/v1/query", {"label": ["X"]}, format="json")
    assert response.status_code in (400, 422)
    assert response.json()["code"] == "INVALID_INPUT"
    assert any(e["path"] == "label" for e in response.json()["errors"])


# --- who may see what ---


@pytest.fixture
def restricted(ingest_client):
    """One fact per ACL: legal-only, finance-only, alice by email, alice by aad oid, nobody."""
    acls = {
        "legal": ["group:legal"],
        "finance": ["group:finance"],
        "email": ["email:Olga@Acme.test"],
        "aad": ["aad:OID-ALICE"],
        "nobody": [],
    }
    return {
        name: submit(
            ingest_client,
            fact_payload(external_id=f"acl/{name}", acl=acl, properties={"name": name}),
        )["nodes"][0]["id"]
        for name, acl in acls.items()
    }


VISIBLE = {
    "alice": {"legal", "aad"},  # legal; aad:oid-alice
    "bob": {"legal"},
    "olga": {"finance", "email"},  # finance only; email:olga
    "vera": {"legal"},
    "sam": {"legal", "finance", "email", "aad", "nobody"},  # a steward sees everything
}


@pytest.mark.parametrize("name", sorted(VISIBLE))
def test_people_see_exactly_what_the_acl_grants(restricted, person_client, name):
    client = person_client(name)
    for fact, node_id in restricted.items():
        expected = 200 if fact in VISIBLE[name] else 404
        assert client.get(f"/v1/nodes/{node_id}").status_code == expected, fact
        assert client.get(f"/v1/nodes/{node_id}/history").status_code == expected, fact
    records = client.post("/v1/query", {"labels": ["CONTRACT_TERM"]}, format="json").json()
    seen = {r["properties"]["name"] for r in records["records"]}
    assert seen == VISIBLE[name]


def test_the_refusal_is_the_same_404_as_a_missing_node(restricted, person_client):
    client = person_client("olga")
    hidden = client.get(f"/v1/nodes/{restricted['legal']}")
    missing = client.get("/v1/nodes/00000000-0000-0000-0000-000000000000")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


@pytest.mark.parametrize("client_fixture", ["ingest_client", "clarify_client"])
def test_service_tokens_see_the_whole_tenant(restricted, request, client_fixture):
    client = request.getfixturevalue(client_fixture)
    for node_id in restricted.values():
        assert client.get(f"/v1/nodes/{node_id}").status_code == 200
    records = client.post("/v1/query", {"labels": ["CONTRACT_TERM"]}, format="json").json()
    assert {r["id"] for r in records["records"]} == set(restricted.values())


def test_changing_the_acl_on_resubmission_moves_access(ingest_client, person_client):
    node_id = submit(ingest_client, fact_payload(acl=["group:legal"]))["nodes"][0]["id"]
    alice, olga = person_client("alice"), person_client("olga")
    assert (
        alice.get(f"/v1/nodes/{node_id}").status_code,
        olga.get(f"/v1/nodes/{node_id}").status_code,
    ) == (200, 404)
    submit(ingest_client, fact_payload(acl=["group:finance"]))
    assert Source.objects.get(external_id="notes/plain.md").acl == ["group:finance"]
    assert (
        alice.get(f"/v1/nodes/{node_id}").status_code,
        olga.get(f"/v1/nodes/{node_id}").status_code,
    ) == (404, 200)


def test_person_nodes_are_readable_by_everyone_in_the_tenant(ingest_client, person_client):
    body = submit(ingest_client, submission_payload())
    person_node = body["nodes"][1]["id"]
    fact = body["nodes"][0]["id"]
    olga = person_client("olga")  # finance: cannot read the legal contract
    assert olga.get(f"/v1/nodes/{fact}").status_code == 404
    assert olga.get(f"/v1/nodes/{person_node}").status_code == 200


def test_a_steward_key_with_viewer_role_is_restricted(restricted, workspace, people):
    _, secret = api_key_create(tenant=workspace, person=people["sam"], role="viewer")
    client = client_for(secret)
    assert client.get(f"/v1/nodes/{restricted['nobody']}").status_code == 404
    assert client.get(f"/v1/nodes/{restricted['legal']}").status_code == 200


# --- where a record comes from (issue 30 item 8) ---


def test_records_say_which_document_they_come_from(ingest_client, person_client):
    body = submit(ingest_client, submission_payload())
    fact, person = body["nodes"][0]["id"], body["nodes"][1]["id"]
    msa = {
        "system": "sharepoint",
        "externalId": "contracts/msa.docx",
        "title": "Master services agreement",
    }
    alice = person_client("alice")  # legal: may read the contract
    assert alice.get(f"/v1/nodes/{fact}").json()["source"] == msa
    query = alice.post("/v1/query", {"text": "agreement"}, format="json").json()["records"]
    assert [(r["id"], r["source"]) for r in query] == [(fact, msa)]
    history = alice.get(f"/v1/nodes/{fact}/history").json()["records"]
    assert [r["source"] for r in history] == [msa]
    # A known person's node: no document stands behind it.
    record = alice.get(f"/v1/nodes/{person}").json()
    assert_record_shape(record)
    assert record["source"] is None
    # A renamed document: its records say the title it has now.
    submit(ingest_client, submission_payload(source_title="MSA (signed)"))
    assert alice.get(f"/v1/nodes/{fact}").json()["source"]["title"] == "MSA (signed)"


def test_a_person_node_a_document_named_says_that_document(ingest_client):
    payload = fact_payload(external_id="notes/who.md")
    payload["nodes"].append(
        {"ref": 1, "labels": ["PERSON"], "properties": {"email": "nobody-yet@acme.test"}}
    )
    payload["edges"] = [{"type": "AUTHORED_BY", "from": 0, "to": 1}]
    body = submit(ingest_client, payload)
    record = ingest_client.get(f"/v1/nodes/{body['nodes'][1]['id']}").json()
    assert record["source"] == {"system": "notes", "externalId": "notes/who.md", "title": ""}


def _queries_of(call) -> tuple[int, list]:
    """How many statements `call()` (one request) runs, and its records."""
    request_started.disconnect(reset_queries)  # Django empties the log as a request starts
    try:
        with CaptureQueriesContext(connection) as ctx:
            response = call()
    finally:
        request_started.connect(reset_queries)
    assert response.status_code == 200, response.json()
    return len(ctx.captured_queries), response.json()["records"]


def test_the_queries_do_not_grow_with_the_records(ingest_client, workspace):
    """The sources (and the pending caveats) are read once for all the records, by
    `POST /v1/query` over many nodes and by the history of a long-lived node."""
    source = Source.objects.create(
        tenant=workspace, system="bulk", external_id="many", title="Many facts"
    )

    def facts(count: int) -> tuple[int, list]:
        Node.objects.filter(tenant=workspace).delete()
        for i in range(count):
            node = Node.objects.create(tenant=workspace, source=source, key=f"k{i}")
            NodeVersion.objects.create(node=node, seq=1, labels=["BULK"], tx_from=1)
        return _queries_of(
            lambda: ingest_client.post("/v1/query", {"labels": ["BULK"]}, format="json")
        )

    def history(count: int) -> tuple[int, list]:
        node = Node.objects.create(tenant=workspace, source=source, key=f"h{count}")
        for i in range(count):
            NodeVersion.objects.create(
                node=node,
                seq=i + 1,
                labels=["BULK"],
                tx_from=i + 1,
                tx_to=i + 2 if i + 1 < count else None,
            )
        return _queries_of(lambda: ingest_client.get(f"/v1/nodes/{node.pk}/history"))

    for read in (facts, history):
        few, few_records = read(3)
        many, many_records = read(30)
        assert (len(few_records), len(many_records)) == (3, 30)
        assert {r["source"]["title"] for r in many_records} == {"Many facts"}
        assert few == many, read.__name__


def test_the_openapi_schema_describes_the_records_source(client):
    schema = client.get("/v1/schema/", {"format": "json"}).json()["components"]["schemas"]
    source = schema["Record"]["properties"]["source"]
    assert source.get("nullable") is True or {"type": "null"} in source.get("oneOf", [])
    ref = next(
        (s["$ref"] for s in source.get("allOf", source.get("oneOf", [])) if "$ref" in s),
        source.get("$ref"),
    )
    fields = schema[ref.rsplit("/", 1)[-1]]
    assert set(fields["properties"]) == {"system", "externalId", "title"}
    assert set(fields["required"]) == {"system", "externalId", "title"}
    assert "source" in schema["Record"]["required"]
