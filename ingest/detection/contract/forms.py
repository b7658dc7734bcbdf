"""The shapes contracts write their dates and lengths in, compiled once.

The temporal tagger reads the dates of running prose ("March 15, 2005", "12 June 2026").
Contracts, and the way filings reach us, add shapes of their own, read here:

* the "day of" form with its ordinal: "the 8th day of May, 2014", "this first (1st) day
  of June 2006", and the same split by OCR or typing ("8t h day", "1s t  day of JUNE ,
  2006", "16 day of August. 2012");
* a space before the comma: "April 15 , 2010";
* blanks left to fill in at signing: "June __, 2004", "[ ], 2020", "[•], 2019", "this ____
  day of ______, 20__", and redactions ("[***], 2019");
* numeric dates in either order: "3/15/05", "29/3/18", "12-23-2019", "1.4.2011" (which
  order the document uses is settled by the reader, see `days.py`);
* term lengths: "five (5) years", "twelve (12) full calendar months", "a 1-year term",
  "one (1) additional three (3) year period", "annual", "year-to-year".

Every pattern runs on lower-cased text, over a bounded passage (never the whole text),
and has no nested repetition, so matching is linear in the passage."""

import re
from dataclasses import dataclass
from datetime import date

from ..temporal import Period, Timex
from ..temporal.fold import folded
from ..temporal.lang import language

_EN = language("en")


def _words(entries: list[str]) -> str:
    ordered = sorted(set(entries), key=lambda e: (-len(e), e))
    return "|".join(re.escape(e).replace(r"\ ", r"[\s-]+") for e in ordered)


MONTHS: dict[str, int] = dict(_EN.months)
NUMBER_WORDS: dict[str, int] = {
    k: v for k, v in _EN.numbers.items() if k.replace(" ", "").isalpha() and 0 < v <= 100
}
ORDINAL_WORDS: dict[str, int] = {k: v for k, v in _EN.ordinals.items() if 1 <= v <= 31}

MONTH = rf"(?:{_words(list(MONTHS))})\.?(?![a-z])"
# An ordinal suffix, also as OCR splits it ("8t h", "1s t", "2n d", "23r d").
_SUFFIX = r"(?:st|nd|rd|th|s\s?t|n\s?d|r\s?d|t\s?h)"
DAY_NUMBER = rf"(?:[12]\d|3[01]|0?[1-9])(?:\s?{_SUFFIX})?(?![\d])"
DAY_WORD = rf"(?:{_words(list(ORDINAL_WORDS))})(?![a-z])(?:\s*\(\s*\d{{1,2}}\s?{_SUFFIX}?\s*\))?"
YEAR = r"(?:1[89]\d\d|20\d\d)(?!\d)"
# A blank to fill in, or a redaction: "____", "[ ]", "[•]", "[·]", "[***]", "[* * *]".
BLANK = r"(?:_+(?:[ \t]_+){0,3}|\[[\s*•·.\u2022\u00b7_-]{0,9}\]|\*{3,})"
_BLANK_YEAR = r"(?:(?:19|20)_+|_{2,})"

_DAY_OF = (
    rf"(?:the\s+|this\s+)?(?P<of_day>\(?(?:{DAY_NUMBER})\)?|{DAY_WORD}|{BLANK})?\s*"
    rf"day\s+of\s+(?:(?P<of_month>{MONTH}|{BLANK})\s*[,.]?|,)\s*(?P<of_year>{YEAR}|{_BLANK_YEAR})"
)
_MONTH_DAY = (
    rf"(?P<md_month>{MONTH})\s+(?P<md_day>{DAY_NUMBER}|{BLANK})\s*,?\s*"
    rf"(?P<md_year>{YEAR}|{_BLANK_YEAR})"
)
_DAY_MONTH = (
    rf"(?P<dm_day>{DAY_NUMBER})\s+(?:of\s+)?(?P<dm_month>{MONTH})\s*,?\s*(?P<dm_year>{YEAR})"
)
# A day and month without a year ("this 30th day of April"), and a month and year
# without a day ("dated July 2013"): dates stated only in part.
_DAY_OF_NO_YEAR = (
    rf"(?:the\s+|this\s+)?(?P<ny_day>\(?(?:{DAY_NUMBER})\)?|{DAY_WORD})\s*day\s+of\s+"
    rf"(?P<ny_month>{MONTH})(?!\s*[,.]?\s*(?:\d|_))"
)
_MONTH_YEAR = rf"(?P<my_month>{MONTH})\s*,?\s*(?P<my_year>{YEAR})"
_BLANK_DATE = rf"(?P<blank>{BLANK})(?:\s+{BLANK})?\s*,\s*(?P<bl_year>{YEAR}|{_BLANK_YEAR})"
_NUMERIC = (
    r"(?<![\d/.-])(?P<n1>\d{1,2})(?P<sep>[/.-])(?P<n2>\d{1,2})(?P=sep)(?P<n3>\d{4}|\d\d)"
    r"(?![\d]|[/.-]\d)"
)
_ISO = (
    r"(?<![\d-])(?P<iso_y>(?:19|20)\d\d)-(?P<iso_m>0[1-9]|1[0-2])"
    r"-(?P<iso_d>0[1-9]|[12]\d|3[01])(?!\d)"
)

