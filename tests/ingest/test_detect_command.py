"""`telha detect PATH... [--tenant SLUG] [--root DIR] [--json]` (CONTRACT §2, §2.2):
detection read exactly as `telha ingest` reads files — formats, limits, refusals — and
reported, never written: CONTRACT §2.2's JSON keys, every temporal expression with
offsets into the stored text (front matter included), refused files with their reason
and nothing else, a readable summary; no row and no file written."""

import io
import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from ingest.detection.model import day_us

pytestmark = pytest.mark.django_db

MTIME = datetime(2026, 9, 1, 12, tzinfo=UTC).timestamp()
MSA = (
    "---\ntitle: Master services agreement\ndate: 2026-05-10\n---\n"
    "Signed on 12 June 2026 for three (3) years, effective next quarter.\n"
)
FILES = {
    "contracts/msa.md": MSA,
    "contracts/nda.txt": "Signed on 12 June 2026 and countersigned on 19 June 2026.\n",
    "mail/notice.eml": (
        "Received: from mx by mail.acme.test; Tue, 14 Jul 2026 09:12:44 +0000\n"
        "From: Alice Author <alice@acme.test>\nTo: Bob Named <bob@acme.test>\n"
        "Subject: Renewal notice\nDate: Thu, 9 Jul 2026 16:03:10 +0000\n\n"
        "We renew next month, as agreed yesterday.\n"
    ),
    "broken.pdf": "%PDF-1.4 not really a pdf",
}
RESULT_KEYS = ["file", "externalId", "title", "error", "facts", "ambiguities", "dates"]
FACT_KEYS = ["key", "labels", "validFrom", "validTo", "properties", "excerpt"]
AMBIGUITY_KEYS = [
    "factKey",
    "kind",
    "candidates",
    "detectorConfidence",
    "appliedCandidateConfidence",
    "excerpt",
]


@pytest.fixture
def docs(tmp_path):
    root = tmp_path / "docs"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (MTIME, MTIME))
    return root


