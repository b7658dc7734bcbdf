"""The contract reader (issue 30): the document's date, when it takes effect, when its
initial term ends, its renewal — as a careful reader reads them — and at most one
question per fact, none for a stated and consistent date. Every sentence here is our
own, never copied from a scoring corpus."""

from datetime import date

import pytest

from ingest.detection.contract.forms import lengths, written_dates
from ingest.detection.contract.passages import find_sites
from ingest.detection.contract.reading import read_contract
from ingest.detection.contract.roles import cites_another, in_stamp
from ingest.detection.text import detect_text

COVER = "Exhibit 10.4\n\nSUPPLY AGREEMENT\n\n"
PARTIES = " by and between Northwind Tools, Inc. and Quarry Lane Ltd.\n\n1. Definitions.\n"


def run(text: str, file_date: date | None = None):
    detection = detect_text(text, filename="contract.txt", file_date=file_date)
    facts = {f.key: f for f in detection.facts}
    questions = {f.node_key: f for f in detection.findings}
    assert len(questions) == len(detection.findings)  # at most one question per fact
    return facts, questions


def made_and_start(text: str) -> tuple[date | None, date | None]:
    facts, _ = run(text)
    return facts["date"].valid_from, facts["term"].valid_from


# --- the contract's date forms ----------------------------------------------------------

FORMS = [
    ("ordinal-day-of", "this 3rd day of February, 2021", date(2021, 2, 3)),
    ("day-of-without-comma", "the 17th day of October 2016", date(2016, 10, 17)),
    ("word-ordinal-with-digits", "this second (2nd) day of March 2012", date(2012, 3, 2)),
    ("ocr-split-ordinal", "the 9t h day of July, 2017", date(2017, 7, 9)),
    ("ocr-split-first", "the 1s t day of August, 2015", date(2015, 8, 1)),
    ("spaced-and-capitals", "the 21st  DAY OF APRIL , 2011", date(2011, 4, 21)),
    ("bare-day-of", "this 30  day of November 2022", date(2022, 11, 30)),
    ("space-before-comma", "September 14 , 2009", date(2009, 9, 14)),
    ("abbreviated-month", "Oct. 05, 2020", date(2020, 10, 5)),
    ("day-month-year", "11 January 2024", date(2024, 1, 11)),
    ("iso", "2019-08-30", date(2019, 8, 30)),
    ("numeric-dashes", "11-28-2013", date(2013, 11, 28)),
    ("numeric-day-over-12", "23/6/17", date(2017, 6, 23)),
]


@pytest.mark.parametrize(("text", "day"), [c[1:] for c in FORMS], ids=[c[0] for c in FORMS])
def test_contract_date_forms(text, day):
    low = text.lower()
    [w] = written_dates(low, 0, len(low))
    assert (w.start, w.end, w.day, w.blank) == (0, len(low), day, False)


BLANKS = [
    ("month-with-blank-day", "August __, 2011", 2011, 8),
    ("bracket-blank", "[ ], 2023", 2023, None),
    ("bullet-blank", "[\u2022], 2022", 2022, None),
    ("redacted", "[***], 2018", 2018, None),
    ("day-and-month-blank", "this ____ day of __________, 2007", 2007, None),
    ("blank-day-named-month", "the _____ day of June, 2003", 2003, 6),
    ("month-and-year-only", "December 2015", 2015, 12),
]


@pytest.mark.parametrize(
    ("text", "year", "month"), [c[1:] for c in BLANKS], ids=[c[0] for c in BLANKS]
)
def test_blanks_are_read_as_blanks(text, year, month):
    low = text.lower()
    [w] = written_dates(low, 0, len(low))
    assert w.blank and w.day is None and (w.year, w.month) == (year, month)


def test_a_two_way_numeric_date_keeps_both_readings():
    [w] = written_dates("7/5/14", 0, 6)
    assert w.day is None and w.readings == (date(2014, 7, 5), date(2014, 5, 7))


