"""The steward CLI (CONTRACT §2): `telha clarify queue|show|review|erase-attribution`
and `telha gdpr_erase`, and the admin views that show the same things."""

import html
import re

import pytest
from django.core.management.base import CommandError

from clarify.models import Clarification, ClarifyPolicy, ResponseRecord, State
from delivery.models import Delivery
from graph.models import NodeVersion
from jobs.models import JobStatus

from .conftest import (
    JUN_2026,
    NIL,
    admin_ids,
    assert_nothing_written,
    assert_only_events_appended,
    change_url,
    cli,
    event_types,
    job_of,
    lapse_lease,
    reask_form,
    run_worker,
    snapshot,
    submit_with,
)

SEVERITIES = ("low", "normal", "high", "critical")
ALWAYS = {State.CONFLICTED, State.EXPIRED, State.DEAD_LETTERED}
IF_SEVERE = {State.OPEN, State.ATTESTED, State.PARTIALLY_CONFIRMED}


def test_clarify_steward_queue(submit, steward_client, globex):
    """needs_steward_attention: conflicted, expired and dead-lettered at any severity; open,
    attested and partially confirmed only at high or critical; never answered."""
    made: dict[tuple[str, str], str] = {}
    for severity in SEVERITIES:
        for state in State.values:
            clar = submit(
                external_id=f"queue/{severity}-{state}",
                name=f"{severity} {state}",
                severity_hint=severity,
            )
            assert clar.severity == severity
            Clarification.objects.filter(pk=clar.pk).update(state=state)
            made[(state, severity)] = str(clar.pk)
    expected = {
        pk
        for (state, severity), pk in made.items()
        if state in ALWAYS or (state in IF_SEVERE and severity in ("high", "critical"))
    }
    assert len(expected) == 3 * 4 + 3 * 2
    never = {made[(s, sev)] for s in IF_SEVERE for sev in ("low", "normal")}
    never |= {made[(State.ANSWERED, sev)] for sev in SEVERITIES}
    assert not expected & never

    # Another tenant's conflicted clarification is in nobody else's queue.
    other = submit_with(
        globex.ingest_client, email_domain="globex.test", links=[("AUTHORED_BY", "gina")]
    )
    Clarification.objects.filter(pk=other.pk).update(state=State.CONFLICTED)

    rows = cli("clarify", "queue", "--tenant", "acme", "--json")
    assert {r["id"] for r in rows} == expected
    assert len(rows) == len(expected)  # no duplicates
    for row in rows:
        state, severity = next(k for k, v in made.items() if v == row["id"])
        assert (row["state"], row["severity"], row["tenant"]) == (state, severity, "acme")
        assert row["targetName"] == f"{severity} {state}"
    everywhere = {r["id"] for r in cli("clarify", "queue", "--json")}
    assert everywhere == expected | {str(other.pk)}
    text = cli("clarify", "queue", "--tenant", "acme")
    assert all(pk in text for pk in expected) and not any(pk in text for pk in never)

    # The admin queue is the same set, for acme's steward only.
    resp = steward_client.get("/admin/clarify/clarification/?attention=yes")
    assert resp.status_code == 200
    assert admin_ids(resp.content.decode()) == expected
    redirect = steward_client.get("/admin/clarify/clarification/queue/")
    assert redirect.status_code == 302
    assert redirect["Location"] == "/admin/clarify/clarification/?attention=yes"
    # Filters combine with the queue.
    resp = steward_client.get("/admin/clarify/clarification/?attention=yes&severity__exact=normal")
    assert admin_ids(resp.content.decode()) == {made[(s, "normal")] for s in ALWAYS}
    resp = steward_client.get("/admin/clarify/clarification/?attention=yes&state__exact=open")
    assert admin_ids(resp.content.decode()) == {made[("open", s)] for s in ("high", "critical")}
    # Without the filter every acme clarification is listed (but no globex one).
    resp = steward_client.get("/admin/clarify/clarification/")
    assert admin_ids(resp.content.decode()) == set(made.values())
    resp = globex.steward_client.get("/admin/clarify/clarification/?attention=yes")
    assert admin_ids(resp.content.decode()) == {str(other.pk)}


def test_clarify_queue_when_nothing_needs_attention(submit):
    submit(severity_hint="normal")
    assert cli("clarify", "queue", "--tenant", "acme", "--json") == []
    assert cli("clarify", "queue", "--tenant", "acme") == "Nothing needs attention.\n"
    with pytest.raises(CommandError, match="NOT_FOUND"):
        cli("clarify", "queue", "--tenant", "nope")


