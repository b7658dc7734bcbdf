"""`telha clarify ls` and `telha clarify answer` (CONTRACT §2).

`answer` is the operator fallback over the same service as `POST …/answer`: the responder
is declared with `--responder` and answers as that person with their own rights (there is
no way to assert another responder or other rights), recorded with channel "cli". Exit
codes: 0 success, 1 a refused operation (the contract error code on stderr), 2 bad usage;
every refusal writes nothing.
"""

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clarify.management.commands import clarify as clarify_command
from clarify.models import Clarification
from tenancy.models import Person
from tenancy.services import workspace_load

from .conftest import (
    C1,
    C2,
    assert_nothing_written,
    assert_refused_unreadable,
    bulk_submission,
    responses_of,
    snapshot,
    us,
    versions_of,
)


def cli(*args: str) -> Any:
    """`telha <args>` through call_command; parsed JSON when `--json` is given."""
    out = StringIO()
    call_command(*args, stdout=out)
    text = out.getvalue()
    return json.loads(text) if "--json" in args else text


def _answer(clar_id: Any, responder: str, *args: str) -> list[str]:
    return ["clarify", "answer", str(clar_id), "--responder", responder, *args]


# ---------------------------------------------------------------------------------------
# answer


def test_cli_answer_binds_as_the_given_person_with_their_rights(submit, clients, answer, people):
    s = submit()
    api = submit(external_id="contracts/api.docx")

    out = cli(*_answer(s.clar_id, "ALICE@acme.test", "--index", "1", "--json"))

    new = versions_of(s.node_id)[-1]
    assert out == {
        "status": 200,
        "outcome": "bound",
        "state": "answered",
        "factVersionTx": new.tx_from,
        "quorumSatisfied": True,
    }
    assert (new.valid_from, new.valid_to, new.evidence_class) == (*C1, "human_clarification")
    [record] = responses_of(s.clar_id)
    assert (record.responder, record.rights_at_answer_time, record.channel) == (
        people["alice"].pk,
        "editor",
        "cli",
    )
    assert (record.answer_index, record.answer_custom, record.message_ref) == (1, None, None)
    # The JSON document is the API's body for the same outcome, plus its HTTP status.
    via_api = answer(clients.alice, api.clar_id, answerIndex=1)
    assert set(out) == set(via_api.json()) | {"status"}
    assert out["status"] == via_api.status_code


def test_cli_answer_text_output_and_replay(submit, telha_cli):
    s = submit(severity_hint="critical")
    status, out, _ = telha_cli(*_answer(s.clar_id, "alice@acme.test", "--index", "1"))
    assert (status, out) == (0, "partial_confirmation: state partially_confirmed\n")
    before = snapshot()

    status, out, _ = telha_cli(*_answer(s.clar_id, "alice@acme.test", "--index", "1"))

    assert (status, out) == (0, "partial_confirmation: state partially_confirmed (replayed)\n")
    assert_nothing_written(before)
    status, out, _ = telha_cli(*_answer(s.clar_id, "alice@acme.test", "--index", "1", "--json"))
    assert json.loads(out) == {
        "status": 202,
        "outcome": "partial_confirmation",
        "state": "partially_confirmed",
        "quorumRemaining": 1,
    }
    assert_nothing_written(before)


def test_cli_answer_viewer_attests_with_her_own_rights(submit, people):
    s = submit()
    out = cli(*_answer(s.clar_id, "vera@acme.test", "--index", "1", "--json"))
    assert out == {"status": 202, "outcome": "attestation", "state": "attested"}
    [record] = responses_of(s.clar_id)
    assert (record.responder, record.rights_at_answer_time, record.binding_status) == (
        people["vera"].pk,
        "viewer",
        "attestation",
    )
    assert len(versions_of(s.node_id)) == 1


@pytest.mark.parametrize(
    ("args", "interval"),
    [
        (
            ["--from", "2026-03-01T00:00:00Z", "--to", "2026-09-01T02:00:00+02:00"],
            (us("2026-03-01"), us("2026-09-01")),
        ),
        (["--from", str(us("2026-03-01"))], (us("2026-03-01"), None)),
        (["--to", "2026-09-01T00:00:00Z"], (None, us("2026-09-01"))),
        (["--from", "2025-01-01T00:00:00Z", "--to", str(C2[1])], C2),
    ],
    ids=["rfc3339-both", "microseconds-from-only", "to-only", "mixed"],
)
def test_cli_answer_from_to_parsing(submit, args, interval):
    s = submit()
    out = cli(*_answer(s.clar_id, "alice@acme.test", *args, "--json"))
    assert (out["status"], out["outcome"]) == (200, "bound")
    new = versions_of(s.node_id)[-1]
    assert (new.valid_from, new.valid_to) == interval
    [record] = responses_of(s.clar_id)
    assert record.answer_index is None
    assert record.answer_custom == {
        "validFrom": interval[0],
        "validTo": interval[1],
        "sourceText": None,
    }
    assert record.interval == interval


