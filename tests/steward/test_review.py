"""The steward's review pages in detail, without a browser: search and filters of the
clarification list, its ordering, what the decide page shows, the paginated dead-letter
digest, the current nonce state in the delivery history, the override's transaction, and
the steward CLI's queue and exit codes."""

import html
import re
from typing import Any
from unittest import mock

import pytest
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

import clarify.audit
from clarify.models import AuditEvent, Clarification, State
from delivery.models import Delivery

from .conftest import (
    SPAN_TEXT,
    assert_nothing_written,
    bulk_clarifications,
    change_url,
    cli,
    reask_form,
    run_worker,
    snapshot,
)

LIST = "/admin/clarify/clarification/"


def listed(client: Any, query: str = "") -> list[str]:
    """The clarification ids the changelist shows, in the order shown."""
    resp = client.get(f"{LIST}{query}")
    assert resp.status_code == 200
    ids = re.findall(r"/admin/clarify/clarification/([0-9a-f-]{36})/change/", resp.content.decode())
    return list(dict.fromkeys(ids))


def section_rows(page: str, heading: str) -> list[list[str]]:
    """The table rows of the decide page's section `heading`, as cell texts."""
    section = page.split(f"<h2>{heading}</h2>", 1)[1].split("</section>", 1)[0]
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


# --- the list: search, filters, ordering -----------------------------------------------------


def test_search_by_target_name_and_by_person(submit, answer, people, steward_client):
    alpha = submit(external_id="s/alpha", name="Alpha lease", links=[("AUTHORED_BY", "alice")])
    beta = submit(external_id="s/beta", name="Beta deadline", links=[("AUTHORED_BY", "bob")])
    gamma = submit(external_id="s/gamma", name="Gamma deadline", links=[("AUTHORED_BY", "olga")])
    assert answer("bob", gamma, index=0).status_code == 200  # bob answered gamma, not asked
    assert set(listed(steward_client)) == {str(alpha.pk), str(beta.pk), str(gamma.pk)}

    assert listed(steward_client, "?q=alpha") == [str(alpha.pk)]
    assert set(listed(steward_client, "?q=deadline")) == {str(beta.pk), str(gamma.pk)}
    # By person: asked (beta) or responded (gamma); by name or by email.
    assert set(listed(steward_client, "?q=bob")) == {str(beta.pk), str(gamma.pk)}
    assert set(listed(steward_client, "?q=Bob+Named")) == {str(beta.pk), str(gamma.pk)}
    assert listed(steward_client, "?q=alice%40acme.test") == [str(alpha.pk)]
    assert listed(steward_client, "?q=nobody-at-all") == []


def test_kind_filter_and_ordering(submit, steward_client):
    made = {
        kind: submit(external_id=f"k/{kind}", name=f"{kind} term", kind=kind, severity_hint=sev)
        for kind, sev in (
            ("relative_date", "critical"),
            ("conflicting_dates", "low"),
            ("undated", "high"),
            ("low_confidence_extraction", "normal"),
        )
    }
    ids = {kind: str(c.pk) for kind, c in made.items()}
    assert listed(steward_client, "?kind__exact=undated") == [ids["undated"]]
    assert listed(steward_client, "?kind__exact=conflicting_dates") == [ids["conflicting_dates"]]
    # Newest first by default.
    assert listed(steward_client) == [
        ids[k]
        for k in ("low_confidence_extraction", "undated", "conflicting_dates", "relative_date")
    ]
    # The severity column sorts by risk (low < normal < high < critical), not by spelling.
    by_risk = [
        ids[k]
        for k in ("conflicting_dates", "low_confidence_extraction", "undated", "relative_date")
    ]
    header = steward_client.get(LIST).content.decode().split("column-severity_badge", 1)[1]
    column = re.search(r'href="\?o=(\d+)', header.split("</th>", 1)[0]).group(1)
    assert listed(steward_client, f"?o={column}") == by_risk
    assert listed(steward_client, f"?o=-{column}") == by_risk[::-1]


# --- the decide page ---------------------------------------------------------------------------


