"""From a rule's match to a TIMEX3 type and value: language-neutral readers, one per rule
kind, that look the matched words up in the language's tables and resolve relative and
deictic expressions against the reference date (the document's) — or, for anaphoric
ones ("the following year", "a year earlier"), against the last date the text named
(its focus), as TimeML's guidelines and the TempEval-3 annotations do."""

import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import NamedTuple, Protocol

from .lang import Language
from .periods import (
    SEASON_MONTHS,
    UNIT_GRAINS,
    Period,
    duration_value,
    month_add,
    period_of,
    season,
)

PAST, FUTURE = -1, 1


_SPACES = re.compile(r"[\s-]+")
_REPEAT = re.compile(r"\s*\(.*\)$")  # "three (3)": the digits repeat the words
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d\d\d)+")
_DECIMAL = re.compile(r"\d+(?:[.,]\d+)?")
_AND_A_HALF = re.compile(r"(\d+)\s+1/2")
_DIGITS = re.compile(r"\d+")
_DECADE = re.compile(r"(\d\d\d)0'?s")
_SHORT_DECADE = re.compile(r"'(\d)0s")


class Impossible(Exception):
    """A date that is no calendar date ("31 February 2026"): no expression is read there
    at all — not a shorter one ("February 2026", "2026") inside it. `end`: where the
    impossible date ends (set by the tagger)."""

    def __init__(self, end: int = 0) -> None:
        super().__init__(end)
        self.end = end


class Reading(NamedTuple):
    """What a match means: TIMEX3 type and value, plus what detection uses."""

    type: str
    value: str
    period: Period | None = None  # a DATE/TIME's calendar period, when it has one
    mod: str = ""
    anchored: bool = False  # resolved against the reference date or the focus
    anaphoric: bool = False  # resolved against the focus (an earlier date of the text)
    amount: float | None = None  # a DURATION's or SET's amount and unit
    unit: str = ""


class Around(Protocol):
    """What a reader may ask about the text around its match (computed on demand)."""

    low: str  # the whole text, lower-cased, every offset kept

    def tense(self, start: int, end: int) -> int | None: ...

    def word_before(self, start: int) -> str: ...

    def next_word(self, end: int) -> str: ...


class Context:
    """What a reader may use besides its match: the language, the reference date (None:
    values stay unresolved, e.g. XXXX-06-12), the last period the text named (the
    focus), the match's groups and text, and — only when a reader asks — the tense of
    the sentence around the match and the words just before and after it."""

    __slots__ = ("around", "focus", "groups", "lang", "reference", "span", "text")

    def __init__(
        self,
        lang: Language,
        reference: date | None,
        focus: Period | None,
        groups: dict[str, str | None],
        text: str,
        span: tuple[int, int],
        around: Around,
    ) -> None:
        self.lang, self.reference, self.focus = lang, reference, focus
        self.groups, self.text, self.span, self.around = groups, text, span, around

    def word(self, name: str) -> str | None:
        """A group's words with their spacing made single ("twenty  four" → "twenty
        four"), or None when the group did not take part in the match."""
        value = self.groups.get(name)
        if not value:
            return None
        if " " in value or "\n" in value or "\t" in value:
            return " ".join(value.split()).replace("- ", "-")
        return value

    def tense(self) -> int | None:
        return self.around.tense(*self.span)

    def before(self) -> str:
        return self.around.word_before(self.span[0])

    def after(self) -> str:
        return self.around.next_word(self.span[1])


def number(lang: Language, text: str | None) -> float | None:
    """The value of an amount ("three (3)", "2.5", "5 1/2", "twenty-four"), None for a
    vague one ("several")."""
    if text is None:
        return None
    if text.isdigit():
        return float(text)
    text = _REPEAT.sub("", text.strip())
    if _THOUSANDS.fullmatch(text):
        return float(text.replace(",", ""))  # 1,000
    if _DECIMAL.fullmatch(text):
        return float(text.replace(",", "."))
    if m := _AND_A_HALF.fullmatch(text):
        return int(m.group(1)) + 0.5
    key = _SPACES.sub(" ", text)
    if key in lang.fuzzy_amounts:
        return None
    value = lang.numbers.get(key)
    return float(value) if value is not None else None


def month_number(lang: Language, text: str | None) -> int | None:
    """1-12 for a month name or abbreviation of the language ("Sept." included)."""
    if text is None:
        return None
    return lang.months.get(text.rstrip("."))