@pytest.mark.parametrize(
    ("text", "amount", "unit"),
    [
        ("seven (7) years", 7, "Y"),
        ("eighteen (18) full calendar months", 18, "M"),
        ("a 2-year term", 2, "Y"),
        ("one (1) additional four (4) year period", 4, "Y"),
        ("from year to year", 1, "Y"),
        ("forty-five (45) days", 45, "D"),
    ],
)
def test_lengths(text, amount, unit):
    found = lengths(text, 0, len(text))
    assert (found[-1].amount, found[-1].unit) == (amount, unit)


# --- the document's date and its start ----------------------------------------------------

DATED = [
    (
        "made-and-entered-into-as-of",
        COVER + "This Supply Agreement is made and entered into as of April 3, 2017 (the "
        '"Effective Date")' + PARTIES,
        date(2017, 4, 3),
        date(2017, 4, 3),
    ),
    (
        "entered-into-this-day-of",
        COVER + "This Supply Agreement is entered into this 12th day of January 2021" + PARTIES,
        date(2021, 1, 12),
        date(2021, 1, 12),
    ),
    (
        "dated-and-effective-differ",
        COVER + "This Supply Agreement, dated March 2, 2020 and effective as of April 1, 2020 "
        '(the "Effective Date"),' + PARTIES,
        date(2020, 3, 2),
        date(2020, 4, 1),
    ),
    (
        "effective-date-defined-later",
        COVER
        + "This Supply Agreement is made on 14 May 2019"
        + PARTIES
        + '"Effective Date" means June 1, 2019.\n',
        date(2019, 5, 14),
        date(2019, 6, 1),
    ),
    (
        "title-block-date",
        "Exhibit 10.9\n\nMASTER SERVICES AGREEMENT\n\nDated as of 16/10/19\n\nThe parties "
        "below agree as follows.\n",
        date(2019, 10, 16),
        date(2019, 10, 16),
    ),
    (
        "ocr-split-in-the-preamble",
        COVER + "THIS AGREEMENT is made this 4t h day of June, 2013" + PARTIES,
        date(2013, 6, 4),
        date(2013, 6, 4),
    ),
    (
        "commencement-in-the-term-clause",
        COVER
        + "This Supply Agreement is made as of May 5, 2010"
        + PARTIES
        + "2. Term. The term of this Agreement shall commence on July 1, 2010 and shall "
        "continue for three (3) years.\n",
        date(2010, 5, 5),
        date(2010, 7, 1),
    ),
]


@pytest.mark.parametrize(
    ("text", "made", "start"), [c[1:] for c in DATED], ids=[c[0] for c in DATED]
)
def test_a_stated_consistent_date_opens_nothing(text, made, start):
    facts, questions = run(text, file_date=date(2026, 9, 1))
    assert (facts["date"].valid_from, facts["term"].valid_from) == (made, start)
    assert facts["date"].labels == ["DOCUMENT_DATE"] and facts["term"].labels == ["DOCUMENT_TERM"]
    assert questions == {}


def test_the_filing_header_is_never_the_contracts_date():
    text = (
        "Source: NORTHWIND TOOLS INC, 10-K, 3/21/2019\n\nSUPPLY AGREEMENT\n\nThis Supply "
        "Agreement is made as of August 8, 2016" + PARTIES
    )
    low = text.lower()
    assert in_stamp(low, low.find("3/21/2019"))
    assert made_and_start(text) == (date(2016, 8, 8), date(2016, 8, 8))


def test_an_amendment_does_not_take_the_date_of_the_agreement_it_amends():
    text = (
        "FIRST AMENDMENT\n\nThis First Amendment to the Supply Agreement dated as of June 1, "
        "2012 between the parties below is made as of February 9, 2015" + PARTIES
    )
    low = text.lower()
    assert cites_another(low, low.find("june 1, 2012"))
    assert made_and_start(text) == (date(2015, 2, 9), date(2015, 2, 9))


def test_a_letter_cited_by_date_is_not_the_contracts():
    text = (
        COVER + "WHEREAS the supplier confirmed by letter dated May 2, 2008 that it accepts; "
        "and this Supply Agreement is made on 3 June 2008" + PARTIES
    )
    assert made_and_start(text)[0] == date(2008, 6, 3)


