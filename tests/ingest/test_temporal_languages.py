"""Other languages are tables, not code (issue 29, item 6): the German table that ships
(ingest/detection/temporal/lang/de.py) tags German text with the same readers as
English, and a language that does not ship — a few lines of French written here — works
as soon as its table is registered."""

from datetime import date

import pytest

from ingest.detection.temporal import tag
from ingest.detection.temporal.grammar import grammar, language_register
from ingest.detection.temporal.lang import REGISTERED, Language, Rule, language

REF = date(2026, 5, 20)  # a Wednesday

GERMAN = [
    (
        "date",
        "Der Vertrag wurde am 12. März 2026 unterschrieben.",
        [("12. März 2026", "DATE", "2026-03-12")],
    ),
    ("numeric-day-first", "Gültig ab 03.04.2026.", [("03.04.2026", "DATE", "2026-04-03")]),
    ("duration", "Er läuft drei Jahre.", [("drei Jahre", "DURATION", "P3Y")]),
    ("ago", "Vor zwei Wochen kam die Kündigung.", [("Vor zwei Wochen", "DATE", "2026-W19")]),
    ("in-n-months", "Er endet in drei Monaten.", [("in drei Monaten", "DATE", "2026-08")]),
    ("next-year", "Nächstes Jahr wird verlängert.", [("Nächstes Jahr", "DATE", "2027")]),
    (
        "deictic",
        "Heute ist Montag.",
        [("Heute", "DATE", "2026-05-20"), ("Montag", "DATE", "2026-05-18")],
    ),
    ("set", "Die Zahlung erfolgt monatlich.", [("monatlich", "SET", "P1M")]),
    ("quarter", "Im dritten Quartal 2026 stieg er.", [("dritten Quartal 2026", "DATE", "2026-Q3")]),
    ("season", "Im Sommer 2027 endet er.", [("Sommer 2027", "DATE", "2027-SU")]),
    ("yearless", "Zahlbar ab dem 1. Juli.", [("1. Juli", "DATE", "2026-07-01")]),
    ("section-number", "Abschnitt 5.8 gilt.", []),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in GERMAN], ids=[c[0] for c in GERMAN])
def test_german(text, expected):
    assert [(t.text, t.type, t.value) for t in tag(text, reference=REF, lang="de")] == expected


FRENCH = Language(
    code="fr-test",
    months={
        "janvier": 1,
        "février": 2,
        "mars": 3,
        "avril": 4,
        "mai": 5,
        "juin": 6,
        "juillet": 7,
        "août": 8,
        "septembre": 9,
        "octobre": 10,
        "novembre": 11,
        "décembre": 12,
    },
    weekdays={
        "lundi": 0,
        "mardi": 1,
        "mercredi": 2,
        "jeudi": 3,
        "vendredi": 4,
        "samedi": 5,
        "dimanche": 6,
    },
    numbers={"un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6},
    ordinals={"premier": 1, "1er": 1},
    units={
        "an": "Y",
        "ans": "Y",
        "année": "Y",
        "années": "Y",
        "mois": "M",
        "semaine": "W",
        "semaines": "W",
        "jour": "D",
        "jours": "D",
    },
    shifts={"dernier": -1, "dernière": -1, "prochain": 1, "prochaine": 1},
    deictic_days={"aujourd'hui": 0, "hier": -1, "demain": 1},
    parts_of_day={"matin": "MO", "soir": "EV"},
    seasons={"été": "SU", "hiver": "WI"},
    references={"maintenant": "PRESENT_REF"},
    sets={"mensuel": "P1M", "annuel": "P1Y"},
    modifiers={},
    approximations={"environ": "APPROX"},
    fuzzy_amounts=frozenset(["plusieurs"]),
    decades={},
    holidays={"noël": "12-25"},
    rules=(
        Rule("date", r"{day}\s+{month}(?:\s+{year})?"),
        Rule("weekday", r"{weekday}(?:\s+{shift})?"),
        Rule("deictic", r"{deictic}"),
        Rule("ago", r"(?P<direction>il\s+y\s+a)\s+{amount}\s+{unit}"),
        Rule("duration", r"(?:{approximation}\s+)?{amount}\s+{unit}"),
        Rule("shifted", r"(?:l[ae]\s+)?{unit}\s+{shift}"),
        Rule("year", r"{year}"),
    ),
    glue=frozenset(["il", "y", "a", "la", "le", "l'"]),
    determiners=frozenset(["le", "la", "les", "l'"]),
    function_words=frozenset(["de", "du", "et", "ou"]),
    number_labels=frozenset(["article", "section"]),
    ambiguous=frozenset(),
    future_markers=r"\b(?:sera|seront|prochain)\b",
    past_markers=r"\b(?:était|a été|dernier)\b",
    day_first=True,
    plural_units=frozenset(["ans", "années", "semaines", "jours"]),
    directions={"il y a": (-1, True)},
)


@pytest.fixture
def french():
    language_register(FRENCH)
    yield
    REGISTERED.pop(FRENCH.code, None)
    grammar.cache_clear()


def test_a_new_language_is_a_table(french):
    text = "Signé le 12 mars 2026, il y a deux semaines, pour trois ans; la semaine dernière."
    assert [(t.text, t.type, t.value) for t in tag(text, reference=REF, lang="fr-test")] == [
        ("12 mars 2026", "DATE", "2026-03-12"),
        ("il y a deux semaines", "DATE", "2026-W19"),
        ("trois ans", "DURATION", "P3Y"),
        ("la semaine dernière", "DATE", "2026-W20"),
    ]


def test_an_unknown_language_is_refused():
    with pytest.raises(LookupError):
        language("xx")
    with pytest.raises(LookupError):
        tag("12 June 2026", lang="xx")