def test_cli_answer_steward_override(submit, answer, clients, people):
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    assert answer(clients.bob, s.clar_id, answerIndex=2).json()["outcome"] == "conflict"

    out = cli(*_answer(s.clar_id, "sam@acme.test", "--index", "2", "--steward-override", "--json"))

    new = versions_of(s.node_id)[-1]
    assert out == {
        "status": 200,
        "outcome": "bound",
        "state": "answered",
        "factVersionTx": new.tx_from,
        "quorumSatisfied": True,
    }
    assert (new.valid_from, new.valid_to, new.evidence_class) == (*C2, "steward_override")
    last = responses_of(s.clar_id)[-1]
    assert (last.responder, last.channel, last.binding_status) == (
        people["sam"].pk,
        "cli",
        "steward_override",
    )


def test_cli_answer_steward_without_the_flag_is_one_confirmation(submit):
    s = submit(severity_hint="critical")
    out = cli(*_answer(s.clar_id, "sam@acme.test", "--index", "1", "--json"))
    assert out["outcome"] == "partial_confirmation"
    assert responses_of(s.clar_id)[-1].binding_status == "binding_candidate"


@pytest.fixture
def globex_person(workspace):
    loaded = workspace_load(
        data={
            "tenant": "globex",
            "people": [{"name": "Gina", "email": "gina@globex.test", "role": "steward"}],
        }
    )
    return loaded.tenant.people.get()


REFUSALS = [
    # (setup, argv after the id, exit status, code on stderr)
    pytest.param("bound", ["--responder", "bob@acme.test", "--index", "1"], 1,
                 "CLARIFY_ALREADY_ANSWERED", id="already-answered"),
    pytest.param("open", ["--responder", "alice@acme.test", "--index", "1",
                          "--steward-override"], 1, "STEWARD_OVERRIDE_FORBIDDEN",
                 id="override-by-editor"),
    pytest.param("forbidden", ["--responder", "sam@acme.test", "--index", "1",
                               "--steward-override"], 1, "STEWARD_OVERRIDE_FORBIDDEN",
                 id="override-forbidden-by-policy"),
    pytest.param("open", ["--responder", "alice@acme.test", "--index", "7"], 1,
                 "CLARIFY_UNPARSEABLE_ANSWER", id="index-out-of-range"),
    pytest.param("open", ["--responder", "alice@acme.test", "--from", "next tuesday"], 1,
                 "CLARIFY_UNPARSEABLE_ANSWER", id="unparseable-from"),
    pytest.param("open", ["--responder", "alice@acme.test", "--to", "2026-13-45T00:00:00Z"],
                 1, "CLARIFY_UNPARSEABLE_ANSWER", id="unparseable-to"),
    pytest.param("open", ["--responder", "alice@acme.test", "--from", "2026-09-01T00:00:00Z",
                          "--to", "2026-03-01T00:00:00Z"], 1, "CLARIFY_UNPARSEABLE_ANSWER",
                 id="from-after-to"),
    pytest.param("open", ["--responder", "nobody@acme.test", "--index", "1"], 1,
                 "RESPONDER_NOT_AUTHORISED", id="unknown-responder"),
    pytest.param("open", ["--responder", "gina@globex.test", "--index", "1"], 1,
                 "RESPONDER_NOT_AUTHORISED", id="other-tenant-responder"),
    pytest.param("erased", ["--responder", "bob@acme.test", "--index", "1"], 1,
                 "RESPONDER_NOT_AUTHORISED", id="erased-responder"),
    pytest.param("missing", ["--responder", "alice@acme.test", "--index", "1"], 1,
                 "NOT_FOUND", id="unknown-clarification"),
    pytest.param("open", ["--responder", "alice@acme.test"], 2, "either --index",
                 id="neither-index-nor-range"),
    pytest.param("open", ["--responder", "alice@acme.test", "--index", "1", "--from",
                          "2026-03-01T00:00:00Z"], 2, "either --index", id="index-and-range"),
    pytest.param("open", ["--responder", "alice@acme.test", "--index", "one"], 2,
                 "invalid int value", id="index-not-an-integer"),
    pytest.param("open", ["--index", "1"], 2, "--responder", id="no-responder"),
    # No option lets the CLI assert other rights or a second responder.
    pytest.param("open", ["--responder", "vera@acme.test", "--rights", "editor", "--index",
                          "1"], 2, "unrecognized arguments", id="asserted-rights"),
    pytest.param("open", ["--responder", "vera@acme.test", "--responder-id", "x", "--index",
                          "1"], 2, "unrecognized arguments", id="asserted-responder-id"),
]  # fmt: skip


@pytest.mark.parametrize(("setup", "argv", "status", "message"), REFUSALS)
def test_cli_answer_refusals_exit_status_and_write_nothing(
    submit, clients, answer, tenant_policy, globex_person, telha_cli, setup, argv, status, message
):
    if setup == "forbidden":
        tenant_policy(allow_steward_override=False)
    s = submit(severity_hint="critical" if setup == "forbidden" else None)
    if setup == "bound":
        assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    if setup == "erased":
        Person.objects.filter(email="bob@acme.test").update(erased_at="2026-01-01T00:00:00Z")
    clar_id = "00000000-0000-0000-0000-000000000000" if setup == "missing" else s.clar_id
    before = snapshot()

    code, out, err = telha_cli("clarify", "answer", str(clar_id), *argv)

    assert code == status, (out, err)
    assert message in err
    assert out == ""
    assert_nothing_written(before)


