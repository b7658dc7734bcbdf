"""Hostile input (issue 10): oversized and deeply nested bodies, invalid UTF-8, NUL
characters, huge offsets and counts, negative and overflowing µs times, SQL and HTML in
every string field. Each refusal is a 4xx with a contract error code and writes nothing;
accepted hostile strings are stored verbatim and shown escaped in the steward admin and
the inbox.

`db_state()` (row counts of every table, rows of the tables with mutable state) is shared
with tests/test_fuzz_api.py and tests/test_hooks_hostile.py.
"""

import json
from typing import Any
from unittest import mock

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection
from django.test import Client

from clarify.models import Clarification, ClarificationBinding, ResponseRecord
from common.parsers import MAX_JSON_DEPTH, JSONParser
from delivery.models import CardAction, Delivery
from graph.models import Node, NodeVersion, Source
from ingest.formats import SUPPORTED
from ingest.models import Document
from jobs.models import Job
from jobs.tasks import work
from tenancy.models import ApiKey, Person
from tests.factories import OCT_2026, submission_payload

# --- "nothing was written" -----------------------------------------------------------------


def _tables() -> list[str]:
    seen: list[str] = []
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if not meta.proxy and meta.managed and meta.db_table not in seen:
            seen.append(meta.db_table)
    return sorted(seen)


TABLES = _tables()
# Tables whose rows change in place (state machines, leases, supersession): compared row by
# row. Every other table only grows, so its row count is enough.
MUTABLE = [
    Clarification,
    ResponseRecord,
    ClarificationBinding,
    Job,
    Source,
    Node,
    NodeVersion,
    Delivery,
    CardAction,
    Document,
    Person,
    ApiKey,
]


def db_state() -> dict[str, Any]:
    """Row counts of every table (one portable `UNION ALL` query: SQLite and PostgreSQL)
    and every row of the mutable tables."""
    quote = connection.ops.quote_name
    sql = " UNION ALL ".join(f"SELECT {i}, COUNT(*) FROM {quote(t)}" for i, t in enumerate(TABLES))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        state: dict[str, Any] = {TABLES[i]: count for i, count in cursor.fetchall()}
    for model in MUTABLE:
        state[f"{model._meta.db_table} rows"] = list(
            model._default_manager.order_by("pk").values_list()
        )
    return state


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [table for table in before if before[table] != after[table]]


def refused(response: Any, status: int, code: str) -> dict[str, Any]:
    """Assert a contract error response; returns its body."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert body["code"] == code, body
    assert isinstance(body["detail"], str) and body["detail"], body
    return body


def post_raw(client: Any, url: str, body: bytes, content_type: str = "application/json") -> Any:
    return client.generic("POST", url, body, content_type=content_type)


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def clarification(ingest_client) -> Clarification:
    resp = ingest_client.post("/v1/submissions", submission_payload(), format="json")
    assert resp.status_code == 201, resp.content
    return Clarification.objects.get(pk=resp.json()["clarifications"][0]["id"])


@pytest.fixture
def leased(clarification, clarify_client) -> dict[str, Any]:
    resp = clarify_client.post("/v1/jobs/lease", {"kinds": ["clarify:"]}, format="json")
    assert resp.status_code == 200, resp.content
    [job] = resp.json()["jobs"]
    return job


@pytest.fixture
def endpoints(clarification, leased, ingest_client, clarify_client, person_client):
    """(name, client, url) for every JSON-body endpoint, each called with a key allowed to
    call it."""
    alice = person_client("alice")
    job = leased["id"]
    return [
        ("submissions", ingest_client, "/v1/submissions"),
        ("query", alice, "/v1/query"),
        ("answer", alice, f"/v1/clarifications/{clarification.pk}/answer"),
        ("lease", clarify_client, "/v1/jobs/lease"),
        ("heartbeat", clarify_client, f"/v1/jobs/{job}/heartbeat"),
        ("complete", clarify_client, f"/v1/jobs/{job}/complete"),
        ("fail", clarify_client, f"/v1/jobs/{job}/fail"),
    ]


@pytest.fixture
def parser_never_runs():
    """Any call of the API's JSON parser fails the test: the refusal came before it."""
    with mock.patch.object(JSONParser, "parse", side_effect=AssertionError("body was parsed")):
        yield


