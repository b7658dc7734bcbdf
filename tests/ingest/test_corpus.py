"""The labelled detection corpus (issue 21 item 7): at least 40 documents of every
format, written by bench/corpus.py, each file labelled; detection holds the targets on it
(precision and recall of kinds and of candidate dates ≥ 0.9 — `make bench` reports them)."""

import json
from pathlib import Path

from bench.corpus import DOCS, FOLDER, LABELS, score

FORMATS = {".pdf", ".docx", ".xlsx", ".html", ".msg", ".md", ".txt", ".csv", ".eml"}


def test_the_corpus_is_what_the_script_labels():
    labels = json.loads((FOLDER / LABELS).read_text())
    files = {str(p.relative_to(FOLDER)) for p in FOLDER.rglob("*") if p.is_file()} - {LABELS}
    assert files == set(labels) == {name for name, _, _ in DOCS}
    assert len(labels) >= 40
    assert {Path(name).suffix for name in labels} >= FORMATS
    assert labels == {
        name: [{"kind": k, "candidates": c} for k, c in expected] for name, _, expected in DOCS
    }
    negatives = [name for name, found in labels.items() if not found]
    assert len(negatives) >= 10
    assert any("scan" in name for name in labels) and any("author-only" in name for name in labels)


def test_detection_holds_the_targets_on_the_corpus():
    result = score()
    assert result["documents"] >= 40
    assert result["kinds"]["precision"] >= 0.9, result["misses"]
    assert result["kinds"]["recall"] >= 0.9, result["misses"]
    assert result["candidate_dates"]["precision"] >= 0.9, result["misses"]
    assert result["candidate_dates"]["recall"] >= 0.9, result["misses"]
