"""The calendar dates detection's rules read (spec §14 v0.8 PR-061 temporal.py): the
tagger's ISO and written dates, with or without their year; slash and dash forms are
left to the tables. Table-driven, with tricky negatives. (The tagger as a whole:
test_temporal_tagger.py.)"""

from datetime import date

import pytest

from ingest.detection.model import label, label_with_year
from ingest.detection.temporal import tag, written_day
from ingest.detection.text import on_year, written_dates, year_known


def find_dates(text: str):
    return written_dates(tag(text))


def found(text: str) -> list[tuple[str, int | None, int, int]]:
    return [
        (d.text, int(d.value[:4]) if year_known(d) else None, int(d.value[5:7]), int(d.value[8:10]))
        for d in find_dates(text)
    ]


POSITIVES = [
    # (text, the matched text, year, month, day)
    ("iso", "Signed 2026-06-12 in London", "2026-06-12", 2026, 6, 12),
    ("iso-sentence-end", "The effective date is 2026-07-01.", "2026-07-01", 2026, 7, 1),
    ("iso-comma", "On 2026-07-01, the parties met", "2026-07-01", 2026, 7, 1),
    # a time after the date belongs to the expression (TIMEX3 TIME 2026-07-01T09:30)
    ("iso-with-time", "stamped 2026-07-01T09:30:00Z", "2026-07-01T09:30:00Z", 2026, 7, 1),
    ("iso-in-parens", "(2026-07-01)", "2026-07-01", 2026, 7, 1),
    ("day-month-year", "on 12 June 2026 at noon", "12 June 2026", 2026, 6, 12),
    ("month-day-comma-year", "on June 12, 2026 at noon", "June 12, 2026", 2026, 6, 12),
    ("month-day-year-no-comma", "June 12 2026", "June 12 2026", 2026, 6, 12),
    ("ordinal-of-month-year", "the 12th of June 2026", "12th of June 2026", 2026, 6, 12),
    ("ordinal-comma-year", "from 1st March, 2026", "1st March, 2026", 2026, 3, 1),
    ("ordinal-2nd", "2nd April 2026", "2nd April 2026", 2026, 4, 2),
    ("ordinal-3rd", "3rd May 2026", "3rd May 2026", 2026, 5, 3),
    ("month-ordinal-year", "June 12th, 2026", "June 12th, 2026", 2026, 6, 12),
    ("abbrev-jun", "12 Jun 2026", "12 Jun 2026", 2026, 6, 12),
    ("abbrev-sept-dot", "Sept. 3, 2026", "Sept. 3, 2026", 2026, 9, 3),
    ("abbrev-sep", "3 Sep 2026", "3 Sep 2026", 2026, 9, 3),
    ("abbrev-dec-dot", "31 Dec. 2026", "31 Dec. 2026", 2026, 12, 31),
    ("lower-case", "signed 4 march 2026", "4 march 2026", 2026, 3, 4),
    ("upper-case", "SIGNED 4 MARCH 2026", "4 MARCH 2026", 2026, 3, 4),
    ("leap-day", "29 February 2028", "29 February 2028", 2028, 2, 29),
    ("yearless-ordinal-of", "on the 12th of June we met", "12th of June", None, 6, 12),
    ("yearless-day-month", "by 3 March", "3 March", None, 3, 3),
    ("yearless-month-day", "by March 3", "March 3", None, 3, 3),
    ("yearless-leap-day", "on 29 February", "29 February", None, 2, 29),
    # a two-digit year is no year: a weak (yearless) reading, never 2026 or 1926
    ("two-digit-year-is-yearless", "12 June 26", "12 June", None, 6, 12),
]


@pytest.mark.parametrize(
    ("text", "matched", "year", "month", "day"),
    [case[1:] for case in POSITIVES],
    ids=[case[0] for case in POSITIVES],
)
def test_recognised(text, matched, year, month, day):
    assert found(text) == [(matched, year, month, day)]


