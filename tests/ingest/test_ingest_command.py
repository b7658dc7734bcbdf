"""`telha ingest PATH... --tenant SLUG` (CONTRACT §2): files and folders, the progress bar
and the summary table, `--json`, re-runs that deduplicate, unsupported files, bad paths
and tenants (exit codes), `--acl`, and the capability flag."""

import io
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from clarify.models import Clarification
from graph.models import Edge, Node, Source, SourceVersion
from jobs.models import Job

pytestmark = pytest.mark.django_db

MTIME = datetime(2026, 9, 1, 12, tzinfo=UTC).timestamp()

FILES = {
    "contracts/msa.md": (
        "---\ntitle: Master services agreement\nauthor: alice@acme.test\nacl: [group:legal]\n---\n"
        "It was signed by Alice Author on 12 June 2026 and countersigned by Bob Named on\n"
        "19 June 2026.\n"
    ),
    "contracts/terms.txt": "Payable within 30 days of signature. Signed on 1 July 2026.\n",
    "contracts/mou.md": "MEMORANDUM OF UNDERSTANDING\n\nThe parties agree to negotiate.\n",
    "policies/policies.csv": (
        "id,name,owner,valid_from,valid_to\n"
        "P1,Travel,olga@acme.test,2026-01-01,2026-12-31\n"
        "P2,Retention,Olga Owner,03/04/2026,\n"
        "P3,Procurement,olga@acme.test,sometime in Q3,\n"
    ),
    "mail/notice.eml": (
        "Received: from mx by mail.acme.test; Tue, 14 Jul 2026 09:12:44 +0000\n"
        "From: Alice Author <alice@acme.test>\nTo: Bob Named <bob@acme.test>\n"
        "Subject: Renewal notice\nDate: Thu, 9 Jul 2026 16:03:10 +0000\n\nPlease confirm.\n"
    ),
    "notes/plain.md": "Shopping list: eggs, milk, bread.\n",
    "notes/scan.tiff": "II*\x00 not read\n",
    "notes/README": "no suffix, not read\n",
}
SUPPORTED_FILES = [name for name in FILES if name.rsplit(".", 1)[-1] in {"md", "txt", "csv", "eml"}]
AMBIGUITIES = {
    "conflicting_dates": 3,  # msa signature, P2 cell, notice envelope
    "relative_date": 1,  # terms
    "undated": 1,  # mou
    "low_confidence_extraction": 1,  # P3 cell
}
FACTS = 2 + 2 + 2 + 3 + 1 + 2  # msa, terms, mou, csv rows, notice, plain (term + date each text)


@pytest.fixture
def docs(tmp_path, monkeypatch):
    """The files under tmp_path/docs, the current folder tmp_path (the default root): the
    folder as the command line names it, `docs`."""
    for name, text in FILES.items():
        path = tmp_path / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (MTIME, MTIME))
    monkeypatch.chdir(tmp_path)
    return Path("docs")


def ingest(*args: str, tenant: str = "acme") -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", *args, "--tenant", tenant, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def ingest_json(*args: str) -> dict:
    out, _ = ingest(*args, "--json")
    return json.loads(out)


def refused(*args: str, tenant: str = "acme") -> tuple[int, str]:
    out = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("ingest", *args, "--tenant", tenant, stdout=out, stderr=io.StringIO())
    return exc.value.returncode, str(exc.value)


def counts() -> dict[str, int]:
    return {
        "Source": Source.objects.count(),
        "SourceVersion": SourceVersion.objects.count(),
        "Node": Node.objects.count(),
        "Edge": Edge.objects.count(),
        "Clarification": Clarification.objects.count(),
        "Job": Job.objects.count(),
    }


def table(out: str) -> dict[str, str]:
    rows = {}
    for line in out.splitlines():
        if line.startswith("  ! "):
            continue
        label, value = line[:24].strip(), line[25:]
        rows[label] = value
    return rows


def test_a_folder_summary_table_and_no_progress_bar_when_stdout_is_not_a_terminal(workspace, docs):
    out, err = ingest(str(docs))
    assert table(out) == {
        "files": "6",
        "facts": str(FACTS),
        "ambiguities": (
            "conflicting_dates 3, low_confidence_extraction 1, relative_date 1, undated 1"
        ),
        "clarifications opened": "6",
        "deduplicated": "0",
        "errors": "0",
    }
    assert err == ""  # stdout is not a terminal: no progress bar
    # What the table says was written.
    assert Clarification.objects.count() == 6
    assert sorted(Clarification.objects.values_list("kind", flat=True)) == sorted(
        kind for kind, n in AMBIGUITIES.items() for _ in range(n)
    )
    assert Source.objects.count() == 6
    assert sorted(Source.objects.values_list("external_id", flat=True)) == sorted(
        f"docs/{name}" for name in SUPPORTED_FILES
    )


