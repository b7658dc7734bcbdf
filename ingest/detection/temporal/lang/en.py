"""English: the vocabulary and phrase rules of the temporal tagger (TimeML TIMEX3 as
annotated in TimeBank/AQUAINT; see docs/ingest.md "The temporal tagger")."""

from . import Language, Rule, words

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: number
    for number, names in enumerate(
        [
            ("monday", "mon."),
            ("tuesday", "tue.", "tues."),
            ("wednesday", "wed."),
            ("thursday", "thu.", "thur.", "thurs."),
            ("friday", "fri."),
            ("saturday", "sat."),
            ("sunday", "sun."),
        ]
    )
    for name in names
}
_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
NUMBERS = {word: value for value, word in enumerate(_UNITS)}
NUMBERS.update({word: 20 + 10 * i for i, word in enumerate(_TENS)})
NUMBERS.update(
    {
        f"{ten} {unit}": 20 + 10 * i + u
        for i, ten in enumerate(_TENS)
        for u, unit in enumerate(_UNITS[1:10], start=1)
    }
)
NUMBERS.update(
    {"a": 1, "an": 1, "a single": 1, "a couple of": 2, "couple of": 2, "a couple": 2, "a dozen": 12}
)
NUMBERS.update({"a hundred": 100, "one hundred": 100, "a thousand": 1000, "two thousand": 2000})
_ORDINAL_WORDS = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
]
ORDINALS = {word: value for value, word in enumerate(_ORDINAL_WORDS, start=1)}
ORDINALS.update({f"twenty {w}": 20 + i for i, w in enumerate(_ORDINAL_WORDS[:9], start=1)})
ORDINALS.update({"thirtieth": 30, "thirty first": 31, "last": -1, "final": -1})

UNITS = {
    "year": "Y",
    "years": "Y",
    "yr": "Y",
    "yrs": "Y",
    "month": "M",
    "months": "M",
    "week": "W",
    "weeks": "W",
    "fortnight": "2W",
    "fortnights": "2W",
    "day": "D",
    "days": "D",
    "hour": "H",
    "hours": "H",
    "minute": "MIN",
    "minutes": "MIN",
    "second": "S",
    "seconds": "S",
    "quarter": "Q",
    "quarters": "Q",
    "decade": "DE",
    "decades": "DE",
    "century": "CE",
    "centuries": "CE",
    "millennium": "ML",
    "weekend": "WE",
    "weekends": "WE",
    "half": "H1",
    "period": "P",
    "periods": "P",
}
SHIFTS = {
    "last": -1,
    "past": -1,
    "previous": -1,
    "preceding": -1,
    "prior": -1,
    "next": 1,
    "coming": 1,
    "following": 1,
    "upcoming": 1,
    "this": 0,
    "current": 0,
    "present": 0,
    "same": 0,
    "that": 0,
    "latest": 0,
}
DEICTIC_DAYS = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}
PARTS_OF_DAY = {
    "morning": "MO",
    "afternoon": "AF",
    "evening": "EV",
    "night": "NI",
    "noon": "12:00",
    "midday": "12:00",
    "midnight": "24:00",
}
SEASONS = {
    "spring": "SP",
    "summer": "SU",
    "autumn": "FA",
    "fall": "FA",
    "winter": "WI",
}
REFERENCES = {
    "now": "PRESENT_REF",
    "right now": "PRESENT_REF",
    "just now": "PRESENT_REF",
    "currently": "PRESENT_REF",
    "presently": "PRESENT_REF",
    "nowadays": "PRESENT_REF",
    "at present": "PRESENT_REF",
    "the present": "PRESENT_REF",
    "these days": "PRESENT_REF",
    "at the moment": "PRESENT_REF",
    "for the moment": "PRESENT_REF",
    "recently": "PAST_REF",
    "lately": "PAST_REF",
    "the past": "PAST_REF",
    "the future": "FUTURE_REF",
    "the near future": "FUTURE_REF",
    "the foreseeable future": "FUTURE_REF",
    "the distant future": "FUTURE_REF",
}
SETS = {
    "daily": "P1D",
    "nightly": "P1D",
    "weekly": "P1W",
    "biweekly": "P2W",
    "monthly": "P1M",
    "quarterly": "P3M",
    "annually": "P1Y",
    "yearly": "P1Y",
    "hourly": "PT1H",
    "semiannually": "P6M",
    "semi-annually": "P6M",
}
MODIFIERS = {
    "early": "START",
    "late": "END",
    "mid": "MID",
    "middle": "MID",
    "the beginning of": "START",
    "the start of": "START",
    "the end of": "END",
    "the close of": "END",
    "the middle of": "MID",
    "the turn of": "START",
    "earlier": "",
    "later": "",
}
APPROXIMATIONS = {
    "about": "APPROX",
    "around": "APPROX",
    "approximately": "APPROX",
    "roughly": "APPROX",
    "some": "APPROX",
    "nearly": "LESS_THAN",
    "almost": "LESS_THAN",
    "less than": "LESS_THAN",
    "under": "LESS_THAN",
    "up to": "EQUAL_OR_LESS",
    "no more than": "EQUAL_OR_LESS",
    "not more than": "EQUAL_OR_LESS",
    "at most": "EQUAL_OR_LESS",
    "more than": "MORE_THAN",
    "over": "MORE_THAN",
    "at least": "EQUAL_OR_MORE",
    "no less than": "EQUAL_OR_MORE",
    "not less than": "EQUAL_OR_MORE",
}
FUZZY = frozenset(["a few", "few", "several", "many", "some", "a number of", "numerous"])
DECADES = {
    "twenties": 20,
    "thirties": 30,
    "forties": 40,
    "fifties": 50,
    "sixties": 60,
    "seventies": 70,
    "eighties": 80,
    "nineties": 90,
}
HOLIDAYS = {
    "christmas": "12-25",
    "christmas day": "12-25",
    "christmas eve": "12-24",
    "new year's day": "01-01",
    "new year's eve": "12-31",
    "independence day": "07-04",
    "halloween": "10-31",
    "valentine's day": "02-14",
    "thanksgiving": "11-TH4",
    "thanksgiving day": "11-TH4",
    "labor day": "09-MO1",
    "memorial day": "05-MOL",
}