def test_match_positions_point_at_the_date():
    text = "Signed on 12 June 2026 and countersigned on 2026-06-19."
    first, second = find_dates(text)
    assert text[first.start : first.end] == "12 June 2026"
    assert text[second.start : second.end] == "2026-06-19"
    assert first.day == date(2026, 6, 12) and second.day == date(2026, 6, 19)


def test_several_dates_in_order_and_never_overlapping():
    text = "From 1 March 2026 to June 30, 2026, then 2026-07-01 and the 4th of July."
    assert found(text) == [
        ("1 March 2026", 2026, 3, 1),
        ("June 30, 2026", 2026, 6, 30),
        ("2026-07-01", 2026, 7, 1),
        ("4th of July", None, 7, 4),
    ]


NEGATIVES = [
    # impossible calendar dates are not dates
    ("31-february", "31 February 2026"),
    ("30-february-yearless", "on 30 Feb"),
    ("29-february-non-leap", "29 February 2027"),
    ("31-april", "31 April 2026"),
    ("february-30-us", "February 30, 2026"),
    ("iso-month-13", "2026-13-01"),
    ("iso-day-32", "2026-01-32"),
    ("iso-day-0", "2026-01-00"),
    ("day-0", "0 June 2026"),
    ("day-32", "32 June 2026"),
    # version numbers and identifiers
    ("version-dotted", "release 2.1.2026-03"),
    ("version-iso-then-dot-digit", "v2026-03-01.5"),
    ("version-dot-before-iso", "build 1.2026-03-01"),
    ("iso-then-dash-digit", "ticket 2026-03-01-7"),
    # phone numbers and digit runs
    ("phone-spaced", "call +44 20 2026 0612"),
    ("phone-dashed", "phone 555-2026-06-12"),
    ("iso-in-longer-run-before", "x12026-06-12"),
    ("iso-in-longer-run-after", "2026-06-1234"),
    ("iso-digits-both-sides", "id 42026-06-123"),
    ("compact-digits", "20260612"),
    # quarters, months without days, the verb "may"
    ("q3-results", "Q3 2026 results"),
    ("q3-results-no-year", "The Q3 results were strong"),
    ("month-year-only", "in June 2026"),
    ("may-we", "May we meet next week?"),
    ("may-year", "May 2026"),
    ("you-may", "you may sign it"),
    # slash and dash forms are ambiguous in text: left to the tables
    ("slash-dmy", "signed 03/04/2026"),
    ("dash-dmy", "signed 12-06-2026"),
    ("dot-dmy", "signed 12.06.2026"),
    ("slash-unambiguous", "signed 13/04/2026"),
    ("slash-us", "signed 4/13/2026"),
    ("no-date", "Ninety days' written notice."),
]


@pytest.mark.parametrize("text", [c[1] for c in NEGATIVES], ids=[c[0] for c in NEGATIVES])
def test_not_recognised(text):
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-06-12", date(2026, 6, 12)),
        ("12 June 2026", date(2026, 6, 12)),
        ("  June 12, 2026 ", date(2026, 6, 12)),
        ("1st March, 2026", date(2026, 3, 1)),
        ("12th of June", None),  # no year: not a whole date
        ("03/04/2026", None),
        ("31 February 2026", None),
        ("signed 12 June 2026", None),  # more than the date
        ("12 June 2026 and 13 June 2026", None),
        ("", None),
    ],
    ids=[
        "iso",
        "textual",
        "padded",
        "ordinal",
        "yearless",
        "slashed",
        "impossible",
        "extra-words",
        "two-dates",
        "empty",
    ],
)
def test_written_day_wants_exactly_one_dated_date(text, expected):
    assert written_day(text) == expected


def test_yearless_match_takes_a_year_only_when_given_one():
    [match] = find_dates("the 12th of June")
    assert not year_known(match)
    assert match.day is None and match.value == "XXXX-06-12"  # no reference date
    assert on_year(match, 2027) == date(2027, 6, 12)
    [leap] = find_dates("on 29 February")
    assert on_year(leap, 2028) == date(2028, 2, 29)
    assert on_year(leap, 2027) is None


def test_labels():
    assert label(date(2026, 6, 12)) == "12 June"
    assert label_with_year(date(2026, 6, 2)) == "2 June 2026"
