"""TimeML corpora and TempEval-3's entity measures, for scoring the temporal tagger.

Reads TimeML `.tml` files (TimeBank and AQUAINT as cleaned for TempEval-3, "TBAQ"): the
document creation time (the `<DCT>` TIMEX3, never scored), the plain text of `<TEXT>`
(tags removed, entities decoded) and its gold TIMEX3s as character offsets into that
text. The corpus is LDC-derived: it is read from where it lies (`TEMPEVAL_TBAQ_DIR`),
never copied into the repository.

The measures are TempEval-3's (UzZaman et al. 2013; its `evaluate_entities.py`), computed
on character offsets instead of its tokens: a *strict* match has the identical extent, a
*relaxed* match overlaps; precision is over the system's timexes, recall over the gold
ones; an attribute (value, type) counts for a timex when it relaxed-matches one on the
other side whose attribute is equal — so value F1 = F1 of "found, and the value right".

    .venv/bin/python -m bench.timeml                  # the tables
    .venv/bin/python -m bench.timeml --misses months  # what went wrong in one category
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TBAQ = REPO.parent / "shared" / "corpora" / "tempeval3-tbaq"
HOW_TO_GET = (
    "TimeBank + AQUAINT (TempEval-3 training data, TBAQ-cleaned) not found at {path}. Fetch "
    "the public repository qiangning/StructTempRel-EMNLP17, extract its folder "
    "data/TempEval3/Training/TBAQ-cleaned (TimeBank/*.tml, AQUAINT/*.tml) somewhere outside "
    "this repository and point TEMPEVAL_TBAQ_DIR at it. It is LDC-derived: never commit it."
)


@dataclass(frozen=True)
class Span:
    """A timex: where it is in the text, its TIMEX3 type and value."""

    start: int
    end: int
    text: str
    type: str
    value: str


@dataclass
class Document:
    name: str
    part: str  # "TimeBank" or "AQUAINT"
    dct: date
    text: str
    gold: list[Span]


def tbaq_dir() -> Path:
    """Where the corpus is: `TEMPEVAL_TBAQ_DIR`, else ../shared/corpora/tempeval3-tbaq
    beside the repository."""
    return Path(os.environ.get("TEMPEVAL_TBAQ_DIR") or DEFAULT_TBAQ)


def dct_date(value: str) -> date:
    """The DCT's day ("1998-02-13T14:35:00", "19980108")."""
    digits = re.sub(r"\D", "", value)[:8]
    return date(int(digits[:4]), int(digits[4:6]), int(digits[6:8]))


def read_tml(path: Path, part: str) -> Document:
    """One TimeML document: its DCT, the plain text of <TEXT> and the gold TIMEX3s in
    it (empty, non-consuming TIMEX3s are not timexes of the text and are skipped)."""
    root = ET.parse(path).getroot()
    dct_element = root.find("DCT")
    timex = dct_element.find("TIMEX3") if dct_element is not None else None
    if timex is None:
        raise ValueError(f"{path}: no DCT")
    dct = dct_date(timex.get("value", ""))
    text_element = root.find("TEXT")
    if text_element is None:
        raise ValueError(f"{path}: no TEXT")
    parts: list[str] = []
    gold: list[tuple[int, int, str, str]] = []
    length = 0

    def walk(element: ET.Element) -> None:
        nonlocal length
        if element.text:
            parts.append(element.text)
            length += len(element.text)
        for child in element:
            start = length
            walk(child)
            if child.tag == "TIMEX3" and length > start:
                gold.append((start, length, child.get("type", ""), child.get("value", "")))
            if child.tail:
                parts.append(child.tail)
                length += len(child.tail)

    walk(text_element)
    text = "".join(parts)
    spans = [Span(s, e, text[s:e], t, v) for s, e, t, v in gold]
    return Document(path.stem, part, dct, text, spans)


def read_corpus(folder: Path | None = None) -> list[Document]:
    """Every document of TBAQ (TimeBank, then AQUAINT, each in name order)."""
    folder = folder or tbaq_dir()
    documents = []
    for part in ("TimeBank", "AQUAINT"):
        for path in sorted((folder / part).glob("*.tml")):
            documents.append(read_tml(path, part))
    return documents


# --- categories -------------------------------------------------------------------------

