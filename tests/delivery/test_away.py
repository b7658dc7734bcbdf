"""Away and delegates end to end (issue 32 item 3): an away candidate skipped with
PERSON_AWAY; their delegate asked in their place through the same gate, on a card saying
on whose behalf, answering with the delegate's own rights; the absent person sees it in
their inbox; the refusals (no chains, a delegate who may not read, a bad date or
delegate: nothing written); `telha people away|back`; the steward's views."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, ResponseRecord
from clarify.reports import clarification_detail
from clarify.selectors import waiting_on_away_q
from delivery.actions import card_action_process
from delivery.models import Delivery
from tenancy.models import Person
from tenancy.services import person_away_set

from .conftest import deliveries, events, run_worker

LATER = timezone.now().date() + timedelta(days=7)


def away(person: Person, delegate: Person | None = None) -> None:
    person_away_set(person=person, until=LATER, delegate=delegate, by=None, via="test")


def person_rows() -> list[dict]:
    return list(Person.objects.order_by("pk").values())


def test_the_delegate_is_asked_on_behalf_and_answers_with_their_own_rights(
    submit, channel, people, client
):
    alice, vera = people["alice"], people["vera"]
    away(alice, delegate=vera)  # vera is a viewer of the legal group: she may read
    clar = submit()
    run_worker()
    [(address, card)] = channel.cards
    assert address == f"fake:{vera.pk}"
    assert card.note.startswith("Asked of you on behalf of Alice Author, who is away until")
    [row] = deliveries(clar)
    assert (row.person_id, row.on_behalf_of_id, row.attempt) == (vera.pk, alice.pk, 0)
    [delegated] = events(clar, "delegated")
    assert delegated.detail["candidate"] == str(alice.pk)
    assert delegated.detail["delegate"] == str(vera.pk)
    assert delegated.detail["reason"] == "PERSON_AWAY"
    [delivered] = events(clar, "delivered")
    assert delivered.detail["onBehalfOf"] == str(alice.pk)
    # The delegate answers with her own rights (viewer): an attestation, never alice's
    # editor rights binding the fact.
    reply = card_action_process(
        channel="inbox", actor=vera, clarification_id=str(clar.pk), nonce=row.nonce, answer_index=1
    )
    assert reply.body["outcome"] == "attestation"
    [response] = ResponseRecord.objects.filter(clarification=clar)
    assert (str(response.responder), response.rights_at_answer_time) == (str(vera.pk), "viewer")
    # The steward's history names the delegation, and the absent person's inbox shows it.
    history = clarification_detail(clar)["deliveryHistory"]
    assert [(h["outcome"], h["delegate"], h["onBehalfOf"]) for h in history] == [
        ("delegated", str(vera.pk), None),
        ("delivered", None, str(alice.pk)),
    ]
    client.force_login(alice.user)
    page = client.get("/inbox/").content.decode()
    assert "Asked of your delegate while you were away" in page
    assert "asked of Vera Viewer" in page


def test_an_away_candidate_without_a_delegate_is_skipped(submit, channel, people):
    away(people["alice"])
    clar = submit()
    run_worker()
    [skipped] = events(clar, "skipped")
    assert (skipped.detail["candidate"], skipped.detail["reason"]) == (
        str(people["alice"].pk),
        "PERSON_AWAY",
    )
    assert "delegate" not in skipped.detail
    assert [a for a, _ in channel.cards] == [f"fake:{people['bob'].pk}"]


def test_no_chains_and_never_a_delegate_who_may_not_read(submit, channel, people):
    alice, vera, sam, olga = people["alice"], people["vera"], people["sam"], people["olga"]
    away(alice, delegate=vera)
    away(vera, delegate=sam)  # vera is away too: her own delegate is never used
    first = submit()
    run_worker()
    [skipped] = events(first, "skipped")
    assert skipped.detail["reason"] == "PERSON_AWAY"
    assert skipped.detail["delegate"] == str(vera.pk)
    assert not events(first, "delegated")
    # A delegate outside the source's ACL (olga is in finance, the source is legal's).
    away(alice, delegate=olga)
    second = submit(external_id="contracts/other.docx")
    run_worker()
    [skipped] = events(second, "skipped")
    assert (skipped.detail["reason"], skipped.detail["delegate"]) == (
        "NO_READ_PERMISSION",
        str(olga.pk),
    )
    asked = {a for a, _ in channel.cards}
    assert f"fake:{sam.pk}" not in asked and f"fake:{olga.pk}" not in asked
    assert not Delivery.objects.filter(person__in=[sam, olga]).exists()
    # Neither waits on alice: the first moved on to bob, the second skipped her for
    # her delegate's read floor (see the filter's own test below).
    assert not waiting()


def waiting() -> set:
    return set(Clarification.objects.filter(waiting_on_away_q()).values_list("pk", flat=True))


def test_the_away_filter_keeps_only_a_current_attempt_skipped_away(submit, channel, people, globex):
    """The steward queue's "waiting on someone away": the question whose latest routing
    attempt skipped an away person (PERSON_AWAY) of its own tenant — not one that moved
    on to someone else, nor one skipped for another reason, nor once the person is back
    or the skip names no person of the question's tenant."""
    alice, olga = people["alice"], people["olga"]
    away(alice)
    stuck = submit(external_id="away/only-alice.docx", links=[("AUTHORED_BY", "alice")])
    moved_on = submit(external_id="away/moved-on.docx")  # alice skipped, bob asked
    run_worker()
    assert [e.detail["reason"] for e in events(moved_on, "skipped")] == ["PERSON_AWAY"]
    assert events(moved_on, "delivered")
    assert waiting() == {stuck.pk}
    away(alice, delegate=olga)  # olga may not read: alice skipped NO_READ_PERMISSION
    other = submit(external_id="away/other-reason.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    assert [e.detail["reason"] for e in events(other, "skipped")] == ["NO_READ_PERMISSION"]
    assert waiting() == {stuck.pk}
    # A person of another tenant: the skip's candidate must be of the question's own.
    Person.objects.filter(pk=alice.pk).update(tenant=globex.tenant)
    assert waiting() == set()
    Person.objects.filter(pk=alice.pk).update(tenant=stuck.tenant)
    assert waiting() == {stuck.pk}
    Person.objects.filter(pk=alice.pk).update(away_until=None)  # back
    assert waiting() == set()


def test_people_away_and_back_on_the_command_line(telha_cli, people):
    until = LATER.isoformat()
    status, out, _ = telha_cli(
        "people", "away", "alice@acme.test", "--tenant", "acme", "--until", until,
        "--delegate", "bob@acme.test", "--json",
    )  # fmt: skip
    assert status == 0
    assert json.loads(out) == {
        "person": "alice@acme.test",
        "awayUntil": until,
        "delegate": "bob@acme.test",
    }
    [audited] = AuditEvent.objects.filter(type="away_set")
    assert audited.detail["delegate"] == str(people["bob"].pk)
    status, out, _ = telha_cli("people", "back", "alice@acme.test", "--tenant", "acme")
    assert (status, out.strip()) == (0, "alice@acme.test is back.")
    alice = Person.objects.get(pk=people["alice"].pk)
    assert (alice.away_until, alice.away_delegate_id) == (None, None)


@pytest.mark.parametrize(
    ("argv", "status", "code"),
    [
        (["--until", "LATER", "--delegate", "alice@acme.test"], 1, "DELEGATE_INVALID"),
        (["--until", "2001-01-01"], 1, "AWAY_UNTIL_INVALID"),
        (["--until", "LATER", "--delegate", "nobody@acme.test"], 1, "NOT_FOUND"),
        (["--until", "next week"], 2, "--until must be a date"),
    ],
)
def test_people_away_refusals_write_nothing(telha_cli, workspace, argv, status, code):
    before, events_before = person_rows(), AuditEvent.objects.count()
    argv = [LATER.isoformat() if a == "LATER" else a for a in argv]
    got, _, err = telha_cli("people", "away", "alice@acme.test", "--tenant", "acme", *argv)
    assert got == status
    assert code in err
    assert person_rows() == before and AuditEvent.objects.count() == events_before


def test_the_inbox_away_page_sets_and_refuses(client, people):
    alice = people["alice"]
    client.force_login(alice.user)
    assert "Ask in my place" in client.get("/inbox/away/").content.decode()
    before = person_rows()
    refused = client.post("/inbox/away/", {"until": LATER.isoformat(), "delegate": str(alice.pk)})
    assert refused.status_code == 422 and "DELEGATE_INVALID" in refused.content.decode()
    assert person_rows() == before
    bob = people["bob"]
    done = client.post("/inbox/away/", {"until": LATER.isoformat(), "delegate": str(bob.pk)})
    assert done.status_code == 302
    alice.refresh_from_db()
    assert (alice.away_until, alice.away_delegate_id) == (LATER, bob.pk)
    assert client.post("/inbox/away/", {"action": "back"}).status_code == 302
    alice.refresh_from_db()
    assert alice.away_until is None


def test_a_steward_sets_it_in_the_admin_and_the_decide_page_shows_the_delegation(
    client, submit, channel, people
):
    alice, vera = people["alice"], people["vera"]
    client.force_login(people["sam"].user)
    url = f"/admin/tenancy/person/{alice.pk}/change/"
    assert client.get(url).status_code == 200
    before = person_rows()
    refused = client.post(url, {"away_until": LATER.isoformat(), "away_delegate": str(alice.pk)})
    assert refused.status_code == 200 and "DELEGATE_INVALID" in refused.content.decode()
    assert person_rows() == before
    done = client.post(url, {"away_until": LATER.isoformat(), "away_delegate": str(vera.pk)})
    assert done.status_code == 302, done.content
    assert AuditEvent.objects.get(type="away_set").detail["via"] == "admin"
    clar = submit()
    run_worker()
    page = client.get(f"/admin/clarify/clarification/{clar.pk}/change/").content.decode()
    assert "delegate Vera Viewer" in page and "on behalf of Alice Author" in page
    # The filter: a delegated question waits on the delegate (here), not on alice; one
    # whose only candidate was skipped away does.
    away(alice)
    stuck = submit(external_id="away/admin-stuck.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    listed = client.get("/admin/clarify/clarification/?away=yes").content.decode()
    assert str(stuck.pk) in listed and str(clar.pk) not in listed


def test_person_away_is_among_the_escalation_s_skip_reasons(submit, channel, people):
    away(people["alice"])
    clar = submit(links=[("AUTHORED_BY", "alice")])  # alice is the only candidate
    run_worker()
    [escalated] = events(clar, "escalated")
    assert [r["reason"] for r in escalated.detail["skipReasons"]] == ["PERSON_AWAY"]
    [(_, escalation)] = channel.escalations
    assert "PERSON_AWAY" in escalation.text
