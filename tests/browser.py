"""What the browser tests share: Debian's headless Chromium driven by Playwright, and where
their screenshots go.

- Chromium is Debian's (`/usr/bin/chromium`, installed through apt-get when missing and
  possible); Playwright is the pinned one of requirements-browser.txt, pip-installed into
  this interpreter's environment when missing. Never `playwright install` (no downloaded
  browser builds). Where either cannot be had, the test is skipped with the reason.
- Screenshots go to a temporary folder: a test never writes into the source tree.
  `make screenshots` sets `SCREENSHOTS_DIR=docs/screenshots` to regenerate the ones the
  docs show, from the same tests.
"""

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.debian import debian_program, run_quietly

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """Debian's Chromium, installed through apt-get when missing and possible."""
    return debian_program(CHROMIUM, ["chromium", "fonts-liberation"])


def playwright():  # type: ignore[no-untyped-def]
    """playwright.sync_api, pip-installed (pinned) into this environment when missing."""
    try:
        return importlib.import_module("playwright.sync_api")
    except ImportError:
        pass
    ok = run_quietly(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            "-r",
            str(REPO / "requirements-browser.txt"),
        ],
        timeout=600,
    )
    importlib.invalidate_caches()
    try:
        return importlib.import_module("playwright.sync_api")
    except ImportError:
        pytest.skip(f"Playwright is not installed and pip could not install it (ok={ok})")


def launched_chromium() -> Iterator[Any]:
    """Chromium launched through Playwright, for the duration of a fixture. Playwright's
    sync API keeps an event loop on this thread; the ORM calls made between its calls
    (a test's set-up and checks, the database flush) are plain sync code."""
    executable = chromium()
    sync_api = playwright()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS, headless=True
            )
            try:
                yield browser
            finally:
                browser.close()


def screenshots_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a test's screenshots go: `SCREENSHOTS_DIR` (relative to the repository) when
    set — `make screenshots` — else a new temporary folder."""
    chosen = os.environ.get("SCREENSHOTS_DIR", "").strip()
    if not chosen:
        return tmp_path_factory.mktemp("screenshots")
    folder = Path(chosen) if os.path.isabs(chosen) else REPO / chosen
    folder.mkdir(parents=True, exist_ok=True)
    return folder
