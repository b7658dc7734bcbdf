"""The docs name only code that exists (issue 31 item 7): every dotted name of a project
module the docs mention (`delivery.actions.card_tap_process`, in prose or in a diagram)
imports and resolves, and every source path they give (`delivery/plan.py`) is a file of
the tree. A doc that names a function that no longer exists is a bug; this finds it."""

import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", ROOT / "bench" / "README.md"])
# The project's packages, as the layers contract lists them.
PACKAGES = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
)
_PKG = "|".join(PACKAGES)
# A dotted name that starts with a project package: `delivery.worker.handle_leases(…)`.
DOTTED = re.compile(rf"(?<![\w./-])(?:{_PKG})(?:\.[A-Za-z_]\w*)+")
# A source path of the tree: `delivery/plan.py`, `tests/delivery/test_plan.py`.
PATH = re.compile(rf"(?<![\w./-])(?:{_PKG}|tests|bench)/[\w/.-]*?\.py\b")


# Dotted words that are not code of the tree: doc pages, example hosts, system check ids,
# a logger, and a module the docs name as removed (the history of a decision).
NOT_CODE = re.compile(r"\.(md|example\.com)$|^\w+\.[A-Z]\d{3}$")
NAMED_AS_GONE = {"common.rows"}
LOGGERS = {"telha.audit"}


def names_in(text: str) -> set[str]:
    found = {m.group(0) for m in DOTTED.finditer(text)}
    return {n for n in found if not NOT_CODE.search(n)} - NAMED_AS_GONE - LOGGERS


def paths_in(text: str) -> set[str]:
    return {m.group(0) for m in PATH.finditer(text)}


def resolves(dotted: str) -> bool:
    """The longest importable module prefix, then attributes for the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_the_extraction_finds_names_and_paths_and_is_not_vacuous():
    text = (
        "See `delivery.actions.card_tap_process(CardTap)` and delivery/plan.py; "
        "not a.delivery.x nor foo/delivery/y.py, nor the word delivery, nor jobs.W001, "
        "identity.md or telha.example.com."
    )
    assert names_in(text) == {"delivery.actions.card_tap_process"}
    assert paths_in(text) == {"delivery/plan.py"}
    assert resolves("delivery.actions.card_tap_process")
    assert resolves("common.codes.TapRefusal.UNKNOWN_NONCE")
    assert not resolves("delivery.batch.handle_leases")
    assert not resolves("delivery.worker.handle_lease_gone")
    found = set().union(*(names_in(doc.read_text()) for doc in DOCS))
    assert len(found) > 50


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_name_in_the_docs_resolves(doc: Path):
    missing = sorted(name for name in names_in(doc.read_text()) if not resolves(name))
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_source_path_in_the_docs_exists(doc: Path):
    missing = sorted(path for path in paths_in(doc.read_text()) if not (ROOT / path).exists())
    assert missing == []
