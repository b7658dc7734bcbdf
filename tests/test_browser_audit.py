"""The browser tests' accessibility audit can fail (tests/browser.py `A11y`): axe-core is
the pinned one and is loaded into every page of an audited context, a serious or critical
violation fails the check, and a page shown without a check fails `done()`."""

import json
from pathlib import Path

import pytest

from tests.browser import AXE_PACKAGE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_audit_fails_on_a_violation_and_on_a_page_left_unchecked(browser, live_server, a11y):
    lock = json.loads(Path(AXE_PACKAGE / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/axe-core"]["version"]
    context = a11y.new_context(browser)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        assert page.evaluate("axe.version") == pinned
        a11y.check(page)  # the sign-in page passes
        page.goto(f"{live_server.url}/accounts/login/?next=/inbox/")
        page.goto(f"{live_server.url}/accounts/login/?next=/inbox/answer")  # still shown
        with pytest.raises(AssertionError, match="without an axe-core check") as missed:
            a11y.done()
        assert "login/?next=/inbox/'" in str(missed.value)  # left unchecked
        assert "login/?next=/inbox/answer'" in str(missed.value)  # shown, not checked

        # A select without a name for assistive technology: critical, and named.
        page.evaluate("document.querySelector('main').append(document.createElement('select'))")
        with pytest.raises(pytest.fail.Exception, match=r"critical select-name"):
            a11y.check(page)
        # A part that is not ours to fix can be left out, a rule allowed on one page.
        a11y.check(page, exclude=["main select"])
        a11y.check(page, allowed={"select-name"})
        a11y.done()
    finally:
        context.close()
