"""`make test` leaves the git tree clean: the suite's run is compared with the tree as it
was when it started, and any file a test created, changed or deleted (tracked, or
untracked and not ignored) fails the run, named.

On when `CHECK_TREE_CLEAN=1` (`make test` sets it; so does CI through `make test`), in
the process that runs the session (pytest-xdist's controller, not its workers). Off for
a single test file run by hand, where a developer may be editing the tree meanwhile.
"""

import hashlib
import os
import subprocess
from pathlib import Path

TreeState = dict[str, str]


def tree_state(repo: Path) -> TreeState | None:
    """Each path `git status` reports (changed or untracked, not ignored) with a hash of
    its content ("-" when deleted); None when `repo` is not a git work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain=v1", "-z", "--untracked-files=all"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    state: TreeState = {}
    entries = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    skip = False
    for entry in entries:
        if skip:  # the source path of a rename, which follows its entry
            skip = False
            continue
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        skip = "R" in status or "C" in status
        file = repo / path
        state[path] = hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else "-"
    return state


def tree_changes(before: TreeState, after: TreeState) -> list[str]:
    """The paths whose state differs between the two snapshots (a file written, changed,
    deleted or restored), sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def wanted(config: object) -> bool:
    """Whether this process guards the tree: asked for, and not an xdist worker."""
    return os.environ.get("CHECK_TREE_CLEAN") == "1" and not hasattr(config, "workerinput")
