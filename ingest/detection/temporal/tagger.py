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
from datetime import date
from typing import NamedTuple

from .filters import acceptable, modifies_noun, previous_word, trimmed
from .fold import folded
from .grammar import Grammar, grammar, head_kind
from .normalise import FUTURE, PAST, READERS, Context, Impossible, Reading
from .periods import Period

MAX_LEFT_WORDS = 6
MAX_REACH = 120  # characters: farther back than six words that may open an expression
# The word before a position, read in the reversed text: the gap (spaces, a hyphen, at
# most one line break) and the word. A word ends going leftwards at white space or
# punctuation, but not at the "." of "Jan." or "5.8", the "/" of "1/2", the ":" of
# "10:30", the "," of "1,000" or the parentheses of "(3)".
_BACK = re.compile(r"([ \t\r-]*(?:\n[ \t\r-]*)?)([^ \t\n\r\-;!?\"\[\]{}\u201c\u201d]+)")
_SENTENCE_END = re.compile(r"[.!?]\s|\n\s*\n")
_NEXT_WORD = re.compile(r"[ \t]*(?:\n[ \t]*)?([^\W\d_][\w'-]*)?")


class Timex(NamedTuple):
    """A temporal expression: where it is in the text and its TIMEX3 `type` (DATE, TIME,
    DURATION, SET) and `value`. For a DATE or TIME, `period` is the calendar period it
    names (None for PRESENT_REF and the like), so `day` is the calendar day when the
    value has day precision; `anchored` says the value was resolved against the
    reference date or an earlier date of the text (`anaphoric`: the earlier date; `anchor`:
    the date counted from), `kind` which rule read it, `mod` TimeML's modifier (START,
    APPROX…); a DURATION or SET has its `amount` and `unit`. Immutable (a named tuple:
    one is made for every expression of a text, and a tuple is the cheapest to make)."""

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
    anchor: date | None = None  # the date a resolved value was counted from

    @property
    def grain(self) -> str:
        """The value's granularity: day, week, month, quarter, year… ("" when none)."""
        return self.period.grain if self.period is not None else ""

    @property
    def day(self) -> date | None:
        """The calendar day, when the value names one (2013-03-22, 2013-03-22T14:00)."""
        if self.period is not None and self.period.grain == "day":
            return self.period.start
        return None

    def as_dict(self) -> dict[str, object]:
        """CONTRACT §2.2's shape of one date of `telha detect --json`."""
        return {
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "type": self.type,
            "value": self.value,
        }