def test_decide_page_shows_excerpt_candidates_responses_and_the_best_guess(
    submit, answer, people, steward_client
):
    clar = submit(severity_hint="critical")
    assert answer("vera", clar, index=1).status_code == 202  # a viewer: an attestation
    assert answer("alice", clar, index=1).status_code == 202  # an editor: 1 of 2
    page = steward_client.get(change_url(clar)).content.decode()

    excerpt = page.split("<h2>Source</h2>", 1)[1].split("</section>", 1)[0]
    assert f"“{SPAN_TEXT}”" in html.unescape(excerpt)
    assert section_rows(page, "Candidates") == [
        ["0", "1 Oct 2026 (next quarter)", "2026-10-01 00:00:00 UTC → ∞"],
        ["1", "12 June 2026 (signature)", "2026-06-12 00:00:00 UTC → ∞"],
        ["2", "1 Jul 2026 (countersignature)", "2026-07-01 00:00:00 UTC → ∞"],
    ]
    responses = section_rows(page, "Responses")
    assert [(r[1], r[2], r[3], r[4], r[5]) for r in responses] == [
        ("Vera Viewer", "viewer", "12 June 2026 (signature)", "api", "attestation"),
        ("Alice Author", "editor", "12 June 2026 (signature)", "api", "binding_candidate"),
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", r[0]) for r in responses)
    [version] = section_rows(page, "Fact versions")
    assert version[1] == "2026-10-01 00:00:00 UTC → ∞"  # the applied best guess
    assert version[-1] == "best guess (pending)"
    assert "needs 2" in page and "partially confirmed" in page


@pytest.mark.parametrize(
    ("state", "allow", "shown"),
    [
        ("open", True, True),
        ("open", False, False),
        ("conflicted", False, True),  # resolving a conflict is not overriding the quorum
        ("answered", True, False),  # an answered one is upheld or corrected from its disputes
    ],
)
def test_the_decide_page_offers_the_override_the_answer_would_accept(
    state, allow, shown, submit, answer, conflicted, steward_client
):
    """The override form appears exactly where `steward_may_override` (the answer's own
    rule) lets a steward override a clarification not yet answered."""
    clar = conflicted() if state == "conflicted" else submit()
    if state == "answered":
        assert answer("alice", clar, index=1).status_code == 200
    policy = {**clar.quorum_policy, "allowStewardOverride": allow}
    Clarification.objects.filter(pk=clar.pk).update(quorum_policy=policy)
    assert Clarification.objects.get(pk=clar.pk).state == state

    page = steward_client.get(change_url(clar)).content.decode()

    assert ('name="action" value="override"' in page) is shown


def test_override_and_its_reason_commit_together(conflicted, steward_client):
    """The override's binding and its reason event are one transaction: when writing the
    reason fails, the binding is rolled back too."""
    clar = conflicted()
    before = snapshot()
    real = clarify.audit.audit_events_append

    def failing_append(events: list[AuditEvent], **kwargs: Any) -> None:
        if any(e.type == "override_reason" for e in events):
            raise RuntimeError("audit store unavailable")
        return real(events, **kwargs)

    with (
        mock.patch.object(clarify.audit, "audit_events_append", side_effect=failing_append),
        pytest.raises(RuntimeError, match="audit store unavailable"),
    ):
        steward_client.post(
            change_url(clar), {"action": "override", "answer_index": "1", "reason": "why"}
        )
    assert_nothing_written(before)
    assert Clarification.objects.get(pk=clar.pk).state == State.CONFLICTED


# --- the dead-letter digest --------------------------------------------------------------------


def _dead_letter(workspace: Any, n: int, candidate: Any, prefix: str) -> list[Clarification]:
    clars = bulk_clarifications(workspace, n, state=State.DEAD_LETTERED, prefix=prefix)
    AuditEvent.objects.bulk_create(
        [
            AuditEvent(
                tenant=workspace,
                clarification=c,
                at=1,
                type="dead_lettered",
                detail={
                    "skipReasons": [
                        {
                            "attempt": 0,
                            "candidate": str(candidate.pk),
                            "reason": "NO_READ_PERMISSION",
                        },
                        {"attempt": 1, "candidate": None, "reason": "NO_DELIVERY_ALIAS"},
                    ]
                },
            )
            for c in clars
        ]
    )
    return clars


def _digest(client: Any, query: str = "") -> tuple[str, int]:
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(f"{LIST}digest/{query}")
    assert resp.status_code == 200
    return resp.content.decode(), len(ctx.captured_queries)


def test_digest_is_paginated_and_names_the_candidates(workspace, people, steward_client):
    olga = people["olga"]
    _dead_letter(workspace, 3, olga, "few")
    _, few = _digest(steward_client)
    _dead_letter(workspace, 57, olga, "many")
    first, many = _digest(steward_client)
    assert many == few, (few, many)  # one query for every candidate name, not one per row

    rows = re.findall(r'<a href="/admin/clarify/clarification/([0-9a-f-]{36})/change/">', first)
    assert len(rows) == 50
    assert "60 dead-lettered · page 1 of 2" in first and 'href="?p=2"' in first
    assert "Olga Owner" in first and str(olga.pk) not in re.sub(r'title="[^"]*"', "", first)
    assert re.search(r"1 → <span[^>]*>steward</span>: <code>NO_DELIVERY_ALIAS</code>", first)
    second, _ = _digest(steward_client, "?p=2")
    rest = re.findall(r'<a href="/admin/clarify/clarification/([0-9a-f-]{36})/change/">', second)
    assert len(rest) == 10 and not set(rest) & set(rows)
    assert "page 2 of 2" in second and 'href="?p=1"' in second
    dead = Clarification.objects.filter(state=State.DEAD_LETTERED)
    assert set(rows) | set(rest) == {str(pk) for pk in dead.values_list("pk", flat=True)}


# --- delivery history: the nonce as it stands now ---------------------------------------------


def _history_nonces(steward_client: Any, clar: Any) -> tuple[list[Any], list[str]]:
    data = cli("clarify", "show", str(clar.pk), "--json")
    page = steward_client.get(change_url(clar)).content.decode()
    return (
        [(h["outcome"], h["nonceState"]) for h in data["deliveryHistory"]],
        [row[6] for row in section_rows(page, "Delivery history")],
    )


def test_delivery_history_shows_the_nonce_closed_by_binding(
    submit, answer, passwords, steward_client
):
    passwords("alice")
    clar = submit(links=[("AUTHORED_BY", "alice")])
    assert run_worker() == 1
    assert _history_nonces(steward_client, clar) == ([("delivered", "active")], ["active"])
    assert answer("alice", clar, index=0).status_code == 200  # binds: her card closes
    assert Delivery.objects.get(clarification=clar).nonce_state == "closed"
    assert _history_nonces(steward_client, clar) == ([("delivered", "closed")], ["closed"])


def test_delivery_history_shows_the_nonce_revoked_by_a_reask(
    submit, people, passwords, steward_client
):
    passwords("alice")
    clar = submit(links=[("AUTHORED_BY", "alice")])
    assert run_worker() == 1
    steward_client.post(change_url(clar), reask_form(people["olga"]))
    assert Delivery.objects.get(clarification=clar).nonce_state == "revoked"
    assert _history_nonces(steward_client, clar) == ([("delivered", "revoked")], ["revoked"])


# --- the steward CLI ---------------------------------------------------------------------------


def test_queue_outputs_the_whole_set_unless_limited(workspace):
    made = bulk_clarifications(workspace, 230, state=State.EXPIRED, severity="low")
    bulk_clarifications(workspace, 5, state=State.OPEN, severity="low", prefix="calm")
    rows = cli("clarify", "queue", "--tenant", "acme", "--json")
    assert len(rows) == 230 and {r["id"] for r in rows} == {str(c.pk) for c in made}
    assert rows[0]["targetName"].startswith("bulk term")
    assert len(cli("clarify", "queue", "--tenant", "acme").splitlines()) == 231  # + header
    newest = list(
        Clarification.objects.filter(state=State.EXPIRED)
        .order_by("-created_at", "id")
        .values_list("pk", flat=True)[:10]
    )
    limited = cli("clarify", "queue", "--tenant", "acme", "--limit", "10", "--json")
    assert [r["id"] for r in limited] == [str(pk) for pk in newest]
    with pytest.raises(CommandError) as bad:
        cli("clarify", "queue", "--limit", "0")
    assert bad.value.returncode == 2


def test_steward_cli_refusals_exit_1_and_bad_usage_exits_2(conflicted):
    clar = conflicted()
    before = snapshot()
    refusals = [
        (("clarify", "review", str(clar.pk), "--responder", "alice@acme.test", "--index", "0"), 1),
        (("clarify", "review", str(clar.pk), "--responder", "nobody@acme.test", "--index", "0"), 1),
        (("clarify", "review", str(clar.pk), "--responder", "sam@acme.test", "--index", "9"), 1),
        (("clarify", "review", "not-an-id", "--responder", "sam@acme.test", "--index", "0"), 1),
        (("clarify", "show", "not-an-id"), 1),
        (("clarify", "queue", "--tenant", "nope"), 1),
        (("clarify", "erase-attribution", "--tenant", "acme", "--person", "no@acme.test"), 1),
        (("gdpr_erase", "--tenant", "acme", "--person", "no@acme.test"), 1),
        (("clarify", "review", str(clar.pk), "--responder", "sam@acme.test"), 2),
        (
            (
                "clarify",
                "review",
                str(clar.pk),
                "--responder",
                "sam@acme.test",
                "--index",
                "0",
                "--from",
                "2026-01-01T00:00:00Z",
            ),
            2,
        ),
        (("clarify", "queue", "--limit", "-1"), 2),
    ]
    for args, code in refusals:
        with pytest.raises(CommandError) as refused:
            cli(*args)
        assert refused.value.returncode == code, (args, str(refused.value))
    assert_nothing_written(before)


def test_decide_page_draws_the_versions_as_svg(conflicted, steward_client):
    clar = conflicted()
    page = steward_client.get(change_url(clar)).content.decode()
    assert page.count('<svg class="fact-timeline"') == 1
    assert page.count('class="version version-pending"') == 1
    resp = steward_client.post(
        change_url(clar), {"action": "override", "answer_index": "1", "reason": "signed copy"}
    )
    assert resp.status_code == 302
    page = steward_client.get(change_url(clar)).content.decode()
    assert page.count('class="version version-superseded"') == 1
    assert page.count('class="version version-bound"') == 1
    assert "bound correction; valid 2026-06-12 → open" in html.unescape(page)
