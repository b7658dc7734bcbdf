"""A language table compiled once into what the tagger runs: one prefilter that finds
head words (month and weekday names, units, deictic and reference words…) and the
digit shapes that can be dates, and the phrase rules indexed by the kind of head they
contain, each compiled once.

No pattern has a repetition inside an unbounded repetition, nor two unbounded runs of
the same characters side by side: what repeats without bound is a character class, so
matching is linear in the characters it looks at (checked on every compiled pattern by
tests/ingest/test_temporal_speed.py)."""

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .lang import REGISTERED, Language, Rule, language

# The regular-expression parser's own modules (typeshed does not list them as `re`'s).
sre_constants: Any = getattr(re, "_constants")  # noqa: B009
sre_parse: Any = getattr(re, "_parser")  # noqa: B009

# The end of a word: no letter follows ("may", not "mayor"; a digit or "-" may follow).
LETTER_BOUNDARY = r"(?![^\W\d_])"


def _words(entries: Iterable[str]) -> str:
    """An alternation of vocabulary entries as a trie (`trie_pattern`: each character
    tested once, the longest entry first); a space in an entry matches any white space
    or a hyphen."""
    return trie_pattern(entries)


def _abbreviations(lang: Language) -> set[str]:
    """The month names that abbreviate a longer one of the same month ("Sept")."""
    return {
        n
        for n, i in lang.months.items()
        if any(o != n and o.startswith(n) and lang.months[o] == i for o in lang.months)
    }


def _month_slot(lang: Language) -> str:
    """Month names; an abbreviation ("Jan", "Sept") may carry its dot."""
    short = _abbreviations(lang)
    full = set(lang.months) - short
    return f"(?:{_words(full)}|(?:{_words(short)})\\.?){LETTER_BOUNDARY}"


def _number_slot(lang: Language) -> str:
    """An amount: digits (1, 2.5, 5 1/2), a number word or a vague amount ("several"),
    with an optional repetition in digits ("three (3)")."""
    words = _words([*lang.numbers, *lang.fuzzy_amounts])
    return (
        rf"(?:\d{{1,3}}(?:,\d\d\d)+(?![\d,])|\d{{1,4}}(?:[.,]\d{{1,2}})?(?:\s+1/2)?(?!\d)"
        rf"|(?:{words}){LETTER_BOUNDARY})"
        r"(?:\s*\(\d{1,4}(?:\.\d{1,2})?\))?"
    )


def _spoken_year_slot(lang: Language) -> str:
    """A year said in words ("nineteen ninety-one", "two thousand and five"): two to
    four number words, multipliers ("thousand") and connectors ("and")."""
    words = _words(w for w in lang.numbers if " " not in w and w.isalpha())
    more = _words([*lang.multipliers, *lang.connectors]) or "(?!)"
    return rf"(?:{words})(?:[\s-]+(?:{words}|{more})){{1,3}}{LETTER_BOUNDARY}"


def _day_slot(lang: Language) -> str:
    """A day of the month: 1-31 in digits, maybe with its suffix ("12th"), or a word."""
    days = _words(w for w, n in lang.ordinals.items() if 1 <= n <= 31)
    return rf"(?:(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?(?!\d)|(?:{days}){LETTER_BOUNDARY})"


YEAR = r"(?:1[0-9]\d\d|20\d\d|21\d\d)(?!\d|[.,]\d)"
CLOCK = (
    r"(?P<hour>[01]?\d|2[0-3])(?:[:.](?P<minute>[0-5]\d))?\s?(?P<ampm>[ap]\.?m\b\.?|[ap]\.m\.)"
    r"|(?P<hour24>[01]?\d|2[0-3]):(?P<minute24>[0-5]\d)(?!\d|[:.,]\d)(?:\s?h\b)?"
)
ISO = (
    r"(?P<iso_year>1\d\d\d|2\d\d\d)-(?P<iso_month>0[1-9]|1[0-2])-(?P<iso_day>0[1-9]|[12]\d|3[01])"
    r"(?:t(?P<iso_hour>[01]\d|2[0-3]):(?P<iso_minute>[0-5]\d)(?::[0-5]\d(?:\.\d{1,6})?)?"
    r"(?:z|[+-]\d\d:?\d\d)?)?(?!\d|[.-]\d)"
)
# 03/04/2026, 3/4/26, 03.04.2026 (a dotted form needs its four-digit year: "6.1.10" is a
# section number).
NUMERIC = (
    r"(?P<n1>\d{1,2})(?:(?P<slash>/)(?P<n2>\d{1,2})/(?P<n3>\d{4}|\d{2})"
    r"|\.(?P<n2_dot>\d{1,2})\.(?P<n3_dot>\d{4}))(?!\d|[./-]\d)"
)


