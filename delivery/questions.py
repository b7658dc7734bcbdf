"""What a chat question asks (ask-in-chat): the words to search for, whether it asks
about the start or the end of validity, and the period it filters by. Pure: no I/O,
no database; `now` is passed in.

    "When does the Zephyr lease term start?"   → terms [zephyr, lease, term], start
    "What expires in March 2027?"              → no terms, end, [1 Mar 2027, 1 Apr 2027)
    "Which leases end next year?"              → terms [leases], end, next calendar year
"""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

from telha.common.times import MONTHS, from_us, to_us
from telha.graph.search import STOPWORDS as SEARCH_STOPWORDS
from telha.graph.search import search_terms

START, END = "start", "end"
START_WORDS = frozenset(
    [
        "start",
        "starts",
        "started",
        "starting",
        "begin",
        "begins",
        "began",
        "beginning",
        "commence",
        "commences",
        "commenced",
        "effective",
        "effect",
    ]
)
END_WORDS = frozenset(
    [
        "end",
        "ends",
        "ended",
        "ending",
        "expire",
        "expires",
        "expired",
        "expiring",
        "expiry",
        "terminate",
        "terminates",
        "terminated",
        "termination",
        "finish",
        "finishes",
        "finished",
        "lapse",
        "lapses",
        "lapsed",
    ]
)
# Words of the question itself, never of the facts asked about (besides the search's
# own function words).
QUESTION_WORDS = frozenset(
    [
        "when",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "why",
        "how",
        "does",
        "do",
        "did",
        "is",
        "are",
        "was",
        "were",
        "will",
        "would",
        "can",
        "could",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "please",
        "tell",
        "me",
        "show",
        "list",
        "any",
        "anything",
        "some",
        "date",
        "dates",
        "day",
        "valid",
        "validity",
        "until",
        "till",
        "takes",
        "take",
        "taking",
        "took",
        "happen",
        "happens",
        "get",
        "gets",
        "due",
        "ever",
        "yet",
        "year",
        "years",
        "month",
        "months",
        "next",
        "last",
        "this",
        "there",
    ]
)
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_YEAR = r"(?:19|20|21)\d\d"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+({_YEAR})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+({_YEAR})\b")
_ISO_DAY = re.compile(rf"\b({_YEAR})-(\d\d)-(\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?\s+({_YEAR})\b")
# A bare year is a period only after a preposition of time ("what ends in 2031?"); else
# it is a word of the question ("the 2031 Main Street lease") and searched for.
_YEAR_ONLY = re.compile(rf"\b(in|during|by|before|after)\s+(?:the\s+year\s+)?({_YEAR})\b")
# The days of a year after its preposition, and how to say them ("by" 2031: through it).
_YEAR_PERIODS = {
    "in": (lambda y: (date(y, 1, 1), date(y + 1, 1, 1)), "in {0:%Y}"),
    "during": (lambda y: (date(y, 1, 1), date(y + 1, 1, 1)), "in {0:%Y}"),
    "by": (lambda y: (date.min, date(y + 1, 1, 1)), "by the end of {1}"),
    "before": (lambda y: (date.min, date(y, 1, 1)), "before {1}"),
    "after": (lambda y: (date(y + 1, 1, 1), date.max), "after {1}"),
}
_RELATIVE = re.compile(r"\b(next|this|last)\s+(year|month)\b")


@dataclass(frozen=True)
class Question:
    """A parsed question: `terms` to search for, `edge` (START, END or None: which end of
    validity it asks about) and `period` (`[from, to)` in µs, or None)."""

    terms: tuple[str, ...]
    edge: str | None
    period: tuple[int, int] | None
    period_text: str = ""


def _us(d: date) -> int:
    return to_us(datetime(d.year, d.month, d.day, tzinfo=UTC))


def _month_span(year: int, month: int) -> tuple[date, date]:
    end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return date(year, month, 1), end


def _day_span(year: int, month: int, day: int) -> tuple[date, date] | None:
    try:
        start = date(year, month, day)
    except ValueError:
        return None
    return start, date.fromordinal(start.toordinal() + 1)


def _named_period(text: str, today: date) -> tuple[re.Match[str], tuple[date, date] | None, str]:
    """The first period `text` names, most precise form first: its match, its
    `[from, to)` days (None for an impossible day) and how to say it."""
    on_day = "on {0:%-d %B %Y}"
    if m := _DAY_MONTH_YEAR.search(text):
        return m, _day_span(int(m[3]), MONTHS[m[2]], int(m[1])), on_day
    if m := _MONTH_DAY_YEAR.search(text):
        return m, _day_span(int(m[3]), MONTHS[m[1]], int(m[2])), on_day
    if m := _ISO_DAY.search(text):
        return m, _day_span(int(m[1]), int(m[2]), int(m[3])), on_day
    if m := _MONTH_YEAR.search(text):
        return m, _month_span(int(m[2]), MONTHS[m[1]]), "in {0:%B %Y}"
    if m := _YEAR_ONLY.search(text):
        days, how = _YEAR_PERIODS[m[1]]
        return m, days(int(m[2])), how.replace("{1}", m[2])
    if m := _RELATIVE.search(text):
        shift = {"next": 1, "this": 0, "last": -1}[m[1]]
        if m[2] == "year":
            year = today.year + shift
            return m, (date(year, 1, 1), date(year + 1, 1, 1)), "in {0:%Y}"
        index = today.year * 12 + today.month - 1 + shift
        return m, _month_span(index // 12, index % 12 + 1), "in {0:%B %Y}"
    raise LookupError


def _period_in(text: str, today: date) -> tuple[tuple[date, date], str, str] | None:
    """The period `text` names: (its [from, to) days, how to say it, the text left
    once it is taken out), or None."""
    try:
        match, span, how = _named_period(text, today)
    except LookupError:
        return None
    if span is None:
        return None
    return span, how.format(span[0]), text[: match.start()] + " " + text[match.end() :]


def _edge_of(words: list[str], text: str) -> str | None:
    starts = any(w in START_WORDS for w in words) or "take effect" in text
    ends = any(w in END_WORDS for w in words) or "run out" in text
    if starts == ends:
        return None  # neither, or both ("when does it start and end?"): the whole interval
    return START if starts else END


def question_parse(question: str, *, now_us: int) -> Question:
    """Read `question`: its search terms (not question words, time words, the period or
    the start/end verbs), which end of validity it asks about, and its period."""
    text = " ".join(question.lower().split())
    period = _period_in(text, from_us(now_us).date())
    rest = period[2] if period else text
    words = search_terms(rest)
    edge = _edge_of(words, text)
    skip = QUESTION_WORDS | SEARCH_STOPWORDS | START_WORDS | END_WORDS
    terms = tuple(w for w in words if w not in skip and (len(w) > 1 or w.isdigit()))
    if period is None:
        return Question(terms, edge, None)
    (first, after), how, _ = period
    return Question(terms, edge, (_us(first), _us(after)), how)
