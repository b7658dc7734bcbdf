"""The text the rules read: lower case, with the look-alike characters that text
extraction (PDF above all) puts in place of plain ones folded to them, one character for
one so every offset still indexes the stored text.

A PDF's text layer often writes ";" as U+037E (GREEK QUESTION MARK), quotes as curly
quotes, spaces as no-break, em, en, hair or thin spaces and hyphens as U+2010/U+2011;
the same contract as plain text writes ";", '"', "'", " " and "-". Folding them lets one
set of rules read both ("… the Territory;\\n(b) …" ends a clause either way)."""

import re

_FOLD: dict[str, str] = {
    "\u037e": ";",  # Greek question mark
    "\u2018": "'",
    "\u2019": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u00a0": " ",  # no-break space
    "\u2002": " ",
    "\u2003": " ",
    "\u2004": " ",
    "\u2005": " ",
    "\u2006": " ",
    "\u2007": " ",
    "\u2008": " ",
    "\u2009": " ",
    "\u200a": " ",
    "\u200b": " ",  # zero-width space: a break between words, one character wide
    "\u202f": " ",
    "\u3000": " ",
    "\u2010": "-",
    "\u2011": "-",
    "\u2212": "-",
}
# The characters to fold, found first (str.translate reads every character through a
# dict lookup, ten times slower than a character class; str.replace is a C loop).
_FOLDABLE = re.compile("[" + "".join(_FOLD) + "]")


def folded(text: str) -> str:
    """`text` lower-cased and folded (see the module), every offset kept: str.lower
    lengthens a few characters ("İ"), which then keep their case."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    if low.isascii():
        return low
    for found in set(_FOLDABLE.findall(low)):
        low = low.replace(found, _FOLD[found])
    return low
