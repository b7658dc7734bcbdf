"""The production path (issue 18), run the way docs/operations.md's production guide says
— the guide's block is parsed from that page and executed here, so it is exactly what this
module runs:

1. its environment, with this run's values in place of the example hosts, paths and
   secrets (`run_values`; `test_the_guide_is_what_this_module_runs` pins every variable);
2. its release steps (`telha migrate`, `telha collectstatic`, the metrics directory);
3. its processes: gunicorn with `gunicorn.conf.py` and 3 workers (`DEBUG=0`), and — for
   the smoke test — the three django-q2 clusters.

Every request goes through an emulated TLS proxy (`X-Forwarded-Proto: https`), as the
guide's deployment has one. The test adds three variables of its own, none of which the
guide sets: `SLACK_API_URL` (the Slack stub, tests/delivery/slack_stub.py),
`HOOK_RATE_LIMIT_PER_MINUTE=30` and `ASK_ENABLED=1` (for the cross-worker hook tests).

One stack serves the module (per xdist worker that runs its tests): a database of its own (on the
shared PostgreSQL server when the suite runs on PostgreSQL, else a SQLite file), the
local Redis under a key prefix unique to this run (never flushed), static files and the
metrics directory in a temp dir. The smoke test, which also starts the clusters, is
PostgreSQL-only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from django.db import connection

from tests.delivery.conftest_slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    block_actions,
    form_body,
    signed_headers,
)
from tests.delivery.slack_stub import RunningStub, SlackStub
from tests.submissions import OMIT, Submission
from tests.test_faults import (
    free_port,
    scratch_pg_database,
    spawn,
    stop_group,
    tail,
)

REPO = Path(__file__).resolve().parent.parent
GUIDE_PAGE = REPO / "docs" / "operations.md"
VENV_BIN = REPO / ".venv" / "bin"
HOST = "127.0.0.1"
GUIDE_MARKER = "<!-- production-guide:"
RUN_ID = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
TENANT = "prod"
PASSWORD = "prod-pass-0123456789"
RATE_LIMIT = 30

pytestmark = [pytest.mark.slow]


# =======================================================================================
# The guide, as docs/operations.md writes it


@dataclass
class Guide:
    env: dict[str, str]  # step 1, as written
    release: list[str]  # step 2, one shell command a line
    processes: list[str]  # step 3, one long-running command a line


def read_guide() -> Guide:
    """The shell block after the production-guide marker, by numbered step."""
    text = GUIDE_PAGE.read_text()
    assert GUIDE_MARKER in text, f"{GUIDE_PAGE} lost its production guide"
    block = text.split(GUIDE_MARKER, 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    guide = Guide(env={}, release=[], processes=[])
    step = 0
    for line in block.splitlines():
        numbered = re.match(r"^# (\d)\. ", line)
        if numbered:
            step = int(numbered.group(1))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if step == 1:
            words = shlex.split(line, comments=True)
            assert words[0] == "export", line
            for word in words[1:]:
                name, _, value = word.partition("=")
                guide.env[name] = value
        elif step == 2:
            guide.release.append(line)
        elif step == 3:
            guide.processes.append(line)
        else:
            raise AssertionError(f"a command outside the numbered steps: {line}")
    return guide


# The guide's variables this module runs with values of its own (every other one it keeps
# exactly as written).
SUBSTITUTED = (
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "PUBLIC_BASE_URL",
    "DATABASE_URL",
    "CACHE_URL",
    "STATIC_ROOT",
    "METRICS_TOKEN",
    "PROMETHEUS_MULTIPROC_DIR",
    "SLACK_SIGNING_SECRET",
    "SLACK_BOT_TOKEN",
)
KEPT = {
    "DEBUG": "0",
    "METRICS_ENABLED": "1",
    "JOB_CLUSTER_FOR_AUDIENCE": "clarify=telha-clarify,ingest=telha-ingest",
}
# What the test adds, none of it set by the guide.
TEST_ONLY = ("SLACK_API_URL", "HOOK_RATE_LIMIT_PER_MINUTE", "ASK_ENABLED")


def test_the_guide_is_what_this_module_runs() -> None:
    guide = read_guide()
    assert set(guide.env) == set(SUBSTITUTED) | set(KEPT)
    assert {k: guide.env[k] for k in KEPT} == KEPT
    assert not set(TEST_ONLY) & set(guide.env)
    for name, value in guide.env.items():  # placeholders only where this module fills in
        assert ("<" in value) <= (name in SUBSTITUTED), name
    assert guide.release == [
        "telha migrate --noinput",
        "telha collectstatic --noinput",
        'rm -rf "$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"',
    ]
    assert guide.processes == [
        "gunicorn -c gunicorn.conf.py telha.wsgi --bind 0.0.0.0:8000 --workers 3",
        "telha qcluster",
        "Q_CLUSTER_NAME=telha-clarify telha qcluster",
        "Q_CLUSTER_NAME=telha-ingest telha qcluster",
    ]


# =======================================================================================
# HTTP through the emulated TLS proxy


@dataclass
class Reply:
    status: int
    body: bytes
    headers: list[tuple[str, str]]

    def header(self, name: str) -> str:
        return next((v for k, v in self.headers if k.lower() == name.lower()), "")

    def cookies(self) -> dict[str, str]:
        jar: SimpleCookie = SimpleCookie()
        for k, v in self.headers:
            if k.lower() == "set-cookie":
                jar.load(v)
        return {name: morsel.value for name, morsel in jar.items()}

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass
class Http:
    port: int

    @property
    def origin(self) -> str:
        return f"https://{HOST}:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        cookies: dict[str, str] | None = None,
        source: str | None = None,
        timeout: float = 60,
    ) -> Reply:
        """One request on a fresh connection (so any worker may answer it), as the TLS
        proxy forwards it; `source` is the client address (127.0.0.x)."""
        hdrs = {"X-Forwarded-Proto": "https", **(headers or {})}
        if cookies:
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        conn = http.client.HTTPConnection(
            HOST, self.port, timeout=timeout, source_address=(source, 0) if source else None
        )
        try:
            data = body.encode() if isinstance(body, str) else body
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return Reply(resp.status, resp.read(), resp.getheaders())
        finally:
            conn.close()

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def api(self, method: str, path: str, key: str, data: Any = None) -> Reply:
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        body = None
        if data is not None:
            body = json.dumps(data)
            headers["Content-Type"] = "application/json"
        return self.request(method, path, body=body, headers=headers)

    def sign_in(self, login_path: str, email: str) -> dict[str, str]:
        """A real sign-in through the login form (CSRF cookie and token, the Referer a
        browser sends over HTTPS); the cookies of the session."""
        page = self.get(login_path)
        assert page.status == 200, page.text[:500]
        csrf = page.cookies()["csrftoken"]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, page.text[:500]
        form = urlencode(
            {"username": email, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)}
        )
        done = self.request(
            "POST",
            login_path,
            body=form,
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Referer": f"{self.origin}{login_path}",
            },
            cookies={"csrftoken": csrf},
        )
        assert done.status == 302, done.text[:1000]
        return {"csrftoken": csrf, "sessionid": done.cookies()["sessionid"]}


# =======================================================================================
# The stack


def workspace() -> dict[str, Any]:
    def person(name: str, role: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": f"{name.title()} Prod",
            "email": f"{name}@{TENANT}.test",
            "role": role,
            "groups": ["legal"],
            **extra,
        }

    return {
        "tenant": TENANT,
        "name": "Prod Corp",
        "groups": ["legal"],
        "people": [
            person("alice", "editor", aliases={"slackUserId": "U0ALICE"}, password=PASSWORD),
            person("bob", "editor", aliases={"slackUserId": "U0BOB"}),  # Slack only
            person("sam", "steward", password=PASSWORD),
        ],
    }


@dataclass
class Stack:
    guide: Guide
    env: dict[str, str]
    tmp: Path
    http: Http
    slack: SlackStub
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def metrics_dir(self) -> Path:
        return Path(self.env["PROMETHEUS_MULTIPROC_DIR"])

    def shell(self, line: str, timeout: float = 300) -> str:
        """One command of the guide (or an operator's), in the project folder, with the
        guide's environment."""
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"{line} exited {done.returncode}:\n{done.stderr[-3000:]}"
        print(f"{time.monotonic() - started:5.1f}s {line}")
        return done.stdout

    def shell_all(self, lines: list[str]) -> list[str]:
        """Independent commands side by side (the outputs, in order)."""
        outputs: list[str] = [""] * len(lines)
        errors: list[BaseException] = []

        def run(i: int) -> None:
            try:
                outputs[i] = self.shell(lines[i])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(lines))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return outputs

    def command(self, line: str) -> str:
        """A process line of the guide as this run starts it (its own port)."""
        return line.replace("0.0.0.0:8000", f"{HOST}:{self.http.port}")

    def start(self, name: str, line: str) -> None:
        log = self.tmp / f"{name}.log"
        self.procs[name] = spawn(["bash", "-c", self.command(line)], self.env, log)

    def wait_healthy(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.procs["web"].poll() is None, tail(self.tmp / "web.log")
            with contextlib.suppress(OSError):
                if self.http.get("/healthz", timeout=5).status == 200:
                    return
            time.sleep(0.3)
        raise AssertionError(f"gunicorn did not start\n{tail(self.tmp / 'web.log')}")

    def logs(self) -> dict[str, str]:
        return {p.stem: p.read_text(errors="replace") for p in self.tmp.glob("*.log")}

    def stop(self) -> None:
        """TERM every process group at once, then KILL what is left after a few seconds
        (their shutdown is not what this module tests)."""
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            stop_group(proc, grace=0)


def run_values(tmp: Path, port: int, database_url: str, slack_url: str) -> dict[str, str]:
    """This run's values for the guide's SUBSTITUTED variables (plus TEST_ONLY)."""
    return {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": HOST,
        "PUBLIC_BASE_URL": f"https://{HOST}:{port}",
        "DATABASE_URL": database_url,
        "CACHE_URL": f"redis://{HOST}:6379/0?key_prefix=telha-test-{uuid.uuid4().hex}",
        "STATIC_ROOT": str(tmp / "static"),
        "METRICS_TOKEN": secrets.token_urlsafe(24),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics"),
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_API_URL": slack_url,
        "HOOK_RATE_LIMIT_PER_MINUTE": str(RATE_LIMIT),
        "ASK_ENABLED": "1",
    }


def redis_available() -> bool:
    import redis

    try:
        return bool(redis.Redis(host=HOST, port=6379, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


@contextlib.contextmanager
def stack_database(tmp: Path) -> Iterator[str]:
    """A database of the stack's own: on the shared PostgreSQL server when the suite runs
    on PostgreSQL (dropped afterwards), else a SQLite file."""
    if connection.vendor != "postgresql":
        yield f"sqlite:///{tmp / 'telha.sqlite3'}"
        return
    with scratch_pg_database(f"telha_prod_{RUN_ID}") as (_server, url):
        yield url


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if not redis_available():
        pytest.skip(f"no Redis at {HOST}:6379 (.ci/run starts one)")
    tmp = tmp_path_factory.mktemp("production")
    guide = read_guide()
    slack = RunningStub()
    with stack_database(tmp) as database_url:
        port = free_port()
        values = run_values(tmp, port, database_url, slack.stub.url)
        env = {
            "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8",
            **{k: values.get(k, v) for k, v in guide.env.items()},
            **{k: values[k] for k in TEST_ONLY},
        }
        built = Stack(guide, env, tmp, Http(port), slack.stub)
        try:
            # The release steps are independent of each other: side by side, to save time.
            built.shell_all(guide.release)
            built.start("web", guide.processes[0])
            (tmp / "workspace.json").write_text(json.dumps(workspace()))
            built.shell(f"telha load_workspace {tmp / 'workspace.json'}")
            create = f"telha api_key create --tenant {TENANT} --json"
            keys = built.shell_all(
                [f"{create} --audience ingest", f"{create} --person alice@{TENANT}.test"]
            )
            built.keys = {
                name: json.loads(out)["key"]
                for name, out in zip(("ingest", "alice"), keys, strict=True)
            }
            built.wait_healthy()
            yield built
        finally:
            built.stop()
            slack.stop()


def submission(external_id: str) -> dict[str, Any]:
    text = "This agreement is effective from the start of next month."
    sub = Submission(external_id, text, title="Agreement")
    fact = sub.fact(
        external_id,
        name=f"Term of {external_id}",
        valid_from=OMIT,
        valid_to=OMIT,
        confidence=0.9,
        span=sub.span(0, len(text)),
    )
    sub.person(f"alice@{TENANT}.test", of=[fact])
    sub.ambiguity(
        fact,
        severity_hint=OMIT,
        candidates=[
            {"validFrom": "2026-12-01T00:00:00Z", "label": "1 Dec 2026"},
            {"validFrom": "2027-01-01T00:00:00Z", "label": "1 Jan 2027"},
        ],
        detector_confidence=0.8,
        applied_confidence=0.5,
    )
    return sub.payload()


def submitted(stack: Stack, external_id: str) -> dict[str, Any]:
    """A submission through the API; its one clarification."""
    reply = stack.http.api("POST", "/v1/submissions", stack.keys["ingest"], submission(external_id))
    assert reply.status == 201, reply.text
    [clarification] = reply.json()["clarifications"]
    return dict(clarification)


def concurrently(calls: list[Callable[[], Reply]]) -> list[Reply]:
    """Every call at once (a barrier), each on its own connection."""
    barrier = threading.Barrier(len(calls))
    replies: list[Reply | None] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait(timeout=30)
        replies[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(r is not None for r in replies)
    return [r for r in replies if r is not None]


# =======================================================================================
# 1. Static files


class _Assets(HTMLParser):
    """The stylesheets and scripts a page links."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and "stylesheet" in (a.get("rel") or "").split() and a.get("href"):
            self.urls.append(str(a["href"]))
        if tag == "script" and a.get("src"):
            self.urls.append(str(a["src"]))


def linked_assets(html: str) -> list[str]:
    parser = _Assets()
    parser.feed(html)
    return parser.urls


CONTENT_TYPES = {".css": ("text/css",), ".js": ("text/javascript", "application/javascript")}


def test_every_stylesheet_and_script_the_pages_link_is_served(stack: Stack) -> None:
    steward = stack.http.sign_in("/admin/login/", f"sam@{TENANT}.test")
    alice = stack.http.sign_in("/accounts/login/", f"alice@{TENANT}.test")
    clar = submitted(stack, "static/1")
    pages = {
        "/admin/login/": None,
        "/admin/": steward,
        "/admin/clarify/clarification/": steward,
        f"/admin/clarify/clarification/{clar['id']}/change/": steward,
        "/admin/tenancy/person/": steward,
        "/inbox/": alice,
        "/v1/docs/": None,
    }
    checked: dict[str, str] = {}
    for page, cookies in pages.items():
        reply = stack.http.get(page, cookies=cookies)
        assert reply.status == 200, (page, reply.status, reply.text[:500])
        for url in linked_assets(reply.text):
            path = urlsplit(url)._replace(scheme="", netloc="").geturl()
            asset = stack.http.get(path, headers={"Accept-Encoding": "gzip"})
            assert asset.status == 200, (page, url, asset.status)
            suffix = Path(urlsplit(url).path).suffix
            kind = asset.header("Content-Type").split(";")[0]
            assert kind in CONTENT_TYPES.get(suffix, CONTENT_TYPES[".js"]), (url, kind)  # ?script
            checked[path] = asset.header("Cache-Control")
            if path.startswith("/static/"):
                assert asset.header("Content-Encoding") == "gzip", url
    static = {p: cache for p, cache in checked.items() if p.startswith("/static/")}
    assert any("/static/admin/css/base." in p for p in static)  # hashed names
    assert any("swagger-ui-bundle." in p for p in static)
    for path, cache in static.items():
        assert re.search(r"\.[0-9a-f]{12}\.(css|js)$", path), path
        assert "max-age=315360000" in cache and "immutable" in cache, (path, cache)


@pytest.mark.browser
def test_the_admin_is_styled_and_swagger_ui_renders_in_a_browser(
    stack: Stack, screenshots: Path, a11y: Any
) -> None:
    """The admin styled from the collected static files and swagger-ui rendered, in
    Chromium against gunicorn; axe-core finds no serious or critical violation on these
    pages (swagger-ui's own rendering left out: tests/steward/test_csp.py `SWAGGER_UI`)."""
    from tests.browser import CHROMIUM_ARGS, chromium, playwright
    from tests.steward.test_csp import SWAGGER_UI

    executable = chromium()
    sync_api = playwright()
    steward = stack.http.sign_in("/admin/login/", f"sam@{TENANT}.test")
    shots = screenshots
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = a11y.new_context(browser, extra_http_headers={"X-Forwarded-Proto": "https"})
            page = context.new_page()
            failed: list[str] = []

            def refused(response: Any) -> None:
                # The browser asks for /favicon.ico by itself; no page links it.
                if response.status >= 400 and not response.url.endswith("/favicon.ico"):
                    failed.append(f"{response.status} {response.url}")

            page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
            page.on("response", refused)
            base = f"http://{HOST}:{stack.http.port}"
            page.goto(f"{base}/admin/login/")
            header = page.eval_on_selector("#header", "e => getComputedStyle(e).backgroundColor")
            assert header not in ("rgba(0, 0, 0, 0)", "transparent"), header
            a11y.check(page)
            page.context.add_cookies(
                [{"name": "sessionid", "value": steward["sessionid"], "url": base}]
            )
            page.goto(f"{base}/admin/clarify/clarification/")
            page.wait_for_selector("#changelist")
            assert page.eval_on_selector("#header", "e => getComputedStyle(e).display") == "flex"
            a11y.check(page)
            page.screenshot(path=str(shots / "production-admin.png"))
            page.goto(f"{base}/v1/docs/")
            page.wait_for_selector(".swagger-ui .opblock", timeout=30000)
            title = page.inner_text(".swagger-ui .info .title")
            assert "Telha clarify API" in title
            assert page.locator(".swagger-ui .opblock").count() >= 10
            a11y.check(page, **SWAGGER_UI)
            a11y.done()
            page.screenshot(path=str(shots / "production-swagger.png"))
            assert failed == []
        finally:
            browser.close()


# =======================================================================================
# 2. The shared cache across gunicorn's workers


def metric_files(stack: Stack) -> set[str]:
    """The pids that wrote metrics into the multiprocess directory."""
    return {p.stem.rsplit("_", 1)[-1] for p in stack.metrics_dir.glob("*.db")}


def wait_outside_window_end() -> None:
    """Start a burst well inside a one-minute rate-limit window."""
    into = time.time() % 60
    if into > 45:
        time.sleep(61 - into)


def test_the_hook_rate_limit_holds_across_workers(stack: Stack) -> None:
    """30 a minute per client IP with 3 workers: 90 requests at once let 30 through (with
    a per-process count each worker would let its own 30 through)."""
    wait_outside_window_end()
    window = int(time.time() // 60)

    def hook() -> Reply:
        return stack.http.request(
            "POST", "/hooks/slack/events", body="{}", source="127.0.0.2", timeout=120
        )

    replies = concurrently([hook] * (3 * RATE_LIMIT))
    same_window = int(time.time() // 60) == window
    limited = [r for r in replies if r.status == 429]
    passed = [r for r in replies if r.status != 429]
    assert {r.status for r in passed} == {401}  # unsigned: counted, then refused
    assert all(r.json()["code"] == "RATE_LIMITED" for r in limited)
    if same_window:
        assert len(passed) == RATE_LIMIT
    else:  # the burst straddled a minute: two windows' budgets at most
        assert RATE_LIMIT <= len(passed) <= 2 * RATE_LIMIT
    assert len(metric_files(stack)) >= 2  # the burst was answered by several workers
    # The counter lives in Redis under this deployment's key prefix (CACHE_URL's).
    prefix = stack.env["CACHE_URL"].split("key_prefix=", 1)[1]
    assert redis_keys(f"{prefix}:*hookrl:ip:127.0.0.2:*")


def redis_keys(pattern: str) -> list[bytes]:
    import redis

    return list(redis.Redis(host=HOST, port=6379).scan_iter(match=pattern, count=1000))


def dm_event(event_id: str) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "team_id": "T0PROD",
        "api_app_id": "A0TELHA",
        "event": {
            "type": "message",
            "channel_type": "im",
            "channel": "D0BOB",
            "user": "U0BOB",
            "text": "when does the agreement start?",
            "ts": "1700000400.000100",
            "event_ts": "1700000400.000100",
        },
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1700000400,
    }


def test_a_slack_event_delivered_nine_times_at_once_is_answered_once(stack: Stack) -> None:
    event_id = f"Ev{uuid.uuid4().hex[:10].upper()}"
    body = json.dumps(dm_event(event_id))

    def deliver(retry: int) -> Callable[[], Reply]:
        headers = {"Content-Type": "application/json", **signed_headers(body)}
        if retry:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        return lambda: stack.http.request(
            "POST", "/hooks/slack/events", body=body, headers=headers, source="127.0.0.3"
        )

    before = len(stack.slack.of("chat.postMessage"))
    replies = concurrently([deliver(retry) for retry in (0, 0, 0, 1, 1, 2, 2, 3, 3)])
    assert [r.status for r in replies] == [200] * 9, [r.text[:200] for r in replies]
    answers = [
        c for c in stack.slack.of("chat.postMessage")[before:] if c.body["channel"] == "D0BOB"
    ]
    assert len(answers) == 1, [a.body for a in answers]


# =======================================================================================
# 3. Metrics from every worker


def scrape(stack: Stack) -> dict[str, float]:
    reply = stack.http.get(
        "/metrics", headers={"Authorization": f"Bearer {stack.env['METRICS_TOKEN']}"}
    )
    assert reply.status == 200, reply.text[:500]
    samples = {}
    for line in reply.text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_every_scrape_reports_the_same_totals_whichever_worker_answers(stack: Stack) -> None:
    assert stack.http.get("/metrics").status == 401  # the token is required
    concurrently([lambda: stack.http.get("/healthz")] * 30)
    scrapes = [scrape(stack) for _ in range(12)]
    assert len(metric_files(stack)) >= 2

    def totals(samples: dict[str, float]) -> dict[str, float]:
        # Not the scrapes themselves (each counts itself) nor the age of the ready jobs
        # (it grows between scrapes).
        skip = ('endpoint="metrics"', "telha_job_ready_age_seconds")
        return {k: v for k, v in samples.items() if not any(x in k for x in skip)}

    first = totals(scrapes[0])
    for later in scrapes[1:]:
        assert totals(later) == first, set(totals(later).items()) ^ set(first.items())
    healthz = 'telha_http_requests_total{endpoint="healthz",method="GET",status="200"}'
    assert scrapes[0][healthz] >= 31
    # The scrapes themselves, counted by whichever worker answered each: all of them.
    scraped = 'telha_http_requests_total{endpoint="metrics",method="GET",status="200"}'
    assert scrapes[-1][scraped] - scrapes[0].get(scraped, 0) == 11


# =======================================================================================
# 7. The smoke test: a submission answered through a card tap, bound


CLUSTERS = ("cluster", "cluster-clarify", "cluster-ingest")


@pytest.mark.postgres
def test_a_submission_is_answered_by_a_card_tap_and_bound(stack: Stack) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the production stack runs on PostgreSQL")
    for name, line in zip(
        ("cluster", "cluster-clarify", "cluster-ingest"), stack.guide.processes[1:], strict=True
    ):
        stack.start(name, line)
    clar = submitted(stack, "smoke/1")
    card = wait_for_card(stack, clar["id"])
    value = next(
        e["value"]
        for b in card.blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e.get("action_id") == "clarify_answer_0"
    )
    payload = block_actions(
        action_id="clarify_answer_0",
        value=value,
        user="U0ALICE",
        channel=card.response["channel"],
        ts=card.response["ts"],
        blocks=card.blocks,
        team="T0PROD",
    )
    body = form_body(payload)
    tap = stack.http.request(
        "POST",
        "/hooks/slack/interactivity",
        body=body,
        headers={"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)},
    )
    assert tap.status == 200, tap.text
    record = stack.http.api("GET", f"/v1/clarifications/{clar['id']}", stack.keys["alice"]).json()
    assert record["state"] == "answered", record
    fact = stack.http.api("GET", f"/v1/nodes/{record['target']}", stack.keys["alice"]).json()
    assert fact["pendingClarification"] is None, fact
    assert fact["evidenceClass"] == "human_clarification", fact
    tapped = datetime(2026, 12, 1, tzinfo=UTC).timestamp() * 1_000_000  # candidate 0
    assert fact["validFrom"] == tapped, fact
    samples = scrape(stack)  # the clarify cluster's delivery is in the web's totals
    assert samples['telha_delivery_events_total{event="delivered",reason=""}'] >= 1
    assert samples['telha_audit_events_total{type="bound"}'] >= 1
    for name, log in stack.logs().items():
        assert "Traceback" not in log, f"{name}:\n{log[-3000:]}"


def wait_for_card(stack: Stack, clarification_id: str, timeout: float = 90) -> Any:
    """The card the clarify cluster posted to the Slack stub for this clarification."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for call in stack.slack.of("chat.postMessage"):
            if clarification_id in json.dumps(call.body) and call.response:
                return call
        for name in ("cluster", "cluster-clarify", "cluster-ingest"):
            assert stack.procs[name].poll() is None, tail(stack.tmp / f"{name}.log")
        time.sleep(0.3)
    raise AssertionError(
        f"no card within {timeout:.0f}s\n{tail(stack.tmp / 'cluster-clarify.log')}"
    )
