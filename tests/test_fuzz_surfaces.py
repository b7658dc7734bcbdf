"""Hypothesis over the surfaces the OpenAPI schema does not describe (issue 28, item 4;
the schema's own operations are fuzzed by tests/test_fuzz_api.py): paths under `/v1/`
that no operation serves, SCIM (filters, startIndex and count, bodies), document uploads
(the files themselves: real documents truncated, corrupted, emptied, misnamed) and the
folder ingest, and the chat hooks with validly signed but arbitrary payloads.

Each call is checked for no 5xx, the surface's error shape on every 4xx (`{"code",
"detail"}`, SCIM's error body on `/scim/`), and that a refused request wrote nothing
(`db_state()` of tests/test_hostile_input.py, and no stored upload). Accepted uploads are
then run by the detection job, which must end each one `done` or refused (`dead` with
`INGEST_FAILED: reason`), never with an unexpected error.

Examples per test: `FUZZ_EXAMPLES` (25 under `make test`, derandomized so CI is
repeatable; `make fuzz` runs 500 with fresh randomness).
"""

import io
import json
import os
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlencode

import pytest
from django.core.cache import cache
from django.core.management import call_command
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ingest.formats import SUPPORTED
from jobs.models import Job, JobStatus
from jobs.tasks import work
from tenancy.models import Person, TenantGroup
from tests.delivery.conftest_slack import EVENTS, INTERACTIVITY, block_actions, signed_headers
from tests.delivery.conftest_teams import *  # noqa: F403  (teams_settings, teams_stub, teams_token)
from tests.delivery.conftest_teams import conversation_update, invoke_action
from tests.identity.conftest import ERROR as SCIM_ERROR
from tests.identity.conftest import GROUP, PATCH, SCIM_JSON, USER
from tests.ingest.docgen import docx_file, html_file, msg_file, pdf_file, xlsx_file
from tests.test_hooks_hostile import post_slack, post_teams, slack, teams  # noqa: F401  (fixtures)
from tests.test_hostile_input import changed, db_state

pytestmark = pytest.mark.django_db

SURFACE_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
DERANDOMIZE = "FUZZ_EXAMPLES" not in os.environ


def fuzz(strategy: st.SearchStrategy, check: Callable[[Any], None]) -> None:
    """Run `check` on `SURFACE_EXAMPLES` examples of `strategy`."""

    @hsettings(
        max_examples=SURFACE_EXAMPLES,
        deadline=None,
        derandomize=DERANDOMIZE,
        database=None if DERANDOMIZE else hsettings.default.database,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(example=strategy)
    def run(example: Any) -> None:
        cache.clear()  # the hooks' per-address rate limit
        check(example)

    run()


def contract_error(response: Any) -> None:
    """A 4xx in the contract's shape `{"code": "UPPER_SNAKE", "detail": "…"}`."""
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert isinstance(body.get("code"), str) and body["code"].isupper(), body
    assert isinstance(body.get("detail"), str), body


def hook_error(response: Any) -> None:
    """A hook's 4xx: ours in the contract's shape, or Bolt's own answer to a verified
    Slack request that no listener takes (`404 {"error": "unhandled request"}`, which Slack
    expects)."""
    if response.status_code == 404 and response.json() == {"error": "unhandled request"}:
        return
    contract_error(response)


def scim_error(response: Any) -> None:
    assert response["Content-Type"].startswith(SCIM_JSON), response["Content-Type"]
    body = response.json()
    assert body["schemas"] == [SCIM_ERROR] and body["status"] == str(response.status_code), body


def no_server_error(response: Any, shape: Callable[[Any], None], before: dict[str, Any]) -> None:
    assert response.status_code < 500, (response.status_code, response.content[:500])
    if 400 <= response.status_code < 500:
        shape(response)
        assert not changed(before, db_state()), response.content[:300]


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=8,
)
TEXT = st.text(max_size=40)


# --- /v1/: paths no operation serves --------------------------------------------------------

SEGMENT = st.one_of(
    st.sampled_from(["nodes", "clarifications", "jobs", "answer", "history", "lease", "schema"]),
    st.text(alphabet="abcXYZ019-._~%2F:@", min_size=1, max_size=12),
    st.text(min_size=1, max_size=6).filter(lambda s: "\x00" not in s and "/" not in s),
)


