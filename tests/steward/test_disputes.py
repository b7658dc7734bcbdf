"""Post-binding disputes on the steward's decide page, and the re-ask's on-commit kick.

A disagreement after binding leaves the binding untouched and puts the answered
clarification in Needs attention (clarify.selectors.needs_steward_attention_q). The decide
page shows the disputing responses and an "Uphold the bound answer" action: the same
service as the API's explicit steward override naming the bound interval
(clarify.services.clarification_answer), recorded with channel `admin`."""

import re
from typing import Any

import pytest
from django.test import Client, override_settings
from django_q.models import OrmQ

from clarify.models import (
    Clarification,
    ClarificationBinding,
    ClarifyPolicy,
    ResponseRecord,
    State,
)
from clarify.selectors import needs_steward_attention_q
from clarify.stewardship import clarification_reask
from common.errors import Conflict, NotFound
from graph.models import NodeVersion
from jobs.models import Job, JobStatus

from .conftest import (
    CANDIDATES,
    JUN_2026,
    STEWARD_PASSWORD,
    admin_ids,
    assert_nothing_written,
    change_url,
    event_types,
    events,
    job_of,
    messages_of,
    reask_form,
    snapshot,
)

QUEUE = "/admin/clarify/clarification/?attention=yes"
DISPUTED_LABEL = CANDIDATES[2]["label"]  # bob disagrees with candidate 2 (1 Jul 2026)
UPHOLD_BUTTON = 'name="action" value="uphold"'
BOTH_GROUPS = ["group:legal", "group:finance"]  # olga (finance) may answer too


def page(client: Client, url: str) -> str:
    resp = client.get(url)
    assert resp.status_code == 200, (url, resp.status_code)
    return resp.content.decode()


def act(client: Client, clar: Any, **data: Any) -> Any:
    """POST an action on the decide page and follow the redirect back to it."""
    resp = client.post(change_url(clar), data, follow=True)
    assert resp.status_code == 200
    assert resp.redirect_chain == [(change_url(clar), 302)]
    return resp


def in_queue(client: Client, clar: Clarification) -> bool:
    """Whether the clarification is in the admin's Needs attention list; the selector
    agrees."""
    listed = str(clar.pk) in admin_ids(page(client, QUEUE))
    assert listed == Clarification.objects.filter(needs_steward_attention_q(), pk=clar.pk).exists()
    return listed


def uphold_form(html: str) -> dict[str, str]:
    """The uphold form's fields as the browser posts them (hidden inputs from the page)."""
    form = html.split(UPHOLD_BUTTON, 1)[1].split("</form>", 1)[0]
    [through] = re.findall(r'name="disputes_through" value="(\d+)"', form)
    return {"action": "uphold", "disputes_through": through, "reason": ""}


@pytest.fixture
def disputed(submit, answer):
    """`disputed(**submit_kwargs)` → a normal clarification alice bound to candidate 1,
    then disputed after binding by bob (candidate 2)."""

    def make(**kwargs: Any) -> Clarification:
        clar = submit(**kwargs)
        assert answer("alice", clar, index=1).status_code == 200
        resp = answer("bob", clar, index=2)
        assert resp.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
        clar.refresh_from_db()
        return clar

    return make


def the_binding(clar: Clarification) -> Any:
    return ClarificationBinding.objects.values().get(clarification=clar)


# --- the page ------------------------------------------------------------------------------


