"""The term clause: when the initial term ends, and how the contract renews.

A term clause is a sentence whose subject is the contract or its term ("The initial
term of this Agreement shall commence on the Effective Date and continue for five (5)
years", "This Agreement shall remain in effect until terminated"). Its end, in this
order (the first that the clause states wins):

1. a stated last day — "through December 31, 2004", "shall expire on July 22, 2016",
   "commencing January 1, 2008 and ending on December 31, 2008", "from February 8, 2018
   to May 3, 2018": the end is exclusive, the day after;
2. a length from an anchor — "for a period of five (5) years", "two (2) years from the
   Effective Date", "twelve (12) months from the date hereof", "three (3) years
   thereafter": the anchor plus the length (an anchor that is another event, "the
   Launch Date", leaves the end unstated);
3. an anniversary — "end on the fifth anniversary of the Effective Date": the day after
   that anniversary;
4. the end of the current calendar year;
5. open-ended — "until terminated", "perpetual", "in perpetuity", "indefinitely": no end.

A renewal clause ("shall automatically renew for successive one (1) year periods unless
either party gives ninety (90) days' notice") gives `every` (ISO 8601) and `noticeDays`.
Renewals that need both parties' agreement or one party's option are no renewal of the
term itself and are not recorded."""

import re
from dataclasses import dataclass
from datetime import date, timedelta

from ..temporal.periods import month_add
from .forms import NUMBER_WORDS, ORDINAL_WORDS, Length, Written, lengths, written_dates
from .passages import TITLE_BLOCK
from .roles import role_of

