"""How an erased person shows up in file names. A file name is not prose: storage rewrites
the uploaded name (Django's `get_valid_filename` turns spaces into underscores and drops
what is not a letter, digit, `-`, `_` or `.` — so `Yara Quint CV.txt` is stored as
`Yara_Quint_CV.txt` and `zed.erasable@acme.test-notes.txt` as
`zed.erasableacme.test-notes.txt` — and, when the name is taken, inserts `_` and seven
random characters before the suffixes: `zed_pB1G0C2.erasableacme.test-notes.txt`), and
people name files `yara-quint.pdf` or `YaraQuint.docx` themselves. So names are compared
with case, separators and punctuation ignored, the random insertion undone."""

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from clarify.stewardship import SHORT_TERM, ErasureSubject

# Django's `get_alternative_name`: "{root}_{7 random letters or digits}{suffixes}".
_ALTERNATIVE = re.compile(r"^(?P<root>[^.]*)_[A-Za-z0-9]{7}(?P<suffixes>\..*)?$")
_TOKEN = re.compile(r"[^\W_]+")


def _squashed(value: str) -> str:
    """Letters and digits only, lower-cased."""
    return "".join(_TOKEN.findall(value.lower()))


class FileNameSubject:
    """The erased person's identifiers (id, email, aliases; their full name when it has
    two or more words) in the form file names hold them."""

    def __init__(self, *, terms: Iterable[str], name: str = "") -> None:
        needles = {_squashed(t) for t in terms if t}
        if len(name.split()) >= 2:
            needles.add(_squashed(name))
        needles.discard("")
        # A long needle matches anywhere in the squashed name; a short one (an odd alias)
        # only as a run of whole words, so that it cannot match inside unrelated words.
        self.long = {n for n in needles if len(n) >= SHORT_TERM}
        self.short = needles - self.long

    @classmethod
    def of(cls, subject: ErasureSubject) -> "FileNameSubject":
        """The same person's identifiers as `subject` holds them."""
        return cls(terms=subject.terms, name=subject.name)

    def mentions(self, path: str) -> bool:
        """Whether the file name (a path's last part) names the person, as uploaded or as
        storage rewrote it."""
        base = PurePosixPath(path).name
        forms = {base}
        alternative = _ALTERNATIVE.match(base)
        if alternative is not None:
            forms.add(alternative["root"] + (alternative["suffixes"] or ""))
        return any(self._in(form) for form in forms)

    def _in(self, name: str) -> bool:
        squashed = _squashed(name)
        if any(n in squashed for n in self.long):
            return True
        words = [w.lower() for w in _TOKEN.findall(name)]
        runs = {
            "".join(words[i:j])
            for i in range(len(words))
            for j in range(i + 1, min(len(words), i + 4) + 1)
        }
        return bool(self.short & runs)
