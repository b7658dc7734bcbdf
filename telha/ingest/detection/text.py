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


def _sentence_start(text: str, pos: int) -> int:
    """Sentences end at '.' or ';' before white space, or at a blank line (a wrapped line
    is the same sentence; the '.' of "1.5" inside a sentence does not end it)."""
    cut = 0
    for m in SENTENCE_END.finditer(text, 0, pos):
        cut = m.end()
    return cut


def role_dates(text: str, dates: list[Timex]) -> dict[str, Timex]:
    """The first date of each role: the nearest role word before the date, in the same
    sentence and within ROLE_WINDOW characters."""
    found: dict[str, Timex] = {}
    for d in dates:
        begin = max(_sentence_start(text, d.start), d.start - ROLE_WINDOW)
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
    """Signature vs countersignature (on the signature fact) and effective vs commencement
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
        key = "signature" if first == "signature" else "term"
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


def rule_relative_phrase(
    text: str,
    roles: dict[str, Timex],
    document_date: date | None,
    offset: int,
    file_date: date | None = None,
) -> Finding | None:
    """The first anchored relative phrase of the text → `relative_date`, candidates counted
    from the anchor, the best guess first. "within N days of the effective date" counts
    from the effective date when the document states one. No anchor, no finding."""
    anchors = relative_anchors(roles, document_date, file_date)
    matches = [(m, name) for name, pattern in RELATIVE_RULES if (m := pattern.search(text))]
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
    meta: dict[str, Any], body: str, people_by_name: dict[str, str]
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
    for m in SIGNER.finditer(body):
        refs.append(("*", "NAMES", ref(m.group("name"))))
    for m in EMAIL.finditer(body):
        refs.append(("*", "MENTIONS", PersonRef(email=m.group(0).lower())))
    return refs


def detect_text(
    text: str,
    *,
    filename: str,
    file_date: date | None = None,
    people_by_name: dict[str, str] | None = None,
    title: str = "",
    created: date | None = None,
) -> Detection:
    """Run every text rule over a document; at most one finding per fact. The document
    date (front matter, else the creation date of an extracted document's metadata)
    anchors relative phrases; a yearless date takes its year from it, else the file's
    date."""
    meta, body, offset = front_matter(text)
    title = str(meta.get("title") or title or filename)
    stated = None
    if meta.get("date") is not None:
        raw = meta["date"]
        stated = raw if isinstance(raw, date) else written_day(str(raw))
    document_date = stated or created
    year_hint = document_date or file_date
    timexes = tag(text, reference=year_hint)
    dates = written_dates(timexes, offset)
    roles = role_dates(body, dates)
    findings = rule_conflicting_roles(body, roles, year_hint, offset)
    taken = {f.node_key for f in findings}
    signature = roles.get("signature")
    if signature is not None and not year_known(signature) and "signature" not in taken:
        weak = rule_yearless_date([signature], set(), year_hint, offset, node_key="signature")
        if weak is not None:
            findings.append(weak)
            taken.add("signature")
    term_rules = (
        lambda: rule_relative_phrase(body, roles, document_date, offset, file_date),
        lambda: rule_undated(body, dates, stated is not None, file_date, created),
        lambda: rule_yearless_date(dates, {d.start for d in roles.values()}, year_hint, offset),
    )
    for rule in term_rules if "term" not in taken else ():
        finding = rule()
        if finding is not None:
            findings.append(finding)
            break
    effective = roles.get("effective") or roles.get("commencement")
    facts = [
        Fact(
            key="term",
            labels=["DOCUMENT_TERM"],
            properties={"name": f"{title} — effective period", "document": title},
            valid_from=_resolved(effective, year_hint) if effective else None,
            confidence=0.9,
        )
    ]
    if "signature" in taken or signature is not None:
        facts.append(
            Fact(
                key="signature",
                labels=["SIGNATURE_DATE"],
                properties={"name": f"{title} — signature date", "document": title},
                valid_from=_resolved(signature, year_hint) if signature else None,
                confidence=0.9,
            )
        )
    return Detection(
        title=title,
        text=text,
        facts=facts,
        findings=findings,
        people=_people(meta, body, people_by_name or {}),
        acl=acl_of(meta),
        restriction=str(meta["restriction"]) if meta.get("restriction") else None,
        reference=year_hint,
        dates=timexes,
    )