def test_json_output(workspace, docs):
    data = ingest_json(str(docs))
    assert set(data) == {
        "files",
        "facts",
        "ambiguities",
        "opened",
        "deduplicated",
        "errors",
        "results",
    }
    assert data["files"] == 6 and data["facts"] == FACTS
    assert data["ambiguities"] == AMBIGUITIES
    assert (data["opened"], data["deduplicated"], data["errors"]) == (6, 0, [])
    by_file = {r["file"]: r for r in data["results"]}
    assert list(by_file) == sorted(f"docs/{name}" for name in SUPPORTED_FILES)
    assert by_file["docs/contracts/msa.md"] == {
        "file": "docs/contracts/msa.md",
        "externalId": "docs/contracts/msa.md",
        "facts": 2,
        "ambiguities": {"conflicting_dates": 1},
        "opened": 1,
        "deduplicated": 0,
        "error": "",
    }
    assert by_file["docs/policies/policies.csv"]["ambiguities"] == {
        "conflicting_dates": 1,
        "low_confidence_extraction": 1,
    }
    assert by_file["docs/notes/plain.md"]["ambiguities"] == {}
    assert sum(r["opened"] for r in data["results"]) == data["opened"]


class Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def ingest_on_a_terminal(*args: str) -> tuple[str, str]:
    out, err = Terminal(), io.StringIO()
    call_command("ingest", *args, "--tenant", "acme", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_on_a_terminal_a_progress_bar_counts_files_rate_clarifications_and_errors(workspace, docs):
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    out, err = ingest_on_a_terminal(str(docs))
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", err)
    assert "7/7 files" in plain
    assert "docs/s" in plain
    assert "6 clarifications opened" in plain
    assert "1 errors" in plain
    assert table(out)["files"] == "7"  # the summary table still goes to stdout


def test_json_has_no_progress_bar_even_on_a_terminal(workspace, docs):
    out, err = ingest_on_a_terminal(str(docs), "--json")
    assert err == ""
    json.loads(out)


def test_a_second_run_deduplicates_everything_and_opens_nothing(workspace, docs):
    first = ingest_json(str(docs))
    before = counts()
    second = ingest_json(str(docs))
    assert second["opened"] == 0
    assert second["deduplicated"] == first["opened"] == 6
    assert second["ambiguities"] == first["ambiguities"]
    for r in second["results"]:
        assert (r["opened"], r["deduplicated"]) == (0, sum(r["ambiguities"].values()))
    after = counts()
    assert after["Clarification"] == before["Clarification"]
    assert after["Job"] == before["Job"]  # no new routing jobs
    assert after["SourceVersion"] == before["SourceVersion"]  # same content, same version
    out, _ = ingest(str(docs))
    assert table(out)["clarifications opened"] == "0"
    assert table(out)["deduplicated"] == "6"


def test_unsupported_files_in_a_folder_are_skipped(workspace, docs):
    data = ingest_json(str(docs))
    files = [r["file"] for r in data["results"]]
    assert "docs/notes/scan.tiff" not in files and "docs/notes/README" not in files
    assert data["errors"] == []


def test_naming_an_unsupported_file_reports_an_error(workspace, docs):
    data = ingest_json(str(docs / "notes" / "scan.tiff"), str(docs / "notes" / "plain.md"))
    assert data["files"] == 2
    [error] = data["errors"]
    assert error["file"] == "docs/notes/scan.tiff"
    assert (
        "unsupported: only .txt, .md, .csv, .eml, .pdf, .docx, .xlsx, .html/.htm and .msg "
        "files are read" in error["error"]
    )
    assert Source.objects.count() == 1  # only plain.md
    out, _ = ingest(str(docs / "notes" / "scan.tiff"), str(docs / "notes" / "plain.md"))
    assert "  ! docs/notes/scan.tiff: " in out
    assert table(out)["errors"] == "1"


def test_when_no_file_can_be_ingested_the_command_fails(workspace, docs):
    before = counts()
    code, message = refused(str(docs / "notes" / "scan.tiff"))
    assert code == 1 and "INGEST_FAILED" in message
    assert counts() == before


def test_a_missing_path_is_bad_usage_and_writes_nothing(workspace, docs):
    before = counts()
    code, message = refused(str(docs / "contracts"), str(docs / "nope.md"))
    assert code == 2 and "nope.md" in message
    assert counts() == before


def test_an_unknown_tenant_is_refused(workspace, docs):
    before = counts()
    code, message = refused(str(docs), tenant="nobody")
    assert code == 1 and "NOT_FOUND" in message
    assert counts() == before


def test_a_bad_acl_is_bad_usage(workspace, docs):
    before = counts()
    code, _ = refused(str(docs), "--acl", "legal")
    assert code == 2
    assert counts() == before


def test_files_and_folders_together(workspace, docs):
    data = ingest_json(str(docs / "contracts" / "msa.md"), str(docs / "policies"))
    assert [r["file"] for r in data["results"]] == [
        "docs/contracts/msa.md",
        "docs/policies/policies.csv",
    ]
    assert data["facts"] == 2 + 3


def test_acl_and_source_system(workspace, docs):
    ingest(
        str(docs / "contracts"),
        "--acl",
        "group:finance,email:olga@acme.test",
        "--source-system",
        "sharepoint",
        "--restriction",
        "privileged",
    )
    sources = Source.objects.all()
    assert {s.system for s in sources} == {"sharepoint"}
    assert all(s.acl == ["group:finance", "email:olga@acme.test"] for s in sources)
    assert {s.restriction for s in sources} == {"privileged"}


def test_front_matter_acl_is_the_default(workspace, docs):
    ingest(str(docs / "contracts"))
    assert Source.objects.get(external_id="docs/contracts/msa.md").acl == ["group:legal"]
    assert Source.objects.get(external_id="docs/contracts/terms.txt").acl == []


def test_people_named_in_documents_are_linked(workspace, people, docs):
    ingest(str(docs))
    msa = Source.objects.get(external_id="docs/contracts/msa.md")
    edges = Edge.objects.filter(from_node__source=msa)
    linked = {(e.type, e.to_node.person.email if e.to_node.person else None) for e in edges}
    assert ("AUTHORED_BY", "alice@acme.test") in linked
    assert ("NAMES", "alice@acme.test") in linked  # "signed by Alice Author" resolves by name
    assert ("NAMES", "bob@acme.test") in linked
    csv = Source.objects.get(external_id="docs/policies/policies.csv")
    owners = {
        e.to_node.person.email for e in Edge.objects.filter(from_node__source=csv, type="OWNED_BY")
    }
    assert owners == {"olga@acme.test"}  # by address and by name
    notice = Source.objects.get(external_id="docs/mail/notice.eml")
    mail = {(e.type, e.to_node.person.email) for e in Edge.objects.filter(from_node__source=notice)}
    assert mail == {("SENT_BY", "alice@acme.test"), ("TO", "bob@acme.test")}


def test_clarify_disabled_writes_facts_but_opens_nothing(workspace, docs, settings):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": False}
    data = ingest_json(str(docs))
    assert data["facts"] == FACTS
    assert data["ambiguities"] == {} and data["opened"] == 0
    assert Clarification.objects.count() == 0
    assert Source.objects.count() == 6


def test_an_empty_folder(workspace, tmp_path):
    (tmp_path / "empty").mkdir()
    out, err = ingest(str(tmp_path / "empty"))
    assert table(out)["files"] == "0"
    assert err == ""
    assert ingest_json(str(tmp_path / "empty")) == {
        "results": [],
        "files": 0,
        "facts": 0,
        "ambiguities": {},
        "opened": 0,
        "deduplicated": 0,
        "errors": [],
    }


def test_folders_are_walked_in_path_order_and_streamed(tmp_path):
    from ingest.folder import iter_files

    for name in ("d/b.md", "d/a/x.md", "d/a.md", "d/a/y.csv", "d/a/skip.tiff", "d/c/z.eml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    walk = iter_files([str(tmp_path / "d")])
    assert iter(walk) is walk  # a generator, not a list
    assert [str(path.relative_to(tmp_path)) for path in walk] == [
        "d/a/x.md",
        "d/a/y.csv",
        "d/a.md",
        "d/b.md",
        "d/c/z.eml",
    ]


def test_reference_cycles_are_collected_as_the_command_goes(workspace, docs, monkeypatch):
    import ingest.management.commands.ingest as command

    monkeypatch.setattr(command, "GC_EVERY", 2)
    monkeypatch.setattr(command, "BATCH", 2)
    calls = []
    monkeypatch.setattr(command.gc, "collect", lambda *a: calls.append(a) or 0)
    ingest_json(str(docs))  # 6 files
    assert len(calls) == 3