def day_number(lang: Language, text: str | None) -> int | None:
    """The day of the month in digits ("12th") or as an ordinal word ("twelfth")."""
    if text is None:
        return None
    digits = _DIGITS.match(text)
    if digits:
        return int(digits.group(0))
    return lang.ordinals.get(_SPACES.sub(" ", text))


def safe_date(year: int, month: int, day: int) -> date | None:
    """The date, or None when there is no such day (31 February)."""
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _mod(ctx: Context) -> str:
    mod = ctx.word("modifier")
    if mod:
        return ctx.lang.modifiers.get(mod, "")
    approx = ctx.word("approximation")
    return ctx.lang.approximations.get(approx, "") if approx else ""


def _pick_year(
    ctx: Context, month: int, day: int | None = None, shift: int | None = None, months: int = 1
) -> int:
    """The year of a day, month or longer period (`months` long) written without one:
    the reference's, moved back or ahead a year when "last"/"next" (`shift`) or the
    sentence's tense says it lies on that side of the reference."""
    ref = ctx.reference
    assert ref is not None
    start = safe_date(ref.year, month, day or 1) or date(ref.year, month, 1)
    if day is not None:
        end = start + timedelta(days=1)
    else:
        ey, em = month_add(ref.year, month, months)
        end = date(ey, em, 1)
    if shift is not None and shift < 0:
        return ref.year - 1 if end > ref else ref.year
    if shift is not None and shift > 0:
        return ref.year + 1 if start <= ref else ref.year
    if shift == 0:
        return ref.year
    return _nearest_year(ctx, month, day, months)


def _nearest_year(ctx: Context, month: int, day: int | None, months: int = 1) -> int:
    """The year that puts the day (or the middle of the period) nearest the reference;
    when two years are about as near, or the nearest is far (over 90 days) on the side
    the sentence's tense denies, the tense decides."""
    ref = ctx.reference
    assert ref is not None
    options: list[tuple[int, int, int]] = []  # (distance, year, signed days from ref)
    for year in (ref.year - 1, ref.year, ref.year + 1):
        if day is not None:
            d = safe_date(year, month, day)
        else:
            d = date(year, month, 1) + timedelta(days=int(months * 30.4 / 2))
        if d is not None:
            options.append((abs((d - ref).days), year, (d - ref).days))
    options.sort()
    if not options:
        return ref.year
    distance, nearest, signed = options[0]
    close = len(options) > 1 and options[1][0] - distance <= 16 * months
    if not close and distance <= 90:
        return nearest
    tense = ctx.tense()
    if close:
        earlier, later = sorted((nearest, options[1][1]))
        return later if tense == FUTURE else earlier
    if tense == PAST and signed > 0:
        return nearest - 1
    if tense == FUTURE and signed < 0:
        return nearest + 1
    return nearest


# --- readers ------------------------------------------------------------------------------


def read_iso(ctx: Context) -> Reading | None:
    """2013-03-22 (DATE) and 2013-03-22T14:00:00Z (TIME, to the minute)."""
    g = ctx.groups
    d = safe_date(int(g["iso_year"] or 0), int(g["iso_month"] or 0), int(g["iso_day"] or 0))
    if d is None:
        raise Impossible
    if g.get("iso_hour"):
        clock = f"{g['iso_hour']}:{g['iso_minute']}"
        return Reading("TIME", f"{d.isoformat()}T{clock}", Period("day", d))
    return Reading("DATE", d.isoformat(), Period("day", d))