def test_fuzz_unknown_api_paths(person_client, settings):
    sam = person_client("sam")

    def check(example: tuple[list[str], str, bool]) -> None:
        segments, method, debug = example
        settings.DEBUG = debug
        before = db_state()
        response = getattr(sam, method)("/v1/" + "/".join(segments))
        no_server_error(response, contract_error, before)

    fuzz(
        st.tuples(
            st.lists(SEGMENT, min_size=1, max_size=4),
            st.sampled_from(["get", "post", "put", "patch", "delete", "options"]),
            st.booleans(),
        ),
        check,
    )


# --- SCIM -------------------------------------------------------------------------------------

ATTRIBUTES = [
    "userName",
    "displayName",
    "emails",
    "emails.value",
    "externalId",
    "active",
    "roles",
    "roles.value",
    "meta.created",
    "meta.lastModified",
    "id",
    "members",
    "members.value",
    "name.formatted",
    "title",
]
VALUES = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["true", "false", "null"]),
    st.text(max_size=16).map(json.dumps),
    st.datetimes().map(lambda d: json.dumps(d.isoformat())),
    st.sampled_from(['"2026-06-12T00:00:00Z"', '"12 June"', '"2026-13-45T99:00:00Z"']),
)
COMPARISON = st.builds(
    "{} {} {}".format,
    st.sampled_from(ATTRIBUTES),
    st.sampled_from(["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"]),
    VALUES,
)
ATOM = st.one_of(
    COMPARISON,
    st.sampled_from(ATTRIBUTES).map("{} pr".format),
    st.builds("{}[{}]".format, st.sampled_from(["emails", "members", "roles"]), COMPARISON),
)
FILTERS = st.one_of(
    st.recursive(
        ATOM,
        lambda inner: st.one_of(
            st.builds("{} {} {}".format, inner, st.sampled_from(["and", "or"]), inner),
            inner.map("not ({})".format),
            inner.map("({})".format),
        ),
        max_leaves=4,
    ),
    TEXT,
)
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str), st.text(max_size=8), st.none()
)


@pytest.fixture
def scim(workspace):
    from tenancy.services import api_key_create
    from tests.identity.conftest import Scim

    return Scim(api_key_create(tenant=workspace, audience="scim")[1])


def test_fuzz_scim_queries(scim):
    def check(example: tuple[str, str | None, str | None, str | None]) -> None:
        resource, expression, start, count = example
        query = {k: v for k, v in (("filter", expression), ("startIndex", start), ("count", count))}
        before = db_state()
        response = scim.http.get(
            f"/scim/v2/{resource}", {k: v for k, v in query.items() if v is not None}
        )
        no_server_error(response, scim_error, before)

    fuzz(
        st.tuples(st.sampled_from(["Users", "Groups"]), FILTERS | st.none(), NUMBERS, NUMBERS),
        check,
    )


def _user_bodies() -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"schemas": st.just([USER]) | JSON, "userName": TEXT | JSON},
        optional={
            "emails": st.lists(
                st.fixed_dictionaries({"value": TEXT | JSON}, optional={"primary": JSON}),
                max_size=2,
            )
            | JSON,
            "displayName": TEXT | JSON,
            "name": st.fixed_dictionaries({}, optional={"formatted": TEXT | JSON}) | JSON,
            "active": st.booleans() | JSON,
            "roles": st.lists(st.fixed_dictionaries({"value": TEXT | JSON}), max_size=2) | JSON,
            "externalId": TEXT | JSON,
        },
    )


def _group_bodies() -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"schemas": st.just([GROUP]) | JSON, "displayName": TEXT | JSON},
        optional={
            "members": st.lists(st.fixed_dictionaries({"value": TEXT | JSON}), max_size=2) | JSON
        },
    )


def _patch_bodies() -> st.SearchStrategy:
    operation = st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "replace", "remove", "Replace", "copy"]) | JSON},
        optional={
            "path": st.sampled_from(
                ["active", "displayName", "members", 'members[value eq "x"]', "emails[type eq "]
            )
            | TEXT,
            "value": JSON,
        },
    )
    return st.fixed_dictionaries(
        {"schemas": st.just([PATCH]) | JSON, "Operations": st.lists(operation, max_size=3) | JSON}
    )