# --- oversized bodies -----------------------------------------------------------------------


def test_a_body_over_the_upload_limit_is_413_before_it_is_read(ingest_client, parser_never_runs):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    text = "a" * (limit + 1)
    body = json.dumps(submission_payload(source_text=text)).encode()
    assert len(body) > limit
    before = db_state()
    refused(post_raw(ingest_client, "/v1/submissions", body), 413, "PAYLOAD_TOO_LARGE")
    assert not changed(before, db_state())


def test_every_json_endpoint_refuses_an_oversized_body(endpoints, settings, parser_never_runs):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    body = json.dumps({"padding": "x" * (64 * 1024)}).encode()
    before = db_state()
    for name, client, url in endpoints:
        body_ = refused(post_raw(client, url, body), 413, "PAYLOAD_TOO_LARGE")
        assert "65536" in body_["detail"], name
    assert not changed(before, db_state())


def test_a_submission_text_over_10_mb_is_submission_invalid(ingest_client):
    text = "a" * (10 * 1024 * 1024 + 1)  # within the body limit, over the text limit
    before = db_state()
    resp = ingest_client.post(
        "/v1/submissions", submission_payload(source_text=text), format="json"
    )
    body = refused(resp, 422, "SUBMISSION_INVALID")
    assert [e["path"] for e in body["errors"]] == ["source.text"]
    assert not changed(before, db_state())


def test_a_form_with_too_many_fields_is_413_json(person_client):
    steward = person_client("sam")
    fields = {f"f{i}": "x" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}
    before = db_state()
    resp = steward.post("/v1/documents", fields)  # multipart
    refused(resp, 413, "PAYLOAD_TOO_LARGE")
    assert not changed(before, db_state())


# --- malformed bodies ----------------------------------------------------------------------


def nested(levels: int, leaf: Any = 1) -> str:
    return "[" * levels + json.dumps(leaf) + "]" * levels


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(nested(10_000).encode(), id="10000-levels-of-arrays"),
        pytest.param(
            ('{"a":' * 10_000 + "1" + "}" * 10_000).encode(), id="10000-levels-of-objects"
        ),
        pytest.param(b'{"source": {"system": "\xff\xfe\xfd"}}', id="invalid-utf8"),
        pytest.param(b'{"text": "\xc3\x28"}', id="invalid-utf8-continuation"),
        pytest.param(b"\xef\xbb\xbf\xff", id="bom-then-garbage"),
        pytest.param(b'{"validAt": NaN}', id="nan-literal"),
        pytest.param(b'{"validAt": Infinity}', id="infinity-literal"),
        pytest.param(b'{"validAt": ' + b"9" * 5000 + b"}", id="5000-digit-number"),
        pytest.param(b'{"source": ', id="truncated"),
        pytest.param(b'{"a": "\\u0000"}', id="nul-in-a-string"),
        pytest.param(b'{"a\\u0000": 1}', id="nul-in-a-key"),
    ],
)
def test_malformed_json_is_400_on_every_endpoint(endpoints, body):
    before = db_state()
    for name, client, url in endpoints:
        resp = post_raw(client, url, body)
        assert resp.status_code == 400, (name, resp.status_code, resp.content[:300])
        refused(resp, 400, "MALFORMED_REQUEST")
    assert not changed(before, db_state())


def test_json_nested_beyond_the_depth_limit_is_refused_below_it_is_stored_and_rendered(
    ingest_client, person_client
):
    too_deep = submission_payload()
    too_deep["nodes"][0]["properties"] = {"deep": json.loads(nested(MAX_JSON_DEPTH))}
    before = db_state()
    refused(
        ingest_client.post("/v1/submissions", too_deep, format="json"), 400, "MALFORMED_REQUEST"
    )
    assert not changed(before, db_state())

    # 4 levels of envelope (body, nodes, node, properties) + 55 = comfortably inside.
    deep_value = json.loads(nested(55, "leaf"))
    ok = submission_payload()
    ok["nodes"][0]["properties"] = {"name": "deep", "deep": deep_value}
    resp = ingest_client.post("/v1/submissions", ok, format="json")
    assert resp.status_code == 201, resp.content
    node_id = resp.json()["nodes"][0]["id"]
    record = person_client("sam").get(f"/v1/nodes/{node_id}")
    assert record.status_code == 200, record.content
    assert record.json()["properties"]["deep"] == deep_value
    query = person_client("sam").post("/v1/query", {"text": "leaf"}, format="json")
    assert query.status_code == 200, query.content