# --- numeric order ---------------------------------------------------------------------------


def test_numeric_order_settled_by_another_date_of_the_document():
    text = (
        "SUPPLY AGREEMENT\n\nDated 4/5/19\n\nThe parties below agree as follows.\n"
        + "x " * 30
        + "\nInvoices issued on 28/2/19 stay payable.\n"
    )
    facts, questions = run(text)
    assert facts["date"].valid_from == date(2019, 5, 4)  # day first, as 28/2/19 shows
    assert questions == {}


def test_numeric_order_unsettled_is_a_question_with_both_readings():
    text = "SUPPLY AGREEMENT\n\nDated 4/5/19\n\nThe parties below agree as follows.\n"
    _, questions = run(text)
    [question] = questions.values()
    assert question.kind == "conflicting_dates"
    assert {c.valid_from for c in question.candidates} == {date(2019, 4, 5), date(2019, 5, 4)}


# --- blanks ---------------------------------------------------------------------------------


def test_a_blank_day_is_one_question_with_the_signature_date_as_candidate():
    text = (
        COVER
        + "This Supply Agreement is made as of March __, 2014"
        + PARTIES
        + "x " * 40
        + "\nIN WITNESS WHEREOF the parties have signed below.\nBy: A. Signer\nDate: March 18,"
        " 2014\n"
    )
    facts, questions = run(text)
    assert set(questions) == {"date"}
    question = questions["date"]
    assert question.kind == "low_confidence_extraction"
    assert [c.valid_from for c in question.candidates] == [date(2014, 3, 18), date(2014, 3, 1)]
    assert facts["date"].valid_from == date(2014, 3, 18)


def test_a_blank_year_only_date_is_a_question():
    text = COVER + "This Supply Agreement is dated as of [ ], 2023" + PARTIES
    _, questions = run(text)
    assert questions["date"].kind == "low_confidence_extraction"
    assert questions["date"].candidates[0].valid_from == date(2023, 1, 1)


# --- event-tied starts ------------------------------------------------------------------------


def test_a_start_tied_to_an_undated_event_is_a_relative_date():
    text = (
        COVER
        + "This Supply Agreement is made as of October 2, 2018"
        + PARTIES
        + '"Effective Date" means the Closing Date under the Share Purchase Agreement.\n'
    )
    facts, questions = run(text)
    question = questions["term"]
    assert question.kind == "relative_date"
    assert question.candidates[0].valid_from == date(2018, 10, 2)
    assert facts["term"].valid_from == date(2018, 10, 2)


def test_a_start_tied_to_the_last_signature_takes_the_latest_signature():
    text = (
        COVER + "This Supply Agreement is between the parties below.\n\n"
        '"Effective Date" means the date of the last signature below.\n'
        + "x " * 40
        + "\nIN WITNESS WHEREOF the parties have signed below.\n"
        + "Date: May 2, 2016\nDate: May 9, 2016\n"
    )
    facts, questions = run(text)
    assert facts["term"].valid_from == date(2016, 5, 9)
    assert "term" not in questions


def test_upon_execution_with_a_stated_date_opens_nothing():
    text = (
        COVER
        + "This Supply Agreement is entered into this 6th day of May, 2011"
        + PARTIES
        + "This Agreement shall become effective upon its execution by both parties.\n"
    )
    facts, questions = run(text)
    assert facts["term"].valid_from == date(2011, 5, 6)
    assert questions == {}


# --- the end of the initial term, renewals ------------------------------------------------------

PREAMBLE = (
    COVER + 'This Supply Agreement is made as of March 10, 2014 (the "Effective Date")' + PARTIES
)

