"""Where a contract states its dates, found without reading all of it.

A careful reader does not read every date of a contract to learn when it was made and
how long it runs: they read the title block and the preamble, the definitions of the
dates that matter ("Effective Date" means …), the term clause, the renewal clause and
the signature block. This module finds those places in one pass of literal searches
(`str.find` over the lower-cased text, no regular expression over the whole text) and
cuts a bounded passage — the sentence — around each, so that the readers after it only
ever look at a few hundred characters at a time."""

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..temporal.fold import folded

# What opens a passage, by the clause it marks. Each literal is searched for once, over
# the part of the text where that clause stands (see RANGES); a kind may also take
# cues found for another ("effective date" is found among the "effective" cues).
CUES: dict[str, tuple[str, ...]] = {
    # The document's own date, in the preamble or the title block.
    "making": ("dated", "made", "entered into", "executed", "day of", "as of", "concluded"),
    # When it takes effect: "effective as of", "shall commence on", "come into force".
    "effective": ("effective", "commenc", "into force", "take effect", "takes effect"),
    # The definitions of the dates that govern it.
    "definition": ("agreement date", "execution date"),
    # The term: how long it runs, when it ends.
    "term": ("term", "expir", "perpetu", "continu", "remain", "until", "period"),
    # Renewal and its notice.
    "renewal": ("renew", "extend"),
    # Signatures: roles ("signed on"), the signature block ("Date: 3/4/11").
    "signature": ("sign", "executed", "in witness", "date:", "date :", "dated:"),
}
# Where each kind is looked for: "head" (the first HEAD characters), "tail" (the
# second half and the head: signature blocks close a contract, short notes are all
# head), or the whole text.
RANGES = {"making": "head", "signature": "tail"}
# Derived cues: a cue of one kind that is also one of another's when followed by these
# words ("effective" + " date" is a definition; "commenc" is also a term's).
DERIVED = {
    ("effective", "effective date"): "definition",
    ("effective", "commencement date"): "definition",
    ("effective", "commenc"): "term",
    ("effective", "effective through"): "term",  # "shall be effective through June 30, 2024"
}
_DERIVED_AT = {p: re.compile(p.replace(" ", r"\s+")) for _, p in DERIVED}
# How far a passage reaches from its cue (a sentence, bounded: contracts wrap lines
# with runs of spaces, and a missing full stop must not make a passage the whole text).
BACK, AHEAD = 400, 600
# The title block and preamble a reader reads first; the preamble sentence may follow
# a cover page or a confidentiality legend.
TITLE_BLOCK = 700
HEAD = 12_000
# Cues of a kind read per document, in order: the clause that states a date comes
# early (a definition before its uses, the term clause before the clauses citing it).
MAX_SITES = {
    "making": 12,
    "effective": 16,
    "definition": 30,
    "term": 400,
    "renewal": 12,
    "signature": 24,
}


def lowered(text: str) -> str:
    """Lower case and folded look-alikes, every offset kept (`temporal/fold.py`)."""
    return folded(text)


def _is_word_at(low: str, start: int, end: int) -> bool:
    """Whether `low[start:end]` starts a word (a letter or digit before it ends one)."""
    return start == 0 or not low[start - 1].isalnum()


def _positions(low: str, literal: str, ranges: list[tuple[int, int]]) -> list[int]:
    found = []
    for lo, hi in ranges:
        i = low.find(literal, lo, hi)
        while i >= 0:
            if _is_word_at(low, i, i + len(literal)) and _token_ok(low, i, literal):
                found.append(i)
            i = low.find(literal, i + len(literal), hi)
    return found


