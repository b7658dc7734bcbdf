"""The `telha` console script: the same program as `python manage.py`."""

import os
import secrets
import sys

# Commands that sign nothing, store nothing and serve nothing: they run without a
# configured SECRET_KEY (a throwaway one for the process), so a steward — or a scorer —
# can check what a folder would ask on a fresh checkout, before any `make run`.
SIGNS_NOTHING = frozenset({"detect"})


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "telha.settings")
    if len(args) > 1 and args[1] in SIGNS_NOTHING:
        os.environ.setdefault("SECRET_KEY", "throwaway-" + secrets.token_urlsafe(32))
    from django.core.management import execute_from_command_line

    execute_from_command_line(args)
    return 0