CONTRACT_DATE = re.compile(
    "|".join(
        f"(?:{p})"
        for p in (
            _DAY_OF,
            _ISO,
            _NUMERIC,
            _MONTH_DAY,
            _DAY_MONTH,
            _BLANK_DATE,
            _DAY_OF_NO_YEAR,
            _MONTH_YEAR,
        )
    )
)


@dataclass(frozen=True)
class Written:
    """A date as a contract writes it. `day` is set when the text pins one day;
    `readings` holds both days of a numeric date whose order the text does not show
    (month first, then day first); `blank` says part of it was left to fill in or never
    written ("June __, 2004", "the 30th day of April", "July 2013"), and then `year`,
    `month` and `dom` (day of month) keep what was written."""

    start: int
    end: int
    day: date | None = None
    readings: tuple[date, ...] = ()
    blank: bool = False
    year: int | None = None
    month: int | None = None
    dom: int | None = None


def _day_number(text: str | None) -> int | None:
    if not text:
        return None
    digits = re.search(r"\d{1,2}", text)
    if digits:
        return int(digits.group(0))
    word = re.sub(r"\s*\(.*", "", text).strip()
    return ORDINAL_WORDS.get(re.sub(r"[\s-]+", " ", word))


def _month_number(text: str | None) -> int | None:
    return MONTHS.get(text.rstrip(".").strip()) if text else None


def _year_number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def two_digit_year(yy: int) -> int:
    """A two-digit year of a contract ("3/15/05", "3-5-98"): 1950 to 2049."""
    return 2000 + yy if yy < 50 else 1900 + yy


def _safe(year: int | None, month: int | None, day: int | None) -> date | None:
    if year is None or month is None or day is None:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _numeric(m: re.Match[str]) -> Written | None:
    a, b, y = int(m.group("n1")), int(m.group("n2")), m.group("n3")
    year = int(y) if len(y) == 4 else two_digit_year(int(y))
    month_first, day_first = _safe(year, a, b), _safe(year, b, a)
    readings = tuple(dict.fromkeys(d for d in (month_first, day_first) if d is not None))
    if not readings:
        return None
    if len(readings) == 1:
        return Written(m.start(), m.end(), day=readings[0])
    return Written(m.start(), m.end(), readings=readings)


def _written(m: re.Match[str]) -> Written | None:
    """One match of CONTRACT_DATE as a `Written` date (None: no calendar date)."""
    g = m.groupdict()
    if g["n1"] is not None:
        return _numeric(m)
    if g["iso_y"] is not None:
        day = _safe(int(g["iso_y"]), int(g["iso_m"]), int(g["iso_d"]))
        return Written(m.start(), m.end(), day=day) if day else None
    if g["blank"] is not None:
        return Written(m.start(), m.end(), blank=True, year=_year_number(g["bl_year"]))
    if g["ny_month"] is not None:
        month, dom = _month_number(g["ny_month"]), _day_number(g["ny_day"])
        return Written(m.start(), m.end(), blank=True, month=month, dom=dom)
    if g["my_month"] is not None:
        month, year = _month_number(g["my_month"]), _year_number(g["my_year"])
        return Written(m.start(), m.end(), blank=True, year=year, month=month)
    for prefix in ("of", "md", "dm"):
        year_text = g[f"{prefix}_year"]
        if year_text is None:
            continue
        day_text, month_text = g[f"{prefix}_day"], g[f"{prefix}_month"]
        year, month = _year_number(year_text), _month_number(month_text)
        day_number = _day_number(day_text)
        if year is None or month is None or day_number is None:
            return Written(m.start(), m.end(), blank=True, year=year, month=month, dom=day_number)
        day = _safe(year, month, day_number)
        return Written(m.start(), m.end(), day=day) if day else None
    return None


