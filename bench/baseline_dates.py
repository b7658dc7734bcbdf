"""The date recogniser detection used before the temporal tagger (issue 29), kept only as
the benchmark's baseline: five regular expressions for ISO dates and written-out days
("12 June 2026", "June 12, 2026"), each run over the whole text. `bench_tagger` times it
in the same run as the tagger, so their ratio holds whatever else the machine is doing.
(From this repository's ingest/detection/dates.py before issue 29.)"""

from __future__ import annotations

import re

_MONTH_NAMES = [
    ("january", "jan"),
    ("february", "feb"),
    ("march", "mar"),
    ("april", "apr"),
    ("may",),
    ("june", "jun"),
    ("july", "jul"),
    ("august", "aug"),
    ("september", "sep", "sept"),
    ("october", "oct"),
    ("november", "nov"),
    ("december", "dec"),
]
MONTHS = [name for names in _MONTH_NAMES for name in names]
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_MONTH_START = "(?=[" + "".join(sorted({name[0] for name in MONTHS})) + "])"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
PATTERNS = [
    re.compile(
        r"(?<![\d./-])(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?!\d|[.-]\d)"
    ),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_MONTH_START}{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?!\s*,?\s*(?:19|20)\d\d)", re.I),
    re.compile(rf"\b{_MONTH_START}{_MONTH}\s+{_DAY}\b(?!\s*,?\s*(?:19|20)\d\d)(?!\d)", re.I),
]


def find_dates(text: str) -> int:
    """How many candidate dates the five patterns find (the work, not the result,
    is what is measured)."""
    return sum(1 for pattern in PATTERNS for _ in pattern.finditer(text))