def slot_patterns(lang: Language) -> dict[str, str]:
    """What each `{slot}` of a rule template stands for in this language."""
    return {
        "month": _month_slot(lang),
        "weekday": f"(?:{_words(lang.weekdays)}){LETTER_BOUNDARY}",
        "weekdays": f"(?:{_words(w + 's' for w in lang.weekdays if w.isalpha())}){LETTER_BOUNDARY}",
        "day": _day_slot(lang),
        "year": YEAR,
        "iso": ISO,
        "numeric": NUMERIC,
        "clock": CLOCK,
        "amount": _number_slot(lang),
        "ordinal": rf"(?:\d{{1,2}}(?:st|nd|rd|th)|(?:{_words(lang.ordinals)}){LETTER_BOUNDARY})",
        "unit": f"(?:{_words(lang.units)}){LETTER_BOUNDARY}",
        "shift": f"(?:{_words(lang.shifts)}){LETTER_BOUNDARY}",
        "deictic": f"(?:{_words(lang.deictic_days)}){LETTER_BOUNDARY}",
        "part": f"(?:{_words(lang.parts_of_day)}){LETTER_BOUNDARY}",
        "season": f"(?:{_words(lang.seasons)}){LETTER_BOUNDARY}",
        "reference": f"(?:{_words(lang.references)}){LETTER_BOUNDARY}",
        "set": f"(?:{_words(lang.sets)}){LETTER_BOUNDARY}",
        "modifier": f"(?:{_words(lang.modifiers)}){LETTER_BOUNDARY}",
        "approximation": f"(?:{_words(lang.approximations)}){LETTER_BOUNDARY}",
        "decade": rf"(?:(?:1\d|20)\d0'?s|'\d0s|(?:{_words(lang.decades)}){LETTER_BOUNDARY})",
        "holiday": f"(?:{_words(lang.holidays)}){LETTER_BOUNDARY}",
        "spoken_year": _spoken_year_slot(lang),
    }


# The kind of head a slot holds: a rule is tried at a head of any kind it contains.
SLOT_HEADS = {
    "month": ("month",),
    "weekday": ("weekday",),
    "weekdays": ("weekday",),
    "year": ("year",),
    "iso": ("year",),
    "numeric": ("numeric",),
    "clock": ("clock",),
    "unit": ("unit",),
    "deictic": ("deictic",),
    "part": ("part",),
    "season": ("season",),
    "reference": ("reference",),
    "set": ("set",),
    "decade": ("decade", "year"),
    "holiday": ("holiday",),
    "spoken_year": ("spoken",),
}
# Vocabulary slots whose words are heads (found by the prefilter).
HEAD_VOCABULARY = {
    "month": "months",
    "weekday": "weekdays",
    "unit": "units",
    "deictic": "deictic_days",
    "part": "parts_of_day",
    "season": "seasons",
    "reference": "references",
    "set": "sets",
    "decade": "decades",
    "holiday": "holidays",
}
# Digit heads: the shapes of digits that can start an expression on their own (a year,
# a numeric date, a clock time, "'90s"); other numbers ("30 days", "12 June") are reached
# from the word after them. Then the letter-and-digit heads: Q3, H1, FY2020.
DIGIT_HEADS = (
    r"\d\d\d\d(?!\d)",
    r"\d\d?(?:[/.]\d\d?[/.]\d\d|:[0-5]\d|(?:[.:][0-5]\d)?\s?[ap]\.?m\b)",
    r"'\d0s\b",
    r"[qh][1-4](?![\w])",
    r"fy\s?\d\d(?:\d\d)?(?!\d)",
)
# What may stand right before a head: white space and punctuation, spelt out (a class of
# literal characters is what lets the regular-expression engine skip to candidates fast;
# `[^\w]` is several times slower).
LEAD = "[" + re.escape(" \t\n\r\f\v\xa0" + string.punctuation + "\u201c\u2018\u2013\u2014") + "]"


DIGIT_KINDS = ("quarter_code", "fiscal", "decade", "clock", "year", "numeric")


def head_kind(token: str) -> str:
    """The kind of a digit head by its shape."""
    if token[0] in "qh":
        return "quarter_code"
    if token.startswith("fy"):
        return "fiscal"
    if token[0] == "'":
        return "decade"
    if token.endswith(("m", "m.")) or ":" in token:
        return "clock"
    if len(token) == 4 and token.isdigit():
        return "year"
    return "numeric"


