"""A contract's own dates, read with one precedence (docs/ingest.md "Contracts").

The date it was made (`made`):
1. the preamble's date of making — "dated (as of)", "made (and entered into) (as of |
   on | this)", "entered into", "executed", "this 8th day of May, 2014" — unless it is
   the date of another document the preamble cites ("an Amendment to the License
   Agreement dated …");
2. else the preamble's "effective as of" date (the only date it gives itself);
3. else a date standing in the title block ("SPONSORSHIP AGREEMENT dated January 29,
   2007", "Dated 29/3/18");
4. else a defined "Agreement Date" or "Execution Date";
5. else the signature block: "executed this Agreement on …", "Date: …" under the
   signatures (the latest, when they differ: the day the last party signed).
A filing's stamps ("Source: ACME, 10-K, 3/21/2019", "Filed 04/18/18") are never a date
of the contract.

When it takes effect (`start`): a stated effective or commencement date — a defined
"Effective Date" or "Commencement Date", the preamble's "effective as of", the term
clause's "shall commence on" — else an event the start is tied to (`anchor`: the
contract's own date, its signatures, or an event it does not date), else the date it
was made.

The end of the initial term and the renewal: `term.py`."""

import re
from dataclasses import dataclass, field

from .forms import Written, written_dates
from .passages import HEAD, TITLE_BLOCK, Sites
from .roles import cites_another, defined_name, in_stamp, role_of, speaks_of_itself
from .term import NEAR, End, Renewal, is_term_clause, renewal_in, term_end

# Where a contract ties its start to an event instead of a date: "effective upon
# execution", "shall commence on the Closing Date", "'Effective Date' means the date of
# the last signature below".
TIED = re.compile(
    r"(?:[\"\u201d]?\s*effective\s+date[\"\u201d]?\s*(?:\)\s*)?(?:shall\s+)?(?:mean|means|is|"
    r"shall\s+be|has\s+the\s+meaning\s+of|:)"
    r"|(?:become|becomes|be|is|are|being)\s+effective(?:\s+as\s+of|\s+on|\s+upon|\s+from|\s+at)?"
    r"|(?:commence|commences|begin|begins|start|starts|come\s+into\s+(?:force|effect)|"
    r"comes\s+into\s+(?:force|effect)|take\s+effect|takes\s+effect|enter\s+into\s+force)"
    r"(?:\s+(?:on|upon|as\s+of|from|at|with))?"
    r")\s+(?:the\s+)?(?P<what>[^.;]{3,160})"
)
DOCUMENT_DATE = re.compile(
    r"^(?:date\s+(?:hereof|of\s+(?:this|the)\s+(?:agreement|contract))|(?:day\s+and\s+year|"
    r"date)\s+(?:first\s+)?(?:above|set\s+forth\s+above|written\s+above|first\s+written|"
    r"first\s+set\s+forth|set\s+forth\s+(?:in|on)\s+the\s+(?:preamble|first\s+page))|"
    r"agreement\s+date|date\s+of\s+the\s+agreement|date\s+first\s+written)"
)
# A start tied to this contract's own signing: "upon execution", "the date of the last
# signature", "when signed by both parties" — not the signing of another agreement.
SIGNATURE_EVENT = re.compile(
    r"\b(?:execut\w*|sign\w*|signature)\s+(?:of\s+|by\s+|on\s+)?(?:this|the\s+parties|both|all|"
    r"each|its|the\s+last|hereof|hereto|authori[sz]ed|duly|the\s+(?:later|latter|last)|[\w-]+\s+"
    r"parties)\b|\b(?:last|final|later|latest|most\s+recent(?:\s+final)?)\s+(?:date\s+of\s+)?"
    r"(?:signature|execution|signing)|\bdate\s+of\s+(?:its\s+|actual\s+|signed\s+)?(?:execution|"
    r"signature|signing|acceptance)|\b(?:execution|signing)\s+(?:hereof|of\s+this)|\bupon\s+"
    r"(?:its\s+)?(?:execution|signing|signature)\b|\b(?:is|are|has\s+been)\s+(?:signed|executed)"
)
NOT_A_START = re.compile(
    r"\b(?:notice|notif\w*|receipt|terminat\w*|breach|mail(?:ed)?|courier|hand[\s-]+deliver\w*|"
    r"delivery\s+to|transmission|cure[ds]?|counterparts?)\b"
)
REFERS_BACK = re.compile(r"^(?:effective|commencement|start)\s+date\b")
EVENT_WORDS = re.compile(
    r"\b(?:closing|launch|approv\w*|occurrence|complet\w*|receipt|delivery|accept\w*|"
    r"operational|exhibit|schedule|consummat\w*|funding|registration|effectiveness|"
    r"condition|later\s+of|earlier\s+of|first\s+date|date\s+(?:on\s+which|that|when)|"
    r"when|upon)\b"
)