class _Scan:
    """One run of the tagger over one text: the text, its lower-case and reversed
    copies (every offset kept), the grammar, the reference date and the focus (the last
    period the text named)."""

    def __init__(self, text: str, reference: date | None, g: Grammar) -> None:
        self.text = text
        self.low = folded(text)
        self.rev = self.low[::-1]
        self.g = g
        self.reference = reference
        self.focus: Period | None = None
        self._starts: dict[int, list[int]] = {}

    # --- heads and starts -----------------------------------------------------------

    def heads(self) -> list[tuple[int, int, frozenset[str]]]:
        """(start, end, kinds) of every head, in order: a word of the head vocabulary
        that is viable here, or a digit shape (kind by `head_kind`)."""
        g, low = self.g, self.low
        kinds_of, digit_kinds, checked = g.head_kinds, g.digit_kinds, g.checked_heads
        found = []
        first = g.at_start.match(low)
        spans = [(0, first.end())] if first else []
        spans += [(m.start() + 1, m.end()) for m in g.prefilter.finditer(low)]
        for start, end in spans:
            token = low[start:end]
            kinds = kinds_of.get(token)
            if kinds is not None:
                if token not in checked or self.viable(token, start, end):
                    found.append((start, end, kinds))
            elif not token[0].isalpha() or token[1:2].isdigit() or token.startswith("fy"):
                kind = head_kind(token)
                if kind == "year" and not (1000 <= int(token) <= 2199 and self._bare(start)):
                    continue  # "9800 S Ridgeland Ave", "$2026": no year starts here
                found.append((start, end, digit_kinds[kind]))
        return found

    def _bare(self, start: int) -> bool:
        """Whether the digits at `start` follow no currency sign or label character."""
        return start == 0 or self.low[start - 1] not in "$€£¥#§"

    def viable(self, word: str, start: int, end: int) -> bool:
        """A cheap first look at a head that is also an ordinary word: "may" and "march"
        in lower case, and a month's abbreviation, need a number beside them; a
        frequency word modifying a noun is no time ("the quarterly dividend"); a guarded
        word ("the past", "30 seconds") needs the word its table says must come before."""
        lang = self.g.lang
        exclusion = self.g.exclusions.get(word)
        if exclusion is not None and exclusion.match(self.low, start):
            return False
        if word in self.g.month_abbreviations:  # "Dec" alone is a name or a stray token
            after = self.low[end : end + 4].lstrip(". ,-")
            before = self.low[max(0, start - 2) : start].rstrip(" -")
            return after[:1].isdigit() or before[-1:].isdigit()
        if word in lang.sets and modifies_noun(self, end):
            return False  # "the quarterly dividend"
        if word in lang.ambiguous and word in lang.months:
            written = self.text[start:end]
            if written[0].isupper() and not written.isupper():
                return True  # "May", not "may" nor "MAY" (in capitals, a case says nothing)
            after = self.low[end : end + 3].lstrip()
            return after[:1].isdigit() or self.word_before(start)[:1].isdigit()
        guard = lang.head_guards.get(word)
        if guard is None:
            return True
        before = self.word_before(start)
        if before in guard:
            return True
        if "#" in guard:
            after = self.low[end : end + 3].lstrip()
            return before[:1].isdigit() or before in lang.numbers or after[:1].isdigit()
        return False

    def starts(self, head: int, floor: int) -> list[int]:
        """Where an expression around the head at `head` may start, leftmost first: the
        head, and each of up to MAX_LEFT_WORDS words before it (not before `floor`)
        that may open one — glue words, numbers, "(3)" — separated by spaces, a hyphen
        or one line break."""
        cached = self._starts.get(head)
        if cached is not None:
            return [s for s in cached if s >= floor]
        rev, size, glue = self.rev, len(self.low), self.g.glue
        starts = [head]
        edge = head
        for _ in range(MAX_LEFT_WORDS):
            m = _BACK.match(rev, size - edge)
            if m is None or not m.group(1):
                break
            word_start = edge - m.end() + m.start()
            word = m.group(2)[::-1]
            if not (
                word in glue
                or word[0].isdigit()
                or word[0] == "("
                or (word[-1] == "." and word[:-1] in glue)
            ):
                break
            starts.append(word_start)
            edge = word_start
        starts.reverse()
        self._starts[head] = starts
        return [s for s in starts if s >= floor]

    def word_before(self, start: int) -> str:
        """The word before `start` (lower case, outer punctuation stripped), or ""."""
        return previous_word(self, start)

    def next_word(self, end: int) -> str:
        """The word right after `end` on the same line (after spaces), or ""."""
        m = _NEXT_WORD.match(self.low, end)
        return (m.group(1) or "") if m else ""

    # --- tense ------------------------------------------------------------------------

    def tense(self, start: int, end: int) -> int | None:
        """The tense of the sentence around [start, end), by its marker nearest the
        expression: FUTURE for "will", "plans to"…, PAST for "said", "-ed"…; None
        when the sentence has neither."""
        low = self.low
        left = max(0, start - 160)
        for stop in _SENTENCE_END.finditer(low, left, start):
            left = stop.end()
        stop_after = _SENTENCE_END.search(low, end, end + 120)
        right = stop_after.start() if stop_after else min(len(low), end + 120)
        best: tuple[int, int] | None = None
        for pattern, tense in ((self.g.future, FUTURE), (self.g.past, PAST)):
            distances = [start - m.end() for m in pattern.finditer(low, left, start)]
            after = pattern.search(low, end, right)
            if after is not None:
                distances.append(after.start() - end)
            if distances and (best is None or min(distances) < best[0]):
                best = (min(distances), tense)
        return best[1] if best else None

    # --- reading one head -------------------------------------------------------------

    def read(self, head: tuple[int, int, frozenset[str]], floor: int) -> Timex | None:
        """The expression around one head, or None: at each possible start, leftmost
        first, the rules of the head's kinds; the longest match that covers the head and
        reads is it. Raises Impossible for a date that is no calendar date."""
        head_start, head_end, kinds = head
        low = self.low
        for start in self.starts(head_start, floor):
            found: list[tuple[int, int, re.Match[str], str]] = []
            for rule in self.g.rules_for(kinds, low[start]):
                m = rule.pattern.match(low, start)
                if m is not None and m.end() >= head_end:
                    found.append((-m.end(), len(found), m, rule.kind))
            found.sort()
            for _, _, m, kind in found:
                try:
                    timex = self.interpret(m, kind)
                except Impossible:
                    raise Impossible(m.end()) from None
                if timex is not None:
                    return timex
        return None

    def interpret(self, m: re.Match[str], kind: str) -> Timex | None:
        """A rule's match as an expression, if it passes the checks and reads."""
        groups = m.groupdict()
        if not acceptable(self, m, kind, groups):
            return None
        ctx = Context(self.g.lang, self.reference, self.focus, groups, m.group(0), m.span(), self)
        reading: Reading | None = READERS[kind](ctx)
        if reading is None:
            return None
        start, end = trimmed(self, m, kind, groups)
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
            anchor=self._anchor(reading),
        )

    def _anchor(self, reading: Reading) -> date | None:
        """What a resolved value counted from: the focus's first day for an anaphoric
        one, else the reference date."""
        if not reading.anchored:
            return None
        if reading.anaphoric and self.focus is not None:
            return self.focus.start
        return self.reference

    def commit(self, timex: Timex) -> Timex:
        """Accept an expression: a date it names becomes the focus of what follows."""
        if timex.period is not None and timex.type in ("DATE", "TIME") and not timex.anaphoric:
            self.focus = timex.period
        return timex

    def reaches(self, head: tuple[int, int, frozenset[str]], pending: Timex) -> bool:
        """Whether the words before `head` that may open an expression reach back into
        `pending` (then the expression around `head` may swallow it)."""
        if head[0] - pending.end > MAX_REACH:
            return False
        return self.starts(head[0], pending.start)[0] < pending.end


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
        if (
            pending is None
            or timex.start < pending.start
            or (timex.start == pending.start and timex.end > pending.end)
        ):
            pending = timex
        elif timex.start >= pending.end:
            found.append(scan.commit(pending))
            floor, pending = pending.end, timex
    if pending is not None:
        found.append(scan.commit(pending))
    return found
