"""The temporal tagger: finds temporal expressions in text and normalises each to a
TimeML TIMEX3 type and value.

One pass: the prefilter (grammar.Grammar.prefilter) finds head words and date-shaped
digits; around each head the tagger looks back over the words that may open an
expression ("the", "last", "three (3)", "early"…) and tries the language's rules
anchored at each possible start, leftmost first, keeping the longest match that covers
the head; the rule's reader (normalise.READERS) gives the type and value. Ambiguous
words ("May" the modal, "march" the verb, "a second", "fall") and numbers that are
section numbers, amounts or parts of longer numbers are refused here."""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

from .filters import acceptable, previous_word, trimmed
from .grammar import Grammar, grammar, head_kind
from .normalise import FUTURE, PAST, READERS, Context, Impossible, Reading
from .periods import Period

MAX_LEFT_WORDS = 6
LEFT_WINDOW = 60
_GAP = frozenset(" \t\n\r-")
# What ends a word going leftwards: white space and punctuation, but not the "." of
# "Jan." or "5.8", the "/" of "1/2", the ":" of "10:30", the "," of "1,000" or the
# parentheses of "(3)" (a word that then ends in "," is no glue word and stops).
_STOP = frozenset(" \t\n\r-;!?\"[]{}\u201c\u201d")
_SENTENCE_END = re.compile(r"[.!?]\s|\n\s*\n")
_NEXT_WORD = re.compile(r"[ \t]*(?:\n[ \t]*)?([^\W\d_][\w'-]*)?")


@dataclass(frozen=True)
class Timex:
    """A temporal expression: where it is in the text and its TIMEX3 `type` (DATE, TIME,
    DURATION, SET) and `value`. For a DATE or TIME, `period` is the calendar period it
    names (None for PRESENT_REF and the like), so `day` is the calendar day when the
    value has day precision; `anchored` says the value was resolved against the
    reference date or an earlier date of the text, `kind` which rule read it, `mod`
    TimeML's modifier (START, APPROX…); a DURATION/SET has its `amount` and `unit`."""

    start: int
    end: int
    text: str
    type: str
    value: str
    kind: str
    period: Period | None = None
    anchored: bool = False
    mod: str = ""
    amount: float | None = None
    unit: str = ""
    anaphoric: bool = False

    @property
    def day(self) -> date | None:
        """The calendar day, when the value names one (2013-03-22, 2013-03-22T14:00)."""
        if self.period is not None and self.period.grain == "day":
            return self.period.start
        return None

    def as_dict(self) -> dict[str, object]:
        """CONTRACT §2.2's shape of one date of `telha detect --json`."""
        return {"start": self.start, "end": self.end, "text": self.text, "type": self.type,
                "value": self.value}


