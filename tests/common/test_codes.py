"""Codes have names (issue 31 item 4): product code spells no reason or error code as a
bare string; it names the member of its `StrEnum` in `common/codes.py`. A static scan of
the product packages (no database), so a new bare literal fails here rather than in a
review."""

import ast
from enum import StrEnum
from pathlib import Path

from common import codes

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    "telha",
    "common",
    "tenancy",
    "graph",
    "jobs",
    "ingest",
    "clarify",
    "delivery",
    "identity",
    "privacy",
    "demo",
    "events",
]
CODES = frozenset(
    member.value
    for value in vars(codes).values()
    if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum
    for member in value
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring constants."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            found.add(id(first.value))
    return found


def bare_codes(source: str) -> list[tuple[int, str]]:
    """(line, literal) of each string literal of `source` that is a code, or starts with
    one and a colon ("INGEST_FAILED: …"), outside docstrings."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            head = node.value.split(":", 1)[0]
            if node.value in CODES or (head in CODES and node.value.startswith(f"{head}:")):
                found.append((node.lineno, node.value))
    return found


def test_the_scan_finds_a_bare_code_and_passes_a_named_one() -> None:
    source = (
        '"""A module naming SEQ_GAP in its docstring."""\n'
        'reason = "DAILY_CAP_EXCEEDED"\n'
        'error = f"LEASE_LOST: {detail}"\n'
        "named = SkipReason.DAILY_CAP_EXCEEDED\n"
        'label = "CONTRACT_TERM"\n'
    )
    assert bare_codes(source) == [(2, "DAILY_CAP_EXCEEDED"), (3, "LEASE_LOST: ")]


def test_product_code_names_every_code_through_its_enum() -> None:
    assert {"NO_READ_PERMISSION", "NOT_FOUND", "AWAY_UNTIL_INVALID"} <= CODES
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or relative == Path("common/codes.py"):
                continue
            found += [(str(relative), line, text) for line, text in bare_codes(path.read_text())]
    assert found == []
