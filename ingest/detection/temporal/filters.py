"""What a rule's match must also satisfy to be a temporal expression, and where its
extent ends: precision where detection acts.

- A number that is part of a longer number ("5.8", "1.2026-03-01", "2026-06-1234"), an
  amount ("$2,000", "20%") or a label's number ("Section 12", "Exhibit 2026") is no
  date; nor is a run of digit groups (a telephone number).
- A word that is also an ordinary word is time only in a shape that makes it so: "May"
  and "March" need a day or year, or a capital and a time preposition before them ("in
  May"); "fall" and "spring" a year, "last"/"this"… or a preposition; "second" a
  number ("30 seconds", never "a second").
- A bare year is 1900-2099, or any year after a time preposition ("in 1776").
- A clock time without a.m./p.m. ("10:30") needs a time preposition before it.
- The determiner ("the", "a") belongs to an expression only when the expression heads
  its noun phrase: "in [the third quarter]" but "the [third-quarter] loss"."""

import re
from typing import Protocol

from .grammar import Grammar


class _Scan(Protocol):
    """What the checks read of a tagger's run over one text."""

    text: str  # the text
    low: str  # the text in lower case, every offset kept
    g: Grammar

    def next_word(self, end: int) -> str: ...


_MONEY = frozenset("$€£¥#§")
_SPACES = re.compile(r"[\s-]+")
_PUNCTUATION = "()[]{}\"',;:!?\u201c\u201d\u2018\u2019"


def previous_word(scan: "_Scan", start: int) -> str:
    """The word before `start` (lower case, outer punctuation stripped), or "" when
    `start` does not begin a word."""
    if start == 0:
        return ""
    if not (scan.low[start - 1].isspace() or scan.low[start - 1] in _PUNCTUATION):
        return ""
    words = scan.low[max(0, start - 32) : start].split()
    return words[-1].strip(_PUNCTUATION) if words else ""


def _part_of_longer_number(low: str, start: int, end: int) -> bool:
    """Digits at either edge that continue a longer number or a digit sequence."""
    before = low[max(0, start - 2) : start]
    after = low[end : end + 2]
    if low[start].isdigit():
        if before[-1:].isdigit() or before[-1:] in _MONEY:
            return True
        if len(before) == 2 and before[1] in ".,/:-" and before[0].isdigit():
            return True
        if len(before) == 2 and before[1] == " " and before[0].isdigit():
            return True  # "20 2026 0612": a telephone number
    if low[end - 1].isdigit():
        if after[:1].isdigit() or after[:1] == "%":
            return True
        if len(after) == 2 and after[0] in ".,/:-" and after[1].isdigit():
            return True
        if len(after) == 2 and after[0] == " " and after[1].isdigit() and low[start].isdigit():
            return True
    return False


def _capitalised(scan: "_Scan", start: int, end: int) -> bool:
    return scan.text[start : start + 1].isupper()


def _month_ok(scan: "_Scan", m: re.Match[str], kind: str) -> bool:
    """ "May"/"March" (ambiguous words of the language) as months."""
    word = m.group("month")
    key = word.rstrip(".")
    has_year = bool(m.groupdict().get("year"))
    lang = scan.g.lang
    alone = not has_year and not m.groupdict().get("day")
    if alone and any(
        o != key and o.startswith(key) and lang.months[o] == lang.months[key] for o in lang.months
    ):
        return False  # an abbreviation on its own ("Jan"): a name, or a stray token
    if key not in lang.ambiguous:
        return True
    if has_year:
        return True
    if not _capitalised(scan, m.start("month"), m.end("month")):
        return False
    if m.groupdict().get("day"):
        return True
    if m.groupdict().get("shift") or m.groupdict().get("modifier"):
        return True
    return previous_word(scan, m.start()) in scan.g.lang.time_prepositions


def _season_ok(scan: "_Scan", m: re.Match[str]) -> bool:
    word = m.group("season")
    if word not in scan.g.lang.ambiguous:
        return True
    groups = m.groupdict()
    if groups.get("year") or groups.get("shift") or groups.get("modifier"):
        return True
    return previous_word(scan, m.start()) in scan.g.lang.time_prepositions