def _lower(text: str) -> str:
    """Lower case with every offset kept (str.lower lengthens a few characters, "İ")."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


class _Scan:
    """One run of the tagger over one text."""

    def __init__(self, text: str, reference: date | None, g: Grammar) -> None:
        self.text = text
        self.low = _lower(text)
        self.g = g
        self.reference = reference
        self.focus: Period | None = None

    # --- heads and starts -----------------------------------------------------------

    def heads(self) -> Iterator[tuple[int, int, frozenset[str]]]:
        """(start, end, kinds) of every head, in order."""
        g, low = self.g, self.low
        first = g.at_start.match(low)
        matches = [first] if first else []
        for m in matches:
            yield from self._head(m, 0)
        for m in g.prefilter.finditer(low):
            yield from self._head(m, 1)

    def _head(self, m: re.Match[str], lead: int) -> Iterator[tuple[int, int, frozenset[str]]]:
        start, end = m.start() + lead, m.end()
        token = self.low[start:end]
        kinds = self.g.head_kinds.get(token)
        if kinds is not None:
            if self.viable(token, start, end):
                yield start, end, kinds
        elif not token[0].isalpha() or token[1:2].isdigit() or token.startswith("fy"):
            yield start, end, frozenset([head_kind(token)])

    def viable(self, word: str, start: int, end: int) -> bool:
        """A cheap first look at a head that is also an ordinary word: "may" and "march"
        in lower case need a number beside them; a guarded word ("the past", "30
        seconds") the word its language table says must come before it."""
        lang = self.g.lang
        if self.g.exclusions is not None and self.g.exclusions.match(self.low, start):
            return False
        if word in lang.ambiguous and word in lang.months:
            written = self.text[start:end]
            if written[0].isupper() and not written.isupper():
                return True  # "May", not "may" nor "MAY" (in capitals, a case says nothing)
            after = self.low[end : end + 3].lstrip()
            return after[:1].isdigit() or previous_word(self, start)[:1].isdigit()
        guard = lang.head_guards.get(word)
        if guard is None:
            return True
        before = previous_word(self, start)
        if before in guard:
            return True
        if "#" in guard:
            after = self.low[end : end + 3].lstrip()
            return before[:1].isdigit() or before in lang.numbers or after[:1].isdigit()
        return False

    def starts(self, head: int, floor: int) -> list[int]:
        """Where an expression around the head at `head` may start, leftmost first: the
        head, and each of up to MAX_LEFT_WORDS words before it that may open one
        (glue words, numbers, "(3)"), separated by spaces, a hyphen or one line break."""
        low, glue = self.low, self.g.glue
        starts = [head]
        edge = head
        for _ in range(MAX_LEFT_WORDS):
            gap_start = edge
            while gap_start > floor and low[gap_start - 1] in _GAP:
                gap_start -= 1
            if gap_start == edge or gap_start <= floor:
                break
            if low.count("\n", gap_start, edge) > 1:
                break
            word_start = gap_start
            while word_start > floor and low[word_start - 1] not in _STOP:
                word_start -= 1
            word = low[word_start:gap_start]
            if not word or not (word in glue or word[0].isdigit() or word[0] == "("
                                or (word[-1] == "." and word[:-1] in glue)):
                break
            starts.append(word_start)
            edge = word_start
        starts.reverse()
        return starts

    # --- tense ------------------------------------------------------------------------

    def tense(self, start: int, end: int) -> int | None:
        """The tense of the sentence around [start, end), by its marker nearest the
        expression: FUTURE for "will", "plans to"…, PAST for "said", "-ed"…; None
        when the sentence has neither."""
        low = self.low
        left = max(0, start - 160)
        for m in _SENTENCE_END.finditer(low, left, start):
            left = m.end()
        m = _SENTENCE_END.search(low, end, end + 120)
        right = m.start() if m else min(len(low), end + 120)
        best: tuple[int, int] | None = None
        for pattern, tense in ((self.g.future, FUTURE), (self.g.past, PAST)):
            for found in pattern.finditer(low, left, start):
                distance = start - found.end()
                if best is None or distance < best[0]:
                    best = (distance, tense)
            found = pattern.search(low, end, right)
            if found is not None:
                distance = found.start() - end
                if best is None or distance < best[0]:
                    best = (distance, tense)
        return best[1] if best else None

    # --- reading one head -------------------------------------------------------------

    def read(self, head: tuple[int, int, frozenset[str]], floor: int) -> Timex | None:
        """The expression around one head, or None: at each possible start, leftmost
        first, the rules of the head's kinds; the longest match that covers the head and
        reads is it."""
        head_start, head_end, kinds = head
        rules = self.g.rules_for(kinds)
        for start in self.starts(head_start, floor):
            found = []
            for rule in rules:
                m = rule.pattern.match(self.low, start)
                if m is not None and m.end() >= head_end:
                    found.append((-m.end(), len(found), m, rule.kind))
            found.sort(key=lambda c: (c[0], c[1]))
            for _, _, m, kind in found:
                try:
                    timex = self.interpret(m, kind)
                except Impossible:
                    raise Impossible(m.end()) from None
                if timex is not None:
                    return timex
        return None

    def interpret(self, m: re.Match[str], kind: str) -> Timex | None:
        if not acceptable(self, m, kind):
            return None
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        groups["_text"] = m.group(0)
        start, end = m.span()
        ctx = Context(
            lang=self.g.lang,
            reference=self.reference,
            focus=self.focus,
            groups=groups,
            tense=lambda: self.tense(start, end),
            before=lambda: previous_word(self, start),
            after=lambda: self.next_word(end),
        )
        reading: Reading | None = READERS[kind](ctx)
        if reading is None:
            return None
        start, end = trimmed(self, m, kind)
        return Timex(
            start=start,
            end=end,
            text=self.text[start:end],
            type=reading.type,
            value=reading.value,
            kind=kind,
            period=reading.period,
            anchored=reading.anchored,
            mod=reading.mod,
            amount=reading.amount,
            unit=reading.unit,
            anaphoric=reading.anaphoric,
        )

    def commit(self, timex: Timex) -> Timex:
        """Accept an expression: a date it names becomes the focus of what follows."""
        if timex.period is not None and timex.type in ("DATE", "TIME") and not timex.anaphoric:
            self.focus = timex.period
        return timex

    def reaches(self, head: tuple[int, int, frozenset[str]], pending: Timex) -> bool:
        """Whether the words before `head` that may open an expression reach back into
        `pending` (then the expression around `head` may swallow it)."""
        return self.starts(head[0], pending.start)[0] < pending.end

    def next_word(self, end: int) -> str:
        """The word right after `end` on the same line (after spaces), or ""."""
        m = _NEXT_WORD.match(self.low, end)
        return (m.group(1) or "") if m else ""


def tag(text: str, *, reference: date | None = None, lang: str = "en") -> list[Timex]:
    """Every temporal expression in `text`, in order, never overlapping, each with its
    TIMEX3 type and value; relative and deictic ones resolved against `reference`
    (the document's date; None leaves them unresolved: XXXX-06-12, PRESENT_REF…).
    Where the expressions found around two heads overlap, the one starting first wins,
    then the longer ("the past" gives way to "the past three months")."""
    scan = _Scan(text, reference, grammar(lang))
    found: list[Timex] = []
    floor = 0
    pending: Timex | None = None
    for head in scan.heads():
        if pending is not None and head[0] >= pending.end and not scan.reaches(head, pending):
            found.append(scan.commit(pending))
            floor, pending = pending.end, None
        if head[0] < floor or (pending is not None and head[1] <= pending.end):
            continue
        try:
            timex = scan.read(head, floor)
        except Impossible as impossible:
            # "31 February 2026": no date, and nothing inside it ("2026") either.
            if pending is not None:
                found.append(scan.commit(pending))
                pending = None
            floor = max(floor, impossible.end)
            continue
        if timex is None:
            continue
        if pending is None or timex.start < pending.start or (
            timex.start == pending.start and timex.end > pending.end
        ):
            pending = timex
        elif timex.start >= pending.end:
            found.append(scan.commit(pending))
            floor, pending = pending.end, timex
    if pending is not None:
        found.append(scan.commit(pending))
    return found