@pytest.mark.parametrize(
    "place",
    ["node-properties", "answer-messageRef", "answer-sourceText", "job-result"],
)
def test_nul_characters_are_refused_before_they_reach_the_database(
    place, ingest_client, clarification, leased, person_client, clarify_client
):
    """PostgreSQL can store U+0000 neither in text nor in jsonb: without the parser's check
    these were 500s there (and accepted on SQLite)."""
    alice = person_client("alice")
    answer_url = f"/v1/clarifications/{clarification.pk}/answer"
    calls = {
        "node-properties": lambda: ingest_client.post(
            "/v1/submissions",
            {
                **submission_payload(source_externalId="nul"),
                "nodes": [{"ref": 0, "labels": ["FACT"], "properties": {"name": "a\x00b"}}],
                "ambiguities": [],
                "edges": [],
            },
            format="json",
        ),
        "answer-messageRef": lambda: alice.post(
            answer_url, {"answerIndex": 0, "messageRef": "m\x00"}, format="json"
        ),
        "answer-sourceText": lambda: alice.post(
            answer_url,
            {"answerCustom": {"validFrom": OCT_2026, "validTo": None, "sourceText": "\x00"}},
            format="json",
        ),
        "job-result": lambda: clarify_client.post(
            f"/v1/jobs/{leased['id']}/complete",
            {"leaseToken": leased["leaseToken"], "result": {"note": "\x00"}},
            format="json",
        ),
    }
    before = db_state()
    body = refused(calls[place](), 400, "MALFORMED_REQUEST")
    assert "U+0000" in body["detail"]
    assert not changed(before, db_state())


def test_nul_in_a_document_form_field_is_refused(person_client):
    steward = person_client("sam")
    upload = {"file": _file("notes.txt", b"hello"), "title": "t\x00"}
    before = db_state()
    refused(steward.post("/v1/documents", upload), 422, "INVALID_INPUT")
    assert not changed(before, db_state())


def _file(name: str, content: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content, content_type="text/plain")


def test_invalid_utf8_and_odd_paths_outside_the_body(person_client):
    sam = person_client("sam")
    resp = sam.get("/v1/nodes/00000000-0000-0000-0000-000000000000", QUERY_STRING="validAt=%FF")
    refused(resp, 422, "INVALID_INPUT")
    for path in [
        "/v1/nodes/%FF%FE",
        "/v1/nodes/a%2Fb/history",
        "/v1/jobs/1%2F2/heartbeat",
        "/v1/no-such-endpoint",
    ]:
        resp = sam.post(path, {}, format="json") if "jobs" in path else sam.get(path)
        refused(resp, 404, "NOT_FOUND")


# --- no 500 on bad input (issue 28, item 4) -----------------------------------------------


@pytest.mark.parametrize("suffix", sorted(SUPPORTED))
def test_an_empty_file_is_refused_as_corrupt_and_writes_nothing(
    ingest_client, suffix, settings, tmp_path
):
    """puremagic raised on empty input: a 500 in the upload request."""
    settings.MEDIA_ROOT = str(tmp_path)
    before = db_state()
    resp = ingest_client.post(
        "/v1/documents", {"file": _file(f"empty{suffix}", b"")}, format="multipart"
    )
    body = refused(resp, 422, "DOCUMENT_UNREADABLE")
    assert body["detail"] == "corrupt: the file is empty"
    assert not changed(before, db_state())
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_an_empty_file_in_a_folder_is_refused_and_the_rest_ingested(workspace, tmp_path):
    """It stopped `telha ingest` of the whole folder with a traceback."""
    from io import StringIO

    from django.core.management import call_command

    folder = tmp_path / "inbox"
    folder.mkdir()
    for name in ("a-empty.md", "b-empty.pdf", "c-empty.docx"):
        (folder / name).write_bytes(b"")
    (folder / "d-signed.md").write_text("Signed on 12 June 2026 and countersigned 19 June 2026.\n")
    out = StringIO()
    call_command(
        "ingest", str(folder), "--tenant", "acme", "--root", str(tmp_path), "--json", stdout=out
    )
    data = json.loads(out.getvalue())
    assert data["files"] == 4
    assert {e["error"] for e in data["errors"]} == {"corrupt: the file is empty"}
    assert len(data["errors"]) == 3
    assert list(Source.objects.values_list("external_id", flat=True)) == ["inbox/d-signed.md"]