def test_fuzz_scim_bodies(scim, people):
    alice = str(people["alice"].pk)
    legal = str(TenantGroup.objects.get(name="legal").pk)
    targets = st.sampled_from(
        [
            ("post", "Users"),
            ("post", "Groups"),
            ("post", "Users/.search"),
            ("put", f"Users/{alice}"),
            ("patch", f"Users/{alice}"),
            ("put", f"Groups/{legal}"),
            ("patch", f"Groups/{legal}"),
            ("put", "Users/99999999999999999999"),
            ("patch", "Groups/nope"),
            ("delete", "Groups/-1"),
        ]
    )
    bodies = st.one_of(_user_bodies(), _group_bodies(), _patch_bodies(), JSON)

    def check(example: tuple[tuple[str, str], Any]) -> None:
        (method, path), body = example
        before = db_state()
        response = scim.call(method, path, body)
        no_server_error(response, scim_error, before)

    fuzz(st.tuples(targets, bodies), check)
    assert Person.objects.filter(pk=alice).exists()


# --- uploads ------------------------------------------------------------------------------------

SEEDS = {
    ".pdf": pdf_file(["Agreement signed 12 June 2026 and countersigned 19 June 2026."]),
    ".docx": docx_file(["Lease signed 12 June 2026, effective next quarter."]),
    ".xlsx": xlsx_file({"S": [["id", "valid_from"], ["1", "03/04/2026"]]}),
    ".html": html_file(title="Policy", body="<p>Signed 1 June and countersigned 3 July 2026.</p>"),
    ".msg": msg_file(
        subject="Renewal",
        sender="Alice Author",
        sender_email="alice@acme.test",
        to=[("Bob Named", "bob@acme.test")],
        body="Please confirm.",
    ),
    ".eml": b"From: a@acme.test\nDate: Thu, 9 Jul 2026 16:03:10 +0000\n\nPlease confirm.\n",
    ".md": b"---\ntitle: MSA\n---\nSigned on 12 June 2026. Effective next quarter.\n",
    ".csv": b"id,valid_from\nP1,03/04/2026\n",
}


