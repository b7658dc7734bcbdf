"""What a written date is to the contract: the date it was made, the date it takes
effect, the end of its term, a signature's date — or a date that is not the contract's
at all (a filing stamp, the date of another agreement it cites).

A date's role is read from the words before it in its clause, the nearest verb first
("entered into on October 1, 2019 and made effective as of November 1, 2019": the first
is the date it was made, the second when it takes effect), and from a defined term right
after it ("March 15, 2005 (the "Effective Date")")."""

import re

# The verbs and labels that give a date its role, searched in the clause before it.
ROLE = re.compile(
    r"(?P<end>\b(?:until|through|thru|expir\w*|terminat\w*|ending|ends|end\s+on|"
    r"conclud\w*|later\s+than)\b)"
    r"|(?P<effective>\b(?:effective\s+date|commencement\s+date|effective|commenc\w*|begin\w*|starting|start\s+date|"
    r"into\s+(?:force|effect)|takes?\s+effect|effect\s+from|as\s+from)\b)"
    r"|(?P<made>\b(?:dated|made|entered\s+into|concluded|date|last\s+updated|"
    r"agreement\s+date|is\s+made\s+on)\b)"
    r"|(?P<signed>\b(?:executed|signed|countersigned|date\s+of\s+execution)\b)"
    r"|(?P<clause>[;:]\s|\bwhereas\b|\bprovided\b)"
)
ROLE_REACH = 160
# A defined term right after a date names its role: "(the "Effective Date")".
DEFINED = re.compile(
    r"\s*[,(]?\s*(?:such\s+date,?\s+)?(?:the\s+|this\s+|hereinafter\s+(?:referred\s+to\s+as\s+)?"
    r"(?:the\s+)?)?"
    r"[\"\u201c\u201d']{1,2}\s*(?P<name>effective\s+date|commencement\s+date|"
    r"agreement\s+date|execution\s+date|start\s+date|signing\s+date|"
    r"(?:[\w-]+\s+){0,2}effective\s+date|closing\s+date)"
)
# A filing's stamps on the same line before a date: "Source: ACME, 10-K, 3/21/2019",
# "Case 18-10248 Doc 632-1 Filed 04/18/18 Page 2 of 60".
STAMP = re.compile(
    r"(?:\bsource:|\bfiled\b|\bpage\s+\d+\s+of\b|\b(?:10-[kq]|8-k|s-1|s-4|10-12g|20-f)"
    r"(?:/a)?\b)[^\n]{0,80}$"
)
# A date of another agreement the contract cites: "the Master Lease Agreement dated
# November 9, 2005", "that certain License Agreement, dated as of …", "a Supply
# Agreement entered into on …" — any determiner but "this" before the agreement's name.
_DOCUMENT = (
    r"(?:agreement|lease|contract|licen[cs]e|amendment|addendum|note|indenture|plan|"
    r"letter|order|statement\s+of\s+work|memorandum|deed|guarant(?:y|ee)|policy|document|"
    r"schedule\s+[\w/-]+|proposal|quotation|report|resolution|trust|certificate|invoice|"
    r"declaration|charter|u/a)"
)
DOCUMENT_NOUN = re.compile(rf"\b{_DOCUMENT}s?\b")
# What introduces the document a date belongs to, the nearest before its name.
_INTRODUCERS = frozenset(
    {
        "this",
        "these",
        "the",
        "that",
        "those",
        "said",
        "such",
        "a",
        "an",
        "each",
        "any",
        "its",
        "their",
        "existing",
        "original",
        "prior",
        "previous",
        "by",
        "under",
        "in",
        "to",
        "with",
        "of",
    }
)


def role_of(low: str, floor: int, start: int, end: int) -> str:
    """The role the clause gives the date at [start, end): "made", "signed",
    "effective", "end" or "" (none); a defined term after it wins ("effective" for an
    Effective Date).
    `floor` bounds the clause on the left (the passage's start)."""
    defined = DEFINED.match(low, end, end + 60)
    if defined is not None:
        name = defined.group("name")
        if "effective" in name or "commencement" in name or "start" in name:
            return "effective"
        if "closing" not in name:
            return "made"
    role = ""
    for m in ROLE.finditer(low, max(floor, start - ROLE_REACH), start):
        role = m.lastgroup or ""
        if role == "clause":
            role = ""
    return role


def defined_name(low: str, end: int) -> str:
    """The defined term right after a date ("effective date", "closing date"), or ""."""
    m = DEFINED.match(low, end, end + 60)
    return " ".join(m.group("name").split()) if m else ""


def in_stamp(low: str, start: int) -> bool:
    """Whether the date at `start` sits in a filing's stamp on its line."""
    line = low.rfind("\n", max(0, start - 160), start) + 1
    return STAMP.search(low, max(line, start - 120), start) is not None


def cites_another(low: str, start: int) -> bool:
    """Whether the date at `start` is the date of another document the clause names
    ("the Master Lease Agreement dated …", "confirmed by letter dated …"): the last
    document named before it in its paragraph (at most 200 characters back; a name
    being defined, '(the "Agreement")', is no document) is introduced by a word other
    than "this"."""
    paragraph = low.rfind("\n\n", max(0, start - 200), start)
    floor = max(paragraph, start - 200, 0)
    last = None
    for m in DOCUMENT_NOUN.finditer(low, floor, start):
        if not re.search(
            r"\(\s*(?:the\s+|this\s+)?[\"\u201c]?\s*$", low[m.start() - 12 : m.start()]
        ):
            last = m
    if last is None:
        return False
    between = low[last.end() : start]
    if re.search(r"\b(?:is|are|was|shall|will|hereby|hereinafter)\b", between):
        return False  # "the Agreement is made as of …": the verb's subject is this one
    for word in reversed(low[max(floor, last.start() - 80) : last.start()].split()[-9:]):
        if not re.fullmatch(r"[\w&'\u2019/-]+,?", word):
            return False  # a quotation, a full stop: the name starts a sentence of its own
        if word in ("this", "present", "these"):
            return False
        if word in _INTRODUCERS:
            return True
    return False


SELF_REFERENCE = re.compile(
    rf"\b(?:this|the\s+present)\s+(?:[\w&.,'\u2019/-]+\s+){{0,8}}?[\"\u201c]?{_DOCUMENT}\b|"
    r"\b(?:hereby|herein|hereof|hereto|hereunder)\b|[\"\u201c]agreement[\"\u201d]|"
    r"\bby\s+and\s+(?:between|among)\b"
)


def speaks_of_itself(low: str, start: int, end: int) -> bool:
    """Whether the sentence at [start, end) is about the contract itself ("This
    Agreement is made …", "… hereby agree", '(the "Agreement")')."""
    return SELF_REFERENCE.search(low, start, end) is not None