# Past the preamble, only the contract saying of itself when it takes effect.
SELF_EFFECTIVE = re.compile(
    r"\bthis\s+(?:[\w-]+\s+){0,3}?(?:agreement|contract|amendment|addendum)\s+(?:shall|will|is|"
    r"becomes?)\s+(?:be\s+|become\s+)?effective\b"
)


@dataclass(frozen=True)
class Stated:
    """A date the contract states for itself, and why it was taken (a label word)."""

    written: Written
    why: str


@dataclass(frozen=True)
class Anchor:
    """An event the start is tied to instead of a date: `kind` is "document" (the
    contract's own date: "the date hereof"), "signature" ("upon execution", "the date
    of the last signature") or "event" (one the contract does not date: "the Closing
    Date"); [start, end) is the phrase."""

    kind: str
    start: int
    end: int


@dataclass
class ContractReading:
    """What a contract states about its own dates (see the module's precedence)."""

    made: Stated | None = None
    start: Stated | None = None
    anchor: Anchor | None = None
    event_day: Written | None = None  # the day the document gives the anchor's event
    signatures: list[Written] = field(default_factory=list)
    end: End | None = None
    renewal: Renewal | None = None
    clause: tuple[int, int] | None = None  # the term clause's sentence


def _usable(low: str, w: Written) -> bool:
    """Not a filing stamp, not the date of another document."""
    return not in_stamp(low, w.start) and not cites_another(low, w.start)


def _head_dates(sites: Sites) -> tuple[Stated | None, Stated | None]:
    """(made, effective) from the sentences about the contract itself: in the first
    one of the preamble (the first HEAD characters) that dates it, the date of making
    (else the date it takes effect, the only date it gives itself); and, anywhere, the
    first date of taking effect ("This letter agreement will be effective as of …")."""
    low = sites.low
    made: Stated | None = None
    effective: Stated | None = None
    spans = {(a, b) for _, a, b in sites.passages("making") if a < HEAD}
    spans |= {(a, b) for _, a, b in sites.passages("effective")}
    for a, b in sorted(spans):
        if not speaks_of_itself(low, a, b) or (a >= HEAD and not SELF_EFFECTIVE.search(low, a, b)):
            continue
        roles = [
            (role_of(low, a, w.start, w.end), w)
            for w in written_dates(low, a, b)
            if _usable(low, w)
        ]
        if made is None and a < HEAD:
            first = next((w for r, w in roles if r in ("made", "signed")), None)
            first = first or next((w for r, w in roles if r == "effective"), None)
            made = Stated(first, "dated") if first else None
        if effective is None:
            first = next((w for r, w in roles if r == "effective"), None)
            effective = Stated(first, "effective") if first else None
        if made and effective:
            break
    return made, effective


def _title_date(sites: Sites) -> Stated | None:
    """A date standing in the title block with no role (not a stamp, not another
    document's): "SPONSORSHIP AGREEMENT  January 29, 2007"."""
    low = sites.low
    for w in written_dates(low, 0, min(len(low), TITLE_BLOCK)):
        if _usable(low, w) and role_of(low, 0, w.start, w.end) in ("", "made"):
            return Stated(w, "dated")
    return None