@st.composite
def files(draw: Any) -> tuple[str, bytes]:
    """A real document of some format, then mangled: as is, truncated, bytes flipped,
    prefixed with noise, emptied, or replaced by random bytes; named with its own suffix,
    another supported one, or none of ours."""
    suffix, data = draw(st.sampled_from(sorted(SEEDS.items())))
    how = draw(st.sampled_from(["as-is", "truncated", "flipped", "prefixed", "empty", "random"]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    if how == "truncated":
        data = data[: rng.randrange(len(data))]
    elif how == "flipped":
        mangled = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mangled[rng.randrange(len(mangled))] = rng.randrange(256)
        data = bytes(mangled)
    elif how == "prefixed":
        data = draw(st.binary(max_size=16)) + data
    elif how == "empty":
        data = b""
    elif how == "random":
        data = draw(st.binary(max_size=512))
    name_suffix = draw(st.sampled_from([suffix, suffix, *sorted(SUPPORTED), ".exe", ""]))
    stem = draw(st.text(alphabet="abc XYZ-_.é/\\\x00:", max_size=12))
    return stem + name_suffix, data


class NamedBytes(io.BytesIO):
    """A file to upload under any name (Django's SimpleUploadedFile refuses some, such as
    "." or "..", before the request is even built; a client may send them)."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


def stored_files(root: str) -> set[str]:
    return {str(p) for p in Path(root).rglob("*") if p.is_file()}


def test_fuzz_uploads_and_their_jobs(ingest_client, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)

    def check(example: tuple[str, bytes]) -> None:
        name, data = example
        before, stored = db_state(), stored_files(settings.MEDIA_ROOT)
        response = ingest_client.post(
            "/v1/documents", {"file": NamedBytes(data, name)}, format="multipart"
        )
        no_server_error(response, contract_error, before)
        if response.status_code >= 400:
            assert stored_files(settings.MEDIA_ROOT) == stored
            return
        assert response.status_code == 202, response.content
        with mock.patch("jobs.tasks.close_old_connections", lambda: None):
            work("ingest:document", max_seconds=10)
        job = Job.objects.get(pk=response.json()["jobId"])
        assert job.status == JobStatus.DONE or (
            job.status == JobStatus.DEAD and job.last_error.startswith("INGEST_FAILED: ")
        ), (job.status, job.last_error)

    fuzz(files(), check)


def test_fuzz_a_folder_ingest_refuses_per_file(workspace):
    """`telha ingest` of a folder of mangled files: each file ingested or refused with a
    reason, the run never stopped by one of them."""

    def check(example: list[tuple[str, bytes]]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "inbox"
            folder.mkdir()
            written = set()
            for i, (name, data) in enumerate(example):
                path = folder / f"{i}-{name.replace('/', '_').replace(chr(0), '_')}"
                if path.suffix.lower() in SUPPORTED:
                    path.write_bytes(data)
                    written.add(path.name)
            out = io.StringIO()
            try:
                call_command(
                    "ingest", str(folder), "--tenant", "acme", "--root", tmp, "--json", stdout=out
                )
            except Exception as exc:  # only "no file could be ingested" may end the run
                assert "INGEST_FAILED: no file could be ingested" in str(exc), exc
                return
            result = json.loads(out.getvalue())
            assert result["files"] == len(written)
            reasons = ("unsupported", "mismatch", "encrypted", "corrupt", "too large")
            for error in result["errors"]:
                assert error["error"].startswith(reasons), error

    fuzz(st.lists(files(), min_size=1, max_size=5), check)


# --- chat hooks -------------------------------------------------------------------------------


@st.composite
def slack_bodies(draw: Any) -> tuple[str, str]:
    """(url, body): interactivity forms whose payload is a card tap with arbitrary fields,
    arbitrary JSON or text; Events API bodies of arbitrary JSON or text."""
    url = draw(st.sampled_from([INTERACTIVITY, EVENTS]))
    if url == EVENTS:
        event = st.fixed_dictionaries(
            {"type": st.sampled_from(["event_callback", "url_verification", "x"]) | JSON},
            optional={"event": JSON, "event_id": TEXT | JSON, "team_id": TEXT, "challenge": JSON},
        )
        return url, draw(st.one_of(event.map(json.dumps), JSON.map(json.dumps), TEXT))
    value = st.one_of(
        st.fixed_dictionaries(
            {
                "kind": st.just("clarify_answer") | JSON,
                "clarificationId": TEXT | JSON,
                "answerIndex": JSON,
                "nonce": TEXT | JSON,
            }
        ).map(json.dumps),
        TEXT,
    )
    tap = st.builds(
        lambda action, v: block_actions(action_id=action, value=v),
        st.sampled_from(["clarify_answer_0", "clarify_custom", "other"]) | TEXT,
        value,
    )
    payload = st.one_of(tap.map(json.dumps), JSON.map(json.dumps), TEXT)
    return url, draw(st.one_of(payload.map(lambda p: urlencode({"payload": p})), TEXT))


def test_fuzz_slack_hooks_signed(slack, client):  # noqa: F811
    def check(example: tuple[str, str]) -> None:
        url, body = example
        before = db_state()
        response = post_slack(client, url, body, signed_headers(body))
        no_server_error(response, hook_error, before)

    fuzz(slack_bodies(), check)


def test_fuzz_teams_hook_verified(teams, client, teams_stub, teams_token):  # noqa: F811
    service = teams_stub.service_url

    @st.composite
    def activities(draw: Any) -> str:
        data = draw(
            st.fixed_dictionaries(
                {"kind": st.just("clarify_answer") | JSON},
                optional={"clarificationId": TEXT | JSON, "answerIndex": JSON, "nonce": JSON},
            )
        )
        activity = draw(
            st.sampled_from([conversation_update(service), invoke_action(service, data)])
        )
        for key in draw(st.lists(st.sampled_from(["type", "value", "text", "from", "name"]))):
            activity[key] = draw(JSON)
        return draw(st.one_of(st.just(json.dumps(activity)), JSON.map(json.dumps), TEXT))

    def check(body: str) -> None:
        before = db_state()
        response = post_teams(client, body, f"Bearer {teams_token()}")
        no_server_error(response, hook_error, before)

    fuzz(activities(), check)