def trie_pattern(words: Iterable[str]) -> str:
    """An alternation of `words` as a trie ("day(?:s)?|dec(?:ade(?:s)?|ember)?…"): the
    engine tests each character once instead of every word, and a longer word is tried
    before its prefix. A space matches any white space or a hyphen."""
    root: dict[str, dict] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [
            (r"[\s-]+" if c == " " else re.escape(c)) + emit(child)
            for c, child in sorted(node.items())
            if c
        ]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return f"(?:{body})?"
        return body

    return emit(root)


_SLOT = re.compile(r"\{([a-z_]+?)(\d?)\}")


@dataclass(frozen=True)
class CompiledRule:
    kind: str
    pattern: re.Pattern[str]
    heads: frozenset[str]
    index: int  # its place in the language's table
    first: frozenset[str] | None  # the characters a match can start with (None: any)


@dataclass(frozen=True)
class Grammar:
    """A language ready to run: `prefilter` finds heads after a character of LEAD (a
    word, looked up in `head_kinds`, or a digit head, see `head_kind`); `rules` by head
    kind; `glue`: the words that may stand before a head inside an expression."""

    lang: Language
    prefilter: re.Pattern[str]
    at_start: re.Pattern[str]
    head_kinds: Mapping[str, frozenset[str]]
    rules: Mapping[str, tuple[CompiledRule, ...]]
    glue: frozenset[str]
    future: re.Pattern[str]
    past: re.Pattern[str]
    exclusions: Mapping[str, re.Pattern[str]]
    month_abbreviations: frozenset[str] = frozenset()
    # Head words `_Scan.viable` looks at before any rule (guarded, ambiguous…).
    checked_heads: frozenset[str] = frozenset()
    digit_kinds: Mapping[str, frozenset[str]] = field(default_factory=dict)

    by_start: dict[tuple[frozenset[str], str], tuple[CompiledRule, ...]] = field(
        default_factory=dict
    )

    def rules_for(self, kinds: frozenset[str], char: str) -> tuple[CompiledRule, ...]:
        """The rules to try at a head of these kinds from a position whose character is
        `char`: each once, in the table's order, only those a match can start with it."""
        key = (kinds, char)
        found = self.by_start.get(key)
        if found is None:
            unique = {r.index: r for kind in kinds for r in self.rules.get(kind, ())}
            found = tuple(
                r for _, r in sorted(unique.items()) if r.first is None or char in r.first
            )
            self.by_start[key] = found
        return found