def _defined_dates(sites: Sites) -> tuple[Stated | None, Stated | None]:
    """(made, effective) from definitions: '"Effective Date" means March 3, 2003',
    'March 3, 2003 (the "Commencement Date")', '"Agreement Date" means …'."""
    low = sites.low
    made: Stated | None = None
    effective: Stated | None = None
    for pos, a, b in sites.passages("definition"):
        if not _defines(low, pos):
            continue  # the name used, not defined: "on the Effective Date"
        for w in written_dates(low, a, b):
            defined_after = defined_name(low, w.end)
            name = defined_after or _named_before(low, a, w.start)
            # A date named the Effective Date right after it is this contract's, whatever
            # document the clause mentions before it ("… by the FDA no later than
            # September 2, 2019 (such date, the "Effective Date")"); a stamp never is.
            own = defined_after and not in_stamp(low, w.start) and "effective" in name
            if not name or not (own or _usable(low, w)):
                continue
            if ("effective" in name or "commencement" in name or "start" in name) and not effective:
                effective = Stated(w, "commencement" if "commencement" in name else "effective")
            elif ("agreement" in name or "execution" in name) and not made:
                made = Stated(w, "dated")
    return made, effective


_NAMED = re.compile(
    r"[\"\u201c\u201d]?\s*(?P<name>effective|commencement|agreement|execution|start)\s+date"
    r"[\"\u201c\u201d]?\s*(?:\)\s*)?(?:shall\s+)?(?:mean|means|is|shall\s+be|will\s+be|:)"
    r"\s*(?::\s*)?(?:the\s+)?(?:\d{1,2}:\d\d\s*[ap]\.?m\.?[^,;]{0,40}\s+on\s+)?$"
)


_DEFINING_BEFORE = re.compile(r"[\"\u201c\u201d(]\s*(?:the\s+)?[\"\u201c]?\s*$")
_DEFINING_AFTER = re.compile(
    r"[a-z]*\s+date[\"\u201d]?\s*\)?\s*(?:shall\s+|will\s+)?(?:mean|means|is|be|:|has)"
)


def _defines(low: str, pos: int) -> bool:
    """Whether the date's name at `pos` is being defined there: quoted or in brackets
    ('(the "Effective Date")'), or followed by "means", "is", ":"."""
    return bool(
        _DEFINING_BEFORE.search(low, max(0, pos - 10), pos)
        or _DEFINING_AFTER.match(low, pos, pos + 60)
    )


def _named_before(low: str, floor: int, start: int) -> str:
    m = _NAMED.search(low, max(floor, start - 80), start)
    return f"{m.group('name')} date" if m else ""


def _term_start(sites: Sites, clause: tuple[int, int] | None) -> Stated | None:
    """ "The term … shall commence on January 1, 1996": a start the term clause states."""
    if clause is None:
        return None
    low = sites.low
    for w in written_dates(low, *clause):
        if role_of(low, clause[0], w.start, w.end) == "effective" and _usable(low, w):
            return Stated(w, "commencement")
    return None


# How firmly each kind of end pins the term, the firmest first (term.py's order).
_END_RANK = {"date": 0, "length": 0, "anniversary": 0, "year_end": 0, "open": 1, "event": 2}
TERM_CLAUSES = 8


def _term_clause(sites: Sites) -> tuple[tuple[int, int] | None, End | None]:
    """The term clause and its end: of the first TERM_CLAUSES term clauses that state
    an end, the one whose end is firmest (a stated last day over a length over an
    open end), the first among equals; with none, the first term clause."""
    low = sites.low
    first: tuple[int, int] | None = None
    found: list[tuple[int, int, tuple[int, int], End]] = []
    seen: set[tuple[int, int]] = set()
    for pos in sites.cues("term"):
        if not is_term_clause(low, max(0, pos - NEAR), pos + 280, near=pos):
            continue  # a first look without cutting the sentence
        a, b = sites.passage(pos)
        if (a, b) in seen or not is_term_clause(low, a, b, near=pos):
            continue
        seen.add((a, b))
        first = first or (a, b)
        end = term_end(low, a, b)
        if end is not None:
            found.append((_END_RANK[end.kind], len(found), (a, b), end))
            if _END_RANK[end.kind] == 0 or len(found) == TERM_CLAUSES:
                break  # the first firm end wins: no later clause can beat it
    if not found:
        return first, None
    _, _, clause, end = min(found)
    return clause, end