_DEICTIC = re.compile(
    r"\b(?:today|tonight|yesterday|tomorrow|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|day)\b",
    re.I,
)
CATEGORIES = (
    "full dates",
    "deictic days",
    "years",
    "months",
    "quarters/weeks/seasons",
    "references",
    "times",
    "durations",
    "sets",
    "other",
)


def category(span: Span) -> str:
    """Which row of the per-category table a timex counts in (by its type, value and
    words; gold and system timexes alike)."""
    value = span.value
    if span.type == "SET":
        return "sets"
    if span.type == "DURATION":
        return "durations"
    if value.endswith("_REF"):
        return "references"
    if span.type == "TIME" or "T" in value[4:]:
        return "times"
    if re.fullmatch(r"[\dX]{4}-[\dX]{2}-[\dX]{2}", value):
        if any(c.isdigit() for c in span.text) and not _DEICTIC.search(span.text):
            return "full dates"
        return "deictic days"
    if re.search(r"-(?:Q|H|W|SP|SU|FA|WI)", value):
        return "quarters/weeks/seasons"
    if re.fullmatch(r"[\dX]{4}-[\dX]{2}", value):
        return "months"
    if re.fullmatch(r"[\dX]{2,4}", value):
        return "years"
    return "other"


# --- scoring ----------------------------------------------------------------------------