# The subject of a term clause: the contract ("This Agreement shall continue …") or its
# term ("The initial term of this Agreement shall …", '"Term" means the period …').
_SELF_NOUN = r"(?:agreement|contract|amendment|licen[cs]e|lease|addendum|venture|arrangement)"
TERM_SUBJECT = re.compile(
    rf"\b(?P<det>this|the)\s+(?P<named>(?:[\w-]+\s+){{0,3}}?){_SELF_NOUN}\b"
    r"|\b(?P<head>term|duration|(?:contract|agreement|initial|license|licence)\s+period)\b"
    rf"(?:\s+of\s+(?:this|the)\s+(?:[\w-]+\s+){{0,2}}?(?:{_SELF_NOUN}|cooperation))?"
    r"|[\"\u201c](?:initial\s+)?term[\"\u201d]|[\"\u201c]contract\s+period[\"\u201d]"
)
# The words that may qualify a term that is the contract's ("the initial Term"); any
# other ("the Royalty Term", "the Shipping Term") makes it another term.
_TERM_QUALIFIERS = frozenset(
    {
        "the",
        "this",
        "its",
        "initial",
        "original",
        "effective",
        "contract",
        "agreement",
        "license",
        "licence",
        "said",
        "whole",
        "entire",
    }
)
# A subject governed by a preposition or a verb is no subject: "during the Term of this
# Agreement", "the representations in this Agreement", "may terminate this Agreement".
GOVERNED = re.compile(
    r"\b(?:during|throughout|within|in|for|of|after|upon|beyond|before|until|through|under|"
    r"to|by|with|from|expiration|expiry|end|remainder|termination|terminates?|terminated|"
    r"extends?|extended|renews?|renewed|breach(?:es|ed)?|amends?|amended|assigns?|"
    r"and|or|than|on|into|at|if|that|while|whilst|when|unless|whether|long\s+as)\s*$"
)
# What a term clause says of its subject: that it runs, lasts, ends or starts.
_AMOUNT = r"(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty)"
TERM_VERB = re.compile(
    r"\b(?:shall|will|to|is|be|are|continues|remains|expires|terminates|commences|begins|"
    r"ends|runs|lasts|means|have)\b[^.;]{0,160}?\b(?:continu\w*|remain\w*|expir\w*|"
    r"terminat\w*|end|ends|ending|conclud\w*|run|last|extend\w*|valid|commenc\w*|begin\w*|"
    r"in\s+(?:full\s+)?(?:force|effect)|for\s+(?:a|an|the)\s+(?:initial\s+)?(?:period|term)|"
    r"duration|perpetu\w*|effective)\b"
    rf"|\b(?:is|be|are)\s+(?:for\s+)?(?:a\s+period\s+of\s+)?{_AMOUNT}"
)
OPEN_ENDED = re.compile(
    r"\b(?:perpetu\w*|indefinite(?:ly)?|in\s+perpetuity|until\s+(?:it\s+is\s+|so\s+|such\s+"
    r"time\s+as\s+it\s+is\s+)?terminated|until\s+(?:either|one|a|the)\s+(?:party|parties)\s+"
    r"(?:terminates?|gives?|elects?)|until\s+terminat\w+\s+(?:by|in\s+accordance|as|"
    r"pursuant|under)|until\s+cancell?ed)\b"
)
# The end of a numbered year of the contract: "upon the end of Year 3", "at the end of
# the third Contract Year", "the last day of Agreement Year 5".
_CARDINAL = "|".join(sorted((w for w, v in NUMBER_WORDS.items() if v <= 30), key=len, reverse=True))
_ORDINAL = "|".join(sorted((w for w, v in ORDINAL_WORDS.items() if v <= 30), key=len, reverse=True))
CONTRACT_YEAR_END = re.compile(
    r"\b(?:end|expiration|expiry|last\s+day)\s+of\s+(?:the\s+)?(?:"
    rf"(?:contract\s+|agreement\s+|license\s+)?year\s+(?P<n>\d{{1,2}}|{_CARDINAL})\b"
    rf"|(?P<nth>\d{{1,2}}(?:st|nd|rd|th)|{_ORDINAL})\s+(?:contract|agreement|license)\s+year\b)"
)
YEAR_END = re.compile(
    r"\b(?:the\s+)?end\s+of\s+the\s+(?:current\s+|then[\s-]current\s+|same\s+)?calendar\s+year"
)
ANNIVERSARY = re.compile(
    r"(?P<card>" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\s*\(\s*\d{1,2}"
    r"\s*\)[\s-]*year[\s-]+anniversary|"
    r"(?P<n>\d{1,2})\s?(?:st|nd|rd|th|s\s?t|n\s?d|r\s?d|t\s?h)?\s*(?:\([^)]{0,8}\)\s*)?"
    r"(?:[\s-]year\s+)?anniversary|(?P<word>"
    + "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
    + r")\s*(?:\([^)]{0,8}\)\s*)?(?:[\s-]year\s+)?anniversary"
)
# What a length is counted from, right after it: "… from the Effective Date".
ANCHOR = re.compile(
    r"\s*(?:\([^)]{0,40}\)\s*)?(?:(?:period|term)s?\s+)?"
    r"(?:(?P<thereafter>thereafter|hereafter|therefrom)\b"
    r"|(?:(?:commencing|beginning|starting|running|measured)\s+(?:on\s+|with\s+|from\s+|upon\s+)?"
    r"|(?:from|after|following|of|since)\s+(?:and\s+(?:after|including)\s+)?)"
    r"(?:the\s+)?(?P<what>"
    r"(?:last\s+)?(?:effective|commencement|execution|signature|start)\s+date"
    r"|date\s+(?:hereof|of\s+(?:this|the)\s+(?:agreement|contract)"
    r"|first\s+(?:above\s+|set\s+forth\s+above\s+|written\s+above\s+)?(?:written|set\s+forth)"
    r"|of\s+(?:its\s+)?execution|of\s+(?:last\s+)?signature|of\s+signing)"
    r"|execution\s+(?:hereof|of\s+this)"
    r"|[\w-]+(?:\s+[\w-]+){0,3}"
    r"))"
)
# Words that make what a length counts from an event of its own ("the Launch Date",
# "the First Commercial Sale"), not the term's start.
EVENT = re.compile(
    r"\b(?:date|launch\w*|closing|sale|completion|delivery|approval|acceptance|"
    r"installation|opening|shipment|receipt|availability|operation|production|"
    r"registration|issuance|listing|consummation)\b"
)
NOTICE_AROUND = re.compile(
    r"(?:[\s'\u2019s]*(?:prior\s+|advance\s+|written\s+|advanced\s+)*notice|\s+(?:prior|"
    r"before|in\s+advance|advance|notice|written|after\s+(?:receipt|notice|written)))"
)
NOT_TERM_LENGTH = re.compile(
    r"(?:within|upon|at\s+least|not\s+less\s+than|no\s+less\s+than|no\s+later\s+than|"
    r"minimum\s+of|giving|gives|provides|with|less\s+than|more\s+than|every|each|per)\s+$"
)
RENEWS = re.compile(
    r"\b(?:automatic(?:ally)?\s+(?:be\s+)?(?:renew|extend|continu|roll)\w*|automatic\s+"
    r"renewal|(?:renew|extend|continu)\w*\s+(?:automatically|tacitly)|renewed\s+tacitly|"
    r"(?:shall|will)\s+(?:thereafter\s+)?(?:be\s+)?(?:renew|extend)\w*\s+(?:for|from|on)|"
    r"year[\s-]+to[\s-]+year|month[\s-]+to[\s-]+month|evergreen)"
)
OPTIONAL = re.compile(
    r"\b(?:may\s+(?:be\s+)?(?:renew|extend)|option\s+to\s+(?:renew|extend)|mutual(?:ly)?\s+"
    r"(?:written\s+)?agree|by\s+(?:written\s+)?agreement\s+of|if\s+(?:agreed|both)|upon\s+mutual|"
    r"right\s+to\s+(?:renew|extend)|elect\s+to\s+(?:renew|extend)|negotiat)"
)


@dataclass(frozen=True)
class End:
    """How the initial term ends. `kind`: "date" (`written` is the last day), "length"
    (`length` from `anchor`), "anniversary" (`years` after `anchor`), "year_end",
    "open" (no end) or "event" (counted from an event the contract does not date).
    `anchor`: "start", "made" or "" (a stated day: `written`)."""

    kind: str
    start: int
    end: int
    written: Written | None = None
    length: Length | None = None
    years: int = 0
    anchor: str = "start"


@dataclass(frozen=True)
class Renewal:
    every: str | None
    notice_days: int | None
    start: int
    end: int

    def as_property(self) -> dict[str, object]:
        """CONTRACT §2.2's `properties.renewal`."""
        found: dict[str, object] = {"every": self.every}
        if self.notice_days is not None:
            found["noticeDays"] = self.notice_days
        return found


def is_notice(before: str, after: str) -> bool:
    """Whether a length with these words before and after it is a notice period ("at
    least ninety (90) days' prior written notice", "30 days before the end")."""
    return bool(
        NOTICE_AROUND.match(after) or NOT_TERM_LENGTH.search(before) or "notice" in before[-40:]
    )


def _names_itself(low: str, m: re.Match[str]) -> bool:
    """Whether "the X Agreement" is this contract: no name ("the Agreement"), or one its
    title block gives ("SUPPLY AGREEMENT") or the text calls "this Supply Agreement"
    before."""
    named = [w for w in m.group("named").split() if w not in _TERM_QUALIFIERS]
    if not named or {"this", "term", "of"} & set(named):
        return True  # "the Agreement", "the term of this Agreement"
    name = " ".join(low[m.start("named") : m.end()].split())
    head = " ".join(low[: min(TITLE_BLOCK, m.start())].split())
    return name in head or low.find(f"this {name}", 0, m.start()) >= 0


def _is_subject(low: str, m: re.Match[str], floor: int) -> bool:
    """Whether a TERM_SUBJECT match is the sentence's subject: not governed by a
    preposition or verb, and a bare "term" not qualified as another term."""
    if GOVERNED.search(low, max(floor, m.start() - 16), m.start()):
        return False
    if m.group("det") == "the" and not _names_itself(low, m):
        return False  # "the Transition Services Agreement will require …": another one
    if m.group("head") != "term":
        return True
    words = low[max(floor, m.start() - 40) : m.start()].split()
    before = words[-1].strip("\"'(\u201c") if words else ""
    if before.isalpha() and before not in _TERM_QUALIFIERS:
        return False
    # "each of the first three months of the Term": a preposition before its determiner
    while words and words[-1].strip("\"'(\u201c") in _TERM_QUALIFIERS:
        words.pop()
    return not (words and GOVERNED.search(words[-1]))


NEAR = 280  # a long "unless sooner terminated pursuant to …" may stand between


def is_term_clause(low: str, start: int, end: int, near: int | None = None) -> bool:
    """Whether the sentence at [start, end) speaks of the contract's term: a subject
    (the contract, its term) that no preposition or verb governs, followed in its
    sentence by what the term does (continues, expires, is for five years…). With
    `near`, only a subject within NEAR characters before it or 60 after counts."""
    lo, hi = (start, end) if near is None else (max(start, near - NEAR), min(end, near + 60))
    for m in TERM_SUBJECT.finditer(low, lo, hi):
        if _is_subject(low, m, start) and TERM_VERB.search(low, m.end(), min(end, m.end() + 220)):
            return True
    return False


def _anchor(low: str, at: int) -> tuple[str, Written | None]:
    """What the length ending at `at` counts from: ("start"|"made"|"", a day) — ("", None)
    when it is another event; "start" when nothing follows (the term's start)."""
    m = ANCHOR.match(low, at, at + 120)
    if m is None or (m.group("thereafter") is None and m.group("what") is None):
        return "start", None
    if m.group("thereafter") is not None:
        return "start", None
    what = " ".join(m.group("what").split())
    if re.match(r"(?:termination|expiration|expiry|end)\b", what):
        return "after_end", None
    days = written_dates(low, m.start("what"), m.end("what") + 30)
    if days and days[0].start == m.start("what") and days[0].day is not None:
        return "", days[0]
    if what.startswith(("date hereof", "date of this", "date of the", "date first")):
        return "made", None
    if re.match(
        r"(?:last\s+)?(?:effective|commencement|start|execution|signature)\s+date|"
        r"date\s+of|execution",
        what,
    ):
        return "start", None
    return ("", None) if EVENT.search(what) else ("start", None)


def _term_length(low: str, start: int, end: int) -> End | None:
    """The first length of the clause that is the term's (not a notice period, not the
    renewal's), with its anchor."""
    for length in lengths(low, start, end):
        before = low[max(start, length.start - 40) : length.start]
        if is_notice(before, low[length.end : length.end + 40]):
            continue
        if re.match(r"[\s-]*anniversary", low[length.end : length.end + 20]) and length.unit == "Y":
            return _anniversary(low, length.start, end)
        if RENEWS.search(low, max(start, length.start - 80), length.start) or re.search(
            r"\b(?:renew\w*|successive|additional|extension|further)\W+(?:\w+\W+){0,4}$", before
        ):
            continue
        anchor, day = _anchor(low, length.end)
        if anchor == "after_end":
            continue  # "for one year after termination": what survives the term
        if day is not None:
            return End("length", length.start, length.end, written=day, length=length, anchor="")
        kind = "length" if anchor else "event"
        return End(kind, length.start, length.end, length=length, anchor=anchor)
    return None


def _stated_end(low: str, start: int, end: int) -> End | None:
    """A day the clause gives as the term's last: "through"/"until"/"expire on"/"ending
    on" DATE, or the second day of "from DATE to DATE"."""
    days = written_dates(low, start, end)
    for i, day in enumerate(days):
        if day.day is None and not day.blank:
            continue
        between = low[days[i - 1].end : day.start] if i else ""
        ranged = i > 0 and re.fullmatch(
            r"\s*(?:to|-|\u2013|through|and\s+ending(?:\s+on)?)\s*", between
        )
        if ranged or role_of(low, start, day.start, day.end) == "end":
            return End("date", day.start, day.end, written=day, anchor="")
    return None


def _anniversary(low: str, start: int, end: int) -> End | None:
    m = ANNIVERSARY.search(low, start, end)
    if m is None:
        return None
    if m.group("card"):
        years = NUMBER_WORDS.get(m.group("card"), 0)
    else:
        years = int(m.group("n")) if m.group("n") else ORDINAL_WORDS.get(m.group("word"), 0)
    if not years:
        return None
    anchor, day = _anchor(low, m.end())
    if day is not None:
        return End("anniversary", m.start(), m.end(), written=day, years=years, anchor="")
    return End("anniversary" if anchor else "event", m.start(), m.end(), years=years, anchor=anchor)


def _year_number(word: str | None) -> int:
    """3 for "3", "three", "3rd" or "third"."""
    if not word:
        return 0
    digits = re.match(r"\d+", word)
    if digits:
        return int(digits.group(0))
    return NUMBER_WORDS.get(word, 0) or ORDINAL_WORDS.get(word, 0)


# "on the 90th day after the Effective Date", "the thirtieth (30th) day following …".
NTH_DAY = re.compile(
    r"\b(?:(?P<n>\d{1,3})\s?(?:st|nd|rd|th)|[a-z]+(?:-[a-z]+)?\s*\(\s*(?P<n2>\d{1,3})\s?"
    r"(?:st|nd|rd|th)?\s*\)|(?P<word>"
    + "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
    + r"))\s+(?:calendar\s+)?day\s+"
    r"(?=after|following)"
)


def _nth_day(low: str, start: int, end: int) -> End | None:
    """The term ending on a numbered day after its anchor: the anchor + N days."""
    m = NTH_DAY.search(low, start, end)
    if m is None or is_notice(low[max(start, m.start() - 40) : m.start()], ""):
        return None
    days = int(m.group("n") or m.group("n2") or 0) or ORDINAL_WORDS.get(m.group("word") or "", 0)
    anchor, day = _anchor(low, m.end())
    if not days or anchor == "after_end":
        return None
    length = Length(m.start(), m.end(), days, "D")
    if day is not None:
        return End("length", m.start(), m.end(), written=day, length=length, anchor="")
    return End("length" if anchor else "event", m.start(), m.end(), length=length, anchor=anchor)


def term_end(low: str, start: int, end: int) -> End | None:
    """The end the term clause at [start, end) states (module docstring's order)."""
    for reader in (_stated_end, _term_length, _anniversary, _nth_day):
        found = reader(low, start, end)
        if found is not None:
            return found
    if (m := CONTRACT_YEAR_END.search(low, start, end)) is not None:
        years = _year_number(m.group("n") or m.group("nth"))
        if years:
            length = Length(m.start(), m.end(), years, "Y")
            return End("length", m.start(), m.end(), length=length)
    if (m := YEAR_END.search(low, start, end)) is not None:
        return End("year_end", m.start(), m.end())
    if (m := OPEN_ENDED.search(low, start, end)) is not None:
        return End("open", m.start(), m.end())
    return None


def renewal_in(low: str, start: int, end: int, initial: Length | None) -> Renewal | None:
    """An automatic renewal stated in [start, end): its period (the first length after
    the renewal words, "year to year"/"annual" one year, "the same duration" the
    initial term's) and the notice that stops it, in days."""
    m = RENEWS.search(low, start, end)
    if m is None or OPTIONAL.search(low, max(start, m.start() - 80), min(end, m.end() + 80)):
        return None
    every: str | None = None
    notice: int | None = None
    for length in lengths(low, max(start, m.start() - 60), end):
        if initial is not None and length.start == initial.start:
            continue  # the initial term's own length, said before the renewal
        before = low[max(start, length.start - 60) : length.start]
        if is_notice(before, low[length.end : length.end + 40]):
            notice = length.days if notice is None else notice
        elif every is None:
            every = length.iso
    if every is None and re.search(r"same\s+(?:duration|length|period)", low[m.start() : end]):
        every = initial.iso if initial else None
    return Renewal(every, notice, m.start(), m.end())


def add_length(d: date, amount: int, unit: str) -> date:
    """`d` moved forward by a length: years and months to the same day of the month
    (the month's last day when it has no such day: 31 January + 1 month = 28 February),
    weeks and days exactly."""
    if unit in ("Y", "M"):
        year, month = month_add(d.year, d.month, amount * (12 if unit == "Y" else 1))
        last = (date(*month_add(year, month, 1), 1) - timedelta(days=1)).day
        return date(year, month, min(d.day, last))
    return d + timedelta(days=amount * (7 if unit == "W" else 1))


def end_day(end: End | None, start: date | None, made: date | None) -> date | None:
    """The exclusive end of the initial term: the day after a stated last day or an
    anniversary (the term runs through it), the anchor plus a length; None when the
    term is open-ended, tied to an undated event, or its anchor is unknown."""
    if end is None or end.kind in ("open", "event"):
        return None
    if end.kind == "date":
        last = end.written.day if end.written else None
        return last + timedelta(days=1) if last else None
    if end.kind == "year_end":
        return date(start.year + 1, 1, 1) if start else None
    anchor = end.written.day if end.written else (made or start if end.anchor == "made" else start)
    if anchor is None:
        return None
    if end.kind == "anniversary":
        return add_length(anchor, end.years, "Y") + timedelta(days=1)
    assert end.length is not None
    return add_length(anchor, end.length.amount, end.length.unit)
