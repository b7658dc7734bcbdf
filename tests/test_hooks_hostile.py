"""Chat hooks under hostile requests (issue 10): unsigned, mis-signed, stale, replayed and
oversized requests are refused before any parsing of the payload's content, and write
nothing.

"Before any parsing" is proven, not assumed: for every refused request the functions that
would parse the payload — Bolt's request handler and body parser, Django's form parser,
`json.loads` in the hook modules, and for oversized bodies the signature and token checks
themselves — are patched to fail the test if they are called.
"""

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from django.core.cache import cache
from django.http.request import HttpRequest

from delivery.slack import hooks as slack_hook
from tests.delivery.conftest_slack import (
    BOT_TOKEN,
    EVENTS,
    INTERACTIVITY,
    SIGNING_SECRET,
    block_actions,
    form_body,
    signed_headers,
)
from tests.delivery.conftest_teams import *  # noqa: F403  (the fixtures teams_settings, teams_stub, teams_token)
from tests.delivery.conftest_teams import MESSAGES, LocalKey, conversation_update
from tests.test_hostile_input import changed, db_state, refused

MB = 1024 * 1024


def _fail(what: str) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{what} was called for a refused request")

    return fail


@contextmanager
def nothing_parsed(*also: str) -> Iterator[None]:
    """Fail on any parse of the payload: Bolt (handler, body parser), Django's form parser,
    `json.loads` in the hook modules; plus the dotted names in `also`."""
    targets = [
        "delivery.slack.hooks.slack_handler",
        "slack_bolt.request.request.parse_body",
        "slack_bolt.request.internals.parse_body",
        *also,
    ]
    with ExitStack() as stack:
        for target in targets:
            stack.enter_context(mock.patch(target, _fail(target)))
        for module in ("delivery.slack.hooks", "delivery.teams.hooks"):
            # The hook module's own `json` (not the json module: PyJWT needs that one).
            strict_json = SimpleNamespace(loads=_fail(f"{module}: json.loads"), dumps=json.dumps)
            stack.enter_context(mock.patch(f"{module}.json", strict_json))
        stack.enter_context(
            mock.patch.object(HttpRequest, "_load_post_and_files", _fail("the form parser"))
        )
        yield


# --- Slack ---------------------------------------------------------------------------------


@pytest.fixture
def slack(settings, workspace):
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    settings.SLACK_BOT_TOKEN = BOT_TOKEN
    settings.SLACK_API_URL = "http://127.0.0.1:9/api/"  # nothing here may call Slack
    cache.clear()  # the per-IP hook rate limit
    yield
    cache.clear()


def tap_body() -> str:
    value = json.dumps(
        {"kind": "clarify_answer", "clarificationId": "c", "answerIndex": 0, "nonce": "n"}
    )
    return form_body(block_actions(action_id="clarify_answer_0", value=value))


def event_body() -> str:
    return json.dumps(
        {"type": "url_verification", "challenge": "challenge-token", "token": "legacy"}
    )


def post_slack(client: Any, url: str, body: str | bytes, headers: dict[str, str]) -> Any:
    content_type = "application/json" if url == EVENTS else "application/x-www-form-urlencoded"
    return client.generic("POST", url, body, content_type=content_type, headers=headers)


SLACK_CASES = {
    "unsigned": lambda body: {},
    "timestamp-only": lambda body: {"X-Slack-Request-Timestamp": str(int(time.time()))},
    "signature-only": lambda body: {"X-Slack-Signature": signed_headers(body)["X-Slack-Signature"]},
    "mis-signed": lambda body: signed_headers(body, secret="not-the-secret"),
    "signed-for-another-body": lambda body: signed_headers(body + "&x=1"),
    "stale": lambda body: signed_headers(body, timestamp=int(time.time()) - 301),
    # Well past the 300 s window: at +301 a slow run (over a second between signing and
    # checking, int() rounding down) was back inside it.
    "from-the-future": lambda body: signed_headers(body, timestamp=int(time.time()) + 360),
    "superscript-timestamp": lambda body: {
        **signed_headers(body),
        "X-Slack-Request-Timestamp": "²",
    },
    "5000-digit-timestamp": lambda body: {
        **signed_headers(body),
        "X-Slack-Request-Timestamp": "1" * 5000,
    },
    "negative-timestamp": lambda body: {**signed_headers(body), "X-Slack-Request-Timestamp": "-1"},
    "non-ascii-signature": lambda body: {**signed_headers(body), "X-Slack-Signature": "v0=é"},
    "empty-signature": lambda body: {**signed_headers(body), "X-Slack-Signature": ""},
}


