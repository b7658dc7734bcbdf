"""No regular-expression blow-ups in the temporal tagger (issue 29, item 5) — asserted by
structure, never by a stopwatch (speed is measured by `make bench`):

1. No pattern the tagger runs can backtrack catastrophically: none has a repetition
   inside an unbounded repetition (star height ≤ 1), the shape behind exponential and
   polynomial backtracking. Checked on the parsed form of every compiled pattern, for
   every language.
2. The work is linear in the text: the number of rule matches attempted (each one
   anchored at a word near a head) doubles — no more — when adversarial input doubles:
   long runs of digits, spaces, hyphens, month names, years, glue words…
3. A hang guard: the adversarial inputs at 100 KB complete in a subprocess within a
   generous timeout. Its only job is to fail instead of hanging if (1) or (2) were ever
   wrong; it asserts nothing about speed."""

import subprocess
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from telha.ingest.detection.temporal import tag
from telha.ingest.detection.temporal import tagger as tagger_module
from telha.ingest.detection.temporal.grammar import grammar

try:  # Python 3.11+: the parser the `re` module compiles with
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[2]
ADVERSARIAL = {
    "digits": "1",
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


def _patterns(code: str):
    g = grammar(code)
    yield "prefilter", g.prefilter.pattern
    yield "at_start", g.at_start.pattern
    for rules in g.rules.values():
        for rule in rules:
            yield f"{rule.kind}#{rule.index}", rule.pattern.pattern


@pytest.mark.parametrize("code", ["en", "de"])
def test_no_repetition_inside_an_unbounded_repetition(code):
    for name, pattern in _patterns(code):
        assert _star_height(sre_parse.parse(pattern), False) == 0, name


def test_the_star_height_check_is_not_vacuous():
    assert _star_height(sre_parse.parse(r"(?:a+)+b"), False) == 1
    assert _star_height(sre_parse.parse(r"(?:\s+x)*"), False) == 1
    assert _star_height(sre_parse.parse(r"(?:\s+x){1,3}"), False) == 0
    assert _star_height(sre_parse.parse(r"a+\s+b+"), False) == 0


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
    instrumented = replace(g, rules=counted, by_kinds={})
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
from telha.ingest.detection.temporal import tag
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
