"""Date recognition: ISO dates and English textual forms only ("12 June 2026",
"June 12, 2026", "12th of June"). Slash and dash forms like 03/04/2026 are ambiguous and
left to the tabular rules, where a column says what they mean."""

import re
from dataclasses import dataclass
from datetime import date

from telha.common.times import MONTHS

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
# Where a month-first form can start: one character class tried before the alternation
# of every month name (a lookahead, so what matches is unchanged).
_MONTH_START = "(?=[" + "".join(sorted({name[0] for name in MONTHS})) + "])"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"

# Order matters: the longest, most specific forms first.
PATTERNS = [
    (
        "iso",
        re.compile(
            r"(?<![\d./-])(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?!\d|[.-]\d)"
        ),
    ),
    ("day_month_year", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("month_day_year", re.compile(rf"\b{_MONTH_START}{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("day_month", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?!\s*,?\s*(?:19|20)\d\d)", re.I)),
    (
        "month_day",
        re.compile(rf"\b{_MONTH_START}{_MONTH}\s+{_DAY}\b(?!\s*,?\s*(?:19|20)\d\d)(?!\d)", re.I),
    ),
]


@dataclass(frozen=True)
class DateMatch:
    """A date found in text. `year_known` is False for "12th of June" (no year written)."""

    start: int
    end: int
    text: str
    month: int
    day: int
    year: int | None

    @property
    def year_known(self) -> bool:
        return self.year is not None

    def on(self, year: int | None = None) -> date | None:
        y = self.year if self.year is not None else year
        if y is None:
            return None
        try:
            return date(y, self.month, self.day)
        except ValueError:
            return None


def _month_number(text: str) -> int | None:
    """1-12 for a month number or English month name/abbreviation ("Sept."), else None."""
    if text.isdigit():
        return int(text)
    return MONTHS.get(text.lower().rstrip("."))


def find_dates(text: str) -> list[DateMatch]:
    """Every recognisable date in `text`, in order, never overlapping; impossible calendar
    dates (31 February) are not dates."""
    taken: list[tuple[int, int]] = []
    found: list[DateMatch] = []
    for _name, pattern in PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            month = _month_number(m.group("month"))
            day = int(m.group("day"))
            year = int(m.group("year")) if "year" in m.groupdict() and m.group("year") else None
            if month is None or not 1 <= month <= 12 or not 1 <= day <= 31:
                continue
            match = DateMatch(m.start(), m.end(), m.group(0), month, day, year)
            if match.on(year or 2000) is None:  # 31 February, 30 February...
                continue
            taken.append((m.start(), m.end()))
            found.append(match)
    return sorted(found, key=lambda d: d.start)


def parse_date_text(text: str) -> date | None:
    """A whole string that is exactly one recognisable date with a year, else None."""
    text = text.strip()
    matches = find_dates(text)
    if len(matches) == 1 and matches[0].start == 0 and matches[0].end == len(text):
        return matches[0].on()
    return None


def label(d: date) -> str:
    """ "12 June" style label (the year is shown only when it is not obvious)."""
    return f"{d.day} {d.strftime('%B')}"


def label_with_year(d: date) -> str:
    """ "12 June 2026" style label."""
    return f"{d.day} {d.strftime('%B')} {d.year}"