ENDS = [
    (
        "length-from-the-effective-date",
        "The initial term of this Agreement shall continue until four (4) years following the "
        "Effective Date.",
        date(2018, 3, 10),
    ),
    (
        "length-with-digits-in-brackets",
        "This Agreement shall remain in effect for a period of eighteen (18) months.",
        date(2015, 9, 10),
    ),
    (
        "through-a-date-is-exclusive",
        "This Agreement shall continue through June 30, 2016.",
        date(2016, 7, 1),
    ),
    ("expire-on", "The Term shall expire on December 31, 2019.", date(2020, 1, 1)),
    (
        "anniversary",
        "The term of this Agreement shall end on the third anniversary of the Effective Date.",
        date(2017, 3, 11),
    ),
    (
        "end-of-the-calendar-year",
        "This Agreement shall remain in effect until the end of the current calendar year.",
        date(2015, 1, 1),
    ),
    (
        "from-the-date-hereof",
        "The term of this Agreement is two (2) years from the date hereof.",
        date(2016, 3, 10),
    ),
    ("perpetual", "This Agreement shall continue in perpetuity.", None),
    (
        "until-terminated",
        "This Agreement shall remain in force until terminated by either party.",
        None,
    ),
    (
        "effective-through-and-including",
        "This Agreement shall be effective    through and including September 30, 2017.",
        date(2017, 10, 1),
    ),
    (
        "commencing-upon-the-effective-date",
        "This Agreement shall be for a period of two (2) years commencing upon the Effective "
        "Date hereof unless sooner terminated.",
        date(2016, 3, 10),
    ),
    (
        "end-of-a-numbered-contract-year",
        "The term of this Agreement will commence on the Effective Date and will end upon the "
        "end of Year 4.",
        date(2018, 3, 10),
    ),
    (
        "end-of-the-nth-contract-year",
        "This Agreement shall remain in force until the end of the second Contract Year.",
        date(2016, 3, 10),
    ),
    (
        "the-nth-day-after-the-effective-date",
        "This Agreement shall terminate at midnight on the 45th day after the Effective Date.",
        date(2014, 4, 24),
    ),
    (
        "a-spelled-ordinal-day-following",
        "This Agreement shall expire on the sixtieth (60th) day following the Effective Date.",
        date(2014, 5, 9),
    ),
    (
        "a-list-after-a-colon",
        "This Agreement shall remain in effect until the earlier of the following:\n\n"
        "(a) the third anniversary of this Agreement; and\n\n(b) a sale of the business.",
        date(2017, 3, 11),
    ),
    (
        "counted-from-an-undated-event",
        "The term of this Agreement shall be five (5) years from the Launch Date.",
        None,
    ),
]


@pytest.mark.parametrize(("clause", "end"), [c[1:] for c in ENDS], ids=[c[0] for c in ENDS])
def test_the_end_of_the_initial_term(clause, end):
    facts, questions = run(PREAMBLE + "\n7. Term.\n" + clause + "\n")
    assert facts["term"].valid_from == date(2014, 3, 10)
    assert facts["term"].valid_to == end
    assert questions == {}


def test_a_survival_period_is_not_the_term():
    facts, _ = run(
        PREAMBLE + "\nDuring the term of this Agreement and for two (2) years thereafter, "
        "each party shall keep records.\n"
    )
    assert facts["term"].valid_to is None


def test_renewal_and_notice():
    facts, _ = run(
        PREAMBLE + "\n7. Term. This Agreement shall continue for two (2) years and shall "
        "automatically renew for successive one (1) year periods unless either party gives "
        "at least sixty (60) days' prior written notice of non-renewal.\n"
    )
    assert facts["term"].valid_to == date(2016, 3, 10)
    assert facts["term"].properties["renewal"] == {"every": "P1Y", "noticeDays": 60}


def test_an_optional_extension_is_no_renewal():
    facts, _ = run(
        PREAMBLE + "\n7. Term. This Agreement shall continue for two (2) years. The parties "
        "may extend it for one (1) additional year by mutual written agreement.\n"
    )
    assert "renewal" not in facts["term"].properties


# --- undated --------------------------------------------------------------------------------


def test_a_contract_without_any_date_is_undated():
    text = COVER + "This Supply Agreement is between the parties below." + PARTIES + "x " * 3000
    _, questions = run(text, file_date=date(2026, 9, 1))
    assert questions["term"].kind == "undated"


