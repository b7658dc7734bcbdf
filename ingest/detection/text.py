"""Detection rules for text and Markdown documents (.txt, .md).

Rules, each a small function over the canonical text:
* `front_matter` — optional YAML front matter: title, author, owner, date, acl, restriction.
* `role_dates` — dates tied to roles (signature, countersignature, effective, commencement).
* `rule_conflicting_roles` — signature vs countersignature, effective vs commencement
  disagree → `conflicting_dates`, one candidate per role ("12 June (signature)").
* `rule_relative_phrase` — "effective next quarter", "within 30 days of signature", "from
  the start of next month" → `relative_date`, candidates computed from the anchor (the
  signature date, else the document date, else the file's date), the best guess first.
* `rule_undated` — a document that looks dated (an agreement, a policy…) with no date.
* `rule_yearless_date` — a date written without a year ("12th of June") → a weak
  extraction (`low_confidence_extraction`) with the plausible years as candidates.
"""

import re
from datetime import date, timedelta
from typing import Any

import yaml

from .contract.passages import Sites, find_sites
from .contract.reading import read_contract
from .document import DocumentDates, date_fact, document_dates, term_fact
from .model import Candidate, Detection, Fact, Finding, PersonRef, label, label_with_year
from .temporal import Timex, tag, written_day

ROLE_WORDS = [
    ("countersignature", re.compile(r"counter-?sign(?:ed|ature)?", re.I)),
    ("signature", re.compile(r"\b(?:signed|signature|executed|signing)\b", re.I)),
    ("commencement", re.compile(r"\bcommenc(?:es|ed|ement|ing)\b", re.I)),
    ("effective", re.compile(r"\beffective\b", re.I)),
]
ROLE_WINDOW = 80
CONFLICT_PAIRS = [("signature", "countersignature"), ("effective", "commencement")]
DATED_LOOKING = re.compile(
    r"\b(agreement|contract|dated|effective|signed|policy|memorandum|addendum|amendment|"
    r"lease|licen[cs]e|terms)\b",
    re.I,
)
SIGNER = re.compile(
    r"\b(?P<role>(?i:counter-?signed|signed))\s+by\s+(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z'-]+){0,3})"
)
SENTENCE_END = re.compile(r"[.;](?=\s)|\n[ \t]*\n")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?P<yaml>.*?)^---[ \t]*(?:\n|\Z)", re.S | re.M)

RELATIVE_RULES = [
    (
        "next_quarter",
        re.compile(
            r"\b(?:effective|starts?|starting|begins?|beginning|from|commenc\w*)\s+"
            r"(?:from\s+|as\s+of\s+)?(?:the\s+)?next\s+quarter\b",
            re.I,
        ),
    ),
    (
        "days_after_anchor",
        re.compile(
            r"\bwithin\s+(?P<days>\d{1,3})\s+days\s+(?:of|from|after)\s+(?:the\s+)?"
            r"(?:date\s+of\s+)?(?P<anchor>signature|signing|execution|effective\s+date)\b",
            re.I,
        ),
    ),
    (
        "start_of_next_month",
        re.compile(
            r"\bfrom\s+the\s+(?:start|beginning|first\s+day)\s+of\s+(?:the\s+)?next\s+month\b",
            re.I,
        ),
    ),
]


def front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """YAML front matter between a leading `---` line and the next `---` line:
    (metadata, body, body offset). Broken or non-mapping front matter is ignored (the
    whole text is the body), never an error — also a YAML date that is no calendar date."""
    m = FRONT_MATTER.match(text)
    if m is None:
        return {}, text, 0
    try:
        meta = yaml.safe_load(m.group("yaml")) or {}
    except (yaml.YAMLError, ValueError):  # ValueError: `date: 2026-02-31`
        return {}, text, 0
    if not isinstance(meta, dict):
        return {}, text, 0
    return meta, text[m.end() :], m.end()