# {slot}s: see grammar.SLOTS. Each rule's template is tried at the start of a word.
_DATE_TAIL = r"(?:(?:,?\s+|\s+of\s+){year})"
RULES = (
    Rule("iso", r"{iso}"),
    Rule("numeric", r"{numeric}"),
    Rule(
        "date",
        r"(?:{weekday},?\s+)?{day}(?:\s+of)?\s+{month}" + _DATE_TAIL + "?",
        heads=("month", "weekday"),
    ),
    Rule(
        "date",
        r"(?:{weekday},?\s+)?{month}\s+{day}(?!\d)" + _DATE_TAIL + "?",
        heads=("month", "weekday"),
    ),
    Rule("date", r"{day}-{month}-(?:{year}|(?P<year_short>\d\d)(?!\d))", heads=("month",)),
    Rule(
        "date",
        r"(?:{modifier}[\s-]+)?(?:{shift}\s+)?{month}"
        + _DATE_TAIL
        + r"?(?:\s+(?P<year_shift>last|next|this)\s+year)?",
        heads=("month",),
    ),
    Rule(
        "weekday",
        r"(?:{modifier}\s+)?(?:{shift}\s+)?{weekday}(?:\s+{part})?",
        heads=("weekday",),
    ),
    Rule("deictic", r"(?:{modifier}\s+)?{deictic}(?:\s+{part})?", heads=("deictic",)),
    Rule("part", r"(?:(?:earlier|later)\s+)?(?:{shift}|the)\s+{part}", heads=("part",)),
    Rule(
        "clock",
        r"{clock}(?:\s+(?P<zone>[a-z]{1,2}[sd]t|gmt|utc))?"
        r"(?:,?\s+(?:on\s+)?(?:{weekday}|{deictic}|{month}\s+{day}(?!\d)))?",
        heads=("clock",),
    ),
    Rule(
        "clock",
        r"(?:{modifier}[\s-]+)?{part}(?:\s+(?:on\s+)?(?:{weekday}|{deictic}))?",
        heads=("part",),
    ),
    Rule(
        "ago",
        r"(?:{approximation}\s+)?{amount}(?:\s+more)?[\s-]+{unit}(?:\s+or\s+so)?\s+"
        r"(?P<direction>ago|earlier|back|hence|from\s+now|from\s+today)(?![\w-])",
        heads=("unit",),
    ),
    Rule(
        "shifted",
        r"(?:(?P<vague>earlier|later)\s+|{modifier}\s+)?(?:the\s+)?{shift}\s+{unit}",
        heads=("unit",),
    ),
    Rule(
        "duration",
        r"(?:(?:(?P<each>each|every)\s+of\s+)?(?:(?:the|a|an)\s+)?(?:(?P<span>past|last|next|"
        r"coming|previous|following|prior|preceding|first|initial|final|remaining|latest|"
        r"entire|whole|full)\s+)?(?:(?P<first>first|initial|final|remaining|last|latest)\s+)?"
        r"|{approximation}\s+(?:the\s+)?)"
        r"{amount}(?:\s+(?:to|or|-)\s+{amount2})?(?:\s+(?P<extra>more|additional|full|"
        r"consecutive|straight|trading|business|calendar|working|successive))?"
        r"[\s-]+{unit}(?P<half>\s+and\s+a\s+half)?(?:\s+or\s+so)?"
        r"(?:-(?P<adjective>long|old)|\s+(?P<noun>period|term|span|stretch|interval)"
        r"|\s+(?P<old>old))?",
        heads=("unit",),
    ),
    Rule(
        "units",
        r"(?:the\s+)?(?:(?P<vague>recent|coming|past|next|last|following|previous|future|"
        r"ensuing|intervening)\s+)?{unit}(?:\s+(?P<ahead>ahead|to\s+come))?",
        heads=("unit",),
    ),
    Rule(
        "quarter",
        r"(?:the\s+)?(?:{year}\s+|(?P<fiscal>fiscal|calendar)[\s-]+|(?P<anaphor>year-ago|"
        r"year-earlier|prior-year)\s+)?(?:{year2}\s+)?"
        r"{ordinal}[\s-]+(?:(?P<fiscal2>fiscal|calendar)[\s-]+)?(?P<part_unit>quarter|"
        r"half)(?:\s+(?:of\s+)?(?:(?:fiscal|calendar)\s+)?{year3})?",
        heads=("unit",),
    ),
    Rule(
        "quarter",
        r"(?P<q_letter>q|h)(?P<q_number>[1-4])(?:\s+(?:fy\s*)?{year})?",
        heads=("quarter_code",),
    ),
    Rule(
        "fiscal",
        r"(?:the\s+)?(?:{shift}\s+)?(?P<fiscal>fiscal|calendar|financial|tax)"
        r"(?:[\s-]+(?P<fiscal_year>year))?"
        r"(?:\s+{year}|-(?P<year_short>\d\d))?",
        heads=("year", "unit"),
    ),
    Rule("fiscal", r"fy\s?(?:{year}|(?P<year_short>\d\d))", heads=("fiscal",)),
    Rule(
        "season",
        r"(?:the\s+)?(?:{modifier}[\s-]+)?(?:{shift}\s+)?{season}(?:" + _DATE_TAIL + ")?",
        heads=("season",),
    ),
    Rule("decade", r"(?:the\s+)?(?:{modifier}[\s-]+)?{decade}"),
    Rule("century", r"(?:the\s+)?(?:{modifier}[\s-]+)?{ordinal}[\s-]+century", heads=("unit",)),
    Rule("year", r"(?:{modifier}[\s-]+)?(?:the\s+year\s+)?{year}", heads=("year",)),
    Rule(
        "year",
        r"(?:the\s+)?(?:year[\s-]+(?P<year_end>end)|end\s+of\s+the\s+year)",
        heads=("unit",),
    ),
    Rule(
        "year",
        r"(?:the\s+)?(?P<anaphor>year-earlier|year-ago|prior-year)(?:\s+{unit})?",
        heads=("unit",),
    ),
    Rule(
        "year",
        r"(?:the\s+)?(?:(?:comparable|corresponding|same)\s+)?{year}\s+(?P<period>period|quarter)",
        heads=("unit",),
    ),
    Rule("spoken_year", r"(?P<the_year>the\s+year\s+)?{spoken_year}", heads=("spoken",)),
    Rule("reference", r"{reference}"),
    Rule("set", r"{set}"),
    Rule(
        "set",
        r"(?P<every>every|each|per)\s+(?:(?P<other>other)\s+)?(?:{amount}\s+)?{unit}",
        heads=("unit",),
    ),
    Rule("set", r"(?P<every>every|each)\s+{weekday}"),
    Rule("set", r"(?P<every>every|each)\s+{month}"),
    Rule("set", r"{weekdays}(?:\s+{part})?", heads=("weekday",)),
    Rule(
        "set",
        r"(?P<times>once|twice|thrice|{amount}\s+times)\s+(?:a|an|per|each|every)\s+{unit}",
        heads=("unit",),
    ),
    Rule("holiday", r"(?:{shift}\s+)?{holiday}(?:,?\s+{year})?", heads=("holiday",)),
)

