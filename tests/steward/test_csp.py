"""Content-Security-Policy (issue 19, item 6): every HTML page — the inbox, sign-in, the
steward admin, the API docs — sends the policy; none carries an inline script; and in
Chromium the admin, the inbox and swagger-ui run under it with no CSP violation."""

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from .conftest import PASSWORD, STEWARD_PASSWORD, change_url, run_worker, submit_with

CSP = "Content-Security-Policy"


def directives(header: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        out[name] = values
    return out


class _Scripts(HTMLParser):
    """Inline scripts and event-handler attributes of a page (what `script-src 'self'`
    blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self._in_inline = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        handlers = [n for n in names if n.startswith("on")]
        if handlers:
            self.inline.append(f"<{tag} {' '.join(handlers)}>")
        if any((v or "").strip().lower().startswith("javascript:") for v in names.values()):
            self.inline.append(f"<{tag}> javascript: URL")
        if tag == "script" and not names.get("src"):
            kind = (names.get("type") or "text/javascript").lower()
            self._in_inline = kind in {"text/javascript", "module", "application/javascript"}

    def handle_data(self, data: str) -> None:
        if self._in_inline and data.strip():
            self.inline.append(f"<script>{data.strip()[:60]}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_inline = False


def inline_scripts(html: str) -> list[str]:
    parser = _Scripts()
    parser.feed(html)
    return parser.inline


def assert_policy(resp: Any) -> None:
    assert resp.status_code == 200, (resp.status_code, resp.content[:300])
    assert resp["Content-Type"].startswith("text/html"), resp["Content-Type"]
    policy = directives(resp[CSP])
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["script-src"] == ["'self'"]  # no 'unsafe-inline', no hosts, no eval
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert "'unsafe-inline'" not in policy.get("script-src-elem", [])
    assert inline_scripts(resp.content.decode()) == []


def _can_sign_in(person: Any) -> None:
    person.user.set_password(PASSWORD)
    person.user.save()


@pytest.fixture
def clar(ingest_client, people):
    """A clarification whose card is in alice's inbox."""
    _can_sign_in(people["alice"])
    opened = submit_with(ingest_client)
    assert run_worker() >= 1
    return opened


@pytest.fixture
def alice_inbox(people) -> Client:
    client = Client()
    assert client.login(username="alice@acme.test", password=PASSWORD)
    return client


def test_every_html_page_sends_the_policy(clar, steward_client, alice_inbox, settings):
    settings.ASK_ENABLED = True
    anonymous = Client()
    for path in ["/accounts/login/", "/admin/login/", "/v1/docs/"]:
        assert_policy(anonymous.get(path))
    inbox = alice_inbox.get("/inbox/")
    assert_policy(inbox)
    assert "nonce" in inbox.content.decode()  # the card is on the page, not an empty inbox
    for path in ["/inbox/ask/", f"/inbox/facts/{clar.target_id}/"]:
        assert_policy(alice_inbox.get(path))
    for path in [
        "/admin/",
        "/admin/clarify/clarification/",
        "/admin/clarify/clarification/?attention=yes",
        "/admin/clarify/clarification/digest/",
        change_url(clar),
        "/admin/graph/nodeversion/",
        "/admin/ingest/document/upload/",
    ]:
        assert_policy(steward_client.get(path))


def test_the_api_docs_load_their_start_script_from_a_url(clar):
    page = Client().get("/v1/docs/").content.decode()
    sources = re.findall(r'<script src="([^"]+)"', page)
    assert any("?script" in s or "&script" in s for s in sources), sources
    start = Client().get("/v1/docs/?script=")
    assert start.status_code == 200
    assert start["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in start.content


def test_json_and_error_responses_carry_the_policy_too(workspace):
    for resp in [Client().get("/healthz"), Client().get("/v1/clarifications")]:
        assert directives(resp[CSP])["frame-ancestors"] == ["'none'"]


def test_the_inline_script_check_can_fail():
    assert inline_scripts("<script>alert(1)</script>") == ["<script>alert(1)"]
    assert inline_scripts('<a href="javascript:x()">') == ["<a> javascript: URL"]
    assert inline_scripts('<body onload="x()">') == ["<body onload>"]
    assert inline_scripts('<script src="/static/a.js"></script>') == []
    assert inline_scripts('<script type="application/json">{"a": 1}</script>') == []


# --- in the browser -----------------------------------------------------------------------

VIOLATIONS_INIT = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_admin_inbox_and_swagger_ui_run_under_the_policy(
    browser, live_server, ingest_client, people, a11y
):
    _can_sign_in(people["alice"])
    clar = submit_with(ingest_client)
    assert run_worker() >= 1
    console: list[str] = []
    context = a11y.new_context(browser)  # axe-core audits each page too (tests/browser.py)
    try:
        context.add_init_script(VIOLATIONS_INIT)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        seen = _walk(page, live_server.url, clar, a11y)
        a11y.done()
    finally:
        context.close()
    csp_console = [m for m in console if "Content Security Policy" in m or "CSP" in m]
    assert csp_console == [], csp_console
    assert seen == {"violations": [], "swagger_operations": True}


# swagger-ui (drf-spectacular's page, swagger-ui's rendering) is not ours to fix: its own
# rendering is left out of the audit, and so is the `lang` its page template leaves off
# <html> (docs/steward.md "Accessibility").
SWAGGER_UI = {"exclude": ["#swagger-ui"], "allowed": {"html-has-lang"}}


def _walk(page: Any, base: str, clar: Any, a11y: Any) -> dict[str, Any]:
    """Sign in to the admin and open its pages, the inbox, then swagger-ui; collect the
    violations each page reported; audit each page with axe-core."""
    violations: list[str] = []

    def visit(url: str) -> None:
        page.goto(url)
        page.wait_for_load_state("networkidle")
        violations.extend(page.evaluate("window.__csp"))
        if "/v1/docs/" not in url:
            a11y.check(page)

    page.goto(f"{base}/admin/login/?next=/admin/")
    a11y.check(page)
    page.fill("#id_username", "sam@acme.test")
    page.fill("#id_password", STEWARD_PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    violations.extend(page.evaluate("window.__csp"))
    a11y.check(page)
    for path in [
        "/admin/clarify/clarification/",
        change_url(clar),
        "/admin/clarify/clarification/digest/",
    ]:
        visit(base + path)
    # The admin's own JavaScript runs under the policy: its sidebar toggle works.
    shifted = "document.getElementById('main').classList.contains('shifted')"
    before = page.evaluate(shifted)
    page.click("#toggle-nav-sidebar")
    assert page.evaluate(shifted) != before
    page.context.clear_cookies()  # signed out: the inbox sign-in comes next

    page.goto(f"{base}/accounts/login/")
    a11y.check(page)
    page.fill("input[name=username]", "alice@acme.test")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.login [type=submit]")
    page.wait_for_url(re.compile(r"/inbox/$"))
    violations.extend(page.evaluate("window.__csp"))
    a11y.check(page)

    visit(f"{base}/v1/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)  # swagger-ui rendered the operations
    swagger = page.locator(".opblock").count() > 5
    violations.extend(page.evaluate("window.__csp"))
    a11y.check(page, **SWAGGER_UI)
    return {"violations": violations, "swagger_operations": swagger}