def written_dates(timexes: list[Timex], offset: int = 0) -> list[Timex]:
    """The calendar days among the tagger's expressions that the text writes out — ISO
    and written dates, with their year or without ("12 June 2026", "12th of June") —
    from `offset` on, their positions made relative to it. Not relative days ("next
    Monday"), months or numeric day/month forms (a table's column says what those mean)."""
    return [
        t._replace(start=t.start - offset, end=t.end - offset)
        for t in timexes
        if t.start >= offset and t.kind in ("date", "iso") and _month_day(t) is not None
    ]


def _month_day(d: Timex) -> tuple[int, int] | None:
    """(month, day) of a day-precision value ("2026-06-12", "XXXX-06-12", "…T09:30")."""
    m = re.match(r"[\dX]{4}-(\d\d)-(\d\d)(?:T|$)", d.value)
    return (int(m.group(1)), int(m.group(2))) if m else None


def year_known(d: Timex) -> bool:
    """Whether the text wrote the date's year (not "12th of June")."""
    return not d.anchored


def on_year(d: Timex, year: int) -> date | None:
    """The date's month and day in `year` (None: 29 February of a common year)."""
    month_day = _month_day(d)
    if month_day is None:
        return None
    try:
        return date(year, *month_day)
    except ValueError:
        return None


def _sentence_start(text: str, pos: int, floor: int = 0) -> int:
    """Sentences end at '.' or ';' before white space, or at a blank line (a wrapped line
    is the same sentence; the '.' of "1.5" inside a sentence does not end it); looked
    for from `floor` on (what is further back does not matter to the caller)."""
    cut = floor
    for m in SENTENCE_END.finditer(text, floor, pos):
        cut = m.end()
    return cut


def role_dates(text: str, dates: list[Timex]) -> dict[str, Timex]:
    """The first date of each role: the nearest role word before the date, in the same
    sentence and within ROLE_WINDOW characters."""
    found: dict[str, Timex] = {}
    for d in dates:
        begin = _sentence_start(text, d.start, max(0, d.start - ROLE_WINDOW - 1))
        before = text[begin : d.start]
        best: tuple[int, str] | None = None
        for role, pattern in ROLE_WORDS:
            for m in pattern.finditer(before):
                overlaps_counter = role == "signature" and re.search(
                    r"counter-?$", before[: m.start()], re.I
                )
                if overlaps_counter:
                    continue
                if best is None or m.end() > best[0]:
                    best = (m.end(), role)
        if best is not None and best[1] not in found:
            found[best[1]] = d
    return found


def _resolved(d: Timex, year_hint: date | None) -> date | None:
    """The date, a yearless one in the year of `year_hint` (None without one)."""
    if year_known(d):
        return d.day
    return on_year(d, year_hint.year) if year_hint else None


def rule_conflicting_roles(
    text: str, roles: dict[str, Timex], year_hint: date | None, offset: int
) -> list[Finding]:
    """Signature vs countersignature (on the date fact) and effective vs commencement
    (on the term fact) that disagree → `conflicting_dates`, one candidate per role,
    labelled "12 June (signature)"; the first role's date is the best guess."""
    findings = []
    for first, second in CONFLICT_PAIRS:
        a, b = roles.get(first), roles.get(second)
        if a is None or b is None:
            continue
        da, db = _resolved(a, year_hint), _resolved(b, year_hint)
        if da is None or db is None or da == db:
            continue
        key = "date" if first == "signature" else "term"
        span_a, span_b = (a.start + offset, a.end + offset), (b.start + offset, b.end + offset)
        findings.append(
            Finding(
                rule="conflicting_roles",
                node_key=key,
                kind="conflicting_dates",
                candidates=[
                    Candidate(f"{label(da)} ({first})", da, None, span_a),
                    Candidate(f"{label(db)} ({second})", db, None, span_b),
                ],
                detector_confidence=0.9,
                applied_candidate_confidence=0.5,
                span=(min(a.start, b.start) + offset, max(a.end, b.end) + offset),
            )
        )
    return findings