def _history_table(page: str) -> list[list[str]]:
    """The rows of the decide page's delivery-history table, as cell texts."""
    section = page.split("<h2>Delivery history</h2>", 1)[1].split("</section>", 1)[0]
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def test_clarify_delivery_history(submit, people, passwords, steward_client):
    """Each job attempt → the candidate asked, delivered or skipped with its reason code,
    the card's nonce state; the steward escalation and dead-lettering follow. The CLI
    (`telha clarify show ID --json`) and the decide page show the same history."""
    olga, bob, alice, sam = (people[n] for n in ("olga", "bob", "alice", "sam"))
    passwords("alice")  # bob has no password: no channel reaches him; sam has one
    clar = submit(links=[("AUTHORED_BY", "olga"), ("MENTIONS", "bob"), ("OWNED_BY", "alice")])
    assert clar.asked == [str(olga.pk), str(bob.pk), str(alice.pk)]

    assert run_worker() == 1  # olga cannot read the source, bob is unreachable, alice is asked
    [card] = Delivery.objects.filter(clarification=clar, kind="question")
    assert (card.person_id, card.attempt, card.channel, card.nonce_state) == (
        alice.pk,
        2,
        "inbox",
        "active",
    )
    job = lapse_lease(clar)  # alice's window passes unanswered
    assert (job.status, job.attempts) == (JobStatus.PENDING, 3)
    assert run_worker() == 1  # the final attempt: the redacted steward escalation
    [escalation] = Delivery.objects.filter(clarification=clar, kind="escalation")
    assert escalation.person_id == sam.pk and escalation.redacted
    job = lapse_lease(clar)  # nobody answers: the ranking is exhausted
    assert job.status == JobStatus.DEAD
    clar.refresh_from_db()
    assert clar.state == State.DEAD_LETTERED

    data = cli("clarify", "show", str(clar.pk), "--json")
    history = [
        (h["attempt"], h["candidate"], h["outcome"], h["reason"], h["channel"], h["nonceState"])
        for h in data["deliveryHistory"]
    ]
    assert history == [
        (0, str(olga.pk), "skipped", "NO_READ_PERMISSION", None, None),
        (1, str(bob.pk), "skipped", "NO_DELIVERY_ALIAS", None, None),
        (2, str(alice.pk), "delivered", None, "inbox", "active"),
        (3, None, "escalated", None, None, None),
    ]
    assert all(isinstance(h["at"], int) for h in data["deliveryHistory"])
    assert data["job"] == {"id": job.pk, "status": "dead", "attempts": 4, "maxAttempts": 4}
    assert data["state"] == "dead_lettered"
    assert [a["name"] for a in data["asked"]] == ["Olga Owner", "Bob Named", "Alice Author"]
    text = cli("clarify", "show", str(clar.pk))
    assert f"attempt 0: {olga.pk} — skipped (NO_READ_PERMISSION)" in text
    assert f"attempt 1: {bob.pk} — skipped (NO_DELIVERY_ALIAS)" in text
    assert f"attempt 2: {alice.pk} — delivered" in text
    assert "attempt 3: steward — escalated" in text

    page = steward_client.get(change_url(clar)).content.decode()
    rows = _history_table(page)
    routing = f"#{job.pk}"  # the routing job each attempt belongs to
    assert [row[:7] for row in rows] == [
        [routing, "0", "Olga Owner", "skipped", "NO_READ_PERMISSION", "", ""],
        [routing, "1", "Bob Named", "skipped", "NO_DELIVERY_ALIAS", "", ""],
        [routing, "2", "Alice Author", "delivered", "", "inbox", "active"],
        [routing, "3", "steward", "escalated", "", "", ""],
    ]
    assert f"Routing job #{job.pk}: dead, attempt 4 of 4." in page
    # The digest lists it with the per-candidate reason codes.
    digest = steward_client.get("/admin/clarify/clarification/digest/").content.decode()
    assert change_url(clar) in digest
    assert "NO_READ_PERMISSION" in digest and "NO_DELIVERY_ALIAS" in digest


def test_clarify_show_unknown_id():
    with pytest.raises(CommandError, match="NOT_FOUND"):
        cli("clarify", "show", "not-a-uuid")


def test_clarify_review_binds_a_steward_override(conflicted, people):
    clar = conflicted()
    out = cli(
        "clarify", "review", str(clar.pk), "--responder", "sam@acme.test", "--index", "1", "--json"
    )
    assert out["outcome"] == "bound" and out["status"] == 200
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED and clar.binding.evidence_class == "steward_override"
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.evidence_class) == (JUN_2026, "steward_override")
    last = ResponseRecord.objects.filter(clarification=clar).latest("seq")
    assert (last.responder, last.channel, last.binding_status) == (
        people["sam"].pk,
        "cli",
        "steward_override",
    )
    assert "steward_override" in event_types(clar) and "bound" in event_types(clar)