def two_digit_year(yy: int, reference: date | None) -> int:
    """A year written with two digits ("'98", "3/4/26"): in the century that puts it
    nearest the reference (2000 without one)."""
    base = (reference or date(2000, 1, 1)).year
    centuries = (base // 100 - 1, base // 100, base // 100 + 1)
    return min((c * 100 + yy for c in centuries), key=lambda y: abs(y - base))


def read_numeric(ctx: Context) -> Reading | None:
    """03/04/2026 read in the language's order (month first in English); a two-digit
    year is in the century that puts it nearest the reference."""
    g = ctx.groups
    a, b = int(g["n1"] or 0), int(g.get("n2") or g.get("n2_dot") or 0)
    y = g.get("n3") or g.get("n3_dot") or ""
    day, month = (a, b) if ctx.lang.day_first else (b, a)
    year = int(y) if len(y) == 4 else two_digit_year(int(y), ctx.reference)
    d = safe_date(year, month, day)
    if d is None:
        return None
    return Reading("DATE", d.isoformat(), Period("day", d))


def read_date(ctx: Context) -> Reading | None:
    """A calendar date or month: "12 June 2026", "June 12", "June 2026", "last November",
    "June last year"; a missing year comes from the reference (tense decides the side)."""
    lang = ctx.lang
    month = month_number(lang, ctx.word("month"))
    if month is None:
        return None
    day = day_number(lang, ctx.word("day"))
    year_text = ctx.word("year")
    shift = ctx.word("shift")
    year_shift = ctx.word("year_shift")
    short = ctx.word("year_short")
    anchored = year_text is None and short is None
    if year_text is not None:
        year = int(year_text)
    elif short is not None:
        year = two_digit_year(int(short), ctx.reference)
    elif ctx.reference is None:
        return _unanchored_date(month, day)
    elif year_shift is not None:
        year = ctx.reference.year + lang.shifts.get(year_shift, 0)
    else:
        explicit = lang.shifts.get(shift) if shift else None
        year = _pick_year(ctx, month, day, explicit)
    if day is not None:
        d = safe_date(year, month, day)
        if d is None:
            raise Impossible
        return Reading("DATE", d.isoformat(), Period("day", d), anchored=anchored)
    p = Period("month", date(year, month, 1))
    return Reading("DATE", p.value(), p, mod=_mod(ctx), anchored=anchored)


def _unanchored_date(month: int, day: int | None) -> Reading | None:
    if day is None:
        return Reading("DATE", f"XXXX-{month:02d}", anchored=True)
    if safe_date(2000, month, day) is None:
        raise Impossible
    return Reading("DATE", f"XXXX-{month:02d}-{day:02d}", anchored=True)


def _weekday_date(ctx: Context, weekday: int, shift: int | None) -> date:
    """The day a weekday name means: "last Friday" the one before the reference,
    "next Friday" the one after, "this Friday" the one of its week; a bare "Friday"
    the nearest on the side the tense says (the past when it says nothing)."""
    ref = ctx.reference
    assert ref is not None
    back = (ref.weekday() - weekday) % 7
    ahead = (weekday - ref.weekday()) % 7
    if shift == 0:
        return ref + timedelta(days=weekday - ref.weekday())
    if shift is not None and shift < 0:
        return ref - timedelta(days=back or 7)
    if shift is not None and shift > 0:
        return ref + timedelta(days=ahead or 7)
    if ctx.tense() == FUTURE:
        return ref + timedelta(days=ahead)
    return ref - timedelta(days=back)


def _with_part(ctx: Context, d: date | None, reading: Reading) -> Reading:
    """Add a part of day ("Friday morning": 2013-03-22TMO) or a clock time."""
    part = ctx.word("part")
    if not part:
        return reading
    code = ctx.lang.parts_of_day.get(part, "")
    day = d.isoformat() if d else reading.value
    return Reading("TIME", f"{day}T{code}", reading.period, reading.mod, reading.anchored)


def read_weekday(ctx: Context) -> Reading | None:
    """ "Friday", "last Monday", "next Friday", "Friday morning" (see `_weekday_date`)."""
    lang = ctx.lang
    weekday = lang.weekdays.get(ctx.word("weekday") or "")
    if weekday is None:
        return None
    shift_word = ctx.word("shift")
    if shift_word in lang.anaphoric_shifts or shift_word in lang.latest_shifts:
        return None  # "the previous Friday": not resolved
    shift = lang.shifts.get(shift_word) if shift_word else None
    if ctx.reference is None:
        return Reading("DATE", f"XXXX-WXX-{weekday + 1}", anchored=True)
    d = _weekday_date(ctx, weekday, shift)
    reading = Reading("DATE", d.isoformat(), Period("day", d), mod=_mod(ctx), anchored=True)
    return _with_part(ctx, d, reading)


def read_deictic(ctx: Context) -> Reading | None:
    """today, yesterday, tomorrow, tonight (+ a part of day: "yesterday morning")."""
    word = ctx.word("deictic") or ""
    offset = ctx.lang.deictic_days.get(word)
    if offset is None:
        return None
    if ctx.reference is None:
        return Reading(
            "DATE",
            "PRESENT_REF" if offset == 0 else ("PAST_REF" if offset < 0 else "FUTURE_REF"),
            anchored=True,
        )
    d = ctx.reference + timedelta(days=offset)
    reading = Reading("DATE", d.isoformat(), Period("day", d), mod=_mod(ctx), anchored=True)
    implied = ctx.lang.deictic_parts.get(word)
    if implied and not ctx.word("part"):
        return Reading("TIME", f"{d.isoformat()}T{implied}", reading.period, anchored=True)
    return _with_part(ctx, d, reading)


def read_part(ctx: Context) -> Reading | None:
    """ "this morning", "last night", "the next morning" (the day after the focus)."""
    shift_word = ctx.word("shift")
    if ctx.reference is None:
        return None
    if shift_word is None:
        # "the morning": of the day the text last named.
        if ctx.focus is None or ctx.focus.grain != "day":
            return None
        shift_word = "same"
    shift = ctx.lang.shifts.get(shift_word, 0)
    anaphoric = shift_word in ctx.lang.anaphoric_shifts or _definite(ctx)
    base = ctx.focus.start if anaphoric and ctx.focus and ctx.focus.grain == "day" else None
    base = base or ctx.reference
    d = base + timedelta(days=shift)
    code = ctx.lang.parts_of_day.get(ctx.word("part") or "", "")
    return Reading("TIME", f"{d.isoformat()}T{code}", Period("day", d), anchored=True)


def read_clock(ctx: Context) -> Reading | None:
    """ "10 p.m. Wednesday", "4:30 p.m.", "noon Saturday": the day (the named one, else
    the reference) at that time."""
    g = ctx.groups
    if g.get("hour") is not None:
        hour, minute = int(g["hour"] or 0), int(g.get("minute") or 0)
        pm = (g.get("ampm") or "").startswith("p")
        if hour > 12 or hour == 0:
            return None
        hour = hour % 12 + (12 if pm else 0)
        clock = f"{hour:02d}:{minute:02d}"
    elif g.get("hour24") is not None:
        clock = f"{int(g['hour24'] or 0):02d}:{g['minute24']}"
    else:
        clock = ctx.lang.parts_of_day.get(ctx.word("part") or "", "")
    named_day = ctx.word("weekday") or ctx.word("deictic")
    if not clock[:1].isdigit() and not ctx.word("modifier") and not named_day:
        return None  # "morning" alone: no time
    day = _clock_day(ctx)
    if day is None:
        return Reading("TIME", f"XXXX-XX-XXT{clock}", anchored=True)
    shown = "24" if clock == "24:00" else clock
    return Reading("TIME", f"{day.isoformat()}T{shown}", Period("day", day), anchored=True)


def _clock_day(ctx: Context) -> date | None:
    """The day of a clock time: the one it names ("Wednesday", "yesterday", "Nov. 9"),
    else the day the text last named, else the reference."""
    lang, ref = ctx.lang, ctx.reference
    if ref is None:
        return None
    if ctx.word("weekday"):
        return _weekday_date(ctx, lang.weekdays[ctx.word("weekday") or ""], None)
    if ctx.word("deictic"):
        return ref + timedelta(days=lang.deictic_days[ctx.word("deictic") or ""])
    month, day = month_number(lang, ctx.word("month")), day_number(lang, ctx.word("day"))
    if month and day:
        return safe_date(_pick_year(ctx, month, day), month, day)
    if ctx.focus is not None and ctx.focus.grain == "day":
        return ctx.focus.start
    return ref


def _unit(ctx: Context) -> str | None:
    return ctx.lang.units.get(ctx.word("unit") or "")


def _plural(ctx: Context) -> bool:
    return (ctx.word("unit") or "") in ctx.lang.plural_units


def _definite(ctx: Context) -> bool:
    """Whether the match opens with a definite article ("the quarter")."""
    words = ctx.text.split(None, 1)
    return bool(words) and words[0] in ctx.lang.definite


def read_ago(ctx: Context) -> Reading | None:
    """ "two weeks ago", "a year earlier", "three days later": the reference (for "ago")
    or the focus (for "earlier"/"later") moved by the amount, at the unit's grain."""
    unit = _unit(ctx)
    grain = UNIT_GRAINS.get(unit or "")
    direction = ctx.lang.directions.get(ctx.word("direction") or "")
    if grain is None or ctx.reference is None or direction is None:
        return None
    amount = number(ctx.lang, ctx.word("amount"))
    sign, deictic = direction
    if amount is None:
        if grain == "year" and sign < 0:
            # "a few years ago": some year of the decade it reaches back into (199X).
            return Reading("DATE", f"{(ctx.reference.year - 3) // 10:03d}X", anchored=True)
        return Reading(
            "DATE", "FUTURE_REF" if sign > 0 else "PAST_REF", mod=_mod(ctx), anchored=True
        )
    base = ctx.reference
    anaphoric = not deictic and ctx.focus is not None
    if anaphoric and ctx.focus is not None:
        base = ctx.focus.start
    if grain == "year" and ctx.focus is not None and ctx.focus.grain in ("quarter", "half"):
        p = ctx.focus.shift(sign * int(amount) * (4 if ctx.focus.grain == "quarter" else 2))
        return Reading("DATE", p.value(), p, mod=_mod(ctx), anchored=True, anaphoric=True)
    if amount != int(amount):
        return None
    p = period_of(base, grain).shift(sign * int(amount))
    return Reading("DATE", p.value(), p, mod=_mod(ctx), anchored=True, anaphoric=anaphoric)


def _anchor_period(ctx: Context, grain: str, shift_word: str) -> Period:
    """The period "<shift> <unit>" names: anaphoric shifts ("the following year") count
    from the focus, the others ("last year", "next quarter") from the reference."""
    assert ctx.reference is not None
    shift = ctx.lang.shifts.get(shift_word, 0)
    if shift_word in ctx.lang.anaphoric_shifts and ctx.focus is not None:
        return ctx.focus.coarsen(grain).shift(shift)
    if shift_word in ctx.lang.latest_shifts:
        if ctx.focus is not None and ctx.focus.grain == grain:
            return ctx.focus
        return period_of(ctx.reference, grain).shift(-1 if grain == "quarter" else 0)
    return period_of(ctx.reference, grain).shift(shift)


def read_shifted(ctx: Context) -> Reading | None:
    """ "last week", "next quarter", "this year", "the following year", "earlier this
    month"; "the past year" is a duration (P1Y)."""
    unit, shift_word = _unit(ctx), ctx.word("shift") or ""
    if unit is None or _plural(ctx) or ctx.reference is None:
        return None
    lang = ctx.lang
    if unit in ("H", "MIN", "S", "P", "DE", "CE"):
        if _definite(ctx) and shift_word in lang.span_shifts:
            return Reading("DURATION", duration_value(1, unit), amount=1, unit=unit)
        if unit in ("DE", "CE") and lang.shifts.get(shift_word) == 0:
            p = period_of(ctx.reference, UNIT_GRAINS[unit])
            return Reading("DATE", p.value(), p, anchored=True)
        return None
    grain = UNIT_GRAINS.get(unit)
    if grain is None:
        return None
    if (
        grain == "day"
        and shift_word not in lang.anaphoric_shifts
        and (lang.shifts.get(shift_word, 0) <= 0)
    ):
        return None  # "the next day" counts from the focus; "last day" is no date
    p = _anchor_period(ctx, grain, shift_word)
    anaphoric = ctx.focus is not None and (
        shift_word in lang.anaphoric_shifts or shift_word in lang.latest_shifts
    )
    return Reading("DATE", p.value(), p, anchored=True, anaphoric=anaphoric)


def read_duration(ctx: Context) -> Reading | None:
    """ "three (3) years", "the past two months", "90 days", "two-year", "5 1/2 hours",
    "a minute and a half"; an age ("52 years old", "6-year-old") is no duration."""
    unit = _unit(ctx)
    if unit is None or unit in ("P", "H1") or ctx.word("old"):
        return None
    if ctx.word("adjective") == "old":
        return None
    amount_text = ctx.word("amount")
    amount = number(ctx.lang, amount_text)
    if _rate(ctx) or _fraction(ctx, unit):
        return None
    if ctx.word("amount2"):
        amount = None
    elif amount is None and amount_text not in ctx.lang.fuzzy_amounts:
        return None
    if amount is not None and ctx.word("half"):
        amount += 0.5
    return Reading(
        "DURATION", duration_value(amount, unit), mod=_mod(ctx), amount=amount, unit=unit
    )


def _rate(ctx: Context) -> bool:
    """ "$1.76 a year", "seven flights a week", "24 hours a day": a rate, no duration."""
    if (ctx.word("amount") or "") not in ctx.lang.indefinite:
        return False
    before = ctx.before()
    return bool(before) and (
        before[-1].isdigit() or before in ctx.lang.rate_words or before in ctx.lang.numbers
    )


def _fraction(ctx: Context, unit: str) -> bool:
    """ "a quarter of", "about three-quarters", "more than a quarter": fractions."""
    if unit != "Q":
        return False
    text = ctx.text
    return (
        ctx.word("amount") in ctx.lang.indefinite
        or ctx.after() in ctx.lang.partitives
        or ("-" in text and _plural(ctx))
    )


def _adjective(ctx: Context) -> bool:
    return "-" in ctx.text


def _not_a_span(ctx: Context, unit: str) -> bool:
    """A plural unit the number before it did not make a duration of: an age ("52 years
    old"), a count the duration rule refused, a fraction ("three-quarters of") or a place
    ("living quarters")."""
    if ctx.after() == "old":
        return True
    start = ctx.span[0]
    if start > 0 and ctx.around.low[start - 1] == "-":
        return True  # "three-quarters", "two-thirds"
    before = ctx.before()
    if before[-1:].isdigit() or before in ctx.lang.numbers:
        return True
    return unit == "Q" and not _definite(ctx) and ctx.text.lower() == "quarters"


def read_units(ctx: Context) -> Reading | None:
    """A unit word on its own: "years", "recent weeks" (PXY, PXW); "the quarter" (the
    focus's quarter); "the weekend"."""
    unit = _unit(ctx)
    if unit is None:
        return None
    if _plural(ctx):
        if unit in ("P", "H1", "H", "MIN", "S") or _not_a_span(ctx, unit):
            return None  # "business hours", "the minutes" of a meeting: no duration
        return Reading("DURATION", duration_value(None, unit), unit=unit)
    grain = UNIT_GRAINS.get(unit)
    if not _definite(ctx) or ctx.reference is None or ctx.word("vague"):
        return None
    if unit == "Q":
        if ctx.focus is not None and ctx.focus.grain in ("quarter", "month", "day"):
            p = ctx.focus.coarsen("quarter")
        else:
            p = period_of(ctx.reference, "quarter").shift(-1)
        return Reading("DATE", p.value(), p, anchored=True, anaphoric=True)
    if unit == "WE":
        d = ctx.reference
        tense = ctx.tense()
        p = period_of(d, "weekend")
        if tense == PAST and p.start > d:
            p = p.shift(-1)
        return Reading("DATE", p.value(), p, anchored=True)
    if unit == "P" and ctx.focus is not None and ctx.focus.grain in ("quarter", "half"):
        return Reading("DATE", ctx.focus.value(), ctx.focus, anchored=True, anaphoric=True)
    if unit == "Y":
        return Reading("DURATION", "P1Y", amount=1, unit="Y")
    del grain
    return None


def read_quarter(ctx: Context) -> Reading | None:
    """ "the third quarter (of 1984)", "the 1988 second quarter", "fiscal first quarter",
    "the first half of 1990", "Q3 2026", "third-quarter": a quarter or half; with no
    year, the reference's (the tense decides the side)."""
    g = ctx.groups
    letter = g.get("q_letter") or ""
    if letter:
        grain = "quarter" if letter == "q" else "half"
        n = int(g.get("q_number") or 0)
    else:
        grain = "half" if ctx.lang.units.get(ctx.word("part_unit") or "") == "H1" else "quarter"
        n = ctx.lang.ordinals.get(ctx.word("ordinal") or "") or 0
        if not n:
            digits = _DIGITS.match(ctx.word("ordinal") or "")
            n = int(digits.group(0)) if digits else 0
    count = 4 if grain == "quarter" else 2
    if n == -1:
        n = count
    if not 1 <= n <= count:
        return None
    year_text = g.get("year") or g.get("year2") or g.get("year3")
    months = 3 if grain == "quarter" else 6
    if year_text:
        year = int(year_text)
    elif ctx.reference is None:
        return Reading("DATE", f"XXXX-{'Q' if grain == 'quarter' else 'H'}{n}", anchored=True)
    else:
        year = _pick_year(ctx, (n - 1) * months + 1, months=months)
    if g.get("anaphor"):
        year -= 1  # "the year-ago third quarter"
    p = Period(grain, date(year, (n - 1) * months + 1, 1))
    return Reading("DATE", p.value(), p, anchored=not year_text, anaphoric=bool(g.get("anaphor")))


def read_fiscal(ctx: Context) -> Reading | None:
    """ "fiscal 1989", "the fiscal year 2020", "FY2020", "FY20", "the current fiscal
    year": the (fiscal) year."""
    year_text = ctx.word("year")
    short = ctx.word("year_short")
    if year_text:
        year = int(year_text)
    elif short:
        year = two_digit_year(int(short), ctx.reference)
    elif ctx.word("fiscal_year") and ctx.reference is not None:
        shift = ctx.lang.shifts.get(ctx.word("shift") or "", 0)
        if not ctx.word("shift"):
            if not _definite(ctx):
                return None  # "a fiscal year": no year in particular
            return Reading("DURATION", "P1Y", amount=1, unit="Y")
        year = ctx.reference.year + shift
    else:
        return None
    p = Period("year", date(year, 1, 1))
    return Reading("DATE", p.value(), p, anchored=not (year_text or short))


def read_season(ctx: Context) -> Reading | None:
    """ "the summer of 2012", "last fall", "this winter": the season of the year its
    value names (winter 2013 runs from December 2012)."""
    code = ctx.lang.seasons.get(ctx.word("season") or "")
    if code is None:
        return None
    year_text, shift_word = ctx.word("year"), ctx.word("shift")
    if year_text:
        year = int(year_text)
    elif ctx.reference is None:
        return Reading("DATE", f"XXXX-{code}", anchored=True)
    else:
        # Placed by its months in the value's year (a winter: January and February).
        month, months = (1, 2) if code == "WI" else (SEASON_MONTHS[code], 3)
        shift = ctx.lang.shifts.get(shift_word) if shift_word else None
        year = _pick_year(ctx, month, None, shift, months)
    p = season(year, code)
    return Reading("DATE", p.value(), p, mod=_mod(ctx), anchored=not year_text)


def read_decade(ctx: Context) -> Reading | None:
    """ "the 1990s", "the mid-1980s", "the '90s", "the nineties": 199, 198…"""
    text = ctx.word("decade") or ""
    if m := _DECADE.match(text):
        value = m.group(1)
    else:
        m2 = _SHORT_DECADE.match(text)
        tens = int(m2.group(1)) * 10 if m2 else ctx.lang.decades.get(text)
        if tens is None:
            return None
        base = (ctx.reference or date(2000, 1, 1)).year
        century = base // 100 if base % 100 >= tens else base // 100 - 1
        value = f"{century}{tens // 10}"
    p = Period("decade", date(int(value) * 10 or 1, 1, 1))
    return Reading("DATE", value, p, mod=_mod(ctx))


def read_century(ctx: Context) -> Reading | None:
    """ "the 20th century": 19."""
    word = ctx.word("ordinal") or ""
    digits = _DIGITS.match(word)
    n = int(digits.group(0)) if digits else ctx.lang.ordinals.get(word, 0)
    if not 1 <= n <= 30:
        return None
    p = Period("century", date((n - 1) * 100 or 1, 1, 1))
    return Reading("DATE", f"{n - 1:02d}", p, mod=_mod(ctx))


def read_year(ctx: Context) -> Reading | None:
    """A year ("1998", "the year 2000", "early 1990"), the year's end, or "year-earlier"
    / "year-ago" (the focus a year back, at its grain)."""
    g = ctx.groups
    if g.get("year") and g.get("period"):
        year = int(g["year"] or 0)
        if ctx.focus is not None and ctx.focus.grain in ("quarter", "half", "month"):
            p = Period(ctx.focus.grain, ctx.focus.start.replace(year=year))
            return Reading("DATE", p.value(), p, anchored=True, anaphoric=True)
        p = Period("year", date(year, 1, 1))
        return Reading("DATE", p.value(), p, anaphoric=True)
    if g.get("year"):
        p = Period("year", date(int(g["year"] or 0), 1, 1))
        return Reading("DATE", p.value(), p, mod=_mod(ctx))
    if ctx.reference is None:
        return None
    if g.get("anaphor"):
        if ctx.focus is not None and ctx.focus.grain in ("quarter", "half", "month"):
            per_year = {"quarter": 4, "half": 2, "month": 12}[ctx.focus.grain]
            p = ctx.focus.shift(-per_year)
        else:
            p = period_of(ctx.reference, "year").shift(-1)
        return Reading("DATE", p.value(), p, anchored=True, anaphoric=True)
    p = ctx.focus.coarsen("year") if ctx.focus is not None else period_of(ctx.reference, "year")
    return Reading("DATE", p.value(), p, mod="END", anchored=True)


def read_spoken_year(ctx: Context) -> Reading | None:
    """A year said in words: "nineteen ninety-one" (19|91), "two thousand (and) five"."""
    lang = ctx.lang
    words = [w for w in _SPACES.split(ctx.word("spoken_year") or "") if w not in lang.connectors]
    values = [lang.numbers.get(w) if w not in lang.multipliers else None for w in words]
    if any(lang.multipliers.get(w) == 1000 for w in words):
        year, current = 0, 0
        for word, value in zip(words, values, strict=True):
            multiplier = lang.multipliers.get(word)
            if multiplier is not None:
                year, current = year + max(current, 1) * multiplier, 0
            elif value is not None:
                current += value
            else:
                return None
        year += current
    elif values and all(v is not None for v in values) and 10 <= (values[0] or 0) <= 21:
        year = (values[0] or 0) * 100 + sum(v or 0 for v in values[1:])
    else:
        return None
    if not 1000 <= year <= 2199:
        return None
    p = Period("year", date(year, 1, 1))
    return Reading("DATE", p.value(), p)


def read_reference(ctx: Context) -> Reading | None:
    """ "now", "currently" (PRESENT_REF), "recently" (PAST_REF), "the near future"."""
    value = ctx.lang.references.get(ctx.word("reference") or "")
    return Reading("DATE", value, anchored=True) if value else None


def read_set(ctx: Context) -> Reading | None:
    """ "daily", "every quarter", "each year", "every other week", "each Thursday",
    "Mondays": SET with the period it repeats at."""
    lang = ctx.lang
    word = ctx.word("set")
    if word:
        value = lang.sets.get(word)
        return Reading("SET", value) if value else None
    if ctx.word("weekday") or ctx.word("weekdays"):
        weekday = lang.weekdays.get(ctx.word("weekday") or (ctx.word("weekdays") or "")[:-1])
        if weekday is None:
            return None
        part = lang.parts_of_day.get(ctx.word("part") or "", "")
        return Reading("SET", f"XXXX-WXX-{weekday + 1}" + (f"T{part}" if part else ""))
    if ctx.word("month"):
        month = month_number(lang, ctx.word("month"))
        return Reading("SET", f"XXXX-{month:02d}") if month else None
    unit = _unit(ctx)
    if unit is None or unit in ("P", "H1") or (_plural(ctx) and not ctx.word("amount")):
        return None
    amount = number(lang, ctx.word("amount")) if ctx.word("amount") else 1
    if ctx.word("times"):
        amount = 1  # "twice a year": every year (twice)
    if amount is None:
        return None
    if ctx.word("other"):
        amount *= 2
    return Reading("SET", duration_value(amount, unit), amount=amount, unit=unit)


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th (n = -1: last) `weekday` of a month."""
    if n > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    ny, nm = month_add(year, month, 1)
    last = date(ny, nm, 1) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def read_holiday(ctx: Context) -> Reading | None:
    """A holiday: a fixed day ("12-25") or the n-th weekday of a month ("11-TH4",
    Thanksgiving; "05-MOL", the last Monday of May)."""
    rule = ctx.lang.holidays.get(ctx.word("holiday") or "")
    if rule is None:
        return None
    month = int(rule[:2])
    if ctx.word("year"):
        year = int(ctx.word("year") or 0)
    elif ctx.reference is None:
        return None
    else:
        shift_word = ctx.word("shift")
        shift = ctx.lang.shifts.get(shift_word) if shift_word else None
        year = _pick_year(ctx, month, None, shift)
    if rule[3:].isdigit():
        d = date(year, month, int(rule[3:]))
    else:
        weekday = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"].index(rule[3:5])
        n = -1 if rule[5:] == "L" else int(rule[5:])
        d = _nth_weekday(year, month, weekday, n)
    return Reading("DATE", d.isoformat(), Period("day", d), anchored=not ctx.word("year"))


READERS: dict[str, Callable[[Context], Reading | None]] = {
    "iso": read_iso,
    "numeric": read_numeric,
    "date": read_date,
    "weekday": read_weekday,
    "deictic": read_deictic,
    "part": read_part,
    "clock": read_clock,
    "ago": read_ago,
    "shifted": read_shifted,
    "duration": read_duration,
    "units": read_units,
    "quarter": read_quarter,
    "fiscal": read_fiscal,
    "season": read_season,
    "decade": read_decade,
    "century": read_century,
    "year": read_year,
    "spoken_year": read_spoken_year,
    "reference": read_reference,
    "set": read_set,
    "holiday": read_holiday,
}
