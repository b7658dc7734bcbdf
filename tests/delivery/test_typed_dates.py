"""Dates people type, read by the temporal tagger (issue 29): the period of an
ask-in-chat question (`question_parse`: days, months, quarters, halves, seasons, weeks,
years, relative ones from now) and the "Something else…" answer's dates
(`custom_answer_parse`: "1 July 2026", "next Monday"; a numeric day/month form reads two
ways and is refused). Pure: no database."""

from datetime import UTC, date, datetime

import pytest

from common.times import to_us
from delivery.actions import BAD_DATE, CustomInputs, custom_answer_parse
from delivery.ask.questions import END, START, question_parse

NOW = to_us(datetime(2026, 12, 3, 9, tzinfo=UTC))  # a Thursday


def us(d: date) -> int:
    return to_us(datetime(d.year, d.month, d.day, tzinfo=UTC))


PERIODS = [
    ("What ends in Q3 2027?", END, date(2027, 7, 1), date(2027, 10, 1), "in Q3 2027"),
    ("What starts next quarter?", START, date(2027, 1, 1), date(2027, 4, 1), "in Q1 2027"),
    (
        "What expires in the first half of 2028?",
        END,
        date(2028, 1, 1),
        date(2028, 7, 1),
        "in H1 2028",
    ),
    ("What ends next summer?", END, date(2027, 6, 1), date(2027, 9, 1), "in summer 2027"),
    ("What expires in May 2027?", END, date(2027, 5, 1), date(2027, 6, 1), "in May 2027"),
    ("what expires in may 2027", END, date(2027, 5, 1), date(2027, 6, 1), "in May 2027"),
    (
        "What starts on 15 July 2031?",
        START,
        date(2031, 7, 15),
        date(2031, 7, 16),
        "on 15 July 2031",
    ),
    (
        "What starts on July 15th, 2031?",
        START,
        date(2031, 7, 15),
        date(2031, 7, 16),
        "on 15 July 2031",
    ),
    ("What expires tomorrow?", END, date(2026, 12, 4), date(2026, 12, 5), "on 4 December 2026"),
    (
        "What ends next week?",
        END,
        date(2026, 12, 7),
        date(2026, 12, 14),
        "in the week of 7 December 2026",
    ),
    ("What ends next year?", END, date(2027, 1, 1), date(2028, 1, 1), "in 2027"),
    ("Which leases start during 2031?", START, date(2031, 1, 1), date(2032, 1, 1), "in 2031"),
]


@pytest.mark.parametrize(
    ("question", "edge", "first", "after", "said"), PERIODS, ids=[p[0] for p in PERIODS]
)
def test_the_period_a_question_names(question, edge, first, after, said):
    parsed = question_parse(question, now_us=NOW)
    assert parsed.edge == edge
    assert parsed.period == (us(first), us(after))
    assert parsed.period_text == said


def test_the_period_is_no_search_term():
    parsed = question_parse("When does the Zephyr lease end in Q3 2027?", now_us=NOW)
    assert parsed.terms == ("zephyr", "lease")


@pytest.mark.parametrize(
    "question",
    [
        "When does the 2031 Main Street lease start?",  # a year naming the fact
        "on 31 February 2031",  # no such day: no period (not February, not 2031)
        "When does the Marlin licence period start?",  # "period" is a word here
        "When does the second phase start?",
        "May the lease be renewed?",
    ],
)
def test_no_period(question):
    assert question_parse(question, now_us=NOW).period is None


@pytest.fixture
def now(monkeypatch):
    monkeypatch.setattr("delivery.actions.now_us", lambda: NOW)


@pytest.mark.parametrize(
    ("typed", "day"),
    [
        ("2026-07-01", "2026-07-01"),
        ("1 July 2026", "2026-07-01"),
        ("July 1st, 2026", "2026-07-01"),
        ("next Monday", "2026-12-07"),
        ("tomorrow", "2026-12-04"),
    ],
)
def test_a_typed_answer_date(now, typed, day):
    answer, errors = custom_answer_parse(CustomInputs(typed))
    assert errors == {}
    assert answer is not None and answer["validFrom"] == f"{day}T00:00:00Z"


@pytest.mark.parametrize("typed", ["07/01/2026", "June 2026", "a week", "31 June 2026"])
def test_what_is_not_one_day_is_refused(now, typed):
    assert custom_answer_parse(CustomInputs(typed)) == (None, {"validFrom": BAD_DATE})
