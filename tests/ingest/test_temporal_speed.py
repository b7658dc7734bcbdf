"""No regular-expression blow-ups in the temporal tagger (issue 29, item 5) — asserted by
structure, never by a stopwatch (speed is measured by `make bench`):

1. No pattern the tagger runs can backtrack catastrophically: none has a repetition
   inside an unbounded repetition (star height ≤ 1), the shape behind exponential
   backtracking, nor two unbounded repetitions of overlapping characters with only
   optional items between them (`\\s*\n?\\s*`), the shape behind quadratic backtracking
   over a long run. Checked on the parsed form of every compiled pattern — the prefilter,
   every rule of every language, the tagger's own helpers.
2. The work is linear in the text: the number of rule matches attempted (each one
   anchored at a word near a head) doubles — no more — when adversarial input doubles:
   long runs of digits, spaces, hyphens, month names, years, glue words…
3. A hang guard: the adversarial inputs at 100 KB complete in a subprocess within a
   generous timeout. Its only job is to fail instead of hanging if (1) or (2) were ever
   wrong; it asserts nothing about speed."""

import re
import subprocess
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from ingest.detection.temporal import tag
from ingest.detection.temporal import tagger as tagger_module
from ingest.detection.temporal.grammar import grammar

try:  # Python 3.11+: the parser the `re` module compiles with
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[2]
ADVERSARIAL = {
    "digits": "1",
    "spaces-after-punctuation": ";" + " " * 200 + "June ",
    "digit-tokens": "1 ",
    "years": "2026 ",
    "months": "June ",
    "lower-may": "may ",
    "spaces": " ",
    "newlines": "\n",
    "hyphens": "-",
    "parentheses": "(",
    "dates": "12 June 2026, ",
    "dots": "1.",
    "slashes": "1/",
    "colons": "1:",
    "glue": "last next the early of ",
    "amounts": "thirty (30) ",
    "spoken": "nineteen ",
    "clock": "10 a.m. ",
    "mixed": "Section 5.8 may, on 3 March 2026, last week, 30 days, $2,026 ",
}
REPEATS = {
    sre_constants.MAX_REPEAT,
    sre_constants.MIN_REPEAT,
    getattr(sre_constants, "POSSESSIVE_REPEAT", sre_constants.MAX_REPEAT),
}


def _star_height(items, unbounded_above: bool) -> int:
    """The deepest nesting of a repetition inside an unbounded repetition (0: none)."""
    worst = 0
    for op, av in items:
        if op in REPEATS:
            _, high, sub = av
            unbounded = high == sre_constants.MAXREPEAT
            inner = _star_height(sub, unbounded_above or unbounded)
            worst = max(worst, inner + (1 if unbounded_above else 0))
        elif op is sre_constants.SUBPATTERN:
            worst = max(worst, _star_height(av[-1], unbounded_above))
        elif op is sre_constants.BRANCH:
            for branch in av[1]:
                worst = max(worst, _star_height(branch, unbounded_above))
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            worst = max(worst, _star_height(av[1], unbounded_above))
    return worst


def _class_of(items) -> set[int] | None:
    """The characters (code points; ASCII for categories) one item matches, if simple."""
    if len(items) != 1:
        return None
    op, av = items[0]
    if op is sre_constants.LITERAL:
        return {av}
    if op is not sre_constants.IN:
        return None
    chars: set[int] = set()
    for kind, value in av:
        if kind is sre_constants.LITERAL:
            chars.add(value)
        elif kind is sre_constants.RANGE:
            chars.update(range(value[0], value[1] + 1))
        elif kind is sre_constants.CATEGORY:
            chars.update(c for c in range(128) if re.match(_CATEGORY[value], chr(c)))
        else:
            return None
    return chars


_CATEGORY = {
    sre_constants.CATEGORY_DIGIT: r"\d",
    sre_constants.CATEGORY_SPACE: r"\s",
    sre_constants.CATEGORY_WORD: r"\w",
    sre_constants.CATEGORY_NOT_DIGIT: r"\D",
    sre_constants.CATEGORY_NOT_SPACE: r"\S",
    sre_constants.CATEGORY_NOT_WORD: r"\W",
}


