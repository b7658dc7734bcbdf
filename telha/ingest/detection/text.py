"""Detection rules for text and Markdown documents (.txt, .md).

Rules, each a small function over the canonical text:
* `front_matter` — optional YAML front matter: title, author, owner, date, acl, restriction.
* `role_dates` — dates tied to roles (signature, countersignature, effective, commencement).
* `rule_conflicting_roles` — signature vs countersignature, effective vs commencement
  disagree → `conflicting_dates`, one candidate per role ("12 June (signature)").
* `rule_relative_phrase` — "effective next quarter", "within 30 days of signature", "from
  the start of next month" → `relative_date`, candidates computed from the anchor (the
  signature date, else the document date), the best guess first.
* `rule_undated` — a document that looks dated (an agreement, a policy…) with no date.
* `rule_yearless_date` — a date written without a year ("12th of June") → a weak
  extraction (`low_confidence_extraction`) with the plausible years as candidates.
"""

import re
from datetime import date, timedelta
from typing import Any

import yaml

from .dates import DateMatch, find_dates, label, label_with_year, parse_date_text
from .model import Candidate, Detection, Fact, Finding, PersonRef

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
    r"\b(?P<role>counter-?signed|signed)\s+by\s+(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z'-]+){0,3})"
)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")

RELATIVE_RULES = [
    ("next_quarter", re.compile(r"\b(?:effective|starts?|from|commenc\w*)\s+(?:from\s+)?next\s+quarter\b", re.I)),
    ("days_after_signature", re.compile(
        r"\bwithin\s+(?P<days>\d{1,3})\s+days\s+(?:of|from|after)\s+(?:the\s+)?(?:date\s+of\s+)?(?P<anchor>signature|signing|execution|the\s+effective\s+date)\b",
        re.I)),
    ("start_of_next_month", re.compile(
        r"\bfrom\s+the\s+(?:start|beginning|first\s+day)\s+of\s+(?:the\s+)?next\s+month\b", re.I)),
]


def front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """YAML front matter between leading `---` lines: (metadata, body, body offset)."""
    if not text.startswith("---"):
        return {}, text, 0
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text, 0
    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError:
        return {}, text, 0
    if not isinstance(meta, dict):
        return {}, text, 0
    close = text.find("\n", end + 4)
    offset = len(text) if close < 0 else close + 1
    return meta, text[offset:], offset


def _sentence_start(text: str, pos: int) -> int:
    """Sentences end at '.', ';' or a blank line (a wrapped line is the same sentence)."""
    cut = max(text.rfind(".", 0, pos), text.rfind(";", 0, pos))
    blank = text.rfind("\n\n", 0, pos)
    cut = max(cut + 1, blank + 2 if blank >= 0 else 0)
    return cut


def role_dates(text: str, dates: list[DateMatch]) -> dict[str, DateMatch]:
    """The first date of each role: the nearest role word before the date, in the same
    sentence and within ROLE_WINDOW characters."""
    found: dict[str, DateMatch] = {}
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


def _resolved(d: DateMatch, document_date: date | None) -> date | None:
    return d.on(document_date.year if document_date else None)


def rule_conflicting_roles(
    text: str, roles: dict[str, DateMatch], document_date: date | None, offset: int
) -> list[Finding]:
    findings = []
    for first, second in CONFLICT_PAIRS:
        a, b = roles.get(first), roles.get(second)
        if a is None or b is None:
            continue
        da, db = _resolved(a, document_date), _resolved(b, document_date)
        if da is None or db is None or da == db:
            continue
        key = "signature" if first == "signature" else "term"
        findings.append(
            Finding(
                rule="conflicting_roles",
                node_key=key,
                kind="conflicting_dates",
                candidates=[
                    Candidate(f"{label(da)} ({first})", da, None, (a.start + offset, a.end + offset)),
                    Candidate(f"{label(db)} ({second})", db, None, (b.start + offset, b.end + offset)),
                ],
                detector_confidence=0.9,
                applied_candidate_confidence=0.5,
                span=(min(a.start, b.start) + offset, max(a.end, b.end) + offset),
            )
        )
    return findings