def _unit_ok(scan: "_Scan", m: re.Match[str]) -> bool:
    """An ambiguous unit word ("second") counts only after a stated number."""
    word = m.group("unit")
    if word not in scan.g.lang.ambiguous:
        return True
    amount = m.groupdict().get("amount") or ""
    return bool(amount) and amount not in scan.g.lang.indefinite


def _year_ok(scan: "_Scan", m: re.Match[str]) -> bool:
    """A bare year: 1900-2099, or any after a time preposition; not a label's number
    ("Section 2019"), not a count ("2026 shares")."""
    year = int(m.group("year"))
    previous = previous_word(scan, m.start())
    if previous in scan.g.lang.number_labels:
        return False
    if scan.next_word(m.end()) in scan.g.lang.amount_words:
        return False
    if m.group(0) != m.group("year"):
        return True  # "the year 1776", "early 1990"
    if 1900 <= year <= 2099:
        return True
    return previous in scan.g.lang.time_prepositions


def _spoken_year_ok(scan: "_Scan", m: re.Match[str]) -> bool:
    """ "two thousand (and) five" is a year only where a year is expected (after a time
    preposition or a month, or "the year"); elsewhere it is an amount. "nineteen
    ninety" always is."""
    lang = scan.g.lang
    words = _SPACES.split(m.group("spoken_year"))
    if not any(lang.multipliers.get(w, 0) >= 1000 for w in words) or m.group("the_year"):
        return True
    previous = previous_word(scan, m.start()).rstrip(".")
    return previous in lang.year_prepositions or previous in lang.months


def acceptable(scan: "_Scan", m: re.Match[str], kind: str, groups: dict[str, str | None]) -> bool:
    """Whether a rule's match may be read at all (see the module's rules)."""
    low, start, end = scan.low, m.start(), m.end()
    text = m.group(0)
    if (text[0].isdigit() or text[-1].isdigit()) and _part_of_longer_number(low, start, end):
        return False
    if text[0].isdigit() and previous_word(scan, start) in scan.g.lang.number_labels:
        return False
    if groups.get("month") and not _month_ok(scan, m, kind):
        return False
    if groups.get("season") and not _season_ok(scan, m):
        return False
    if groups.get("unit") and not _unit_ok(scan, m):
        return False
    if kind == "set" and groups.get("set") and modifies_noun(scan, end):
        return False  # "a quarterly dividend", "the daily tally"
    if kind == "spoken_year" and not _spoken_year_ok(scan, m):
        return False
    opening = text.split(None, 1)[0]
    if kind == "reference" and opening in scan.g.lang.determiners and modifies_noun(scan, end):
        return False  # "the present Agreement", "the future payments"
    if kind == "year" and groups.get("year") and not _year_ok(scan, m):
        return False
    named_day = groups.get("weekday") or groups.get("deictic")
    if groups.get("hour24") and not named_day:  # "10:30" alone: a ratio, a score…
        return previous_word(scan, start) in scan.g.lang.clock_prepositions
    return True


def modifies_noun(scan: "_Scan", end: int) -> bool:
    """Whether the word after `end` looks like the noun an expression modifies ("the
    third-quarter [loss]"): a word that is no function word, pronoun or past verb."""
    following = scan.next_word(end)
    return (
        bool(following)
        and following not in scan.g.lang.function_words
        and "'" not in following
        and not (following.endswith("ed") and len(following) > 4)
    )


def trimmed(
    scan: "_Scan", m: re.Match[str], kind: str, groups: dict[str, str | None]
) -> tuple[int, int]:
    """The expression's extent: the match, less a leading determiner when the
    expression modifies a noun after it ("the [third-quarter] loss", "a [two-year]
    option") — unless the determiner is the expression's amount ("a year ago")."""
    start, end = m.start(), m.end()
    first = scan.low[start:end].split(None, 1)[0] if scan.low[start:end].strip() else ""
    lang = scan.g.lang
    if first not in lang.determiners:
        return start, end
    if groups.get("amount") is not None and m.start("amount") == start:
        return start, end
    if modifies_noun(scan, end):
        cut = start + len(first)
        while cut < end and scan.low[cut].isspace():
            cut += 1
        return cut, end
    return start, end