@pytest.mark.parametrize("case", list(SLACK_CASES))
@pytest.mark.parametrize("url", [INTERACTIVITY, EVENTS])
def test_slack_refuses_unverified_requests_before_parsing(slack, client, url, case):
    body = tap_body() if url == INTERACTIVITY else event_body()
    headers = SLACK_CASES[case](body)
    before = db_state()
    with nothing_parsed():
        resp = post_slack(client, url, body, headers)
    refused(resp, 401, "UNAUTHENTICATED")
    assert not changed(before, db_state())


@pytest.mark.parametrize("url", [INTERACTIVITY, EVENTS])
def test_a_replayed_slack_request_is_refused_once_its_signature_is_older_than_300s(
    slack, client, url
):
    body = tap_body() if url == INTERACTIVITY else event_body()
    sent_at = int(time.time())
    headers = signed_headers(body, timestamp=sent_at)
    if url == EVENTS:  # the original request is accepted (a URL verification, writes nothing)
        resp = post_slack(client, url, body, headers)
        assert resp.status_code == 200, resp.content
        assert "challenge-token" in resp.content.decode()
    before = db_state()
    later = sent_at + 301
    with mock.patch("slack_sdk.signature.time", lambda: later), nothing_parsed():
        resp = post_slack(client, url, body, headers)  # the same bytes, 301 s later
    refused(resp, 401, "UNAUTHENTICATED")
    assert not changed(before, db_state())


@pytest.mark.parametrize("url", [INTERACTIVITY, EVENTS])
@pytest.mark.parametrize("signed", [True, False], ids=["validly-signed", "unsigned"])
def test_an_oversized_slack_request_is_413_before_verification(
    slack, client, settings, url, signed
):
    padding = "x" * (settings.HOOK_MAX_BODY_BYTES + 1)
    if url == INTERACTIVITY:
        body = tap_body() + "&padding=" + padding
    else:
        body = json.dumps({"type": "url_verification", "challenge": "c", "padding": padding})
    headers = signed_headers(body) if signed else {}
    before = db_state()
    with nothing_parsed(
        "delivery.slack.hooks.signature_ok", "slack_sdk.signature.SignatureVerifier.is_valid"
    ):
        resp = post_slack(client, url, body, headers)
    refused(resp, 413, "PAYLOAD_TOO_LARGE")
    assert not changed(before, db_state())


def test_a_body_just_under_the_hook_limit_is_still_verified(slack, client, settings):
    """The control for the test above: under the limit, an unsigned body gets to the
    signature check (and fails it)."""
    settings.HOOK_MAX_BODY_BYTES = 64 * 1024
    body = event_body()[:-1] + ', "padding": "' + "x" * (60 * 1024) + '"}'
    with nothing_parsed():
        resp = post_slack(client, EVENTS, body, {})
    refused(resp, 401, "UNAUTHENTICATED")


def test_slack_hooks_accept_only_post(slack, client):
    with nothing_parsed():
        for url in (INTERACTIVITY, EVENTS):
            assert client.get(url).status_code == 405


# --- Teams ---------------------------------------------------------------------------------


def post_teams(client: Any, body: bytes | str, authorization: str | None) -> Any:
    headers = {"Authorization": authorization} if authorization else {}
    return client.generic("POST", MESSAGES, body, content_type="application/json", headers=headers)


@pytest.fixture
def teams(teams_settings, workspace):
    cache.clear()
    yield
    cache.clear()


TEAMS_TOKENS = {
    "no-token": lambda make: None,
    "not-bearer": lambda make: "Basic dXNlcjpwYXNz",
    "garbage": lambda make: "Bearer not.a.jwt",
    "empty-bearer": lambda make: "Bearer ",
    "unknown-key": lambda make: f"Bearer {make(key=LocalKey.generate('stranger'))}",
    "unknown-kid": lambda make: f"Bearer {make(kid='no-such-kid')}",
    "hs256-with-the-app-password": lambda make: f"Bearer {make(alg='HS256')}",
    "expired": lambda make: f"Bearer {make(exp=int(time.time()) - 3600, nbf=None)}",
    "wrong-audience": lambda make: f"Bearer {make(aud='someone-else')}",
    "wrong-issuer": lambda make: f"Bearer {make(iss='https://evil.example')}",
}


@pytest.mark.parametrize("case", list(TEAMS_TOKENS))
def test_teams_refuses_unverified_requests_before_parsing(
    teams, client, teams_stub, teams_token, case
):
    body = json.dumps(conversation_update(teams_stub.service_url))
    authorization = TEAMS_TOKENS[case](teams_token)
    before = db_state()
    with nothing_parsed():
        resp = post_teams(client, body, authorization)
    refused(resp, 401, "UNAUTHENTICATED")
    assert not changed(before, db_state())


