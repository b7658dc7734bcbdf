"""Per-language tables of the temporal tagger: the vocabulary (month and weekday names,
number and ordinal words, units, relative words…) and the phrase rules that combine it.

A language is data, not code: `Language` holds its words and `Rule`s (regular-expression
templates over named slots such as `{month}`, `{day}`, `{amount}`, each with a `kind`
that says how the language-neutral normaliser reads the match). Adding a language is a
new module with a `LANGUAGE` table registered in `LANGUAGES`."""

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    """One phrase shape. `template` is a regular expression over the lower-cased text in
    which `{slot}` stands for a vocabulary (see `grammar.slot_patterns`); `kind` names
    the reader that turns a match into a TIMEX3 type and value."""

    kind: str
    template: str
    # The kinds of head the rule is tried at (see grammar.SLOT_HEADS); empty: every kind
    # its slots and literal words hold.
    heads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Language:
    """Everything the tagger knows about one language. Words are lower case; a
    multi-word entry is written with single spaces (it matches any white space)."""

    code: str
    months: Mapping[str, int]  # name or abbreviation -> 1..12
    weekdays: Mapping[str, int]  # name -> 0 (Monday) .. 6
    numbers: Mapping[str, int]  # number words -> value ("zwei", "twenty")
    ordinals: Mapping[str, int]  # "first" -> 1
    units: Mapping[str, str]  # "year"/"years" -> Y, M, W, D, H, MIN, S, Q, DE, CE
    shifts: Mapping[str, int]  # "last" -> -1, "next" -> 1, "this" -> 0
    deictic_days: Mapping[str, int]  # "today" -> 0, "yesterday" -> -1
    parts_of_day: Mapping[str, str]  # "morning" -> MO
    seasons: Mapping[str, str]  # "summer" -> SU
    references: Mapping[str, str]  # "now" -> PRESENT_REF
    sets: Mapping[str, str]  # "daily" -> P1D
    modifiers: Mapping[str, str]  # "early" -> START (TimeML mod)
    approximations: Mapping[str, str]  # "about" -> APPROX
    fuzzy_amounts: frozenset[str]  # "several", "a few": an amount not stated
    decades: Mapping[str, int]  # "nineties" -> 90
    holidays: Mapping[str, str]  # "christmas" -> "12-25"; "thanksgiving" -> "11-TH4"
    rules: tuple[Rule, ...]
    # Words that may stand before a head word inside an expression ("the", "last",
    # "early", "of"…): where the tagger looks for the expression's start.
    glue: frozenset[str]
    # Determiners an expression keeps only when it heads its noun phrase ("the third
    # quarter ended…", but "the [third-quarter] loss").
    determiners: frozenset[str]
    # Words after which an expression still heads its phrase (prepositions, verbs…).
    function_words: frozenset[str]
    # Words before a number that make it no date (section and clause numbers, money).
    number_labels: frozenset[str]
    # Lower-case words that are also ordinary words ("may", "march", "second"): read as
    # time only in the shapes `ambiguous_ok` allows (see tagger).
    ambiguous: frozenset[str]
    future_markers: str  # a regular expression: the sentence speaks of the future
    past_markers: str  # a regular expression: the sentence speaks of the past
    day_first: bool = False  # 03/04/2026: 3 April (True) or 4 March (False)
    extra_heads: Mapping[str, str] = field(default_factory=dict)  # literal head words
    # Head words that are time only after one of these words ("#": a number, in digits
    # or words): "the past", "the near future", "30 seconds"; checked before any rule.
    head_guards: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Phrases that start at a head word and are no time at all ("now, therefore"): by
    # head word, a regular expression over the lower-cased text, tried at the head.
    exclusions: Mapping[str, str] = field(default_factory=dict)
    # Words after a number that make it a count or an amount ("2026 shares").
    amount_words: frozenset[str] = frozenset()
    # The grammar's function words, by role:
    definite: frozenset[str] = frozenset()  # "the": "the quarter" is the one in focus
    indefinite: frozenset[str] = frozenset()  # "a", "an": the amount 1 ("a year ago")
    plural_units: frozenset[str] = frozenset()  # "years": "recent years" is PXY
    # After "<n> <unit>": the direction and whether it counts from the reference (True,
    # "two weeks ago") or from the date the text last named (False, "a year earlier").
    directions: Mapping[str, tuple[int, bool]] = field(default_factory=dict)
    anaphoric_shifts: frozenset[str] = frozenset()  # "the following year": from the focus
    latest_shifts: frozenset[str] = frozenset()  # "the latest quarter": the last one past
    span_shifts: frozenset[str] = frozenset()  # "the past hour": a duration
    deictic_parts: Mapping[str, str] = field(default_factory=dict)  # "tonight" -> NI
    multipliers: Mapping[str, int] = field(default_factory=dict)  # "hundred" -> 100
    connectors: frozenset[str] = frozenset()  # "and" in "two thousand and five"
    rate_words: frozenset[str] = frozenset()  # "$2 million a year": a rate, no duration
    partitives: frozenset[str] = frozenset()  # "a quarter of": a fraction
    time_prepositions: frozenset[str] = frozenset()  # "in May", "in 1776"
    year_prepositions: frozenset[str] = frozenset()  # "in two thousand and five"
    clock_prepositions: frozenset[str] = frozenset()  # "at 10:30"


# Tables added at run time (`grammar.language_register`), by code.
REGISTERED: dict[str, Language] = {}


def words(text: str) -> frozenset[str]:
    """A set of words written as one string, separated by white space."""
    return frozenset(text.split())


def language(code: str) -> Language:
    """The table of a language by its code ("en", "de", or one registered)."""
    from . import de, en

    tables = {"en": en.LANGUAGE, "de": de.LANGUAGE, **REGISTERED}
    try:
        return tables[code]
    except KeyError:
        raise LookupError(f"no temporal vocabulary for language {code!r}") from None