def _renewal(sites: Sites, clause: tuple[int, int] | None, end: End | None) -> Renewal | None:
    """The first automatic renewal: in the term clause, else in a renewal passage."""
    low = sites.low
    initial = end.length if end is not None else None
    spans = [clause] if clause else []
    spans += [(a, b) for _, a, b in sites.passages("renewal")]
    for a, b in spans:
        found = renewal_in(low, a, b, initial)
        if found is not None:
            return found
    return None


def _anchor(sites: Sites) -> Anchor | None:
    """The event a start is tied to, from the definition of the Effective Date or a
    term or preamble clause ("shall become effective upon execution")."""
    low = sites.low
    for kind in ("definition", "effective"):
        for _, a, b in sites.passages(kind):
            for m in TIED.finditer(low, a, b):
                anchor = _tied(low, a, b, m)
                if anchor is not None:
                    return anchor
    return None


_EVENT_NAME = re.compile(r"(?:the\s+)?((?:[a-z-]+\s+){1,3}?date)\b")
_DATED_AS = re.compile(
    r"[\"\u201d]?\s*\)?\s*(?:shall\s+be|will\s+be|is|means|:|occurred\s+on|shall\s+occur\s+on|"
    r"is\s+expected\s+to\s+be)\s+(?:on\s+)?"
)
EVENT_MENTIONS = 30


def _event_day(low: str, anchor: Anchor) -> Written | None:
    """The day the document gives the event a start is tied to: "the Launch Date shall
    be September 1, 1999", '"Closing Date" means March 3, 2015', 'on March 3, 2015 (the
    "Closing Date")' — the first of its first EVENT_MENTIONS mentions that dates it."""
    m = _EVENT_NAME.match(low, anchor.start, anchor.end)
    if m is None or m.group(1).split()[0] in ("effective", "commencement", "start"):
        return None
    name = " ".join(m.group(1).split())
    i = low.find(name)
    for _ in range(EVENT_MENTIONS):
        if i < 0:
            return None
        after = i + len(name)
        if not low[max(0, i - 5) : i].endswith(("the ", '"', "(", "\u201c")):
            i = low.find(name, after)
            continue  # inside another name ("the Early Launch Date")
        said = _DATED_AS.match(low, after, after + 40)
        if said is not None:
            days = written_dates(low, said.end(), said.end() + 40)
            if days and days[0].start == said.end() and days[0].day:
                return days[0]
        days = written_dates(low, max(0, i - 60), i)
        if days and days[-1].day and defined_name(low, days[-1].end) == name:
            return days[-1]
        i = low.find(name, after)
    return None


def _tied(low: str, a: int, b: int, m: re.Match[str]) -> Anchor | None:
    what = m.group("what")
    if REFERS_BACK.match(what) or written_dates(low, m.start("what"), m.start("what") + 40):
        return None
    definition = "effective" in low[m.start() : m.start("what")].split("date")[0]
    if not definition and not is_term_clause(low, a, b, near=m.start()):
        return None  # "notice shall be effective upon receipt": not the contract's start
    span = (m.start("what"), min(b, m.start("what") + 80))
    if DOCUMENT_DATE.match(what):
        return Anchor("document", *span)
    head = what[:80]
    if NOT_A_START.search(head):
        return None  # when a notice or a termination takes effect, not the contract
    if SIGNATURE_EVENT.search(head) and not re.search(r"\b(?:closing|launch)\b", head):
        return Anchor("signature", *span)
    if EVENT_WORDS.search(head):
        return Anchor("event", *span)
    return None


# A signature block laid out as a form: the values on one line, their labels under them
# ("4/24/2018   04/25/2018" over "Date   Date", signature lines "____" between them);
# extracted text keeps the order.
_LABEL_BELOW = re.compile(
    r"(?:\s+(?:[\d/.-]{6,10}|_{3,}))*\s+date\b(?!\s*(?:of|hereof|first|above))"
)
SIGNATURE_BLOCK = 1_500
UNWITNESSED = 12_000  # how far into the second half a block without a testimonium is looked for