@pytest.mark.parametrize("token", [True, False], ids=["valid-token", "no-token"])
def test_an_oversized_teams_request_is_413_before_the_token_is_checked(
    teams, client, settings, teams_stub, teams_token, token
):
    activity = conversation_update(teams_stub.service_url)
    activity["text"] = "x" * (settings.HOOK_MAX_BODY_BYTES + 1)
    authorization = f"Bearer {teams_token()}" if token else None
    before = db_state()
    with nothing_parsed("delivery.teams.hooks.verify_token"):
        resp = post_teams(client, json.dumps(activity), authorization)
    refused(resp, 413, "PAYLOAD_TOO_LARGE")
    assert not changed(before, db_state())


@pytest.mark.parametrize("hook", ["slack", "teams"])
def test_every_hook_has_the_one_body_limit(
    slack, teams, client, settings, teams_stub, teams_token, hook
):
    """One limit for every hook (`HOOK_MAX_BODY_BYTES`), refused before the signature or
    the token is checked and before anything is parsed; just under it, the request gets
    to its verification, which refuses it with the one code (UNAUTHENTICATED)."""
    settings.HOOK_MAX_BODY_BYTES = 64 * 1024
    if hook == "slack":
        over = event_body()[:-1] + ', "padding": "' + "x" * (64 * 1024) + '"}'
        under = event_body()[:-1] + ', "padding": "' + "x" * (60 * 1024) + '"}'
        send = lambda body: post_slack(client, EVENTS, body, {})  # noqa: E731
    else:
        activity = conversation_update(teams_stub.service_url)
        over = json.dumps({**activity, "text": "x" * (64 * 1024)})
        under = json.dumps({**activity, "text": "x" * (60 * 1024)})
        send = lambda body: post_teams(client, body, None)  # noqa: E731
    before = db_state()
    with nothing_parsed():
        refused(send(over), 413, "PAYLOAD_TOO_LARGE")
        refused(send(under), 401, "UNAUTHENTICATED")
    assert not changed(before, db_state())


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("[" * 10_000 + "]" * 10_000, id="10000-levels"),
        pytest.param(b'{"type": "message", "text": "\xff"}', id="invalid-utf8"),
        pytest.param("[]", id="not-an-object"),
        pytest.param('{"type": "message"', id="truncated"),
        pytest.param('{"type": "message", "from": {"id": "29:\\u0000"}}', id="nul"),
    ],
)
def test_a_verified_but_malformed_teams_activity_is_400(teams, client, teams_token, body):
    before = db_state()
    resp = post_teams(client, body, f"Bearer {teams_token()}")
    refused(resp, 400, "MALFORMED_REQUEST")
    assert not changed(before, db_state())


def test_teams_hook_accepts_only_post(teams, client):
    with nothing_parsed():
        assert client.get(MESSAGES).status_code == 405


@pytest.mark.parametrize(
    ("url", "body"),
    [
        (EVENTS, "[" * 10_000 + "]" * 10_000),
        (EVENTS, '{"type": "event_callback", "event_id": "Ev\\u0000", "team_id": "T\\u0000"}'),
        (INTERACTIVITY, "payload=" + "%5B" * 10_000),
        (
            INTERACTIVITY,
            form_body(
                block_actions(
                    action_id="clarify_answer_0",
                    value=json.dumps(
                        {
                            "kind": "clarify_answer",
                            "clarificationId": "c",
                            "answerIndex": 0,
                            "nonce": "n\x00",
                        }
                    ),
                )
            ),
        ),
    ],
    ids=["deep-event", "nul-event", "deep-payload", "nul-nonce"],
)
def test_a_validly_signed_but_malformed_slack_body_is_not_a_server_error(slack, client, url, body):
    """Only Slack can sign, but a signed body Bolt cannot handle safely (too deep: a
    RecursionError 500 in Bolt's parser; U+0000 in the nonce: a PostgreSQL error at the
    delivery lookup) is a 400 before Bolt sees it."""
    before = db_state()
    resp = post_slack(client, url, body, signed_headers(body))
    refused(resp, 400, "MALFORMED_REQUEST")
    assert not changed(before, db_state())


def test_the_patches_would_notice_parsing(slack, client):
    """The guard itself works: a verified Slack request is parsed, and the patches fail it."""
    body = event_body()
    with nothing_parsed(), pytest.raises(AssertionError, match="was called"):
        post_slack(client, EVENTS, body, signed_headers(body))
    assert slack_hook.slack_handler is not None