def test_the_decide_page_shows_the_dispute_and_the_uphold_action(disputed, people, steward_client):
    clar = disputed()
    [bobs] = ResponseRecord.objects.filter(clarification=clar, binding_status="conflicting")
    assert in_queue(steward_client, clar)

    html = page(steward_client, change_url(clar))

    section = html.split("<h2>Disputed after binding</h2>", 1)[1].split("</section>", 1)[0]
    assert "Bound answer: <strong>2026-06-12 00:00:00 UTC → ∞</strong>" in section
    assert "1 later response disagrees with it" in section
    rows = re.findall(r'<tr class="dispute">(.*?)</tr>', section)
    assert len(rows) == 1
    assert "Bob Named" in rows[0] and DISPUTED_LABEL in rows[0] and "editor" in rows[0]
    assert "Alice Author" not in section  # the bound answer's responder is not a dispute
    assert "Uphold the bound answer" in section and UPHOLD_BUTTON in section
    assert uphold_form(html)["disputes_through"] == str(bobs.seq)
    assert "csrfmiddlewaretoken" in section
    # Why a different interval is not offered, and what to do instead.
    assert "a clarification binds once" in section
    # The disputing response is marked in the full response list too; alice's is not.
    responses = html.split("<h2>Responses</h2>", 1)[1].split("</section>", 1)[0]
    marked = re.findall(r'<tr class="dispute"[^>]*>(.*?)</tr>', responses)
    assert len(marked) == 1 and "Bob Named" in marked[0]
    # The override for unanswered clarifications stays off.
    assert 'value="override"' not in html


def test_a_second_dispute_is_listed_with_the_first(disputed, answer, steward_client):
    clar = disputed(acl=BOTH_GROUPS)
    assert answer("olga", clar, index=0).json()["postBinding"] is True
    section = page(steward_client, change_url(clar)).split("Disputed after binding", 1)[1]
    section = section.split("</section>", 1)[0]
    assert "2 later responses disagree with it" in section
    rows = re.findall(r'<tr class="dispute">(.*?)</tr>', section)
    assert ["Bob Named" in rows[0], "Olga Owner" in rows[1]] == [True, True]


# --- upholding -----------------------------------------------------------------------------


def test_upholding_resolves_the_dispute(disputed, people, steward_client):
    clar = disputed()
    versions = list(NodeVersion.objects.filter(node=clar.target).order_by("seq").values())
    binding = the_binding(clar)
    prior = list(ResponseRecord.objects.filter(clarification=clar).order_by("seq").values())
    [bobs] = ResponseRecord.objects.filter(clarification=clar, binding_status="conflicting")
    data = uphold_form(page(steward_client, change_url(clar)))
    data["reason"] = "  The countersigned copy is dated 12 June.  "

    resp = act(steward_client, clar, **data)

    assert messages_of(resp) == [
        "Binding upheld: 1 disagreement resolved; the clarification has left Needs attention."
    ]
    # The binding stands: no new fact version, the same binding row, still answered.
    assert list(NodeVersion.objects.filter(node=clar.target).order_by("seq").values()) == versions
    assert the_binding(clar) == binding
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    # The earlier responses are untouched; the steward's override is appended.
    records = list(ResponseRecord.objects.filter(clarification=clar).order_by("seq"))
    assert (
        list(
            ResponseRecord.objects.filter(pk__in=[r["id"] for r in prior]).order_by("seq").values()
        )
        == prior
    )
    [upheld] = records[len(prior) :]
    assert (
        upheld.responder,
        upheld.rights_at_answer_time,
        upheld.channel,
        upheld.binding_status,
        upheld.answer_index,
        upheld.interval,
    ) == (people["sam"].pk, "steward", "admin", "steward_override", 1, (JUN_2026, None))
    assert upheld.outcome["outcome"] == "bound"
    assert upheld.outcome["factVersionTx"] == clar.fact_version_tx
    # Audited: the override, the resolution naming bob's response, and the reason.
    assert event_types(clar)[-3:] == [
        "steward_override",
        "post_binding_conflict_resolved",
        "override_reason",
    ]
    [resolved] = events(clar, "post_binding_conflict_resolved")
    assert resolved.detail["resolution"] == "binding_upheld"
    assert resolved.detail["conflicts"] == [str(bobs.pk)]
    assert resolved.detail["responseId"] == str(upheld.pk)
    assert resolved.detail["channel"] == "admin"
    [why] = events(clar, "override_reason")
    assert why.detail == {
        "by": str(people["sam"].pk),
        "reason": "The countersigned copy is dated 12 June.",
    }
    # Out of the queue; the page no longer offers the action.
    assert not in_queue(steward_client, clar)
    html = page(steward_client, change_url(clar))
    assert UPHOLD_BUTTON not in html and "Disputed after binding" not in html
    assert "is answered" in html

    # The same form posted again (a double submit) changes nothing.
    before = snapshot()
    resp = act(steward_client, clar, **data)
    assert messages_of(resp) == ["There is no disagreement to resolve: nothing changed."]
    assert_nothing_written(before)