@dataclass
class Counts:
    """Counts behind one row: P/R/F of strict and relaxed extents and of each attribute."""

    system: int = 0
    gold: int = 0
    strict_p: int = 0  # system timexes with a gold one of the identical extent
    strict_r: int = 0  # gold timexes with a system one of the identical extent
    relaxed_p: int = 0
    relaxed_r: int = 0
    value_p: int = 0  # system timexes relaxed-matching a gold one of the same value
    value_r: int = 0
    type_p: int = 0
    type_r: int = 0

    def add(self, other: Counts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @staticmethod
    def f1(p_hits: int, system: int, r_hits: int, gold: int) -> float:
        precision = p_hits / system if system else 0.0
        recall = r_hits / gold if gold else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    def scores(self) -> dict[str, float]:
        """Percentages: strict/relaxed precision, recall, F1; value and type F1."""

        def pct(x: float) -> float:
            return round(100 * x, 1)

        def ratio(a: int, b: int) -> float:
            return a / b if b else 0.0

        return {
            "strict_p": pct(ratio(self.strict_p, self.system)),
            "strict_r": pct(ratio(self.strict_r, self.gold)),
            "strict_f1": pct(self.f1(self.strict_p, self.system, self.strict_r, self.gold)),
            "relaxed_p": pct(ratio(self.relaxed_p, self.system)),
            "relaxed_r": pct(ratio(self.relaxed_r, self.gold)),
            "relaxed_f1": pct(self.f1(self.relaxed_p, self.system, self.relaxed_r, self.gold)),
            "value_f1": pct(self.f1(self.value_p, self.system, self.value_r, self.gold)),
            "type_f1": pct(self.f1(self.type_p, self.system, self.type_r, self.gold)),
        }


def _overlapping(span: Span, others: Sequence[Span]) -> list[Span]:
    return [o for o in others if o.start < span.end and span.start < o.end]


@dataclass
class Scored:
    """One document's counts, overall and by key (type, category), and its errors."""

    total: Counts = field(default_factory=Counts)
    by_type: dict[str, Counts] = field(default_factory=dict)
    by_category: dict[str, Counts] = field(default_factory=dict)
    misses: list[tuple[str, Span, Span | None]] = field(default_factory=list)


def _count(scored: Scored, key_of: Callable[[Span], str], span: Span, **hits: int) -> None:
    for table, key in ((scored.by_type, span.type), (scored.by_category, key_of(span))):
        table.setdefault(key, Counts()).add(Counts(**hits))
    scored.total.add(Counts(**hits))


def score_document(gold: Sequence[Span], system: Sequence[Span]) -> Scored:
    """TempEval-3's counts for one document. A timex matches another side's when their
    extents overlap (relaxed) or are identical (strict); its attributes are compared with
    the overlapping timex of the most shared characters."""
    scored = Scored()
    for g in gold:
        near = _overlapping(g, system)
        best = max(near, key=lambda s: min(s.end, g.end) - max(s.start, g.start), default=None)
        strict = any(s.start == g.start and s.end == g.end for s in near)
        _count(
            scored,
            category,
            g,
            gold=1,
            strict_r=int(strict),
            relaxed_r=int(best is not None),
            value_r=int(best is not None and best.value == g.value),
            type_r=int(best is not None and best.type == g.type),
        )
        if best is None:
            scored.misses.append(("missed", g, None))
        elif best.value != g.value or not strict:
            scored.misses.append(("value" if best.value != g.value else "extent", g, best))
    for s in system:
        near = _overlapping(s, gold)
        best = max(near, key=lambda g: min(s.end, g.end) - max(s.start, g.start), default=None)
        strict = any(g.start == s.start and g.end == s.end for g in near)
        _count(
            scored,
            category,
            s,
            system=1,
            strict_p=int(strict),
            relaxed_p=int(best is not None),
            value_p=int(best is not None and best.value == s.value),
            type_p=int(best is not None and best.type == s.type),
        )
        if best is None:
            scored.misses.append(("spurious", s, None))
    return scored


def _merge(merged: Scored, one: Scored) -> None:
    merged.total.add(one.total)
    for mine, theirs in ((merged.by_type, one.by_type), (merged.by_category, one.by_category)):
        for key, counts in theirs.items():
            mine.setdefault(key, Counts()).add(counts)
    merged.misses.extend(one.misses)


def score(pairs: Iterable[tuple[Sequence[Span], Sequence[Span]]]) -> Scored:
    """The counts over many documents ((gold, system) pairs)."""
    merged = Scored()
    for gold, system in pairs:
        _merge(merged, score_document(gold, system))
    return merged


def tag_document(document: Document) -> list[Span]:
    """The tagger's timexes for one document, against its DCT."""
    from ingest.detection.temporal import tag

    return [
        Span(t.start, t.end, t.text, t.type, t.value)
        for t in tag(document.text, reference=document.dct)
    ]


def table(scored: Scored) -> list[str]:
    """The overall, per-type and per-category rows, as text."""
    head = (
        f"{'':26}{'gold':>6}{'sys':>6}{'strictF':>9}{'relaxP':>8}{'relaxR':>8}"
        f"{'relaxF':>8}{'valueF':>8}"
    )
    lines = [head]

    def row(name: str, counts: Counts) -> str:
        s = counts.scores()
        return (
            f"{name:26}{counts.gold:6}{counts.system:6}{s['strict_f1']:9}{s['relaxed_p']:8}"
            f"{s['relaxed_r']:8}{s['relaxed_f1']:8}{s['value_f1']:8}"
        )

    lines.append(row("all", scored.total))
    for key in ("DATE", "TIME", "DURATION", "SET"):
        lines.append(row(f"type {key}", scored.by_type.get(key, Counts())))
    for key in CATEGORIES:
        if key in scored.by_category:
            lines.append(row(key, scored.by_category[key]))
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", help="a category (or 'all') whose errors to list")
    parser.add_argument("--part", choices=["TimeBank", "AQUAINT"])
    parser.add_argument("--kind", choices=["missed", "spurious", "value", "extent"])
    args = parser.parse_args(argv)
    folder = tbaq_dir()
    if not (folder / "TimeBank").is_dir():
        print(HOW_TO_GET.format(path=folder), file=sys.stderr)
        return 2
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    documents = [d for d in read_corpus(folder) if args.part in (None, d.part)]
    per_document = [(d, score_document(d.gold, tag_document(d))) for d in documents]
    merged = Scored()
    for _, one in per_document:
        _merge(merged, one)
    print("\n".join(table(merged)))
    for document, one in per_document if args.misses else ():
        for kind, mine, other in one.misses:
            if args.kind not in (None, kind) or args.misses not in ("all", category(mine)):
                continue
            theirs = f" | sys {other.text!r} {other.type} {other.value}" if other else ""
            left = document.text[max(0, mine.start - 50) : mine.start].replace("\n", " ")
            right = document.text[mine.end : mine.end + 30].replace("\n", " ")
            print(f"{kind:9}{document.dct} {mine.text!r} {mine.type} {mine.value}{theirs}")
            print(f"           …{left}[[{mine.text}]]{right}…")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
