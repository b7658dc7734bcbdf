"""Hostile pagination (issue 19, item 5): every cursor `GET /v1/clarifications` did not
issue — malformed, tampered, foreign, oversized, empty or repeated — is
`400 INVALID_INPUT` with the contract's error body; never a 5xx, never ignored."""

from base64 import b64encode

import pytest
from django.core import signing
from django.test import override_settings

from common.pagination import CURSOR_MAX_LENGTH, SignedCursorPagination
from tests.test_hostile_input import changed, db_state, refused

from .conftest import bulk_submission

SALT = SignedCursorPagination.signing_salt


@pytest.fixture
def five(ingest_client):
    resp = ingest_client.post("/v1/submissions", bulk_submission(5), format="json")
    assert resp.status_code == 201, resp.content
    return [c["id"] for c in resp.json()["clarifications"]]


@pytest.fixture
def issued(five, clients) -> str:
    """A cursor the API issued: the `next` of the first page of two."""
    body = clients.alice.get("/v1/clarifications", {"limit": 2}).json()
    assert len(body["results"]) == 2 and body["next"]
    assert len(body["next"]) < CURSOR_MAX_LENGTH
    return body["next"]


def _b64(text: str) -> str:
    return b64encode(text.encode()).decode()


def _refused_without_writing(client, query) -> dict:
    before = db_state()
    body = refused(client.get("/v1/clarifications", query), 400, "INVALID_INPUT")
    assert not changed(before, db_state())
    return body


def test_an_issued_cursor_pages_on(issued, clients, five):
    body = clients.alice.get("/v1/clarifications", {"limit": 2, "cursor": issued}).json()
    first = clients.alice.get("/v1/clarifications", {"limit": 2}).json()["results"]
    seen = {r["id"] for r in first} | {r["id"] for r in body["results"]}
    assert len(seen) == 4 and seen <= set(five)


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param(_b64("p=garbage"), id="drf-position-garbage"),  # was a 500
        pytest.param(_b64("o=2"), id="drf-unsigned-offset"),
        pytest.param(_b64("p=2026-01-01 00:00:00+00:00"), id="drf-unsigned-position"),
        pytest.param(_b64("x=1"), id="drf-unknown-key"),  # was silently the first page
        pytest.param("!!!not base64!!!", id="not-base64"),
        pytest.param("a", id="one-char"),
        pytest.param("eyJvIjowfQ:", id="empty-signature"),
        pytest.param(":abc", id="empty-payload"),
        pytest.param("é" * 4, id="not-ascii"),
        pytest.param("A" * (CURSOR_MAX_LENGTH + 1), id="oversized"),
        pytest.param("A" * 100_000, id="huge"),
    ],
)
def test_a_malformed_cursor_is_400(five, clients, cursor):
    _refused_without_writing(clients.alice, {"cursor": cursor})


def test_an_empty_or_repeated_cursor_is_400_not_ignored(issued, clients):
    assert "empty" in _refused_without_writing(clients.alice, {"cursor": ""})["detail"]
    body = _refused_without_writing(clients.alice, {"cursor": [issued, issued]})
    assert "more than once" in body["detail"]


def test_a_tampered_cursor_is_400(issued, clients):
    payload, signature = issued.rsplit(":", 1)
    flipped = "B" if payload[3] != "B" else "C"
    for tampered in [
        payload[:3] + flipped + payload[4:] + ":" + signature,  # one byte of the payload
        payload + ":" + signature[:-1],  # truncated signature
        payload,  # signature stripped
        payload + ":" + signature + "x",  # appended
        signing.dumps({"o": 0, "r": 0, "p": None}, salt="another.use"),  # other salt
    ]:
        _refused_without_writing(clients.alice, {"cursor": tampered})
    # A cursor issued by another deployment (another SECRET_KEY).
    with override_settings(SECRET_KEY="another-deployment-" + "x" * 40):
        foreign = signing.dumps({"o": 0, "r": 0, "p": None}, salt=SALT)
    _refused_without_writing(clients.alice, {"cursor": foreign})


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"o": 0, "r": 0, "p": "garbage"}, id="position-not-a-time"),
        pytest.param({"o": 0, "r": 0, "p": "2026-01-01 00:00:00"}, id="position-naive"),
        pytest.param({"o": 0, "r": 0, "p": 17}, id="position-not-a-string"),
        pytest.param({"o": -1, "r": 0, "p": None}, id="negative-offset"),
        pytest.param({"o": 10**9, "r": 0, "p": None}, id="offset-over-cutoff"),  # was capped
        pytest.param({"o": "1", "r": 0, "p": None}, id="offset-a-string"),
        pytest.param({"o": True, "r": 0, "p": None}, id="offset-a-bool"),
        pytest.param({"o": 0, "r": 2, "p": None}, id="reverse-not-0-or-1"),
        pytest.param({"o": 0, "r": 0}, id="missing-key"),
        pytest.param({"o": 0, "r": 0, "p": None, "x": 1}, id="extra-key"),
        pytest.param([0, 0, None], id="not-an-object"),
    ],
)
def test_a_validly_signed_cursor_with_bad_contents_is_400(five, clients, payload):
    """Defence in depth: contents signed with the right key (an older release, a leaked
    key) are still checked before they reach a query."""
    _refused_without_writing(clients.alice, {"cursor": signing.dumps(payload, salt=SALT)})


def test_an_offset_at_the_cutoff_is_still_served(five, clients):
    cutoff = SignedCursorPagination.offset_cutoff
    cursor = signing.dumps({"o": cutoff, "r": 0, "p": None}, salt=SALT)
    resp = clients.alice.get("/v1/clarifications", {"cursor": cursor})
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"results": [], "next": None}


def test_a_bad_cursor_is_400_whatever_else_is_in_the_query(issued, clients):
    """The cursor is checked even when the filters are valid, and with another key's
    caller (a cursor is not tied to a caller, but never reveals more than they may read)."""
    for query in [
        {"cursor": _b64("p=garbage"), "state": "open", "limit": "3"},
        {"cursor": _b64("p=garbage"), "severity": "normal"},
    ]:
        _refused_without_writing(clients.alice, query)
    olga = clients.olga.get("/v1/clarifications", {"limit": 2, "cursor": issued})
    assert olga.status_code == 200 and olga.json()["results"] == []