def test_csv_the_csv_module_cannot_read_is_refused_per_file(workspace, tmp_path, monkeypatch):
    """A lone carriage return inside a field, and a field over the csv module's limit,
    raised `_csv.Error` and stopped the folder's run. The first is a line break now (as in
    old Mac files); the second is refused with the reason; a rule failing on a file it
    was not made for refuses that file alone."""
    from io import StringIO

    from django.core.management import call_command

    import ingest.detection.build as build

    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a-cr.csv").write_bytes(b"id,valid_from\rP1,03/04/2026\r")
    (folder / "b-huge.csv").write_bytes(b'id,note\nP1,"' + b"x" * 200_000 + b'"\n')
    (folder / "c-bug.md").write_text("Signed on 12 June 2026.\n")
    (folder / "d-fine.md").write_text("Signed on 1 July 2026.\n")
    real = build.detect_text

    def buggy(text: str, **kwargs: Any) -> Any:
        if "12 June" in text:
            raise ZeroDivisionError("a rule's bug")
        return real(text, **kwargs)

    monkeypatch.setattr(build, "detect_text", buggy)
    out = StringIO()
    call_command(
        "ingest", str(folder), "--tenant", "acme", "--root", str(tmp_path), "--json", stdout=out
    )
    data = json.loads(out.getvalue())
    errors = {e["file"].rsplit("/", 1)[-1]: e["error"] for e in data["errors"]}
    assert errors == {
        "b-huge.csv": "corrupt: the CSV cannot be read (field larger than field limit (131072))",
        "c-bug.md": "corrupt: the file cannot be read (ZeroDivisionError)",
    }
    assert sorted(Source.objects.values_list("external_id", flat=True)) == [
        "inbox/a-cr.csv",
        "inbox/d-fine.md",
    ]
    [version] = Source.objects.get(external_id="inbox/a-cr.csv").versions.all()
    assert version.text == "id,valid_from\nP1,03/04/2026\n"


def test_a_reader_failing_on_hostile_bytes_is_a_refusal_not_an_error(ingest_client, monkeypatch):
    """Whatever a reader library raises on bytes it was not made for is `corrupt: …`."""
    from ingest.formats import sniff

    def broken(data: bytes) -> str:
        raise IndexError("a parser bug")

    monkeypatch.setattr(sniff, "kind_of", broken)
    before = db_state()
    resp = ingest_client.post(
        "/v1/documents", {"file": _file("x.md", b"some text")}, format="multipart"
    )
    body = refused(resp, 422, "DOCUMENT_UNREADABLE")
    assert body["detail"] == "corrupt: the file cannot be read (IndexError)"
    assert not changed(before, db_state())


@pytest.mark.parametrize("debug", [False, True], ids=["DEBUG=0", "DEBUG=1"])
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_unknown_urls_answer_the_contracts_404_whatever_debug_says(
    person_client, settings, debug, method
):
    """Under DEBUG=1 Django answered an unresolved path with its HTML debug page."""
    settings.DEBUG = debug
    sam = person_client("sam")
    for path in ("/v1/no-such-endpoint", "/v1/nodes/a%2Fb/history", "/v1/", "/hooks/nope"):
        before = db_state()
        refused(getattr(sam, method)(path), 404, "NOT_FOUND")
        assert not changed(before, db_state())
    for path in ("/scim/v2/NoSuchResource", "/scim/v2/Users/a/b", "/scim/v1/Users"):
        resp = getattr(sam, method)(path)
        assert resp.status_code == 404, (path, resp.content[:200])
        assert resp["Content-Type"].startswith("application/scim+json")
        assert resp.json() == {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"],
            "status": "404",
            "detail": "No such resource.",
        }


def test_a_missing_trailing_slash_is_still_redirected(person_client, settings):
    settings.DEBUG = True
    resp = person_client("sam").get("/v1/schema")
    assert (resp.status_code, resp["Location"]) == (301, "/v1/schema/")