def test_upholding_a_bound_interval_that_is_no_candidate(submit, answer, steward_client):
    """A binding from a custom interval is upheld by naming that interval."""
    clar = submit()
    custom = {"validFrom": "2026-06-15T00:00:00Z", "validTo": "2027-06-15T00:00:00Z"}
    assert answer("alice", clar, answerCustom=custom).status_code == 200
    assert answer("bob", clar, index=0).json()["postBinding"] is True
    bound = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)

    resp = act(steward_client, clar, **uphold_form(page(steward_client, change_url(clar))))

    assert messages_of(resp)[0].startswith("Binding upheld: 1 disagreement resolved")
    upheld = ResponseRecord.objects.filter(clarification=clar).latest("seq")
    assert upheld.binding_status == "steward_override" and upheld.answer_index is None
    assert upheld.interval == (bound.valid_from, bound.valid_to)
    assert NodeVersion.objects.get(node=clar.target, tx_to__isnull=True) == bound
    assert not in_queue(steward_client, clar)


def test_upholding_is_allowed_when_the_pinned_policy_forbids_overrides(
    disputed, workspace, steward_client
):
    ClarifyPolicy.objects.create(tenant=workspace, allow_steward_override=False)
    clar = disputed(severity_hint="high")
    assert clar.quorum_policy["allowStewardOverride"] is False
    resp = act(steward_client, clar, **uphold_form(page(steward_client, change_url(clar))))
    assert messages_of(resp)[0].startswith("Binding upheld")
    assert not in_queue(steward_client, clar)


def test_a_disagreement_that_arrived_after_the_page_loaded_is_not_upheld_unseen(
    disputed, answer, steward_client
):
    clar = disputed(acl=BOTH_GROUPS)
    seen = uphold_form(page(steward_client, change_url(clar)))
    assert answer("olga", clar, index=0).json()["postBinding"] is True
    before = snapshot()

    resp = act(steward_client, clar, **seen)

    [text] = messages_of(resp)
    assert text.startswith("A new disagreement arrived after this page was loaded")
    assert_nothing_written(before)
    assert in_queue(steward_client, clar)
    # Forged or missing markers are refused the same way.
    for through in ("", "x", "999"):
        resp = act(steward_client, clar, **{**seen, "disputes_through": through})
        assert messages_of(resp)[0].startswith("A new disagreement arrived"), through
    assert_nothing_written(before)
    # Reloaded, the page lists both; upholding now resolves both.
    resp = act(steward_client, clar, **uphold_form(page(steward_client, change_url(clar))))
    assert messages_of(resp)[0].startswith("Binding upheld: 2 disagreements resolved")
    [resolved] = events(clar, "post_binding_conflict_resolved")
    assert len(resolved.detail["conflicts"]) == 2


def test_nothing_to_uphold_without_an_open_dispute(submit, answer, steward_client):
    answered = submit()
    assert answer("alice", answered, index=1).status_code == 200
    still_open = submit(external_id="contracts/open.docx", severity_hint="high")
    for clar in (answered, still_open):
        html = page(steward_client, change_url(clar))
        assert UPHOLD_BUTTON not in html and "Disputed after binding" not in html
    assert "is answered" in page(steward_client, change_url(answered))
    assert not in_queue(steward_client, answered)

    before = snapshot()
    for clar in (answered, still_open):
        resp = act(steward_client, clar, action="uphold", disputes_through="1")
        assert messages_of(resp) == ["There is no disagreement to resolve: nothing changed."]
    assert_nothing_written(before)


# --- tenant isolation and CSRF -----------------------------------------------------------


