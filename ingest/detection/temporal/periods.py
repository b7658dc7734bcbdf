"""Calendar periods (a day, an ISO week, a month, a quarter, a year…) and their TIMEX3
values, with the arithmetic relative expressions need ("last quarter", "two weeks
ago"). Pure and deterministic."""

from dataclasses import dataclass
from datetime import date, timedelta

# Grains, finest first.
GRAINS = (
    "day",
    "weekend",
    "week",
    "month",
    "season",
    "quarter",
    "half",
    "year",
    "decade",
    "century",
)
SEASON_MONTHS = {"SP": 3, "SU": 6, "FA": 9, "WI": 12}


def month_add(year: int, month: int, months: int) -> tuple[int, int]:
    """(year, month) moved by `months` (negative: back)."""
    index = year * 12 + month - 1 + months
    return index // 12, index % 12 + 1


def week_start(d: date) -> date:
    """The Monday of `d`'s ISO week."""
    return d - timedelta(days=d.weekday())


@dataclass(frozen=True)
class Period:
    """A calendar period: its grain and first day (a season also has its code). The
    TIMEX3 value and the half-open interval [start, end) follow from them."""

    grain: str
    start: date
    season: str = ""

    @property
    def end(self) -> date:
        """The first day after the period."""
        y, m = self.start.year, self.start.month
        if self.grain == "day":
            return self.start + timedelta(days=1)
        if self.grain == "weekend":
            return self.start + timedelta(days=2)
        if self.grain == "week":
            return self.start + timedelta(days=7)
        months = {
            "month": 1,
            "season": 3,
            "quarter": 3,
            "half": 6,
            "year": 12,
            "decade": 120,
            "century": 1200,
        }[self.grain]
        ny, nm = month_add(y, m, months)
        return date(min(ny, 9999), nm, 1)

    def value(self) -> str:
        """The TIMEX3 value: 2013-03-22, 2013-W11, 2013-W11-WE, 2013-03, 2013-SU,
        2013-Q1, 2013-H1, 2013, 201, 20."""
        s = self.start
        if self.grain == "day":
            return s.isoformat()
        if self.grain in ("week", "weekend"):
            year, week, _ = s.isocalendar()
            return f"{year:04d}-W{week:02d}" + ("-WE" if self.grain == "weekend" else "")
        if self.grain == "month":
            return f"{s.year:04d}-{s.month:02d}"
        if self.grain == "season":
            year = s.year + 1 if self.season == "WI" else s.year
            return f"{year:04d}-{self.season}"
        if self.grain == "quarter":
            return f"{s.year:04d}-Q{(s.month - 1) // 3 + 1}"
        if self.grain == "half":
            return f"{s.year:04d}-H{(s.month - 1) // 6 + 1}"
        if self.grain == "year":
            return f"{s.year:04d}"
        if self.grain == "decade":
            return f"{s.year // 10:03d}"
        return f"{s.year // 100:02d}"

    def shift(self, count: int) -> "Period":
        """The period `count` grains later (earlier when negative)."""
        if self.grain == "day":
            return Period("day", self.start + timedelta(days=count))
        if self.grain in ("week", "weekend"):
            return Period(self.grain, self.start + timedelta(days=7 * count))
        months = {
            "month": 1,
            "season": 12,
            "quarter": 3,
            "half": 6,
            "year": 12,
            "decade": 120,
            "century": 1200,
        }[self.grain]
        y, m = month_add(self.start.year, self.start.month, months * count)
        return Period(self.grain, date(y, m, 1), self.season)

    def coarsen(self, grain: str) -> "Period":
        """The period of `grain` this one's start falls in."""
        return period_of(self.start, grain)


def season(year: int, code: str) -> "Period":
    """The season a value names: 2013-SU (June to August 2013), 2013-WI (from December
    2012)."""
    if code == "WI":
        return Period("season", date(year - 1, 12, 1), code)
    return Period("season", date(year, SEASON_MONTHS[code], 1), code)


def period_of(d: date, grain: str, season: str = "") -> "Period":
    """The period of `grain` that contains day `d` (a season: the one of `season`
    starting in d's year, winter in its December)."""
    if grain == "day":
        return Period("day", d)
    if grain == "week":
        return Period("week", week_start(d))
    if grain == "weekend":
        return Period("weekend", week_start(d) + timedelta(days=5))
    if grain == "month":
        return Period("month", d.replace(day=1))
    if grain == "season":
        return Period("season", date(d.year, SEASON_MONTHS[season], 1), season)
    if grain == "quarter":
        return Period("quarter", date(d.year, (d.month - 1) // 3 * 3 + 1, 1))
    if grain == "half":
        return Period("half", date(d.year, 1 if d.month <= 6 else 7, 1))
    if grain == "year":
        return Period("year", date(d.year, 1, 1))
    if grain == "decade":
        return Period("decade", date(max(d.year // 10 * 10, 1), 1, 1))
    return Period("century", date(max(d.year // 100 * 100, 1), 1, 1))


# TIMEX3 duration units by our unit codes.
DURATION_UNITS = {
    "Y": "Y",
    "M": "M",
    "W": "W",
    "D": "D",
    "Q": "Q",
    "WE": "WE",
    "H": "H",
    "MIN": "M",
    "S": "S",
    "DE": "DE",
    "CE": "CE",
    "ML": "ML",
}
# The calendar grain of a unit, for "last <unit>" and "<n> <unit> ago".
UNIT_GRAINS = {
    "D": "day",
    "W": "week",
    "WE": "weekend",
    "M": "month",
    "Q": "quarter",
    "H1": "half",
    "Y": "year",
    "DE": "decade",
    "CE": "century",
}


def duration_value(amount: float | None, unit: str) -> str:
    """P3Y, PT2H, P2Y6M, PXD: `amount` of `unit` (None: unstated). Decades and centuries
    are written in years (P10Y) and quarters in months (P9M), as TimeBank does; a
    fraction goes to the next unit down where there is one (2 1/2 years: P2Y6M)."""
    if unit == "2W":
        amount, unit = (amount * 2 if amount is not None else None), "W"
    if unit in ("DE", "CE", "ML") and amount is not None:
        amount, unit = amount * {"DE": 10, "CE": 100, "ML": 1000}[unit], "Y"
    if unit == "Q":  # ISO 8601 has no quarter designator: three months each
        amount, unit = (amount * 3 if amount is not None else None), "M"
    time = unit in ("H", "MIN", "S")
    head = "PT" if time else "P"
    code = DURATION_UNITS.get(unit, unit)
    if amount is None:
        return f"{head}X{code}"
    whole = int(amount)
    if amount == whole:
        return f"{head}{whole}{code}"
    smaller = {"Y": (12, "M"), "D": (24, "H"), "H": (60, "M"), "MIN": (60, "S")}.get(unit)
    if smaller is not None:
        rest = round((amount - whole) * smaller[0])
        lead = f"{whole}{code}" if whole else ""
        return f"{head}{lead}{rest}{smaller[1]}" if unit != "D" else f"P{lead}T{rest}H"
    return f"{head}{amount:g}{code}"
