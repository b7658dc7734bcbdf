"""Debian packages a test needs, installed by that test: through apt-get as root when the
program is missing, or the test is skipped with the reason (never a downloaded build)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def run_quietly(cmd: list[str], timeout: int) -> bool:
    """Run `cmd` without a terminal; print its error tail to stderr when it fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        done = subprocess.run(
            cmd,
            env=env,
            timeout=timeout,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"{' '.join(cmd)}: {exc}", file=sys.stderr)
        return False
    if done.returncode != 0:
        print(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}", file=sys.stderr)
    return done.returncode == 0


def _found(program: str) -> str | None:
    if os.path.isabs(program):
        return program if os.access(program, os.X_OK) else None
    return shutil.which(program)


def debian_program(program: str, packages: list[str]) -> str:
    """The path of `program` (a name on PATH or an absolute path), installing `packages`
    through apt-get when it is missing; skips the calling test when it cannot be had."""
    found = _found(program)
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(f"{program} is missing and apt-get cannot install it here (not root)")
    lists = Path("/var/lib/apt/lists")
    if not any(lists.glob("*Packages*")):
        run_quietly(["apt-get", "update"], timeout=300)
    if not run_quietly(["apt-get", "install", "-y", "--no-install-recommends", *packages], 900):
        run_quietly(["apt-get", "update"], timeout=300)  # stale lists: refresh once, retry
        run_quietly(["apt-get", "install", "-y", "--no-install-recommends", *packages], 900)
    found = _found(program)
    if not found:
        pytest.skip(
            f"{program} is missing and `apt-get install {' '.join(packages)}` did not provide it"
        )
    return found
