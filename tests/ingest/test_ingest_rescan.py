"""Re-ingesting an unchanged folder (issue 22 item 4): each file is recognised by its
fingerprint before detection or any write — nothing is written, no statement but the
one lookup per batch runs — and reported as a second run reports it; a changed file, a
changed option or a source changed since is detected and applied again."""

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

import ingest.folder
from graph.models import SourceVersion

from ..factories import written_counts
from .test_ingest_command import docs  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def run(*args: str) -> dict:
    out = io.StringIO()
    call_command("ingest", *args, "--tenant", "acme", "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def no_detection(monkeypatch) -> list[str]:
    detected: list[str] = []
    real = ingest.folder.ingest_prepare

    def spy(**kwargs):
        detected.append(kwargs["file"].name)
        return real(**kwargs)

    monkeypatch.setattr(ingest.folder, "ingest_prepare", spy)
    return detected


def test_an_unchanged_folder_is_recognised_before_any_write(workspace, docs, monkeypatch):  # noqa: F811
    first = run(str(docs))
    detected = no_detection(monkeypatch)
    before = written_counts()
    with CaptureQueriesContext(connection) as captured:
        second = run(str(docs))
    assert written_counts() == before
    writes = [
        q["sql"] for q in captured.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)
    ]
    assert writes == []
    assert detected == []
    assert second["opened"] == 0
    assert second["deduplicated"] == first["opened"] == 6
    assert second["ambiguities"] == first["ambiguities"]
    assert second["facts"] == first["facts"]
    for r in second["results"]:
        assert (r["opened"], r["deduplicated"]) == (0, sum(r["ambiguities"].values()))


def test_a_changed_file_is_detected_again_and_the_others_are_not(workspace, docs, monkeypatch):  # noqa: F811
    run(str(docs))
    changed = sorted(p for p in docs.rglob("*.md"))[0]
    changed.write_text(changed.read_text() + "\nAmended on 3 May 2026.\n")
    detected = no_detection(monkeypatch)
    second = run(str(docs))
    assert detected == [str(changed.relative_to(docs.parent))]
    assert second["errors"] == []


def test_a_changed_option_detects_every_file_again(workspace, docs, monkeypatch):  # noqa: F811
    run(str(docs))
    detected = no_detection(monkeypatch)
    run(str(docs), "--acl", "group:finance")
    assert len(detected) == 6


def test_a_source_changed_since_is_detected_again(workspace, docs, monkeypatch):  # noqa: F811
    first = run(str(docs))
    name = first["results"][0]["externalId"]
    latest = SourceVersion.objects.filter(source__external_id=name).order_by("-tx").first()
    SourceVersion.objects.create(
        source=latest.source, tx=latest.tx + 1, content_hash="other", text="other"
    )
    detected = no_detection(monkeypatch)
    run(str(docs))
    assert detected == [name]
