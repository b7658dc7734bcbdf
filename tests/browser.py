"""What the browser tests share: Debian's headless Chromium driven by Playwright, where
their screenshots go, and axe-core, which audits every page they visit.

- Chromium is Debian's (`/usr/bin/chromium`, installed through apt-get when missing and
  possible); Playwright is the pinned one of requirements-browser.txt, pip-installed into
  this interpreter's environment when missing. Never `playwright install` (no downloaded
  browser builds). Where either cannot be had, the test is skipped with the reason.
- Screenshots go to a temporary folder: a test never writes into the source tree.
  `make screenshots` sets `SCREENSHOTS_DIR=docs/screenshots` to regenerate the ones the
  docs show, from the same tests.
- axe-core is the npm package pinned in tests/axe/package-lock.json (version and sha512),
  installed with `npm ci` into a temporary folder once per test session (npm's own cache
  makes it offline after the first time) and injected into every page of an audited
  context as an init script (the Content-Security-Policy, which allows no inline script,
  does not apply to it). `A11y.check` runs it on the page shown and fails on any
  `serious` or `critical` violation, listing them; `A11y.done` fails when a page was
  loaded and never checked. Where npm cannot reach its registry, the test is skipped with
  the reason; any other failure to install fails it.
"""

import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.debian import debian_program, run_quietly

REPO = Path(__file__).resolve().parents[1]
AXE_PACKAGE = REPO / "tests" / "axe"
# What fails a page: axe-core's two highest impacts ("minor" and "moderate" are reported
# by axe too, and not counted here).
AXE_FAILING = ("serious", "critical")
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


# --- axe-core ----------------------------------------------------------------------------

# npm's words for "the registry could not be reached" (then the test is skipped; any other
# failure of `npm ci`, e.g. a lock file that no longer matches, fails it).
UNREACHABLE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "ENETUNREACH")


def axe_core_install(folder: Path) -> str:
    """axe-core's `axe.min.js`, installed by `npm ci` from tests/axe/ (its pinned lock file)
    into `folder`; skips the test when the npm registry cannot be reached."""
    npm = debian_program("npm", ["npm"])
    for name in ("package.json", "package-lock.json"):
        shutil.copy(AXE_PACKAGE / name, folder / name)
    cmd = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"]
    try:
        done = subprocess.run(
            cmd,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("axe-core: `npm ci` timed out (is the npm registry reachable?)")
    script = folder / "node_modules" / "axe-core" / "axe.min.js"
    if done.returncode != 0 or not script.is_file():
        said = (done.stdout + done.stderr)[-2000:]
        if any(code in said for code in UNREACHABLE):
            pytest.skip(f"axe-core: the npm registry is unreachable (`npm ci`):\n{said}")
        pytest.fail(f"axe-core: `npm ci` in {folder} exited {done.returncode}:\n{said}")
    return script.read_text(encoding="utf-8")


AXE_RUN = """async (exclude) => {
  if (typeof axe === "undefined") return null;
  const context = exclude.length ? {exclude: exclude.map((s) => [s])} : document;
  const results = await axe.run(context, {resultTypes: ["violations"]});
  return results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({target: n.target.join(" "), summary: n.failureSummary})),
  }));
}"""


def violations_text(url: str, violations: list[dict[str, Any]]) -> str:
    """The violations of one page, one line per rule and one per element, for a failure."""
    lines = [f"axe-core: {len(violations)} serious or critical violation(s) on {url}"]
    for v in violations:
        lines.append(f"- {v['impact']} {v['id']}: {v['help']}")
        for node in v["nodes"][:10]:
            summary = " ".join(str(node["summary"] or "").split())
            lines.append(f"    {node['target']}  ({summary[:300]})")
    return "\n".join(lines)


@dataclass
class A11y:
    """Audits every page of the browser contexts it opens with axe-core: `check(page)` on
    each page a test shows (it fails on a serious or critical violation); `done()` fails
    when a page was loaded and left, or is still shown, without a check."""

    script: str
    checked: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    _shown: dict[Any, str] = field(default_factory=dict)

    def new_context(self, browser: Any, **options: Any) -> Any:
        """A browser context whose every page has axe-core and is watched."""
        context = browser.new_context(**options)
        context.add_init_script(script=self.script)
        context.on("page", self._watch)
        return context

    def _watch(self, page: Any) -> None:
        page.on("load", self._loaded)

    def _loaded(self, page: Any) -> None:
        if page.url.startswith("about:"):
            return
        left = self._shown.get(page)
        if left is not None:
            self.unchecked.append(left)
        self._shown[page] = page.url

    def check(
        self, page: Any, *, exclude: Sequence[str] = (), allowed: Collection[str] = ()
    ) -> None:
        """Run axe-core on the page shown; fail listing its serious and critical
        violations. `exclude`: CSS selectors of parts not ours to fix (swagger-ui's
        rendering); `allowed`: rule ids not counted on this page (said why where used)."""
        page.wait_for_load_state("load")
        found = page.evaluate(AXE_RUN, list(exclude))
        assert found is not None, f"axe-core is not loaded in {page.url}"
        self._shown.pop(page, None)
        self.checked.append(page.url)
        failing = [v for v in found if v["impact"] in AXE_FAILING and v["id"] not in allowed]
        if failing:
            pytest.fail(violations_text(page.url, failing), pytrace=False)

    def done(self) -> None:
        """Fail when a page was loaded without being checked."""
        missed = self.unchecked + list(self._shown.values())
        self.unchecked, self._shown = [], {}
        assert not missed, f"pages shown without an axe-core check: {missed}"