def test_another_tenants_steward_cannot_see_or_uphold_a_dispute(disputed, globex, steward_client):
    clar = disputed()
    data = uphold_form(page(steward_client, change_url(clar)))
    sally = globex.steward_client
    missing = "00000000-0000-0000-0000-00000000abcd"
    before = snapshot()

    # Exactly what a clarification that does not exist gets.
    for method in ("get", "post"):
        call = getattr(sally, method)
        args = (data,) if method == "post" else ()
        resp, absent = call(change_url(clar), *args), call(change_url(missing), *args)
        assert (resp.status_code, resp["Location"]) == (302, "/admin/")
        assert (absent.status_code, absent["Location"]) == (302, "/admin/")
        # The index shows Django's "doesn't exist" message for both, the same but for
        # the id sally typed in, and nothing of acme's.
        followed = sally.get("/admin/").content.decode()
        notes = re.findall(r'<li class="warning">(.*?)</li>', followed)
        assert [n.replace(str(clar.pk), missing) for n in notes] == [notes[1]] * 2
        assert "doesn\u2019t exist" in notes[1] and "MSA term" not in followed
    assert str(clar.pk) not in admin_ids(page(sally, QUEUE))

    assert_nothing_written(before)
    assert in_queue(steward_client, clar)


def test_upholding_needs_the_csrf_token(disputed, steward_client):
    clar = disputed()
    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username="sam@acme.test", password=STEWARD_PASSWORD)
    html = page(browser, change_url(clar))
    data = uphold_form(html)
    before = snapshot()

    assert browser.post(change_url(clar), data).status_code == 403

    assert_nothing_written(before)
    assert in_queue(steward_client, clar)
    # With the page's token, as the browser sends it, it goes through.
    [token] = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[:1]
    resp = browser.post(change_url(clar), {**data, "csrfmiddlewaretoken": token})
    assert resp.status_code == 302
    assert not in_queue(steward_client, clar)


# --- the re-ask wakes the workers after commit ---------------------------------------------


def kicks() -> list[tuple[str, tuple]]:
    return [(q.task["func"], q.task["args"]) for q in OrmQ.objects.order_by("id")]


@override_settings(JOBS_DISPATCH=True)
def test_a_reask_wakes_the_workers_once_after_commit(
    submit, people, steward_client, django_capture_on_commit_callbacks
):
    clar = submit(severity_hint="high")
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resp = act(steward_client, clar, **reask_form(people["olga"], people["bob"]))
        assert messages_of(resp) == ["Delivery re-enqueued for the new candidates."]
        assert job_of(clar, status=JobStatus.PENDING).payload["ranking"] == [
            str(people["olga"].pk),
            str(people["bob"].pk),
        ]
        assert kicks() == []  # the job row is written; the cluster not woken yet
    assert kicks() == []
    for callback in callbacks:  # the kick, and /metrics counting the audit events
        callback()
    assert kicks() == [("jobs.tasks.work", ("clarify:temporal",))]


@override_settings(JOBS_DISPATCH=True)
def test_a_refused_reask_wakes_nothing(
    submit, answer, people, globex, steward_client, django_capture_on_commit_callbacks
):
    answered = submit()
    assert answer("alice", answered, index=1).status_code == 200
    still_open = submit(external_id="contracts/open.docx", severity_hint="high")
    OrmQ.objects.all().delete()
    before = snapshot()
    n_jobs = Job.objects.count()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(Conflict):
            clarification_reask(
                clarification=answered, ranking=[people["bob"]], actor=people["sam"]
            )
        with pytest.raises(NotFound):
            clarification_reask(
                clarification=still_open,
                ranking=[globex.people["gina"]],
                actor=people["sam"],
            )
        # Through the admin: refused by the service, and by the form.
        resp = act(steward_client, answered, **reask_form(people["bob"]))
        assert messages_of(resp)[0].startswith("Refused (")
        resp = act(steward_client, still_open, **reask_form(also=(people["bob"],)))
        assert messages_of(resp) == ["Choose at least one person to ask."]
    assert callbacks == []
    assert kicks() == []
    assert Job.objects.count() == n_jobs
    assert_nothing_written(before)
