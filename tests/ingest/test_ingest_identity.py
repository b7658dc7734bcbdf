"""One file, one source (issue 30, item 7; CONTRACT §2): a file's source identity under
`telha ingest` is its path under `--root` (default: the current folder), whatever path
named it — itself, its folder or a parent folder, relative or absolute, through `.`, `..`
or a symbolic link to a folder. Ingesting `docs/a.md` and later `docs/` is one source,
asked once; `--json` names each file's externalId; a file outside the root is refused
and writes nothing."""

import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from clarify.models import Clarification
from graph.models import Source, SourceVersion
from ingest import folder as ingest_folder
from ingest.folder import OutsideRoot, files_read, source_external_id
from ingest.formats import Refused
from jobs.models import Job

pytestmark = pytest.mark.django_db

CONTRACT = (
    "It was signed by Alice Author on 12 June 2026 and countersigned by Bob Named on\n"
    "19 June 2026. The services are effective next quarter.\n"
)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """tmp_path/work/docs/{a.md, sub/b.md}, a link `work/shelf` → `docs`; the current
    folder is tmp_path/work."""
    work = tmp_path / "work"
    (work / "docs" / "sub").mkdir(parents=True)
    (work / "docs" / "a.md").write_text(CONTRACT)
    (work / "docs" / "sub" / "b.md").write_text("Signed on 1 July 2026.\n")
    (work / "shelf").symlink_to(work / "docs", target_is_directory=True)
    monkeypatch.chdir(work)
    return work