def quarter_start_after(d: date) -> date:
    month = ((d.month - 1) // 3 + 1) * 3 + 1
    return date(d.year + (month > 12), (month - 1) % 12 + 1, 1)


def month_start_after(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def rule_relative_phrase(
    text: str, roles: dict[str, DateMatch], document_date: date | None, offset: int
) -> Finding | None:
    """The first anchored relative phrase, with candidates from its anchor."""
    signature = roles.get("signature")
    signed = _resolved(signature, document_date) if signature else None
    anchors = [(n, d) for n, d in (("signature", signed), ("document date", document_date)) if d]
    if not anchors:
        return None
    for name, pattern in RELATIVE_RULES:
        m = pattern.search(text)
        if m is None:
            continue
        span = (m.start() + offset, m.end() + offset)
        anchor_name, anchor = anchors[0]
        candidates: list[Candidate] = []
        if name == "next_quarter":
            for a_name, a in anchors:
                q = quarter_start_after(a)
                if all(c.valid_from != q for c in candidates):
                    candidates.append(Candidate(f"{label_with_year(q)} (next quarter after {a_name})", q, None, span))
            later = quarter_start_after(candidates[0].valid_from or anchor)
            candidates.append(Candidate(f"{label_with_year(later)} (the quarter after)", later, None, span))
        elif name == "days_after_signature":
            days = int(m.group("days"))
            due = anchor + timedelta(days=days)
            candidates = [
                Candidate(f"{label_with_year(due)} ({days} days after {anchor_name})", due, None, span),
                Candidate(f"{label_with_year(anchor)} ({anchor_name})", anchor, None, span),
            ]
        else:
            first = month_start_after(anchor)
            candidates = [
                Candidate(f"{label_with_year(first)} (start of next month after {anchor_name})", first, None, span),
                Candidate(f"{label_with_year(anchor)} ({anchor_name})", anchor, None, span),
            ]
        return Finding(
            rule=f"relative_phrase:{name}",
            node_key="term",
            kind="relative_date",
            candidates=candidates,
            detector_confidence=0.85 if anchor_name == "signature" else 0.7,
            applied_candidate_confidence=0.5,
            span=span,
        )
    return None


def rule_undated(text: str, dates: list[DateMatch], has_meta_date: bool, file_date: date | None
                 ) -> Finding | None:
    """A dated-looking document with no date at all; the file's date is the best guess."""
    if dates or has_meta_date or not DATED_LOOKING.search(text):
        return None
    candidates = [Candidate(f"{label_with_year(file_date)} (file date)", file_date)] if file_date else [
        Candidate("no date found in the document")
    ]
    return Finding(
        rule="undated", node_key="term", kind="undated", candidates=candidates,
        detector_confidence=0.75, applied_candidate_confidence=0.3,
    )


def rule_yearless_date(dates: list[DateMatch], used: set[int], document_date: date | None,
                       offset: int) -> Finding | None:
    """A date written without a year: this year's and next year's readings."""
    for d in dates:
        if d.year_known or d.start in used:
            continue
        base = (document_date or date.today()).year
        options = [x for x in (d.on(base), d.on(base + 1)) if x is not None]
        if not options:
            continue
        span = (d.start + offset, d.end + offset)
        return Finding(
            rule="yearless_date", node_key="term", kind="low_confidence_extraction",
            candidates=[Candidate(label_with_year(x), x, None, span) for x in options],
            detector_confidence=0.6, applied_candidate_confidence=0.4, span=span,
        )
    return None


def _people(meta: dict[str, Any], body: str, people_by_name: dict[str, str]
            ) -> list[tuple[str, str, PersonRef]]:
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
) -> Detection:
    """Run every text rule over a document; at most one finding per fact."""
    meta, body, offset = front_matter(text)
    title = str(meta.get("title") or filename)
    document_date = None
    if meta.get("date") is not None:
        raw = meta["date"]
        document_date = raw if isinstance(raw, date) else parse_date_text(str(raw))
    dates = find_dates(body)
    roles = role_dates(body, dates)
    findings = rule_conflicting_roles(body, roles, document_date, offset)
    taken = {f.node_key for f in findings}
    if "term" not in taken:
        rel = rule_relative_phrase(body, roles, document_date or file_date, offset)
        if rel is not None:
            findings.append(rel)
            taken.add("term")
    if "term" not in taken:
        und = rule_undated(body, dates, document_date is not None, file_date)
        if und is not None:
            findings.append(und)
            taken.add("term")
    if "term" not in taken:
        used = {d.start for d in roles.values()}
        weak = rule_yearless_date(dates, used, document_date, offset)
        if weak is not None:
            findings.append(weak)
    effective = roles.get("effective") or roles.get("commencement")
    effective_date = _resolved(effective, document_date) if effective else None
    facts = [
        Fact(
            key="term",
            labels=["DOCUMENT_TERM"],
            properties={"name": f"{title} — effective period", "document": title},
            valid_from=effective_date,
            confidence=0.9,
        )
    ]
    if any(f.node_key == "signature" for f in findings) or "signature" in roles:
        signed = _resolved(roles["signature"], document_date) if "signature" in roles else None
        facts.append(
            Fact(
                key="signature",
                labels=["SIGNATURE_DATE"],
                properties={"name": f"{title} — signature date", "document": title},
                valid_from=signed,
                confidence=0.9,
            )
        )
    acl = meta.get("acl")
    return Detection(
        title=title,
        text=text,
        facts=facts,
        findings=findings,
        people=_people(meta, body, people_by_name or {}),
        acl=[str(a) for a in acl] if isinstance(acl, list) else [],
        restriction=str(meta["restriction"]) if meta.get("restriction") else None,
    )