# What every written date contains, found first (a class of literal characters, which
# the regular-expression engine skips to fast): a four-digit year, a numeric date, a
# blank, or the digits of "the 30th day of".
HIT = re.compile(
    r"\d{4}(?!\d)|\d{1,2}[/.-]\d|_{2,}|\[[\s*\u2022\u00b7.\u2022_-]{0,9}\]|\*{3,}"
    rf"|\d\s?{_SUFFIX}?\s*\)?\s*day\s+of"
)
# How far before its hit a date may start: "this first (1st) day of September, 2019".
_REACH = 48


def _starts(low: str, floor: int, hit: int) -> list[int]:
    """Where a date around the hit at `hit` may start, leftmost first: the starts of
    the words (and of bracketed or underscored runs) within _REACH before it."""
    lo = max(floor, hit - _REACH)
    starts = [
        i
        for i in range(lo, hit)
        if (i == floor or not low[i - 1].isalnum()) and (low[i].isalnum() or low[i] in "_[(*")
    ]
    return [*starts, hit]


def written_dates(low: str, start: int, end: int) -> list[Written]:
    """The dates written in `low[start:end]` (lower-cased text), in order, never
    overlapping: around each HIT, the longest CONTRACT_DATE match from the leftmost
    start that reaches it."""
    found: list[Written] = []
    floor = start
    for hit in HIT.finditer(low, start, end):
        if hit.start() < floor:
            continue
        for s in _starts(low, floor, hit.start()):
            m = CONTRACT_DATE.match(low, s, end)
            if m is None or m.end() <= hit.start():
                continue
            w = _written(m)
            if w is not None:
                found.append(w)
                floor = m.end()
                break
    return found


def contract_days(text: str) -> list[Timex]:
    """The days the text writes in a contract's forms, as TIMEX3 dates (kind
    "contract"): what `telha detect` lists in place of the tagger's shorter reading.
    Blanks and two-way numeric dates are left to the tagger."""
    low = folded(text)
    found = []
    for w in written_dates(low, 0, len(low)):
        if w.day is not None:
            found.append(
                Timex(
                    w.start,
                    w.end,
                    text[w.start : w.end],
                    "DATE",
                    w.day.isoformat(),
                    "contract",
                    Period("day", w.day),
                )
            )
    return found


# --- lengths -------------------------------------------------------------------------

_UNITS = {"year": "Y", "month": "M", "week": "W", "day": "D"}
_NUMBER = rf"(?:\d{{1,3}}(?:\.\d)?|{_words(list(NUMBER_WORDS))}|an?|one)(?![a-z\d])"
LENGTH = re.compile(
    rf"(?P<amount>{_NUMBER})(?:\s*\(\s*(?P<digits>\d{{1,3}})\s*\))?"
    r"(?:\s+(?:additional|full|calendar|consecutive|successive|further|more|business|"
    r"contract|processing)){0,2}"
    r"(?:\s+|\s*-\s*|\s*~\s*)(?P<unit>year|month|week|day)s?(?![a-z])"
    r"|(?P<annual>annual|yearly|year[\s-]+to[\s-]+year|month[\s-]+to[\s-]+month|monthly)"
    r"(?![a-z])"
)


@dataclass(frozen=True)
class Length:
    """A stated length of time: `amount` `unit` (Y, M, W or D) at [start, end)."""

    start: int
    end: int
    amount: int
    unit: str

    @property
    def iso(self) -> str:
        """The ISO 8601 duration: P1Y, P6M, P90D."""
        return f"P{self.amount}{self.unit}"

    @property
    def days(self) -> int:
        """The length in days: exact for days and weeks; a month counts 30 days and a
        year 365 (what a notice period is compared with, never calendar arithmetic)."""
        return self.amount * {"D": 1, "W": 7, "M": 30, "Y": 365}[self.unit]


def _amount(m: re.Match[str]) -> int | None:
    if m.group("digits"):
        return int(m.group("digits"))
    text = re.sub(r"[\s-]+", " ", m.group("amount"))
    if text in ("a", "an", "one"):
        return 1
    if text.replace(".", "").isdigit():
        value = float(text)
        return int(value) if value == int(value) else None
    return NUMBER_WORDS.get(text)


def lengths(low: str, start: int, end: int) -> list[Length]:
    """The lengths of time written in `low[start:end]`, in order."""
    found = []
    for m in LENGTH.finditer(low, start, end):
        if m.group("annual"):
            word = m.group("annual")
            unit = "M" if word.startswith("month") else "Y"
            found.append(Length(m.start(), m.end(), 1, unit))
            continue
        amount = _amount(m)
        if amount:
            found.append(Length(m.start(), m.end(), amount, _UNITS[m.group("unit")]))
    return found
