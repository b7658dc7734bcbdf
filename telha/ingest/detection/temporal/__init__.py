"""The temporal tagger (issue 29): every date, time, duration and set in a text, each
normalised to a TimeML TIMEX3 type and value. Pure Python, deterministic, no Django."""

from .periods import Period
from .tagger import Timex, tag

__all__ = ["Period", "Timex", "tag"]