def ingest(*args: str) -> dict:
    out = io.StringIO()
    call_command("ingest", *args, "--tenant", "acme", "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def counts() -> dict[str, int]:
    return {
        "Source": Source.objects.count(),
        "SourceVersion": SourceVersion.objects.count(),
        "Clarification": Clarification.objects.count(),
        "Job": Job.objects.count(),
    }


def test_the_same_file_however_named_is_one_source_asked_once(workspace, tree):
    first = ingest("docs/a.md")
    [result] = first["results"]
    assert (result["file"], result["externalId"], result["opened"]) == ("docs/a.md", "docs/a.md", 2)
    written = counts()
    namings = [
        ("docs",),  # its folder
        (".",),  # a parent folder
        (str(tree / "docs" / "a.md"),),  # absolute
        ("./docs/../docs/a.md",),
        ("shelf/a.md",),  # through a link to its folder
        (str(tree / "docs"), "--root", str(tree)),  # an explicit root: the same one
    ]
    for naming in namings:
        data = ingest(*naming)
        by_id = {r["externalId"]: r for r in data["results"]}
        assert by_id["docs/a.md"]["opened"] == 0, naming
        assert by_id["docs/a.md"]["deduplicated"] == 2, naming
        assert data["errors"] == [], naming
    assert sorted(Source.objects.values_list("external_id", flat=True)) == [
        "docs/a.md",
        "docs/sub/b.md",
    ]
    # a.md asked its questions once: no second source, version or routing job for it.
    asked = Clarification.objects.filter(source_version__source__external_id="docs/a.md")
    assert asked.count() == written["Clarification"] == 2
    assert Job.objects.filter(kind="clarify:temporal").count() == written["Job"]
    assert Source.objects.get(external_id="docs/a.md").versions.count() == 1
    assert Source.objects.get(external_id="docs/a.md").title == "docs/a.md"


def test_json_names_each_file_as_named_and_its_external_id(workspace, tree):
    data = ingest(str(tree / "docs"))
    assert [(r["file"], r["externalId"]) for r in data["results"]] == [
        (str(tree / "docs" / "a.md"), "docs/a.md"),
        (str(tree / "docs" / "sub" / "b.md"), "docs/sub/b.md"),
    ]


def test_the_root_decides_the_identity(workspace, tree, monkeypatch):
    data = ingest("docs", "--root", "docs")
    assert [r["externalId"] for r in data["results"]] == ["a.md", "sub/b.md"]
    monkeypatch.chdir(tree.parent)  # elsewhere, the same root named absolutely
    again = ingest(str(tree / "docs" / "sub"), "--root", str(tree / "docs"))
    assert [(r["externalId"], r["opened"]) for r in again["results"]] == [("sub/b.md", 0)]
    assert sorted(Source.objects.values_list("external_id", flat=True)) == ["a.md", "sub/b.md"]


def test_a_rescan_named_another_way_is_recognised_before_detection(workspace, tree, monkeypatch):
    ingest("docs")
    detected: list[str] = []
    real = ingest_folder.ingest_prepare

    def spy(**kwargs):
        detected.append(kwargs["file"].identity)
        return real(**kwargs)

    monkeypatch.setattr(ingest_folder, "ingest_prepare", spy)
    before = counts()
    data = ingest(str(tree), "--root", str(tree))
    assert detected == []  # both files unchanged: neither read by detection again
    assert {r["externalId"] for r in data["results"]} == {"docs/a.md", "docs/sub/b.md"}
    assert counts() == before


def test_a_file_outside_the_root_is_refused_and_writes_nothing(workspace, tree, monkeypatch):
    monkeypatch.chdir(tree / "docs" / "sub")  # the default root: docs/sub
    before = counts()
    out = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("ingest", "../a.md", "--tenant", "acme", "--json", stdout=out)
    assert exc.value.returncode == 1 and "INGEST_FAILED" in str(exc.value)
    [error] = json.loads(out.getvalue())["errors"]
    assert error == {
        "file": "../a.md",
        "error": (
            f"outside the root: {tree / 'docs' / 'a.md'} is not under {tree / 'docs' / 'sub'} "
            "(name a --root that holds it)"
        ),
    }
    assert counts() == before
    # Beside a file inside the root: that one is ingested.
    data = ingest("../a.md", "b.md")
    assert [(r["externalId"], bool(r["error"])) for r in data["results"]] == [
        ("", True),
        ("b.md", False),
    ]
    assert list(Source.objects.values_list("external_id", flat=True)) == ["b.md"]


def test_a_root_that_is_no_folder_is_bad_usage(workspace, tree):
    before = counts()
    for root in ("nowhere", "docs/a.md"):
        with pytest.raises(CommandError) as exc:
            call_command("ingest", "docs", "--tenant", "acme", "--root", root, stdout=io.StringIO())
        assert exc.value.returncode == 2 and "--root" in str(exc.value)
    assert counts() == before


def test_source_external_id(tree):
    root = tree
    docs = tree / "docs"
    assert source_external_id(Path("docs/a.md"), root) == "docs/a.md"
    assert source_external_id(docs / "sub" / ".." / "a.md", root) == "docs/a.md"
    assert source_external_id(Path("shelf/sub/b.md"), root) == "docs/sub/b.md"
    assert source_external_id(Path("docs/a.md"), Path("docs")) == "a.md"
    # A link to a file is a file of its own (its own name, its own source).
    (docs / "latest.md").symlink_to(docs / "a.md")
    assert source_external_id(docs / "latest.md", root) == "docs/latest.md"
    with pytest.raises(OutsideRoot, match=r"^outside the root: "):
        source_external_id(Path("docs/a.md"), docs / "sub")
    deep = Path("docs/" + "d" * 250 + "/" + "e" * 250 + ".md")
    with pytest.raises(Refused, match=r"^too long: "):
        source_external_id(deep, root)


def test_files_read_is_what_detect_shares(tree):
    """The reading path as a function (telha detect reads exactly as telha ingest does):
    each file as named, its identity, its bytes and date, or why it is not read."""
    elsewhere = tree.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "c.md").write_text("Signed on 2 July 2026.\n")
    reads = list(files_read(["docs", str(elsewhere)], root=tree))
    assert [(r.file, r.external_id, r.error[:18]) for r in reads[:2]] == [
        ("docs/a.md", "docs/a.md", ""),
        ("docs/sub/b.md", "docs/sub/b.md", ""),
    ]
    assert reads[0].input is not None and reads[0].input.data == CONTRACT.encode()
    assert reads[0].input.name == reads[0].input.identity == "docs/a.md"
    [outside] = reads[2:]
    assert (outside.file, outside.external_id, outside.input) == (str(elsewhere / "c.md"), "", None)
    assert outside.error.startswith("outside the root: ")
    assert os.path.samefile(reads[0].file, tree / "docs" / "a.md")