def test_clarify_review_and_answer_record_the_override_reason(conflicted, people):
    """`--reason` on the override path: the binding and an `override_reason` event naming
    the steward commit together, as in the admin; with an interval it is its source text."""
    clar = conflicted()
    out = cli(
        "clarify", "review", str(clar.pk), "--responder", "sam@acme.test", "--index", "1",
        "--reason", "Checked with legal", "--json",
    )  # fmt: skip
    assert (out["status"], out["outcome"]) == (200, "bound")
    [why] = [e for e in clar.events.all() if e.type == "override_reason"]
    assert why.detail == {"by": str(people["sam"].pk), "reason": "Checked with legal"}

    other = conflicted(external_id="contracts/other.docx")
    out = cli(
        "clarify", "answer", str(other.pk), "--responder", "sam@acme.test",
        "--from", "2026-06-12T00:00:00Z", "--steward-override", "--reason", "Signed copy", "--json",
    )  # fmt: skip
    assert (out["status"], out["outcome"]) == (200, "bound")
    assert "override_reason" in event_types(other)
    last = ResponseRecord.objects.filter(clarification=other).latest("seq")
    assert (last.answer_custom["validFrom"], last.answer_custom["sourceText"]) == (
        JUN_2026,
        "Signed copy",
    )


def test_a_reason_without_an_override_is_bad_usage_and_writes_nothing(conflicted):
    clar = conflicted()
    before = snapshot()
    with pytest.raises(CommandError, match="--reason goes with --steward-override") as refused:
        cli(
            "clarify", "answer", str(clar.pk), "--responder", "alice@acme.test", "--index", "1",
            "--reason", "because",
        )  # fmt: skip
    assert refused.value.returncode == 2
    with pytest.raises(CommandError, match="STEWARD_OVERRIDE_FORBIDDEN"):
        cli(
            "clarify", "review", str(clar.pk), "--responder", "alice@acme.test", "--index", "1",
            "--reason", "because",
        )  # fmt: skip
    assert_nothing_written(before)


def test_clarify_review_refusals_write_nothing(conflicted, submit, workspace):
    clar = conflicted()
    before = snapshot()
    with pytest.raises(CommandError, match="STEWARD_OVERRIDE_FORBIDDEN"):
        cli("clarify", "review", str(clar.pk), "--responder", "alice@acme.test", "--index", "0")
    with pytest.raises(CommandError, match="RESPONDER_NOT_AUTHORISED"):
        cli("clarify", "review", str(clar.pk), "--responder", "gina@globex.test", "--index", "0")
    with pytest.raises(CommandError, match="either --index"):
        cli("clarify", "review", str(clar.pk), "--responder", "sam@acme.test")
    assert_nothing_written(before)

    # A policy without steward override, pinned before the submission: an open
    # (not conflicted) clarification cannot be overridden.
    ClarifyPolicy.objects.create(tenant=workspace, allow_steward_override=False)
    pinned = submit(external_id="contracts/pinned.docx", severity_hint="critical")
    assert pinned.quorum_policy["allowStewardOverride"] is False
    before = snapshot()
    with pytest.raises(CommandError, match="STEWARD_OVERRIDE_FORBIDDEN"):
        cli("clarify", "review", str(pinned.pk), "--responder", "sam@acme.test", "--index", "1")
    assert_nothing_written(before)


def test_erase_commands_refuse_unknown_people_and_tenants(submit):
    submit()
    before = snapshot()
    with pytest.raises(CommandError, match="NOT_FOUND"):
        cli("clarify", "erase-attribution", "--tenant", "acme", "--person", "nobody@acme.test")
    with pytest.raises(CommandError, match="NOT_FOUND"):
        cli("clarify", "erase-attribution", "--tenant", "nope", "--person", "alice@acme.test")
    with pytest.raises(CommandError, match="NOT_FOUND"):
        cli("gdpr_erase", "--tenant", "acme", "--person", "nobody@acme.test")
    with pytest.raises(CommandError, match="NOT_FOUND"):
        cli("gdpr_erase", "--tenant", "nope", "--person", "alice@acme.test")
    assert_nothing_written(before)


def test_erase_attribution_text_output_and_idempotence(submit, people):
    clar = submit()
    text = cli("clarify", "erase-attribution", "--tenant", "acme", "--person", "ALICE@acme.test")
    assert text == "Attribution of ALICE@acme.test erased on 1 clarification(s).\n"
    clar.refresh_from_db()
    assert clar.asked == [NIL, str(people["bob"].pk)]
    before = snapshot()
    again = cli(
        "clarify", "erase-attribution", "--tenant", "acme", "--person", "alice@acme.test", "--json"
    )
    assert again == {"clarifications": 0}
    # Nothing left to erase, but the request is audited (a tenant event naming nobody).
    [request] = assert_only_events_appended(before)
    assert (request.type, request.clarification_id, request.detail) == (
        "erasure_requested",
        None,
        {"scope": "attribution", "by": None, "via": "cli", "clarifications": 0},
    )


def test_reask_job_is_the_one_show_reports(submit, steward_client, people):
    """After a re-ask, `show` reports the new routing job, not the superseded one."""
    clar = submit()
    old = job_of(clar)
    steward_client.post(change_url(clar), reask_form(people["olga"]))
    new = job_of(clar, status=JobStatus.PENDING)
    assert new.pk != old.pk
    data = cli("clarify", "show", str(clar.pk), "--json")
    assert data["job"]["id"] == new.pk
    assert data["job"]["maxAttempts"] == 2
