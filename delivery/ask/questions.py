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

from common.times import from_us, to_us
from graph.search import STOPWORDS as SEARCH_STOPWORDS
from graph.search import search_terms
from ingest.detection.temporal import Period, tag

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
# A bare year is a period only after a preposition of time ("what ends in 2031?"); else
# it is a word of the question ("the 2031 Main Street lease") and searched for.
_YEAR_PREPOSITION = re.compile(r"\b(in|during|by|before|after)\s+$")
# The days of a year after its preposition, and how to say them ("by" 2031: through it).
_YEAR_PERIODS = {
    "in": (lambda y: (date(y, 1, 1), date(y + 1, 1, 1)), "in {0:%Y}"),
    "during": (lambda y: (date(y, 1, 1), date(y + 1, 1, 1)), "in {0:%Y}"),
    "by": (lambda y: (date.min, date(y + 1, 1, 1)), "by the end of {1}"),
    "before": (lambda y: (date.min, date(y, 1, 1)), "before {1}"),
    "after": (lambda y: (date(y + 1, 1, 1), date.max), "after {1}"),
}
_SEASONS = {"SP": "spring", "SU": "summer", "FA": "autumn", "WI": "winter"}


def _said(period: Period) -> str:
    """How to say a period: "on 1 March 2027", "in March 2027", "in Q3 2027"…"""
    start, value = period.start, period.value()
    grain = period.grain
    if grain == "day":
        return f"on {start:%-d %B %Y}"
    if grain in ("week", "weekend"):
        return f"in the {grain} of {start:%-d %B %Y}"
    if grain == "month":
        return f"in {start:%B %Y}"
    if grain in ("quarter", "half"):
        return f"in {value[5:]} {value[:4]}"
    if grain == "season":
        return f"in {_SEASONS[value[5:]]} {value[:4]}"
    if grain == "decade":
        return f"in the {start:%Y}s"
    return f"in {start:%Y}"


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


def _period_in(text: str, today: date) -> tuple[tuple[date, date], str, str] | None:
    """The first period `text` names (the temporal tagger's first date with a calendar
    period, relative ones counted from `today`): its `[from, to)` days, how to say it,
    and the text left once it is taken out. A bare year counts only after a
    preposition of time, which then says which days ("by 2031": until its end)."""
    for timex in tag(text, reference=today):
        period = timex.period
        if timex.type != "DATE" or period is None or period.grain == "century":
            continue
        if timex.kind == "year" and timex.text.removeprefix("the year ").isdigit():
            m = _YEAR_PREPOSITION.search(text, 0, timex.start)
            if m is None:
                continue  # "the 2031 Main Street lease": a word of the question
            days, how = _YEAR_PERIODS[m.group(1)]
            span = days(period.start.year)
            said = how.format(span[0], period.value()).replace("{1}", period.value())
            return span, said, text[: m.start()] + " " + text[timex.end :]
        said = _said(period)
        rest = text[: timex.start] + " " + text[timex.end :]
        return (period.start, period.end), said, rest
    return None


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