def first_characters(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """The characters a match of `pattern` can start with, from its parsed form; None
    when that is not a small known set (a class like `\\w`, an empty match)."""
    found = _first(list(sre_parse.parse(pattern.pattern, pattern.flags)))
    if found is None or found[1]:
        return None
    return frozenset(found[0])


def _first(items: list[Any]) -> tuple[set[str], bool] | None:
    """(first characters, whether the sequence can match empty) of parsed items; None
    when a first character is not from a small known set."""
    chars: set[str] = set()
    for op, av in items:
        if op in (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            continue  # zero width
        if op is sre_constants.LITERAL:
            return chars | {chr(av)}, False
        if op is sre_constants.IN:
            found = _class(av)
            return None if found is None else (chars | found, False)
        if op is sre_constants.SUBPATTERN:
            inner = _first(list(av[-1]))
        elif op is sre_constants.BRANCH:
            branches = [_first(list(b)) for b in av[1]]
            if any(b is None for b in branches):
                return None
            known = [b for b in branches if b is not None]
            inner = set().union(*(b[0] for b in known)), any(b[1] for b in known)
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            body = _first(list(av[2]))
            inner = None if body is None else (body[0], body[1] or av[0] == 0)
        else:
            return None
        if inner is None:
            return None
        chars |= inner[0]
        if not inner[1]:
            return chars, False
    return chars, True


def _class(items: list[Any]) -> set[str] | None:
    chars: set[str] = set()
    for op, av in items:
        if op is sre_constants.LITERAL:
            chars.add(chr(av))
        elif op is sre_constants.RANGE and av[1] - av[0] < 128:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op is sre_constants.CATEGORY and av in _CATEGORIES:
            chars.update(_CATEGORIES[av])
        else:
            return None
    return chars


# `\d` and `\s` as first characters (digits: ASCII ones, the only ones dates use here).
_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: "0123456789",
    sre_constants.CATEGORY_SPACE: " \t\n\r\f\v\xa0",
}


def _head_words(lang: Language) -> dict[str, set[str]]:
    """Each head word (the last word of a multi-word entry) → the kinds it heads."""
    kinds: dict[str, set[str]] = {}
    for slot, attribute in HEAD_VOCABULARY.items():
        for entry in getattr(lang, attribute):
            word = entry.split()[-1]
            kinds.setdefault(word, set()).update(SLOT_HEADS[slot][:1])
    for name in lang.weekdays:
        if name.isalpha():
            kinds.setdefault(name + "s", set()).add("weekday")  # "Mondays", "Tuesday nights"
    for word, kind in lang.extra_heads.items():
        kinds.setdefault(word, set()).add(kind)
    return kinds


def _literal_words(template: str) -> set[str]:
    """The words a template spells out (outside its slots and escapes)."""
    bare = _SLOT.sub(" ", template)
    bare = re.sub(r"\(\?P<\w+>|\(\?P=\w+\)|\\[a-zA-Z]|\(\?[:!=<]+", " ", bare)
    return set(re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", bare))


def _compile_rule(
    index: int, rule: Rule, slots: Mapping[str, str], heads: Mapping[str, set[str]]
) -> CompiledRule:
    kinds: set[str] = set()

    def expand(m: re.Match[str]) -> str:
        name, number = m.group(1), m.group(2)
        if name not in slots:
            raise ValueError(f"unknown slot {{{name}}} in {rule.template!r}")
        kinds.update(SLOT_HEADS.get(name, ()))
        group = f"{name}{number}"
        return f"(?P<{group}>{slots[name]})"

    body = _SLOT.sub(expand, rule.template)
    for word in _literal_words(rule.template):
        for part in {word, *word.split("-")}:
            kinds.update(heads.get(part, ()))
    if rule.heads:
        kinds = set(rule.heads)
    # An expression ends at a word's end, never inside a hyphenated compound
    # ("a year" is not read out of "a year-earlier loss").
    pattern = re.compile(f"(?:{body})(?![^\\W_])(?:(?<=\\d)|(?!-[^\\W\\d_]))")
    return CompiledRule(rule.kind, pattern, frozenset(kinds), index, first_characters(pattern))


def _glue(lang: Language, templates: Iterable[str]) -> frozenset[str]:
    words = set(lang.glue)
    for table in (
        lang.numbers,
        lang.ordinals,
        lang.shifts,
        lang.modifiers,
        lang.approximations,
        lang.weekdays,
    ):
        for entry in table:
            words.update(entry.split())
    for entry in lang.fuzzy_amounts:
        words.update(entry.split())
    for entry in (*lang.references, *lang.holidays, *lang.sets):
        words.update(entry.split()[:-1])
    for template in templates:
        words.update(w for w in _literal_words(template) if len(w) > 1)
    return frozenset(words)


@cache
def grammar(code: str = "en") -> Grammar:
    """The compiled grammar of a language (compiled on first use, then shared)."""
    lang = language(code)
    slots = slot_patterns(lang)
    heads = _head_words(lang)
    compiled = [_compile_rule(i, rule, slots, heads) for i, rule in enumerate(lang.rules)]
    by_kind: dict[str, list[CompiledRule]] = {}
    for rule in compiled:
        for kind in rule.heads:
            by_kind.setdefault(kind, []).append(rule)
    head = f"(?:{trie_pattern(heads)}){LETTER_BOUNDARY}|" + "|".join(DIGIT_HEADS)
    return Grammar(
        lang=lang,
        prefilter=re.compile(f"{LEAD}(?:{head})"),
        at_start=re.compile(f"(?:{head})"),
        head_kinds={w: frozenset(k) for w, k in heads.items()},
        rules={k: tuple(v) for k, v in by_kind.items()},
        glue=_glue(lang, (r.template for r in lang.rules)),
        future=re.compile(lang.future_markers),
        past=re.compile(lang.past_markers),
        exclusions={word: re.compile(p) for word, p in lang.exclusions.items()},
        digit_kinds={k: frozenset([k]) for k in DIGIT_KINDS},
        month_abbreviations=frozenset(_abbreviations(lang)),
        checked_heads=frozenset(
            {*lang.exclusions, *_abbreviations(lang), *lang.sets, *lang.head_guards}
            | (lang.ambiguous & set(lang.months))
        ),
    )


def language_register(table: Language) -> None:
    """Make a language table available by its code (a new language, or one replaced):
    adding a language is a table, not code."""
    REGISTERED[table.code] = table
    grammar.cache_clear()