def quarter_start_after(d: date) -> date:
    """The first day of the calendar quarter after the one `d` is in."""
    month = ((d.month - 1) // 3 + 1) * 3 + 1
    return date(d.year + (month > 12), (month - 1) % 12 + 1, 1)


def month_start_after(d: date) -> date:
    """The first day of the month after `d`'s."""
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def relative_anchors(
    roles: dict[str, Timex], document_date: date | None, file_date: date | None
) -> list[tuple[str, date]]:
    """What a relative phrase counts from, the strongest first: the signature date and
    the document date (front matter); the file's date (a modification or upload time, a
    weak proxy) only when the document states neither."""
    signature = roles.get("signature")
    signed = _resolved(signature, document_date or file_date) if signature else None
    stated = [(n, d) for n, d in (("signature", signed), ("document date", document_date)) if d]
    return stated or ([("file date", file_date)] if file_date else [])


def _relative_candidates(
    name: str, m: re.Match[str], anchors: list[tuple[str, date]], span: tuple[int, int]
) -> list[Candidate]:
    anchor_name, anchor = anchors[0]
    if name == "next_quarter":
        candidates: list[Candidate] = []
        for a_name, a in anchors:
            q = quarter_start_after(a)
            if all(c.valid_from != q for c in candidates):
                text = f"{label_with_year(q)} (next quarter after {a_name})"
                candidates.append(Candidate(text, q, None, span))
        later = quarter_start_after(candidates[0].valid_from or anchor)
        text = f"{label_with_year(later)} (the quarter after)"
        return [*candidates, Candidate(text, later, None, span)]
    if name == "days_after_anchor":
        days = int(m.group("days"))
        due = anchor + timedelta(days=days)
        return [
            Candidate(f"{label_with_year(due)} ({days} days after {anchor_name})", due, None, span),
            Candidate(f"{label_with_year(anchor)} ({anchor_name})", anchor, None, span),
        ]
    first = month_start_after(anchor)
    return [
        Candidate(
            f"{label_with_year(first)} (start of next month after {anchor_name})", first, None, span
        ),
        Candidate(f"{label_with_year(anchor)} ({anchor_name})", anchor, None, span),
    ]


# A literal each relative phrase contains, searched for first: the phrase's pattern is
# then matched only around it, never over the whole text.
RELATIVE_CUES = {
    "next_quarter": "next quarter",
    "days_after_anchor": "within",
    "start_of_next_month": "next month",
}


def _relative_matches(text: str, low: str | None = None) -> list[tuple[re.Match[str], str]]:
    """The first match of each relative phrase in the text (pattern, name); `low` is
    the text lower-cased, when the caller has it."""
    low = low if low is not None else text.lower()
    found = []
    for name, pattern in RELATIVE_RULES:
        cue = RELATIVE_CUES[name]
        i = low.find(cue)
        while i >= 0:
            m = pattern.search(text, max(0, i - 80), i + 120)
            if m is not None:
                found.append((m, name))
                break
            i = low.find(cue, i + len(cue))
    return found


def rule_relative_phrase(
    text: str,
    roles: dict[str, Timex],
    document_date: date | None,
    offset: int,
    file_date: date | None = None,
    low: str | None = None,
) -> Finding | None:
    """The first anchored relative phrase of the text → `relative_date`, candidates counted
    from the anchor, the best guess first. "within N days of the effective date" counts
    from the effective date when the document states one. No anchor, no finding."""
    anchors = relative_anchors(roles, document_date, file_date)
    matches = _relative_matches(text, low)
    if not matches:
        return None
    m, name = min(matches, key=lambda item: item[0].start())
    if name == "days_after_anchor" and m.group("anchor").lower().startswith("effective"):
        effective = roles.get("effective") or roles.get("commencement")
        effective_date = _resolved(effective, document_date or file_date) if effective else None
        if effective_date is not None:
            anchors = [("effective date", effective_date)]
    if not anchors:
        return None
    span = (m.start() + offset, m.end() + offset)
    return Finding(
        rule=f"relative_phrase:{name}",
        node_key="term",
        kind="relative_date",
        candidates=_relative_candidates(name, m, anchors, span),
        # A stated signature/effective date is a firm anchor; a document or file date is
        # only a proxy for when the clock started.
        detector_confidence=0.85 if anchors[0][0] in ("signature", "effective date") else 0.7,
        applied_candidate_confidence=0.5,
        span=span,
    )


def rule_undated(
    text: str,
    dates: list[Timex],
    has_meta_date: bool,
    file_date: date | None,
    created: date | None = None,
) -> Finding | None:
    """A dated-looking document (an agreement, a policy…) with no date at all →
    `undated`; the creation date its metadata states, else the file's date, is the
    (weak) best guess. Other notes are left alone."""
    if dates or has_meta_date or not DATED_LOOKING.search(text):
        return None
    guess = ("created", created) if created else ("file date", file_date)
    candidates = (
        [Candidate(f"{label_with_year(guess[1])} ({guess[0]})", guess[1])]
        if guess[1]
        else [Candidate("no date found in the document")]
    )
    return Finding(
        rule="undated",
        node_key="term",
        kind="undated",
        candidates=candidates,
        detector_confidence=0.75,
        applied_candidate_confidence=0.3,
    )


def rule_yearless_date(
    dates: list[Timex],
    used: set[int],
    year_hint: date | None,
    offset: int,
    node_key: str = "term",
) -> Finding | None:
    """A date written without a year ("12th of June") → `low_confidence_extraction` with
    the hint year's reading (the document's, else the file's date) first and the next
    year's second. Dates whose start is in `used` belong to another rule."""
    for d in dates:
        if year_known(d) or d.start in used:
            continue
        base = (year_hint or date.today()).year
        options = [x for x in (on_year(d, base), on_year(d, base + 1)) if x is not None]
        if not options:
            continue
        span = (d.start + offset, d.end + offset)
        return Finding(
            rule="yearless_date",
            node_key=node_key,
            kind="low_confidence_extraction",
            candidates=[Candidate(label_with_year(x), x, None, span) for x in options],
            detector_confidence=0.6,
            applied_candidate_confidence=0.4,
            span=span,
        )
    return None


def acl_of(meta: dict[str, Any]) -> list[str]:
    """The front matter's `acl`: a YAML list, or a comma-separated string."""
    acl = meta.get("acl")
    if isinstance(acl, str):
        return [p.strip() for p in acl.split(",") if p.strip()]
    return [str(a) for a in acl] if isinstance(acl, list) else []


def _people(
    meta: dict[str, Any], body: str, people_by_name: dict[str, str], low: str | None = None
) -> list[tuple[str, str, PersonRef]]:
    """Front matter author/owner, "signed by NAME" and e-mail addresses in the body."""
    refs: list[tuple[str, str, PersonRef]] = []

    def ref(value: str) -> PersonRef:
        value = value.strip()
        if EMAIL.fullmatch(value):
            return PersonRef(email=value.lower())
        return PersonRef(name=value, email=people_by_name.get(value.lower(), ""))

    for field_name, edge in (("author", "AUTHORED_BY"), ("owner", "OWNED_BY")):
        values = meta.get(field_name)
        for value in values if isinstance(values, list) else [values] if values else []:
            refs.append(("*", edge, ref(str(value))))
    for m in _around(body, low if low is not None else body.lower(), "signed by", SIGNER, 20, 80):
        refs.append(("*", "NAMES", ref(m.group("name"))))
    for m in _around(body, body, "@", EMAIL, 64, 256):
        refs.append(("*", "MENTIONS", PersonRef(email=m.group(0).lower())))
    return refs


def _around(
    text: str, haystack: str, literal: str, pattern: re.Pattern[str], back: int, ahead: int
) -> list[re.Match[str]]:
    """The matches of `pattern` that contain `literal`, found from the literal (a fast
    `str.find`) instead of trying the pattern at every position of the text."""
    found: list[re.Match[str]] = []
    i = haystack.find(literal)
    while i >= 0:
        floor = found[-1].end() if found else 0
        m = pattern.search(text, max(floor, i - back), i + ahead)
        while m is not None and m.end() <= i:
            m = pattern.search(text, m.end(), i + ahead)
        if m is not None and m.start() <= i:
            found.append(m)
        i = haystack.find(literal, max(i + len(literal), found[-1].end() if found else 0))
    return found


# A text this short is read whole by the tagger; a longer one only where its dates are
# stated (contract/passages.py), and whole only before it is called undated.
READ_WHOLE = 4_000


def _timexes(
    text: str, offset: int, sites: Sites, reference: date | None, settled: bool
) -> list[Timex]:
    """The tagger's expressions of the passages that state the document's dates (all of
    a short text; none of a long one whose contract reading `settled` its date and
    start),
    offsets into the whole text."""
    body_length = len(text) - offset
    if body_length <= READ_WHOLE:
        return tag(text, reference=reference)
    if settled:
        return []  # the general rules have nothing left to say about a settled contract
    spans = [(0, READ_WHOLE // 2)]
    for kind in ("making", "effective", "signature"):
        spans += [(a, b) for _, a, b in sites.passages(kind)]
    found: list[Timex] = []
    end = -1
    for a, b in sorted(spans):
        if b <= end:
            continue
        a = max(a, end)
        for t in tag(text[offset + a : offset + b], reference=reference):
            found.append(t._replace(start=t.start + offset + a, end=t.end + offset + a))
        end = b
    return found


def _date_fact(
    dd: DocumentDates,
    roles: dict[str, Timex],
    conflicts: list[Finding],
    title: str,
    stated: date | None,
    year_hint: date | None,
    offset: int,
) -> tuple[Fact, Finding | None]:
    """The `date` fact and its one question: the contract's stated date (its question if
    it is blank or two-way); else the front matter's; else the signatures' (a
    signature/countersignature conflict, a yearless signature, is the question)."""
    own = next((f for f in dd.findings if f.node_key == "date"), None)
    if dd.stated_made:
        return date_fact(title, dd.made, dd.made_span), own
    signature = roles.get("signature")
    conflict = next((f for f in conflicts if f.node_key == "date"), None)
    question = conflict or own
    if question is None and signature is not None and not year_known(signature):
        question = rule_yearless_date([signature], set(), year_hint, offset, node_key="date")
    signed = _resolved(signature, year_hint) if signature else None
    value = stated or signed or dd.made
    if value is None and question is not None:
        value = question.candidates[0].valid_from
    span = (signature.start, signature.end) if signature and value == signed else dd.made_span
    return date_fact(title, value, span), question


def _term_question(
    body: str,
    dd: DocumentDates,
    roles: dict[str, Timex],
    conflicts: list[Finding],
    anchors: tuple[date | None, date | None],
    offset: int,
    low: str,
) -> Finding | None:
    """The term's one question: effective vs commencement in conflict; else the
    contract's (a blank or event-tied start); else, when the contract states no start,
    a relative phrase ("effective next quarter"; "within 30 days of signature" only in
    a document that states no date of its own)."""
    conflict = next((f for f in conflicts if f.node_key == "term"), None)
    if conflict is not None and not dd.stated_start:
        return conflict
    own = next((f for f in dd.findings if f.node_key == "term"), None)
    if own is not None or dd.known_start:
        return own
    document_date, file_date = anchors
    found = rule_relative_phrase(body, roles, document_date, offset, file_date, low=low)
    if found is not None and found.rule.endswith("days_after_anchor") and dd.made:
        return None  # a deadline counted from signing, in a dated contract: not its start
    return found


def _term_fact(
    text: str,
    body: str,
    dd: DocumentDates,
    roles: dict[str, Timex],
    dates: list[Timex],
    question: Finding | None,
    ctx: dict[str, Any],
) -> tuple[Fact, Finding | None]:
    """The `term` fact: the contract's start, else the text's effective/commencement
    date, else the date it was made. With no stated start, a yearless date of the text
    is the question; a document with no date at all is `undated`."""
    effective = roles.get("effective") or roles.get("commencement")
    year_hint, offset, made = ctx["year_hint"], ctx["offset"], ctx["made"]
    start = dd.start if dd.known_start else None
    if start is None and effective is not None and not dd.stated_made:
        start = _resolved(effective, year_hint)  # a note's "effective 1 July", not a contract's
    if start is None and question is None:
        question = rule_yearless_date(dates, {d.start for d in roles.values()}, year_hint, offset)
    if start is None and question is None and made is None:
        every = dates
        if len(body) > READ_WHOLE and not dates:
            every = written_dates(tag(text, reference=year_hint), offset)
        question = rule_undated(
            body, every, ctx["stated"] is not None, ctx["file_date"], ctx["created"]
        )
    if question is None or question.rule.startswith("contract:"):
        start = start or made  # else the question's phrase says when it starts, not the date
    if question is not None and (
        question.kind == "conflicting_dates"
        or (start is None and question.rule.startswith("contract:"))
    ):
        start = question.candidates[0].valid_from or start
    span = dd.start_span or (dd.clause and (dd.clause[0] + offset, dd.clause[1] + offset))
    return term_fact(dd, ctx["title"], start, span), question


def detect_text(
    text: str,
    *,
    filename: str,
    file_date: date | None = None,
    people_by_name: dict[str, str] | None = None,
    title: str = "",
    created: date | None = None,
) -> Detection:
    """Run every text rule over a document: its `date` and `term` facts (document.py)
    and at most one question on each. The document's own date (the contract's, else
    the front matter's, else the creation date of an extracted document's metadata)
    anchors relative phrases; a yearless date takes its year from it, else the file's
    date."""
    meta, body, offset = front_matter(text)
    title = str(meta.get("title") or title or filename)
    stated = None
    if meta.get("date") is not None:
        raw = meta["date"]
        stated = raw if isinstance(raw, date) else written_day(str(raw))
    sites = find_sites(body)
    dd = document_dates(read_contract(sites), offset)
    document_date = (dd.made if dd.stated_made else None) or stated or created
    year_hint = document_date or dd.made or file_date
    settled = dd.stated_made and dd.known_start
    timexes = _timexes(text, offset, sites, year_hint, settled)
    dates = written_dates(timexes, offset)
    roles = role_dates(body, dates)
    conflicts = rule_conflicting_roles(body, roles, year_hint, offset)
    made, date_question = _date_fact(dd, roles, conflicts, title, stated, year_hint, offset)
    anchors = (document_date, file_date)
    question = _term_question(body, dd, roles, conflicts, anchors, offset, sites.low)
    ctx = {
        "year_hint": year_hint,
        "offset": offset,
        "made": made.valid_from,
        "title": title,
        "stated": stated,
        "file_date": file_date,
        "created": created,
    }
    term, term_question = _term_fact(text, body, dd, roles, dates, question, ctx)
    return Detection(
        title=title,
        text=text,
        facts=[term, made],
        findings=[f for f in (date_question, term_question) if f is not None],
        people=_people(meta, body, people_by_name or {}, sites.low),
        acl=acl_of(meta),
        restriction=str(meta["restriction"]) if meta.get("restriction") else None,
        reference=year_hint,
        dates=timexes if len(body) <= READ_WHOLE else None,
    )