def test_nul_in_a_url_is_400_before_any_lookup(person_client, workspace):
    sam = person_client("sam")
    for path, query in [
        ("/v1/clarifications/%00", ""),
        ("/v1/clarifications", "state=%00"),
        ("/v1/clarifications", "cursor=a%00"),
        ("/v1/nodes/x", "validAt=%00"),
    ]:
        refused(sam.get(path, QUERY_STRING=query), 400, "MALFORMED_REQUEST")
    # The steward admin: a list filter value with U+0000 was a 500 on PostgreSQL.
    admin = Client()
    assert admin.login(username="sam@acme.test", password="steward-pass-1")
    resp = admin.get("/admin/clarify/clarification/", QUERY_STRING="state=%00")
    assert resp.status_code == 400
    assert admin.get("/admin/clarify/clarification/", {"state": "open"}).status_code == 200


def test_nul_in_an_inbox_form_is_400_before_any_lookup(clarification, people):
    """The inbox answer form looked the nonce up as given: a 500 on PostgreSQL."""
    inbox = Client()
    inbox.force_login(people["alice"].user)
    before = db_state()
    for field in ("nonce", "clarification_id", "source_text"):
        form = {
            "clarification_id": str(clarification.pk),
            "nonce": "n",
            "answer_index": "0",
            field: "x\x00",
        }
        assert inbox.post("/inbox/answer", form).status_code == 400, field
    assert not changed(before, db_state())


# --- huge offsets and counts -----------------------------------------------------------------


def _with(path: str, value: Any) -> dict[str, Any]:
    """The example submission with the value at `path` (dotted, [i] for indexes) set."""
    payload = submission_payload()
    target: Any = payload
    parts = path.replace("[", ".").replace("]", "").split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    target[int(last) if last.isdigit() else last] = value
    return payload


@pytest.mark.parametrize(
    "path",
    [
        "spans[0].start",
        "spans[0].end",
        "nodes[0].spanRef",
        "nodes[0].ref",
        "edges[0].from",
        "edges[0].to",
        "ambiguities[0].nodeRef",
        "ambiguities[0].candidates[0].spanRef",
    ],
)
@pytest.mark.parametrize("value", [2**40, 2**63, -1])
def test_huge_or_negative_offsets_and_refs_are_submission_invalid(ingest_client, path, value):
    before = db_state()
    resp = ingest_client.post("/v1/submissions", _with(path, value), format="json")
    body = refused(resp, 422, "SUBMISSION_INVALID")
    assert any(e["path"].startswith(path.rsplit(".", 1)[0]) for e in body["errors"]), body
    assert not changed(before, db_state())


def test_a_span_beyond_the_text_is_submission_invalid(ingest_client):
    payload = submission_payload()
    payload["spans"] = [{"start": 0, "end": len(payload["source"]["text"]) + 1}]
    before = db_state()
    body = refused(
        ingest_client.post("/v1/submissions", payload, format="json"), 422, "SUBMISSION_INVALID"
    )
    assert body["errors"][0]["path"] == "spans[0]"
    assert not changed(before, db_state())


def test_ten_thousand_candidates_are_submission_invalid(ingest_client):
    candidate = {"validFrom": OCT_2026, "validTo": None, "label": "c"}
    payload = submission_payload()
    payload["ambiguities"][0]["candidates"] = [dict(candidate) for _ in range(10_000)]
    before = db_state()
    body = refused(
        ingest_client.post("/v1/submissions", payload, format="json"), 422, "SUBMISSION_INVALID"
    )
    assert [e["path"] for e in body["errors"]] == ["ambiguities[0].candidates"]
    assert not changed(before, db_state())


# --- µs times ---------------------------------------------------------------------------------

BAD_TIMES = [
    -1,
    2**63,
    10**30,
    "NaN",
    1.5,
    1e300,
    "-1",
    "²",
    "--5",
    "9" * 5000,
    True,
    "2026-13-45T00:00:00Z",
    "2026-06-12",
    "2026-06-12T00:00:00+99:00",
    [],
    {},
]
TIME_IDS = [
    "minus-1",
    "2^63",
    "10^30",
    "NaN-string",
    "float",
    "1e300",
    "minus-1-string",
    "superscript-2",
    "double-minus",
    "5000-digit-string",
    "true",
    "month-13",
    "no-offset",
    "offset-99h",
    "list",
    "object",
]