def find_cues(
    low: str, kinds: tuple[str, ...] = tuple(CUES), cap: bool = True
) -> dict[str, list[int]]:
    """Every position where a cue literal of each of `kinds` starts a word, in order,
    within the kind's range (RANGES); a kind keeps at most MAX_SITES positions (all of
    them without `cap`). Derived cues (DERIVED) are added by `Sites.cues`, or here
    within one kind ("terminat" among the "term" cues)."""
    n = len(low)
    spans = {
        "head": [(0, min(n, HEAD))],
        "tail": [(0, min(n, HEAD)), (max(HEAD, n // 2), n)] if n > HEAD else [(0, n)],
        "": [(0, n)],
    }
    found: dict[str, list[int]] = {}
    for kind in kinds:
        at = []
        for literal in CUES[kind]:
            at += _positions(low, literal, spans[RANGES.get(kind, "")])
        found[kind] = sorted(set(at))[: MAX_SITES[kind] if cap else None]
    return found


def _token_ok(low: str, i: int, literal: str) -> bool:
    """ "term" only as the word itself ("the Term", "initial term") or as "shall
    terminate", "terminates on" (a term's end), never "terms", "termination" or
    "determine": the one cue common enough to need it."""
    if literal != "term":
        return True
    after = low[i + 4 : i + 12]
    if not after[:1].isalpha():
        return True
    if not after.startswith("inate"):
        return False
    return after.startswith(("inate on", "inates o")) or low[max(0, i - 6) : i] in (
        "shall ",
        " will ",
    )


_STOPS = (". ", ".\n", "; ", ";\n", "\n\n")
# Words whose full stop ends no sentence: abbreviations of names, titles and references
# ("Acme, Inc. and", "No. 4", "Aug. 16, 2012") and a month before a year or a day
# ("this 16 day of August. 2012", a typing slip).
_ABBREVIATIONS = frozenset(
    {
        *("inc", "corp", "co", "ltd", "llc", "plc", "no", "nos", "mr", "mrs", "ms", "dr"),
        *("st", "sec", "art", "para", "jr", "sr", "vs", "approx", "etc", "e.g", "i.e", "u.s"),
        *("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"),
    }
)
_MONTHS = frozenset(
    {
        *("january", "february", "march", "april", "may", "june", "july", "august"),
        *("september", "october", "november", "december"),
    }
)


def _ends_sentence(low: str, i: int) -> bool:
    """Whether the stop at `i` ends a sentence: not the full stop of an abbreviation,
    nor a month's before a number."""
    if low[i] == "\n":  # a blank line, unless a list follows a colon ("occur:\n\n(a) …")
        return low[max(0, i - 3) : i].rstrip(" \t")[-1:] != ":"
    if low[i] != ".":
        return True
    j = i
    while j > 0 and (low[j - 1].isalpha() or low[j - 1] == "."):
        j -= 1
    word = low[j:i]
    if word in _ABBREVIATIONS:
        return False
    return not (word in _MONTHS and low[i + 2 : i + 3].isdigit())


def _last_stop(low: str, floor: int, pos: int) -> int:
    """Where the sentence holding `pos` starts, looking back no further than `floor`."""
    start = floor
    for stop in _STOPS:
        hi = pos
        while (i := low.rfind(stop, max(floor, start - len(stop)), hi)) >= 0:
            if _ends_sentence(low, i):
                start = max(start, i + len(stop))
                break
            hi = i
    return start


def _next_stop(low: str, pos: int, ceiling: int) -> int:
    """Where the sentence holding `pos` ends (after its stop), at most at `ceiling`."""
    end = ceiling
    for stop in _STOPS:
        lo = pos
        while 0 <= (i := low.find(stop, lo, end)) < end:
            if _ends_sentence(low, i):
                end = i + 1
                break
            lo = i + 1
    return end


def sentence_bounds(low: str, pos: int) -> tuple[int, int]:
    """The sentence around `pos`, at most BACK characters before it and AHEAD after:
    sentences end at '.' or ';' before white space (not an abbreviation's '.'), or at a
    blank line."""
    ceiling = min(len(low), pos + AHEAD)
    return _last_stop(low, max(0, pos - BACK), pos), _next_stop(low, pos, ceiling)


@dataclass
class Sites:
    """The cue positions of one text, found per kind when first asked for (a contract
    whose date and start are settled never looks for its signatures), and the passages
    cut around them."""

    low: str
    found: dict[str, list[int]] = field(default_factory=dict)
    bounds: dict[int, tuple[int, int]] = field(default_factory=dict)

    def cues(self, kind: str) -> list[int]:
        """The positions of one kind's cues (see find_cues), with those DERIVED from
        another kind's."""
        if kind not in self.found:
            own = list(self.raw(kind))
            for (source, prefix), target in DERIVED.items():
                if target == kind and source != kind:
                    own += [i for i in self.raw(source) if _DERIVED_AT[prefix].match(self.low, i)]
            self.found[kind] = sorted(set(own))[: MAX_SITES[kind]]
        return self.found[kind]

    def raw(self, kind: str) -> list[int]:
        """A kind's own cue positions, uncapped (what derived kinds are taken from)."""
        key = f"raw:{kind}"
        if key not in self.found:
            self.found[key] = find_cues(self.low, (kind,), cap=False)[kind]
        return self.found[key]

    def passage(self, pos: int) -> tuple[int, int]:
        """The bounded sentence around a cue (cut once per position)."""
        found = self.bounds.get(pos)
        if found is None:
            found = self.bounds[pos] = sentence_bounds(self.low, pos)
        return found

    def passages(self, kind: str) -> Iterator[tuple[int, int, int]]:
        """(cue, start, end) of each passage of a kind, in text order, each sentence
        once."""
        seen: set[tuple[int, int]] = set()
        for pos in self.cues(kind):
            bounds = self.passage(pos)
            if bounds not in seen:
                seen.add(bounds)
                yield pos, *bounds


def find_sites(text: str) -> Sites:
    """The text's sites (cues are found when first asked for)."""
    return Sites(low=lowered(text))