# ---------------------------------------------------------------------------------------
# ls


@pytest.fixture
def many(ingest_client):
    """230 clarifications (more than the old silent 200-row cut-off), severities cycling
    normal/high/critical/low, newest last."""
    resp = ingest_client.post("/v1/submissions", bulk_submission(230), format="json")
    assert resp.status_code == 201, resp.content
    return [c["id"] for c in resp.json()["clarifications"]]


def test_cli_ls_lists_every_clarification_by_default(many, monkeypatch):
    monkeypatch.setattr(clarify_command, "LS_CHUNK", 50)  # several chunks
    rows = cli("clarify", "ls", "--json")
    assert len(rows) == 230
    assert {r["id"] for r in rows} == set(many)
    newest_first = Clarification.objects.order_by("-created_at", "id").values_list("id", flat=True)
    assert [r["id"] for r in rows] == [str(pk) for pk in newest_first]
    assert set(rows[0]) == {
        "id",
        "tenant",
        "target",
        "targetName",
        "kind",
        "severity",
        "state",
        "quorumState",
        "createdAt",
    }
    assert {r["targetName"] for r in rows} == {"MSA term"}
    text = cli("clarify", "ls")
    lines = text.splitlines()
    assert lines[0].split() == ["ID", "STATE", "SEVERITY", "KIND", "TARGET"]
    assert len(lines) == 231
    assert [line.split()[0] for line in lines[1:]] == [r["id"] for r in rows]


def test_cli_ls_query_count_does_not_grow_with_rows(many, submit):
    with CaptureQueriesContext(connection) as all_rows:
        assert len(cli("clarify", "ls", "--tenant", "acme", "--json")) == 230
    with CaptureQueriesContext(connection) as few_rows:
        assert len(cli("clarify", "ls", "--tenant", "acme", "--limit", "3", "--json")) == 3
    assert len(all_rows) == len(few_rows) <= 3


def test_cli_ls_limit_and_filters(many, telha_cli):
    newest = cli("clarify", "ls", "--json")
    rows = cli("clarify", "ls", "--limit", "5", "--json")
    assert rows == newest[:5]
    critical = cli("clarify", "ls", "--severity", "critical", "--json")
    assert len(critical) == 230 // 4 + (1 if 230 % 4 > 2 else 0)
    assert {r["severity"] for r in critical} == {"critical"}
    open_low = cli("clarify", "ls", "--state", "open", "--severity", "low", "--json")
    assert len(open_low) == 230 // 4
    assert cli("clarify", "ls", "--state", "answered", "--json") == []
    assert cli("clarify", "ls", "--state", "answered").splitlines() == [
        cli("clarify", "ls").splitlines()[0]
    ]
    # Bad usage: exit 2, nothing printed on stdout.
    for argv in (["--limit", "0"], ["--limit", "-1"], ["--limit", "x"], ["--state", "nope"]):
        status, out, err = telha_cli("clarify", "ls", *argv)
        assert (status, out) == (2, ""), argv
        assert err
    status, out, err = telha_cli("clarify", "ls", "--tenant", "nope")
    assert (status, out) == (1, "")
    assert "NOT_FOUND" in err


def test_cli_ls_tenant_scope(submit, globex_person, ingest_client):
    mine = submit()
    other = Clarification.objects.create(
        tenant=globex_person.tenant,
        target=mine.clar.target,
        kind="undated",
        severity="normal",
        quorum_policy={},
        quorum_state="not_required",
        detector_confidence=0.9,
        applied_candidate_confidence=0.5,
        source_version=mine.clar.source_version,
        dedup_key="globex-only",
    )
    assert [r["id"] for r in cli("clarify", "ls", "--tenant", "acme", "--json")] == [mine.clar_id]
    assert [r["id"] for r in cli("clarify", "ls", "--tenant", "globex", "--json")] == [
        str(other.pk)
    ]
    assert {r["tenant"] for r in cli("clarify", "ls", "--json")} == {"acme", "globex"}


def test_cli_answer_by_a_responder_who_may_not_read_the_source_is_not_found(submit, telha_cli):
    # olga is in finance; the source is legal's only (issue 19 item 1: every answer path).
    s = submit(acl=("group:legal",))
    before = snapshot()

    code, out, err = telha_cli("clarify", "answer", str(s.clar_id), "--responder", "olga@acme.test",
                         "--index", "1")  # fmt: skip

    missing = telha_cli("clarify", "answer", "00000000-0000-0000-0000-000000000000", "--responder",
                  "olga@acme.test", "--index", "1")  # fmt: skip
    assert (code, out) == (1, "") and "NOT_FOUND" in err
    assert (code, out, err.replace(str(s.clar_id), "<id>")) == (
        missing[0],
        missing[1],
        missing[2].replace("00000000-0000-0000-0000-000000000000", "<id>"),
    )
    assert_refused_unreadable(before, s.clar.pk)