@pytest.mark.parametrize("value", BAD_TIMES, ids=TIME_IDS)
@pytest.mark.parametrize(
    "path",
    [
        "nodes[0].validFrom",
        "nodes[0].validTo",
        "ambiguities[0].candidates[0].validFrom",
        "ambiguities[0].candidates[1].validTo",
    ],
)
def test_bad_times_in_a_submission_are_submission_invalid(ingest_client, path, value):
    before = db_state()
    resp = ingest_client.post("/v1/submissions", _with(path, value), format="json")
    body = refused(resp, 422, "SUBMISSION_INVALID")
    assert [e["path"] for e in body["errors"]] == [path], body
    assert not changed(before, db_state())


@pytest.mark.parametrize("value", BAD_TIMES, ids=TIME_IDS)
def test_bad_times_in_a_query_are_invalid_input(person_client, value):
    sam = person_client("sam")
    for field in ("validAt", "txAt"):
        body = refused(sam.post("/v1/query", {field: value}, format="json"), 422, "INVALID_INPUT")
        assert [e["path"] for e in body["errors"]] == [field], body


@pytest.mark.parametrize(
    "value",
    [v for v in BAD_TIMES if not isinstance(v, list | dict)],
    ids=[i for v, i in zip(BAD_TIMES, TIME_IDS, strict=True) if not isinstance(v, list | dict)],
)
def test_bad_as_of_times_of_a_node_are_invalid_input(ingest_client, person_client, value):
    resp = ingest_client.post("/v1/submissions", submission_payload(), format="json")
    node_id = resp.json()["nodes"][0]["id"]
    sam = person_client("sam")
    for field in ("validAt", "txAt"):
        raw = str(value).lower() if isinstance(value, bool) else str(value)
        body = refused(sam.get(f"/v1/nodes/{node_id}", {field: raw}), 422, "INVALID_INPUT")
        assert [e["path"] for e in body["errors"]] == [field], body


@pytest.mark.parametrize("value", BAD_TIMES, ids=TIME_IDS)
def test_bad_times_in_an_answer_are_unparseable(clarification, person_client, value):
    alice = person_client("alice")
    url = f"/v1/clarifications/{clarification.pk}/answer"
    before = db_state()
    for field in ("validFrom", "validTo"):
        custom = {"validFrom": OCT_2026, "validTo": None, field: value}
        resp = alice.post(url, {"answerCustom": custom}, format="json")
        refused(resp, 422, "CLARIFY_UNPARSEABLE_ANSWER")
    assert not changed(before, db_state())


# --- SQL and HTML in every string field --------------------------------------------------------

SCRIPT = "<script>alert(1)</script>"
SQL = "'; DROP TABLE x;--"
HOSTILE = f'{SCRIPT}{SQL}"><img src=x onerror=alert(2)>'
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"


def hostile_submission() -> dict[str, Any]:
    """The example submission with the hostile string in every free-text field."""
    payload = submission_payload()
    text = f"{HOSTILE} {payload['source']['text']}"
    start = text.index("This agreement")
    payload["source"] = {
        "system": f"sys{HOSTILE}",
        "externalId": f"ext{HOSTILE}",
        "title": f"title{HOSTILE}",
        "uri": f"javascript:alert(3)//{HOSTILE}",
        "text": text,
        "acl": ["group:legal", f"group:{HOSTILE}", f"email:{HOSTILE}"],
        "restriction": None,
    }
    payload["spans"] = [{"start": 0, "end": start + 40}]
    fact = payload["nodes"][0]
    fact["key"] = f"key{HOSTILE}"
    fact["properties"] = {"name": f"name{HOSTILE}", f"prop{HOSTILE}": [HOSTILE, {HOSTILE: SQL}]}
    for candidate in payload["ambiguities"][0]["candidates"]:
        candidate["label"] = f"label{HOSTILE}"
    return payload


CONSTRAINED = [
    *[
        (path, value)
        for path in (
            "nodes[0].labels[0]",
            "edges[0].type",
            "ambiguities[0].kind",
            "ambiguities[0].severityHint",
        )
        for value in (SCRIPT, SQL)
    ],
    ("source.system", "x" * 101),
    ("source.externalId", "x" * 501),
    ("source.title", "x" * 501),
    ("ambiguities[0].candidates[0].label", "x" * 201),
]