def _labelled_below(low: str, after: int, reach: int = SIGNATURE_BLOCK) -> list[Written]:
    """The dates within `reach` after `after` that a "Date" label follows."""
    return [
        w
        for w in written_dates(low, after, min(len(low), after + reach))
        if (w.day or w.readings) and _LABEL_BELOW.match(low, w.end, w.end + 200)
    ]


def _signatures(sites: Sites) -> list[Written]:
    """The dates of the signature block: "Date: …" fields after the last "IN WITNESS
    WHEREOF" (or in the text's second half), and a date the testimonium gives."""
    low = sites.low
    witness = [p for p in sites.cues("signature") if low.startswith("in witness", p)]
    floor = witness[-1] if witness else len(low) // 2
    found: list[Written] = []
    for pos in sites.cues("signature"):
        if pos < floor:
            continue
        if low.startswith("in witness", pos):
            a, b = sites.passage(pos)
            found += [w for w in written_dates(low, a, b) if w.day or w.readings]
            found += _labelled_below(low, b)
            continue
        if not low.startswith(("date", "dated"), pos):
            continue
        colon = low.find(":", pos, pos + 8)
        days = written_dates(low, colon + 1, colon + 40) if colon >= 0 else []
        if days and days[0].start - colon <= 8 and (days[0].day or days[0].readings):
            found.append(days[0])
    if not witness and not found:  # no testimonium: a form's dates over "Date" labels
        found = _labelled_below(low, floor, UNWITNESSED)
    return found


_NUMERIC_ANYWHERE = re.compile(r"(?<![\d/.-])(\d{1,2})([/.-])(\d{1,2})\2(?:\d{4}|\d\d)(?![\d])")


def settle_order(low: str, w: Written) -> Written:
    """A numeric date that reads two ways, read the way the document writes its
    numeric dates: more of its other dates with the same separator show one order than
    the other (a day over 12: "4/25/2018" is month first). Unsettled, it keeps both
    readings (a question)."""
    if not w.readings:
        return w
    month_first = day_first = 0
    sep = next((c for c in low[w.start : w.end] if c in "/.-"), "/")
    for m in _NUMERIC_ANYWHERE.finditer(low):
        if m.group(2) != sep or in_stamp(low, m.start()):
            continue  # a filing's stamp writes the filer's order, not the contract's
        a, b = int(m.group(1)), int(m.group(3))
        month_first += b > 12 >= a
        day_first += a > 12 >= b
    if month_first != day_first:
        day = w.readings[0] if month_first > day_first else w.readings[-1]
        return Written(w.start, w.end, day=day)
    return w


def _needs_signatures(reading: ContractReading) -> bool:
    """Whether the signature block has anything to add: no date of making, a blank or
    two-way one, or a start tied to an event (the signatures are its candidates)."""
    made, start = reading.made, reading.start
    return (
        made is None
        or made.written.day is None
        or reading.anchor is not None
        or (start is not None and start.written.day is None)
    )


def read_contract(sites: Sites) -> ContractReading:
    """The contract's dates by the module's precedence."""
    low = sites.low
    made, preamble_effective = _head_dates(sites)
    defined_made, defined_effective = _defined_dates(sites)
    clause, end = _term_clause(sites)
    reading = ContractReading(end=end, clause=clause)
    reading.made = made or _title_date(sites) or defined_made or defined_effective
    reading.start = defined_effective or preamble_effective or _term_start(sites, clause)
    if reading.made is not None and reading.made.written.readings:
        reading.made = Stated(settle_order(low, reading.made.written), reading.made.why)
    if reading.start is not None and reading.start.written.readings:
        reading.start = Stated(settle_order(low, reading.start.written), reading.start.why)
    if reading.start is None:
        reading.anchor = _anchor(sites)
        if reading.anchor is not None and reading.anchor.kind == "event":
            reading.event_day = _event_day(low, reading.anchor)
    if _needs_signatures(reading):
        reading.signatures = [settle_order(low, w) for w in _signatures(sites)]
    if reading.made is None and reading.signatures:
        dated = [w for w in reading.signatures if w.day]
        latest = max(dated, key=lambda w: w.day or w.start) if dated else reading.signatures[0]
        reading.made = Stated(latest, "signature")
    reading.renewal = _renewal(sites, clause, end)
    return reading