def test_a_long_contract_whose_only_date_is_deep_inside_is_not_undated():
    text = (
        COVER
        + "This Supply Agreement is between the parties below."
        + PARTIES
        + "x " * 3000
        + "\nThe parties met on 4 April 2022 to agree these terms.\n"
    )
    _, questions = run(text, file_date=date(2026, 9, 1))
    assert "term" not in questions or questions["term"].kind != "undated"


def test_reading_is_bounded_by_passages():
    text = PREAMBLE + "x " * 20000
    reading = read_contract(find_sites(text))
    assert reading.made is not None and reading.made.written.day == date(2014, 3, 10)


# --- text as PDFs extract it ------------------------------------------------------------------


def test_pdf_look_alikes_read_like_plain_text():
    """A PDF's text layer writes ";" as U+037E, quotes curly and spaces no-break: the
    clause after a covenant ending in U+037E and a line break is its own sentence, and
    the term clause with curly quotes reads as the plain one does."""
    plain = (
        PREAMBLE + "\n5. Covenants. During the Term each party shall keep an annual budget;\n"
        "(b) it shall keep records.\n7. Term. This Agreement shall continue through "
        'June 30, 2016 (the "Term").\n'
    )
    pdf = plain.replace(";\n", "\u037e\n").replace('"', "\u201c").replace("June 30", "June\xa030")
    for text in (plain, pdf):
        facts, questions = run(text)
        assert facts["term"].valid_to == date(2016, 7, 1)
        assert questions == {}


def test_a_long_proviso_between_the_contract_and_its_length():
    facts, _ = run(
        PREAMBLE + "\n9.1 Initial Term. This Agreement will become effective as of the Effective "
        "Date and, unless sooner terminated under Sections 4.2 [Payment Default], 6.3 "
        "[Insolvency] or 9.2 [Termination for Convenience of either Party], shall remain in "
        'effect for three (3) years from and after the Effective Date (the "Initial Term").\n'
    )
    assert facts["term"].valid_to == date(2017, 3, 10)


def test_signature_dates_over_their_date_labels():
    """A form-like signature block puts the values above their labels; extracted, the
    dates come before the word "Date"."""
    text = (
        COVER
        + "This Supply Agreement is entered into as of the Effective Date."
        + PARTIES
        + '"Effective Date" means the date of the last signature on this Agreement.\n'
        + "x " * 400
        + "\nIN WITNESS WHEREOF, the parties have signed this Agreement.\nBy: /s/ A. Reyes  "
        "By: /s/ B. Okafor\n3/14/2019   03/19/2019\nDate   Date\n" + "x " * 40
    )
    facts, questions = run(text)
    assert facts["date"].valid_from == date(2019, 3, 19)
    assert facts["term"].valid_from == date(2019, 3, 19)
    assert questions == {}


def test_a_date_of_another_kind_is_no_signature_date():
    """ "… 6/1/2020 date of first shipment": the label is another date's."""
    text = (
        COVER
        + "This Supply Agreement is between the parties below."
        + PARTIES
        + "IN WITNESS WHEREOF, the parties have signed this Agreement.\nBy: /s/ A. Reyes\n"
        "Deliveries begin 6/1/2020 date of first shipment.\n" + "x " * 40
    )
    facts, _ = run(text)
    assert facts["date"].valid_from is None or facts["date"].valid_from != date(2020, 6, 1)


def test_a_month_with_a_stray_full_stop_still_dates_the_preamble():
    text = (
        COVER + "This Supply Agreement is made and entered into this 9 day of October. 2015 "
        '(the "Effective Date") by Northwind Tools, Inc. and Quarry Lane Ltd.\n'
    )
    assert made_and_start(text) == (date(2015, 10, 9), date(2015, 10, 9))


