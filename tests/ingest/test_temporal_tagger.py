"""The temporal tagger (issue 29): what it finds in a text, the extent it gives each
expression (as the TimeML guidelines and TempEval-3 annotate it), the TIMEX3 type and
value, relative and deictic expressions resolved against a reference date — and what
it must not take for a date where detection acts. Sentences of our own, table-driven.
(Scores on TimeBank/AQUAINT: `make bench`, bench/bench_tagger.py.)"""

from datetime import date

import pytest

from ingest.detection.temporal import Period, day_of, tag, written_day
from ingest.detection.temporal.grammar import grammar

REF = date(2013, 3, 22)  # a Friday, ISO week 12, Q1


def tagged(text: str, reference: date | None = REF) -> list[tuple[str, str, str]]:
    return [(t.text, t.type, t.value) for t in tag(text, reference=reference)]


# (id, text, [(extent, type, value)]) — one behaviour each.
FOUND = [
    # calendar dates and their extents
    ("iso", "Filed 2013-03-22 in Austin.", [("2013-03-22", "DATE", "2013-03-22")]),
    ("abbreviated-month", "Dated Jan. 8, 1998.", [("Jan. 8, 1998", "DATE", "1998-01-08")]),
    ("day-month-year", "on 12 June 2026 at", [("12 June 2026", "DATE", "2026-06-12")]),
    ("ordinal-of", "the 12th of June 2026", [("12th of June 2026", "DATE", "2026-06-12")]),
    (
        "weekday-and-date",
        "on Friday, June 12, 2026.",
        [("Friday, June 12, 2026", "DATE", "2026-06-12")],
    ),
    ("day-mon-year", "expires 26-Mar-2013", [("26-Mar-2013", "DATE", "2013-03-26")]),
    ("month-year", "in June 2012", [("June 2012", "DATE", "2012-06")]),
    ("us-numeric", "signed 03/04/2013", [("03/04/2013", "DATE", "2013-03-04")]),
    ("bare-year", "founded in 1998", [("1998", "DATE", "1998")]),
    ("year-in-words", "since nineteen ninety-one", [("nineteen ninety-one", "DATE", "1991")]),
    ("decade", "grew in the 1990s", [("the 1990s", "DATE", "199")]),
    ("decade-modified", "built in the mid-1990s", [("the mid-1990s", "DATE", "199")]),
    ("century", "the 20th century ended", [("the 20th century", "DATE", "19")]),
    # deictic days and weekdays, against the reference
    ("today", "Shares fell today.", [("today", "DATE", "2013-03-22")]),
    ("yesterday", "It closed yesterday.", [("yesterday", "DATE", "2013-03-21")]),
    ("tomorrow", "It opens tomorrow.", [("tomorrow", "DATE", "2013-03-23")]),
    ("weekday-past", "The board met on Wednesday.", [("Wednesday", "DATE", "2013-03-20")]),
    ("weekday-same-day", "The board met on Friday.", [("Friday", "DATE", "2013-03-22")]),
    ("weekday-future", "The board will meet on Tuesday.", [("Tuesday", "DATE", "2013-03-26")]),
    ("next-weekday", "We meet again next Friday.", [("next Friday", "DATE", "2013-03-29")]),
    ("last-weekday", "We met last Monday.", [("last Monday", "DATE", "2013-03-18")]),
    ("weekday-morning", "It rained Friday morning.", [("Friday morning", "TIME", "2013-03-22TMO")]),
    ("tonight", "The vote is tonight.", [("tonight", "TIME", "2013-03-22TNI")]),
    # months, quarters, weeks, seasons
    ("month-nearest", "The review happens in April.", [("April", "DATE", "2013-04")]),
    ("last-month-name", "It was amended last March.", [("last March", "DATE", "2012-03")]),
    ("month-last-year", "It opened June last year.", [("June last year", "DATE", "2012-06")]),
    ("last-week", "Sales rose last week.", [("last week", "DATE", "2013-W11")]),
    ("the-last-week", "In the last week, prices doubled.", [("the last week", "DATE", "2013-W11")]),
    ("next-quarter", "Rates rise next quarter.", [("next quarter", "DATE", "2013-Q2")]),
    (
        "ordinal-quarter",
        "Profit fell in the third quarter.",
        [("the third quarter", "DATE", "2013-Q3")],
    ),
    (
        "quarter-of-year",
        "the second quarter of 2011 was weak",
        [("the second quarter of 2011", "DATE", "2011-Q2")],
    ),
    ("quarter-code", "Revenue in Q3 2013 grew.", [("Q3 2013", "DATE", "2013-Q3")]),
    ("half", "the first half of 2012", [("the first half of 2012", "DATE", "2012-H1")]),
    ("season", "It launched in the summer of 2012.", [("the summer of 2012", "DATE", "2012-SU")]),
    ("last-season", "It closed last fall.", [("last fall", "DATE", "2012-FA")]),
    ("fiscal-year", "The fiscal year 2020 closed.", [("The fiscal year 2020", "DATE", "2020")]),
    ("fiscal-short", "Guidance for FY2014 holds.", [("FY2014", "DATE", "2014")]),
    ("this-year", "Costs rose this year.", [("this year", "DATE", "2013")]),
    ("early-next-year", "It ships early next year.", [("early next year", "DATE", "2014")]),
    # anaphoric: counted from the date the text last named
    (
        "following-year",
        "The plant opened in 2009; the following year it doubled.",
        [("2009", "DATE", "2009"), ("the following year", "DATE", "2010")],
    ),
    (
        "year-earlier-quarter",
        # reported in March: the third quarter past
        "It reported a third-quarter loss, against a profit a year earlier.",
        [("third-quarter", "DATE", "2012-Q3"), ("a year earlier", "DATE", "2011-Q3")],
    ),
    # counted back from the reference
    ("weeks-ago", "Two weeks ago the goods shipped.", [("Two weeks ago", "DATE", "2013-W10")]),
    ("days-ago", "It was paid 10 days ago.", [("10 days ago", "DATE", "2013-03-12")]),
    ("years-ago-vague", "It happened a few years ago.", [("a few years ago", "DATE", "201X")]),
    # references
    ("now", "The plant is now closed.", [("now", "DATE", "PRESENT_REF")]),
    ("recently", "It was recently sold.", [("recently", "DATE", "PAST_REF")]),
    (
        "the-future",
        "Prices may rise in the near future.",
        [("the near future", "DATE", "FUTURE_REF")],
    ),
    # durations
    ("words-and-digits", "for three (3) years", [("three (3) years", "DURATION", "P3Y")]),
    ("days", "within ninety (90) days of it", [("ninety (90) days", "DURATION", "P90D")]),
    ("digits", "within 30 days", [("30 days", "DURATION", "P30D")]),
    ("thousands", "after 1,000 days", [("1,000 days", "DURATION", "P1000D")]),
    ("approximation-belongs", "over 1,000 days", [("over 1,000 days", "DURATION", "P1000D")]),
    ("the-past", "in the past two months", [("the past two months", "DURATION", "P2M")]),
    ("adjectival", "a two-year option", [("two-year", "DURATION", "P2Y")]),
    ("fraction", "after 5 1/2 hours", [("5 1/2 hours", "DURATION", "PT5H30M")]),
    ("and-a-half", "a minute and a half", [("a minute and a half", "DURATION", "PT1M30S")]),
    ("decimal", "2.5 years", [("2.5 years", "DURATION", "P2Y6M")]),
    ("vague", "for several months", [("several months", "DURATION", "PXM")]),
    ("approximate", "for about a decade", [("about a decade", "DURATION", "P10Y")]),
    ("term-noun", "a three-year term.", [("a three-year term", "DURATION", "P3Y")]),
    ("a-week", "It took a week.", [("a week", "DURATION", "P1W")]),
    ("later-is-a-signal", "Three days later it fell.", [("Three days", "DURATION", "P3D")]),
    # sets
    ("weekly", "Backups run weekly.", [("weekly", "SET", "P1W")]),
    ("every-quarter", "It is reviewed every quarter.", [("every quarter", "SET", "P3M")]),
    ("every-other", "every other week", [("every other week", "SET", "P2W")]),
    ("twice-a-year", "It meets twice a year.", [("twice a year", "SET", "P1Y")]),
    ("each-weekday", "It runs each Thursday.", [("each Thursday", "SET", "XXXX-WXX-4")]),
    ("plural-weekday", "It closes Mondays.", [("Mondays", "SET", "XXXX-WXX-1")]),
    # times
    ("clock-today", "The call is at 2 p.m. today.", [("2 p.m. today", "TIME", "2013-03-22T14:00")]),
    ("clock-24h", "Doors open at 14:30.", [("14:30", "TIME", "2013-03-22T14:30")]),
    ("midnight", "It expires at midnight Friday.", [("midnight Friday", "TIME", "2013-03-22T24")]),
    (
        "iso-time",
        "Uploaded 2013-03-22T14:00:00Z.",
        [("2013-03-22T14:00:00Z", "TIME", "2013-03-22T14:00")],
    ),
    # holidays
    ("fixed-holiday", "Closed on Christmas 2012.", [("Christmas 2012", "DATE", "2012-12-25")]),
    (
        "floating-holiday",
        "Closed on Thanksgiving 2012.",
        [("Thanksgiving 2012", "DATE", "2012-11-22")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_found_with_extent_type_and_value(text, expected):
    assert tagged(text) == expected


# The determiner belongs to an expression only when the expression heads its phrase.
EXTENTS = [
    ("heads-its-phrase", "Profit fell in the third quarter, it said.", "the third quarter"),
    ("modifies-a-noun", "It posted the third-quarter loss.", "third-quarter"),
    ("date-before-a-noun", "Since the Feb. 23 accord, trade grew.", "Feb. 23"),
    ("duration-before-a-noun", "It signed a five-year lease.", "five-year"),
    ("amount-is-the-article", "Profit rose from a year ago.", "a year ago"),
]


@pytest.mark.parametrize(("text", "extent"), [c[1:] for c in EXTENTS], ids=[c[0] for c in EXTENTS])
def test_the_determiner_belongs_to_a_heading_expression_only(text, extent):
    assert [t.text for t in tag(text, reference=REF)] == [extent]


UNRESOLVED = [
    ("yearless", "The report is due on 12 June.", [("12 June", "DATE", "XXXX-06-12")]),
    ("month", "It closes in April.", [("April", "DATE", "XXXX-04")]),
    ("weekday", "It closes on Friday.", [("Friday", "DATE", "XXXX-WXX-5")]),
    ("today", "It closes today.", [("today", "DATE", "PRESENT_REF")]),
    ("written-date", "Signed 12 June 2026.", [("12 June 2026", "DATE", "2026-06-12")]),
    ("duration", "for three years", [("three years", "DURATION", "P3Y")]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in UNRESOLVED], ids=[c[0] for c in UNRESOLVED]
)
def test_without_a_reference_relative_values_stay_unresolved(text, expected):
    assert tagged(text, reference=None) == expected


def test_an_anaphoric_value_counts_from_the_date_last_named():
    [year, following] = tag("It opened in 2009; the following year it doubled.", reference=REF)
    assert following.anaphoric and following.anchor == date(2009, 1, 1)
    assert not year.anaphoric and year.anchor is None


def test_the_reference_moves_every_relative_value():
    text = "Signed yesterday, effective next quarter, reviewed in two weeks' time."
    assert tagged(text, reference=date(2026, 12, 31))[:2] == [
        ("yesterday", "DATE", "2026-12-30"),
        ("next quarter", "DATE", "2027-Q1"),
    ]


def test_a_timex_carries_what_detection_needs():
    [day, quarter, duration] = tag(
        "Signed 12 June 2026, effective next quarter, for three (3) years.", reference=REF
    )
    assert (day.day, day.anchored, day.kind, day.period) == (
        date(2026, 6, 12),
        False,
        "date",
        Period("day", date(2026, 6, 12)),
    )
    assert quarter.anchored and quarter.day is None and quarter.anchor == REF
    assert quarter.grain == "quarter" and day.grain == "day" and duration.grain == ""
    assert (quarter.period.start, quarter.period.end) == (date(2013, 4, 1), date(2013, 7, 1))
    assert day.anchor is None  # written in full: counted from nothing
    assert (duration.amount, duration.unit, duration.period) == (3, "Y", None)
    assert day.as_dict() == {
        "start": 7,
        "end": 19,
        "text": "12 June 2026",
        "type": "DATE",
        "value": "2026-06-12",
    }


def test_offsets_index_the_text_given():
    text = "Ünïcödé İstanbul — signed on 12 June 2026 and for 30 days."
    for timex in tag(text, reference=REF):
        assert text[timex.start : timex.end] == timex.text


def test_extraction_look_alikes_are_read_as_plain_characters():
    """PDF text layers write no-break, en and em spaces, curly quotes and U+037E for ";":
    the expression reads as in plain text, its span on the text given."""
    assert tagged("for twelve\xa0(12) months\u037e then") == [
        ("twelve\xa0(12) months", "DURATION", "P12M")
    ]
    assert tagged("for\u2002three years") == [("three years", "DURATION", "P3Y")]
    assert tagged("the Buyer\u2019s fee for 2019\u037e") == [("2019", "DATE", "2019")]


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("The crew planned to leave the port on Thursday.", "2013-03-28"),
        ("The ministers would meet again Monday.", "2013-03-25"),
        ("The court has scheduled a hearing Tuesday.", "2013-03-26"),
        ("The ship could sail as early as Wednesday.", "2013-03-27"),
        ("He said the crew left the port on Thursday.", "2013-03-21"),
        ("The ministers would have met Monday.", "2013-03-18"),
    ],
)
def test_a_bare_weekday_lies_on_the_side_the_sentence_looks_to(text, day):
    [(_, kind, value)] = tagged(text)
    assert (kind, value) == ("DATE", day)


@pytest.mark.parametrize(
    "text",
    [
        "The engineer, 37 years old at the time, retired.",
        "The pilot, sixty years old, flew on.",
        "About three-quarters of the goods and two-thirds of the fee.",
        "The troops searched the living quarters.",
    ],
)
def test_ages_fractions_and_places_are_no_time_at_all(text):
    assert tagged(text) == []


def test_a_plural_unit_alone_is_still_a_vague_duration():
    assert tagged("Prices rose for years.") == [("years", "DURATION", "PXY")]
    assert tagged("in the coming months") == [("the coming months", "DURATION", "PXM")]


# --- precision where detection acts (issue 29, item 4) ------------------------------------

NOT_DATES = [
    ("section-number-then-may", "Section 5.8 may disclose the terms."),
    ("clause-number-then-may", "Clause 12 may be waived."),
    ("may-the-modal", "The Supplier may terminate this Agreement."),
    ("may-starting-a-question", "May we meet to discuss it?"),
    ("may-in-capitals", "THE PARTIES MAY AGREE OTHERWISE."),
    ("march-the-verb", "The workers march to the square."),
    ("march-capitalised-verb", "They will March forward together."),
    ("a-second", "A second notice shall be sent."),
    ("the-second", "The second party agrees."),
    ("version-dotted", "Upgrade to version 2.1.2026 first."),
    ("version-labelled", "Release 2026 of the software."),
    ("version-decimal", "Install build 2026.4 only."),
    ("section-year-like", "See Section 2019 of the Code."),
    ("section-dotted-triple", "Subject to section 6.1.10 above."),
    ("telephone-spaced", "Call +44 20 2026 0612 for help."),
    ("telephone-dashed", "Phone 555-2026-06-12 anytime."),
    ("telephone-us", "Dial (212) 555-1998 for help."),
    ("amount-dollars", "A fee of $2026 is payable."),
    ("amount-thousands", "A fee of $2,026,000 is payable."),
    ("amount-currency", "A fee of USD 2026 is payable."),
    ("amount-percent", "A rate of 2026% applies."),
    ("count", "It issued 2026 shares."),
    ("model-number", "Buy five model 5500s."),
    ("spelt-amount", "It cost two thousand dollars."),
    ("now-therefore", "NOW, THEREFORE, the parties agree as follows."),
    ("the-present-agreement", "The present Agreement binds both parties."),
    ("rate", "It pays $1.76 a year to each holder."),
    ("age", "A 52-year-old engineer, 37 years old at the time."),
    ("fraction", "About three-quarters of the goods and a quarter of the fee."),
    ("frequency-adjective", "The quarterly dividend and the daily volume rose."),
    ("business-hours", "Support is available during business hours."),
    ("meeting-minutes", "The minutes of the meeting were approved."),
    ("that-fall", "Items that fall within the scope are covered."),
    ("impossible-date", "Dated 31 February 2026."),
    ("impossible-iso", "Dated 2026-02-30."),
    ("digit-runs", "Reference 20260612 and 2026061."),
    ("clock-ratio", "A ratio of 3:15 applies."),
]


@pytest.mark.parametrize("text", [c[1] for c in NOT_DATES], ids=[c[0] for c in NOT_DATES])
def test_not_a_date(text):
    assert [t for t in tag(text, reference=REF) if t.type in ("DATE", "TIME")] == []


def test_a_month_that_is_also_a_word_is_a_month_in_a_date_shape():
    assert tagged("It was signed in May.") == [("May", "DATE", "2013-05")]
    assert tagged("What expires in may 2027?") == [("may 2027", "DATE", "2027-05")]
    assert tagged("due by 3 March") == [("3 March", "DATE", "2013-03-03")]
    assert tagged("The March accession went ahead.") == [("March", "DATE", "2013-03")]


def test_a_second_after_a_number_is_a_duration():
    assert tagged("Wait 30 seconds.") == [("30 seconds", "DURATION", "PT30S")]


# --- whole strings -------------------------------------------------------------------------

DAYS = [
    ("2026-07-01", date(2026, 7, 1)),
    ("1 July 2026", date(2026, 7, 1)),
    ("July 1st, 2026.", date(2026, 7, 1)),
    ("next Monday", date(2013, 3, 25)),
    ("tomorrow", date(2013, 3, 23)),
    ("12 June", date(2013, 6, 12)),
    ("07/01/2026", None),  # two readings
    ("June 2026", None),  # a month, not a day
    ("a week", None),
    ("signed 12 June 2026", None),  # more than a date
    ("31 February 2026", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), DAYS, ids=[c[0] or "blank" for c in DAYS])
def test_day_of_a_whole_string(text, expected):
    assert day_of(text, reference=REF) == expected


def test_written_day_is_a_date_written_in_full():
    assert written_day("12 June 2026") == date(2026, 6, 12)
    assert written_day("2026-06-12") == date(2026, 6, 12)
    for text in ("next Monday", "12 June", "03/04/2026", "June 2026", "today"):
        assert written_day(text) is None


def test_every_language_compiles_once_and_is_shared():
    assert grammar("en") is grammar("en")
    assert grammar("de") is not grammar("en")