def _nullable(op, av) -> bool:
    if op in (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return True
    return op in REPEATS and av[0] == 0


def _overlapping_runs(items) -> list[str]:
    """Two unbounded repetitions of overlapping characters with only optional items
    between them, in any sequence of the pattern (each found as text)."""
    found: list[str] = []
    before: set[int] | None = None  # the last unbounded run's characters, if still open
    for op, av in items:
        if op in REPEATS:
            _, high, sub = av
            chars = _class_of(list(sub)) if high == sre_constants.MAXREPEAT else None
            if chars is not None and before is not None and chars & before:
                found.append(str(sub))
            found += _overlapping_runs(sub)
            if chars is not None:
                before = chars
                continue
            if av[0] == 0:
                inner = _first_run(sub)
                if inner is not None and before is not None and inner & before:
                    found.append(str(sub))
                continue
            before = None
        elif op is sre_constants.SUBPATTERN:
            found += _overlapping_runs(av[-1])
            before = None
        elif op is sre_constants.BRANCH:
            for branch in av[1]:
                found += _overlapping_runs(branch)
            before = None
        elif not _nullable(op, av):
            before = None
    return found


def _first_run(items) -> set[int] | None:
    """The characters of an unbounded run an optional group opens with, if it does."""
    for op, av in items:
        if op in REPEATS and av[1] == sre_constants.MAXREPEAT:
            return _class_of(list(av[2]))
        if op is sre_constants.LITERAL:
            return None
        if not _nullable(op, av):
            return None
    return None


def _patterns(code: str):
    g = grammar(code)
    yield "prefilter", g.prefilter.pattern
    yield "at_start", g.at_start.pattern
    for rules in g.rules.values():
        for rule in rules:
            yield f"{rule.kind}#{rule.index}", rule.pattern.pattern
    for name in ("_BACK", "_SENTENCE_END", "_NEXT_WORD"):
        yield name, getattr(tagger_module, name).pattern


@pytest.mark.parametrize("code", ["en", "de"])
def test_no_repetition_inside_an_unbounded_repetition(code):
    for name, pattern in _patterns(code):
        assert _star_height(sre_parse.parse(pattern), False) == 0, name


@pytest.mark.parametrize("code", ["en", "de"])
def test_no_two_runs_of_the_same_characters_side_by_side(code):
    for name, pattern in _patterns(code):
        assert _overlapping_runs(sre_parse.parse(pattern)) == [], name


def test_the_structure_checks_are_not_vacuous():
    assert _star_height(sre_parse.parse(r"(?:a+)+b"), False) == 1
    assert _star_height(sre_parse.parse(r"(?:\s+x)*"), False) == 1
    assert _star_height(sre_parse.parse(r"(?:\s+x){1,3}"), False) == 0
    assert _star_height(sre_parse.parse(r"a+\s+b+"), False) == 0
    assert _overlapping_runs(sre_parse.parse(r"([ \t]*\n?[ \t]*)x")) != []
    assert _overlapping_runs(sre_parse.parse(r"\s+(?:\s*y)?z")) != []
    assert _overlapping_runs(sre_parse.parse(r"\s*(?:\n\s*)?x")) == []
    assert _overlapping_runs(sre_parse.parse(r"a+\s+b+")) == []


class _Counting:
    """A compiled pattern that counts the matches attempted with it."""

    def __init__(self, pattern, counter):
        self._pattern, self._counter = pattern, counter

    def match(self, *args):
        self._counter[0] += 1
        return self._pattern.match(*args)


def _attempts(monkeypatch, text: str) -> int:
    counter = [0]
    g = grammar("en")
    counted = {
        kind: tuple(replace(r, pattern=_Counting(r.pattern, counter)) for r in rules)
        for kind, rules in g.rules.items()
    }
    instrumented = replace(g, rules=counted, by_start={})
    monkeypatch.setattr(tagger_module, "grammar", lambda code: instrumented)
    tag(text, reference=date(2026, 1, 1))
    return counter[0]


@pytest.mark.parametrize("unit", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_work_is_linear_in_the_text(monkeypatch, unit):
    copies = 20_000 // len(unit)
    once = _attempts(monkeypatch, unit * copies)
    twice = _attempts(monkeypatch, unit * (2 * copies))
    assert twice <= 2 * once + 100  # the edges of the text aside, exactly twice the work
    # A bounded number of attempts per character: at most MAX_LEFT_WORDS + 1 starts per
    # head, each with the rules of its kinds.
    assert once <= 8 * len(unit) * copies


HANG_GUARD = """
import sys
from datetime import date
sys.path.insert(0, {repo!r})
from ingest.detection.temporal import tag
for unit in {units!r}:
    tag(unit * (100_000 // len(unit)), reference=date(2026, 1, 1))
print("done")
"""


def test_adversarial_input_completes():
    script = HANG_GUARD.format(repo=str(REPO), units=list(ADVERSARIAL.values()))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