@pytest.mark.parametrize(
    "clause",
    [
        # a length of the first months of the term, not the term's
        "Provided, with respect to each of the first two (2) months of the Term, the fee "
        "shall be reduced by the amount set out in the last paragraph of Section 4.",
        # another agreement's period, not this one's
        "The Escrow Agreement will require the agent to hold the funds for a period of up to "
        "six (6) months.",
        # the contract as the object of a verb
        "If the Buyer terminates this Agreement, the Supplier shall continue deliveries for "
        "one (1) month.",
        # not a contract year
        "Prices shall be reviewed at the end of the year 2016.",
        # a notice's deadline, not the term's end
        "This Agreement may be terminated by notice given before the 30th day after the "
        "receipt of an invoice.",
    ],
)
def test_not_the_end_of_the_term(clause):
    facts, _ = run(PREAMBLE + "\n7. Prices.\n" + clause + "\n")
    assert facts["term"].valid_to is None


def test_a_form_without_a_testimonium_dates_itself_by_its_date_labels():
    """No "IN WITNESS WHEREOF": the dates over the "Date" labels under the signature
    lines, in the second half, are the signatures'."""
    text = (
        COVER
        + "This licence is between the parties below."
        + PARTIES
        + "x " * 600
        + "\n11/22/15                 11/25/15 ____________________     ____________________"
        " Date                     Date\n/s/ A. Reyes   /s/ B. Okafor\n" + "x " * 40
    )
    facts, questions = run(text)
    assert facts["date"].valid_from == date(2015, 11, 25)
    assert "term" not in questions or questions["term"].kind != "undated"


def test_a_date_named_the_effective_date_is_the_contracts_whatever_it_follows():
    text = (
        COVER
        + "This Supply Agreement is made as of January 8, 2021"
        + PARTIES
        + "2. Term. The term of this Agreement shall begin upon the grant of the export "
        "licence under the Licence Agreement no later than May 4, 2021 (such date, the "
        '"Effective Date") and shall continue for two (2) years.\n'
    )
    facts, questions = run(text)
    assert facts["date"].valid_from == date(2021, 1, 8)
    assert facts["term"].valid_from == date(2021, 5, 4)
    assert facts["term"].valid_to == date(2023, 5, 4)
    assert questions == {}


def test_the_date_of_another_agreement_is_not_the_effective_date():
    text = (
        COVER
        + "This Supply Agreement is made as of January 8, 2021"
        + PARTIES
        + 'The parties signed the Licence Agreement dated May 4, 2020 (the "Licence").\n'
    )
    assert made_and_start(text) == (date(2021, 1, 8), date(2021, 1, 8))


def test_the_contract_named_as_its_preamble_names_it_is_a_term_subject():
    text = (
        "Exhibit 10.2\n\n" + "Confidential treatment requested. " * 30 + "\n\nThis Hosting "
        "Agreement is made as of March 10, 2014" + PARTIES + "\n7. Term. The Hosting Agreement "
        "shall continue for three (3) years.\n"
    )
    facts, _ = run(text)
    assert facts["term"].valid_to == date(2017, 3, 10)


def test_an_event_the_document_dates_is_the_first_candidate_of_a_tied_start():
    text = (
        COVER
        + "This Supply Agreement is made as of October 2, 2018"
        + PARTIES
        + '"Effective Date" means the Closing Date under the Share Purchase Agreement.\n'
        + '"First Delivery Date" means January 5, 2019.\n'
        + "The Closing Date shall be November 15, 2018, or such later day as the parties agree.\n"
    )
    facts, questions = run(text)
    question = questions["term"]
    assert question.kind == "relative_date"
    assert [c.valid_from for c in question.candidates][:2] == [
        date(2018, 11, 15),
        date(2018, 10, 2),
    ]
    assert facts["term"].valid_from == date(2018, 11, 15)


def test_an_event_named_inside_another_name_is_not_dated_by_it():
    text = (
        COVER
        + "This Supply Agreement is made as of October 2, 2018"
        + PARTIES
        + '"Effective Date" means the Launch Date of the product.\n'
        + '"Early Launch Date" means January 5, 2019.\n'
    )
    _, questions = run(text)
    assert questions["term"].candidates[0].valid_from == date(2018, 10, 2)