def detect(*args: str) -> str:
    out = io.StringIO()
    call_command("detect", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def detect_json(*args: str) -> dict:
    return json.loads(detect(*args, "--json"))


def by_file(payload: dict) -> dict[str, dict]:
    return {r["file"]: r for r in payload["results"]}


def test_json_has_the_contract_keys(docs):
    payload = detect_json(str(docs), "--root", str(docs))
    assert list(payload) == ["results"]
    results = by_file(payload)
    msa = results[f"{docs.as_posix()}/contracts/msa.md"]
    assert list(msa) == RESULT_KEYS
    assert msa["externalId"] == "contracts/msa.md"
    assert msa["title"] == "Master services agreement" and msa["error"] is None
    for fact in msa["facts"]:
        assert list(fact) == FACT_KEYS
    [ambiguity] = msa["ambiguities"]
    assert list(ambiguity) == AMBIGUITY_KEYS
    assert ambiguity["factKey"] == "term" and ambiguity["kind"] == "relative_date"
    assert ambiguity["excerpt"] == "effective next quarter"
    assert list(ambiguity["candidates"][0]) == ["validFrom", "validTo", "label"]
    assert ambiguity["candidates"][0]["validFrom"] == day_us(date(2026, 7, 1))  # µs
    for entry in msa["dates"]:
        assert list(entry) == ["start", "end", "text", "type", "value"]


def test_dates_index_the_stored_text_front_matter_included(docs):
    msa = by_file(detect_json(str(docs / "contracts" / "msa.md")))[
        f"{docs.as_posix()}/contracts/msa.md"
    ]
    assert [(d["text"], d["type"], d["value"]) for d in msa["dates"]] == [
        ("2026-05-10", "DATE", "2026-05-10"),  # the front matter's date
        ("12 June 2026", "DATE", "2026-06-12"),
        ("three (3) years", "DURATION", "P3Y"),
        ("next quarter", "DATE", "2026-Q3"),  # from the document's date
    ]
    for d in msa["dates"]:
        assert MSA[d["start"] : d["end"]] == d["text"]


def test_facts_and_ambiguities_are_ingests(docs):
    nda = by_file(detect_json(str(docs / "contracts")))[f"{docs.as_posix()}/contracts/nda.txt"]
    facts = {f["key"]: f for f in nda["facts"]}
    assert facts["date"]["validFrom"] == day_us(date(2026, 6, 12))
    assert facts["date"]["labels"] == ["DOCUMENT_DATE"]
    [ambiguity] = nda["ambiguities"]
    assert ambiguity["kind"] == "conflicting_dates"
    assert [c["label"] for c in ambiguity["candidates"]] == [
        "12 June (signature)",
        "19 June (countersignature)",
    ]


def test_an_email_counts_relative_dates_from_its_date(docs):
    notice = by_file(detect_json(str(docs / "mail" / "notice.eml")))
    [result] = notice.values()
    assert ("next month", "DATE", "2026-08") in {
        (d["text"], d["type"], d["value"]) for d in result["dates"]
    }
    assert ("yesterday", "DATE", "2026-07-08") in {
        (d["text"], d["type"], d["value"]) for d in result["dates"]
    }


def test_a_refused_file_has_its_reason_and_nothing_else(docs, tmp_path):
    (tmp_path / "tool.exe").write_bytes(b"MZ\x90")
    payload = detect_json(str(docs / "broken.pdf"), str(tmp_path / "tool.exe"), "--root", "/")
    broken, tool = payload["results"]
    assert list(broken) == ["file", "externalId", "error"]
    assert broken["error"].startswith("corrupt: the PDF cannot be read")
    assert tool["error"].startswith("unsupported")
    assert tool["externalId"] == (tmp_path / "tool.exe").as_posix().lstrip("/")


def test_a_file_over_the_size_limit_is_refused_unread(docs, monkeypatch):
    monkeypatch.setattr("ingest.folder.MAX_FILE_BYTES", 10)
    [result] = detect_json(str(docs / "contracts" / "nda.txt"))["results"]
    assert result["error"] == "too large: file over 10 MB" and list(result) == [
        "file",
        "externalId",
        "error",
    ]


def test_external_ids_are_paths_under_the_root(docs):
    results = detect_json(str(docs / "contracts"), "--root", str(docs.parent))["results"]
    assert sorted(r["externalId"] for r in results) == [
        "docs/contracts/msa.md",
        "docs/contracts/nda.txt",
    ]
    cwd = os.getcwd()
    os.chdir(docs)
    try:  # the default root is the current folder, whatever path names the file
        [result] = detect_json(str(docs / "contracts" / "msa.md"))["results"]
    finally:
        os.chdir(cwd)
    assert result["externalId"] == "contracts/msa.md"


def test_a_readable_summary(docs):
    out = detect(str(docs / "contracts" / "msa.md"), str(docs / "broken.pdf"))
    lines = out.splitlines()
    assert lines[0].endswith("msa.md — Master services agreement")
    assert "  ambiguity  relative_date on term: 1 July 2026 (next quarter after signature)" in out
    assert "'three (3) years' DURATION P3Y" in out
    assert lines[-1].startswith(f"{docs.as_posix()}/broken.pdf: refused — ")


def _every_row() -> dict[str, int]:
    return {
        m._meta.label: m._base_manager.count()
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    }


def _files(*roots: Path) -> set[str]:
    return {str(p) for root in roots if root.exists() for p in root.rglob("*")}


def test_it_writes_nothing(workspace, docs, tmp_path):
    media = Path(settings.MEDIA_ROOT)
    rows, files = _every_row(), _files(tmp_path, media)
    detect(str(docs), "--tenant", "acme", "--json")
    detect(str(docs), "--tenant", "acme")
    assert _every_row() == rows
    assert _files(tmp_path, media) == files


def test_the_tenant_resolves_names_and_an_unknown_one_is_refused(workspace, docs):
    assert by_file(detect_json(str(docs / "contracts"), "--tenant", "acme"))
    rows = _every_row()
    with pytest.raises(CommandError) as exc:
        call_command("detect", str(docs), "--tenant", "nope", stdout=io.StringIO())
    assert exc.value.returncode == 1 and str(exc.value).startswith("NOT_FOUND")
    assert _every_row() == rows


@pytest.mark.parametrize(
    "args", [["/no/such/file.md"], [".", "--root", "/no/such/folder"]], ids=["path", "root"]
)
def test_a_missing_path_is_bad_usage(args):
    rows = _every_row()
    with pytest.raises(CommandError) as exc:
        call_command("detect", *args, "--json", stdout=io.StringIO())
    assert exc.value.returncode == 2
    assert _every_row() == rows


CONTRACT = (
    "SUPPLY AGREEMENT\n\nThis Supply Agreement is made as of the 2nd day of March, 2015 "
    '(the "Effective Date") by and between Northwind Tools, Inc. and Quarry Lane Ltd.\n\n'
    "4. Term. This Agreement shall continue for three (3) years and shall automatically "
    "renew for successive one (1) year periods unless either party gives ninety (90) days' "
    "written notice.\n"
)


def test_a_contracts_term_and_date(tmp_path):
    path = tmp_path / "supply.txt"
    path.write_text(CONTRACT)
    [result] = detect_json(str(path), "--root", str(tmp_path))["results"]
    facts = {f["key"]: f for f in result["facts"]}
    assert list(facts) == ["term", "date"]
    term, made = facts["term"], facts["date"]
    assert term["labels"] == ["DOCUMENT_TERM"] and made["labels"] == ["DOCUMENT_DATE"]
    assert (term["validFrom"], term["validTo"]) == (
        day_us(date(2015, 3, 2)),
        day_us(date(2018, 3, 2)),  # exclusive: the day after the last day of the term
    )
    assert term["properties"]["renewal"] == {"every": "P1Y", "noticeDays": 90}
    assert (made["validFrom"], made["validTo"]) == (day_us(date(2015, 3, 2)), None)
    assert made["excerpt"] == "the 2nd day of March, 2015"
    assert result["ambiguities"] == []  # a stated, consistent date opens nothing


def test_dates_list_a_contracts_own_forms_whole(tmp_path):
    path = tmp_path / "lease.txt"
    text = "This Lease is entered into this 8t h day of May, 2014 for five (5) years.\n"
    path.write_text(text)
    [result] = detect_json(str(path))["results"]
    assert [(d["text"], d["type"], d["value"]) for d in result["dates"]] == [
        ("this 8t h day of May, 2014", "DATE", "2014-05-08"),  # not the tagger's "May, 2014"
        ("five (5) years", "DURATION", "P5Y"),
    ]
    for d in result["dates"]:
        assert text[d["start"] : d["end"]] == d["text"]


def test_a_file_outside_the_root_is_detected_with_no_external_id(docs, tmp_path):
    """`telha detect` writes nothing, so a file outside --root is read all the same (the
    scorer runs it over a corpus beside the repository); ingest would refuse it."""
    root = tmp_path / "elsewhere"
    root.mkdir()
    [result] = detect_json(str(docs / "contracts" / "nda.txt"), "--root", str(root))["results"]
    assert result["error"] is None and result["externalId"] is None
    assert result["facts"]


def test_detect_runs_on_a_fresh_checkout_without_a_secret_key(tmp_path):
    """`telha detect` signs and stores nothing: it needs no SECRET_KEY (a fresh clone has
    neither var/dev.env nor one); a command that does still refuses to start."""
    import subprocess
    import sys

    doc = tmp_path / "lease.txt"
    doc.write_text("This lease is made on 3 March 2025 and runs for two (2) years.\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env["DEBUG"] = "0"  # the dev env is never read then (telha.devenv)
    run = [sys.executable, "-c", "import sys; from telha.cli import main; sys.exit(main(sys.argv))"]
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [*run, "detect", str(doc), "--json"],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [result] = json.loads(done.stdout)["results"]
    assert result["error"] is None and result["dates"]
    refused = subprocess.run(
        [*run, "clarify", "ls"], env=env, cwd=repo, capture_output=True, text=True, check=False
    )
    assert refused.returncode != 0 and "SECRET_KEY must be set" in refused.stderr
