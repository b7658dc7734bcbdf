"""The temporal tagger (issue 29): every date, time, duration and set in a text, each
normalised to a TimeML TIMEX3 type and value. Pure Python (the standard library's `re`),
deterministic, no Django; the vocabulary lives in per-language tables (`lang/`)."""

from datetime import date

from .periods import Period
from .tagger import Timex, tag

__all__ = ["Period", "Timex", "day_of", "tag", "written_day"]


def day_of(text: str, *, reference: date | None = None, lang: str = "en") -> date | None:
    """The calendar day a whole string names, or None: "2026-07-01", "1 July 2026",
    "July 1st, 2026", and — against `reference` — "next Monday", "tomorrow", "12 June"
    (its nearest year). A numeric day/month form ("07/01/2026") reads two ways and is
    refused; so is anything that is more or less than one day ("June 2026", "a week")."""
    stripped = text.strip().rstrip(".").strip()
    if not stripped:
        return None
    found = tag(stripped, reference=reference, lang=lang)
    if len(found) != 1 or found[0].kind == "numeric":
        return None
    [timex] = found
    if (timex.start, timex.end) != (0, len(stripped)) or timex.type != "DATE":
        return None
    return timex.day


def written_day(text: str, *, lang: str = "en") -> date | None:
    """The calendar day a whole string writes out in full — an ISO date or a written date
    with its year ("12 June 2026") — else None: nothing relative, no yearless date, no
    numeric day/month form."""
    found = tag(text.strip(), lang=lang)
    stripped = text.strip()
    if len(found) != 1 or found[0].kind not in ("date", "iso") or found[0].anchored:
        return None
    if (found[0].start, found[0].end) != (0, len(stripped)) or found[0].type != "DATE":
        return None
    return found[0].day
