"""The development environment `make run` writes once: `var/dev.env`.

Every process of the development stack — `make run`'s web server and job cluster, and any
`.venv/bin/telha …` typed in a second shell in the project folder — reads the same file,
so they all run with `DEBUG=1` and sign with the same `SECRET_KEY` (django-q2 signs the
tasks one process queues and another runs; a key per process made the cluster reject
them with `BadSignature`).

The settings read the file only when it exists and `DEBUG` is not set to a false value in
the environment: an explicit `DEBUG=0` (production, the test suite, the benchmarks) never
uses it. Variables already in the environment win over the file's.

    python -m telha.devenv [PATH]     # write PATH (default var/dev.env) unless it exists
"""

import os
import secrets
import sys
from pathlib import Path

import environ

FALSE_VALUES = {"0", "false", "no", "off", "n", "f", ""}
HEADER = (
    "# The development environment, written once by `make run` (telha.devenv).\n"
    "# Read by every process started in this project folder unless DEBUG=0 is set\n"
    "# explicitly; variables in the environment win. Never use it in production.\n"
)


def debug_explicitly_off() -> bool:
    """True when the environment sets DEBUG to a false value (e.g. `DEBUG=0`)."""
    value = os.environ.get("DEBUG")
    return value is not None and value.strip().lower() in FALSE_VALUES


def dev_env_load(path: Path) -> bool:
    """Read `path` into the environment (existing variables win) unless DEBUG is
    explicitly off or the file is absent; whether it was read."""
    if debug_explicitly_off() or not path.is_file():
        return False
    environ.Env.read_env(path, overwrite=False)
    return True


def dev_env_write(path: Path) -> bool:
    """Write a development environment (DEBUG=1 and a generated SECRET_KEY, readable by
    its owner only) at `path` unless one exists; whether it was written."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"{HEADER}DEBUG=1\nSECRET_KEY=dev-insecure-{secrets.token_urlsafe(48)}\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another `make run` wrote it meanwhile
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "var" / "dev.env"
    if dev_env_write(path):
        print(f"wrote {path} (DEBUG=1 and a generated SECRET_KEY for the development stack)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