# Words after which a bare year ("in 1776") or a month that is also a word ("in May") is
# time.
TIME_PREPOSITIONS = words(
    "in on at since until till by during of from through throughout before after early "
    "late mid last next this that each every the a an between and to or for around about "
    "circa ca. c. as"
)

LANGUAGE = Language(
    code="en",
    months=MONTHS,
    weekdays=WEEKDAYS,
    numbers=NUMBERS,
    ordinals=ORDINALS,
    units=UNITS,
    shifts=SHIFTS,
    deictic_days=DEICTIC_DAYS,
    parts_of_day=PARTS_OF_DAY,
    seasons=SEASONS,
    references=REFERENCES,
    sets=SETS,
    modifiers=MODIFIERS,
    approximations=APPROXIMATIONS,
    fuzzy_amounts=FUZZY,
    decades=DECADES,
    holidays=HOLIDAYS,
    rules=RULES,
    glue=words(
        "the a an of each every per at in than to and or no not more less up this that "
        "earlier later sometime fiscal calendar financial tax year-earlier year-ago "
        "prior-year other"
    ),
    determiners=frozenset(["the", "a", "an"]),
    function_words=words(
        "the a an of in on at to for from by with as than and or but nor so yet that which who "
        "whom whose when while where after before since until till through during "
        "because if though although is was were are be been being has have had will "
        "would shall should can could may might must do does did not no it its he she "
        "they we you i his her their our your this these those there here ended ending "
        "compared versus vs against earlier later ago alone also only just then me him us "
        "them my"
    ),
    number_labels=words(
        "section sections clause clauses article articles paragraph paragraphs item "
        "items schedule exhibit annex appendix rule rules part parts chapter no no. "
        "number nos page pages note notes table figure version release step phase "
        "unit units suite floor room route highway box lot tranche series class usd eur gbp "
        "chf jpy cad aud inr rs us$ c$ a$ model code form"
    ),
    ambiguous=frozenset(["may", "march", "second", "seconds", "fall", "spring"]),
    future_markers=(
        r"\b(?:will|won't|shall|'ll|going to|(?<!been )(?:scheduled|set|due) to|is to|are to|"
        r"(?:plan|intend|expect|hope|aim)(?:s|ed|ing)? to|is expected|are expected|until|"
        r"till|as soon as|as early as|no later than|not later than|tomorrow|would(?!\s+have)|"
        r"planned|planning|scheduled)\b"
    ),
    past_markers=(
        r"\b(?:said|says|was|were|had|did|ago|last|yesterday|earlier|reported|announced|"
        r"[a-z]{3,}ed)\b"
    ),
    day_first=False,
    extra_heads={"nineteen": "spoken", "eighteen": "spoken", "thousand": "spoken"},
    head_guards={
        "period": words("# latest same comparable corresponding year-ago year-earlier prior-year"),
        "periods": words("# latest same comparable corresponding"),
        "future": words("the near foreseeable distant"),
        "present": words("the at"),
        "past": frozenset(["the"]),
        "moment": frozenset(["the"]),
        "second": frozenset(["#"]),
        "seconds": frozenset(["#"]),
        "half": words("first second last latter 1st 2nd"),
        "fall": words("# the this last next in early late mid of since until by during"),
        "spring": words("# the this last next in early late mid of since until by during"),
        "eve": frozenset(["christmas", "year's"]),
    },
    exclusions={"now": r"now,?\s+therefore\b"},
    definite=frozenset(["the"]),
    indefinite=frozenset(["a", "an"]),
    plural_units=frozenset(w for w in UNITS if w.endswith("s") and w[:-1] in UNITS)
    | frozenset(["centuries"]),
    directions={
        "ago": (-1, True),
        "back": (-1, True),
        "earlier": (-1, False),
        "hence": (1, True),
        "from now": (1, True),
        "from today": (1, True),
    },
    anaphoric_shifts=frozenset(["following", "previous", "preceding", "prior", "same", "that"]),
    latest_shifts=frozenset(["latest"]),
    span_shifts=frozenset(["past", "last", "next", "coming"]),
    deictic_parts={"tonight": "NI"},
    multipliers={"hundred": 100, "thousand": 1000},
    connectors=frozenset(["and"]),
    rate_words=words("million billion thousand hundred percent cents dollars times once twice %"),
    partitives=frozenset(["of"]),
    time_prepositions=TIME_PREPOSITIONS,
    year_prepositions=words("in since until till by from of during before after"),
    clock_prepositions=words("at by from until till to before after around about"),
    amount_words=words(
        "shares share units unit dollars euros pounds yen copies people persons employees "
        "members customers users items pieces tons tonnes acres feet square miles metres "
        "meters kilometres kilometers gallons barrels points votes seats rooms beds "
        "licenses licences"
    ),
)