@pytest.mark.parametrize(("path", "value"), CONSTRAINED)
def test_hostile_strings_in_constrained_fields_are_submission_invalid(ingest_client, path, value):
    before = db_state()
    resp = ingest_client.post("/v1/submissions", _with(path, value), format="json")
    body = refused(resp, 422, "SUBMISSION_INVALID")
    assert [e["path"] for e in body["errors"]] == [path], body
    assert not changed(before, db_state())


@pytest.fixture
def hostile(ingest_client, workspace) -> dict[str, Any]:
    resp = ingest_client.post("/v1/submissions", hostile_submission(), format="json")
    assert resp.status_code == 201, resp.content
    created = resp.json()
    return {
        "clarification": Clarification.objects.get(pk=created["clarifications"][0]["id"]),
        "node_id": created["nodes"][0]["id"],
        "source": Source.objects.get(tenant=workspace),
    }


def test_hostile_strings_are_stored_verbatim(hostile, person_client, clarify_client):
    expected = hostile_submission()
    source = hostile["source"]
    assert (source.system, source.external_id, source.title, source.uri) == (
        expected["source"]["system"],
        expected["source"]["externalId"],
        expected["source"]["title"],
        expected["source"]["uri"],
    )
    assert source.acl == expected["source"]["acl"]
    assert source.versions.get().text == expected["source"]["text"]
    node = Node.objects.get(pk=hostile["node_id"])
    assert node.key == expected["nodes"][0]["key"]

    record = person_client("sam").get(f"/v1/nodes/{hostile['node_id']}").json()
    assert record["properties"] == expected["nodes"][0]["properties"]
    clar = clarify_client.get(f"/v1/clarifications/{hostile['clarification'].pk}").json()
    assert {c["label"] for c in clar["candidates"]} == {f"label{HOSTILE}"}
    assert json.loads(clar["aclJson"]) == expected["source"]["acl"]
    assert clar["spanExcerpt"].startswith(HOSTILE)
    # The SQL did nothing: every table is still there and queryable.
    assert db_state()


def _assert_escaped(html: str, where: str) -> None:
    assert SCRIPT not in html, f"raw <script> in {where}"
    assert "<img src=x" not in html, f"raw <img> in {where}"
    assert 'href="javascript:' not in html.replace("&#x27;", "'"), f"javascript: link in {where}"
    assert ESCAPED_SCRIPT in html, f"the hostile text is not shown (escaped) in {where}"


def test_the_steward_admin_shows_hostile_strings_escaped(hostile, workspace):
    client = Client()
    assert client.login(username="sam@acme.test", password="steward-pass-1")
    clar, source = hostile["clarification"], hostile["source"]
    pages = {
        "clarification changelist": "/admin/clarify/clarification/",
        "changelist search": f"/admin/clarify/clarification/?q={SCRIPT}",
        "source search": f"/admin/graph/source/?q={SCRIPT}",
        "decide page": f"/admin/clarify/clarification/{clar.pk}/change/",
        "source page": f"/admin/graph/source/{source.pk}/change/",
        "source changelist": "/admin/graph/source/",
        "fact versions": "/admin/graph/nodeversion/",
    }
    for where, url in pages.items():
        resp = client.get(url)
        assert resp.status_code == 200, (where, resp.status_code)
        html = resp.content.decode()
        if where.endswith("search"):
            assert SCRIPT not in html, where
            continue
        _assert_escaped(html, where)


def test_the_inbox_shows_hostile_strings_escaped(hostile, people, settings):
    settings.CLARIFY_CHANNELS = ["inbox"]
    alice = people["alice"].user  # the ranked responder: the inbox reaches those who sign in
    alice.set_password("inbox-pass-" + "x" * 10)
    alice.save()
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        assert work("clarify:temporal", max_seconds=5) >= 1
    delivery = Delivery.objects.get(clarification=hostile["clarification"], kind="question")
    client = Client()
    client.force_login(delivery.person.user)
    resp = client.get("/inbox/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert hostile["clarification"].pk.hex[:8] in html.replace("-", "")
    _assert_escaped(html, "inbox")
