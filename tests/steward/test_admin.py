"""The steward admin: who may enter, tenant isolation of every page and action, the decide
page's actions (override, confirm, re-ask, erase), the clarify policy, and how the pages
look and query."""

import json
import re
from typing import Any

import pytest
from django.contrib import admin as django_admin
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from clarify.models import (
    AuditEvent,
    BindingStatus,
    Clarification,
    ClarifyPolicy,
    ResponseRecord,
    State,
)
from delivery.models import Delivery
from graph.models import NodeVersion, Source
from ingest.uploads import document_upload
from jobs.models import Job, JobStatus
from tenancy.models import ApiKey, Person
from tenancy.services import api_key_create, workspace_load
from tenancy.steward_admin import TenantScopedAdmin
from tests.submissions import OMIT, Submission

from .conftest import (
    JUN_2026,
    NIL,
    PASSWORD,
    RAW_US,
    admin_ids,
    assert_nothing_written,
    bulk_clarifications,
    change_url,
    event_types,
    events,
    job_of,
    lapse_lease,
    messages_of,
    reask_form,
    run_worker,
    snapshot,
)

CHANGELISTS = {
    "clarify/clarification": Clarification,
    "clarify/clarifypolicy": ClarifyPolicy,
    "tenancy/person": Person,
    "tenancy/apikey": ApiKey,
    "graph/source": Source,
    "graph/nodeversion": NodeVersion,
}


def page(client: Client, url: str, status: int = 200) -> str:
    resp = client.get(url)
    assert resp.status_code == status, (url, resp.status_code)
    return resp.content.decode()


def act(client: Client, clar: Any, **data: Any) -> Any:
    """POST an action on the decide page and follow the redirect back to it."""
    resp = client.post(change_url(clar), data, follow=True)
    assert resp.status_code == 200
    assert resp.redirect_chain == [(change_url(clar), 302)]
    return resp


# --- who may enter ------------------------------------------------------------------------


def test_only_stewards_enter_the_admin(people, passwords, steward_client):
    anonymous = Client()
    resp = anonymous.get("/admin/")
    assert resp.status_code == 302 and resp["Location"].startswith("/admin/login/")

    passwords("alice")
    editor = Client()
    assert editor.login(username="alice@acme.test", password=PASSWORD)
    for url in (
        "/admin/",
        "/admin/clarify/clarification/",
        "/admin/clarify/clarification/queue/",
        "/admin/clarify/clarification/digest/",
        "/admin/tenancy/person/",
    ):
        resp = editor.get(url)
        assert resp.status_code == 302 and resp["Location"].startswith("/admin/login/"), url
    # The login form refuses her too.
    resp = Client().post("/admin/login/", {"username": "alice@acme.test", "password": PASSWORD})
    assert resp.status_code == 200 and resp.context["form"].errors

    # Staff flag or superuser alone is not steward rights.
    alice_user = people["alice"].user
    alice_user.is_staff = True
    alice_user.save()
    assert editor.get("/admin/").status_code == 302
    root = get_user_model().objects.create_superuser("root", "root@example.test", PASSWORD)
    su = Client()
    su.force_login(root)
    assert su.get("/admin/clarify/clarification/").status_code == 302

    # A person without a password cannot sign in at all.
    vera = Client()
    assert not vera.login(username="vera@acme.test", password="")
    assert not vera.login(username="vera@acme.test", password="!")
    resp = vera.post("/admin/login/", {"username": "vera@acme.test", "password": "anything1"})
    assert resp.status_code == 200 and resp.context["form"].errors
    assert vera.get("/admin/").status_code == 302

    index = page(steward_client, "/admin/")
    assert "Needs attention" in index and "/admin/clarify/clarification/queue/" in index
    # Django's own user and group admin is out of a steward's reach.
    assert "/admin/auth/" not in index
    for url in (
        "/admin/auth/",
        "/admin/auth/user/",
        "/admin/auth/group/",
        f"/admin/auth/user/{people['alice'].user_id}/change/",
        "/admin/auth/user/add/",
    ):
        assert steward_client.get(url).status_code in (403, 404), url
    resp = steward_client.post(
        "/admin/auth/user/add/",
        {"username": "mallory", "password1": "x" * 12, "password2": "x" * 12},
    )
    assert resp.status_code == 403
    assert not get_user_model().objects.filter(username="mallory").exists()


# --- tenant isolation ---------------------------------------------------------------------


def scoped_admins() -> dict[str, Any]:
    """Every tenant-scoped admin registered on the site, by "app/model"."""
    return {
        f"{model._meta.app_label}/{model._meta.model_name}": model_admin
        for model, model_admin in django_admin.site._registry.items()
        if isinstance(model_admin, TenantScopedAdmin)
    }


@pytest.fixture
def acme_objects(conflicted, submit, answer, people, workspace, settings, tmp_path):
    """One of each kind of object a steward sees, in tenant acme; by admin "app/model",
    every row of that model in acme."""
    settings.MEDIA_ROOT = str(tmp_path)
    clar = conflicted()
    attested = submit(external_id="contracts/attested.docx")
    assert answer("vera", attested, index=1).status_code == 202
    ClarifyPolicy.objects.create(tenant=workspace, quorum_enabled=True)
    api_key_create(tenant=workspace, person=people["alice"], name="alice key")
    document_upload(
        tenant=workspace,
        filename="acme-memo.txt",
        title="ACME-7731 memo",
        content=ContentFile(b"A memo."),
        size=7,
        uploaded_by="key:test",
    )
    objects: dict[str, Any] = {}
    for name, model_admin in scoped_admins().items():
        rows = model_admin.model._base_manager.filter(**{model_admin.tenant_field: workspace})
        objects[name] = list(rows.values_list("pk", flat=True))
    objects["clarify/clarification"] = [clar.pk, attested.pk]
    objects["attestation"] = ResponseRecord.objects.get(clarification=attested).pk
    return objects


ACME_WORDS = (
    "Alice Author",
    "alice@acme.test",
    "MSA term",
    "Master services agreement",
    "alice key",
    "ACME-7731",
    "acme-memo",
)


def test_admin_tenant_isolation_of_every_page(acme_objects, globex, steward_client):
    sally = globex.steward_client
    scoped = scoped_admins()
    assert set(CHANGELISTS) <= set(scoped)
    # Globex has data of its own, so its pages are not trivially empty.
    sub = Submission("g.docx", "Globex text about a deal.", title="Globex deal")
    sub.fact(
        "g",
        labels=["DEAL"],
        name="G deal",
        valid_from=OMIT,
        valid_to=OMIT,
        confidence=OMIT,
        span=OMIT,
    )
    resp = globex.ingest_client.post("/v1/submissions", sub.payload(omit_empty=True), format="json")
    assert resp.status_code == 201, resp.content

    for model in scoped:
        acme_ids = {str(pk) for pk in acme_objects[model]}
        assert acme_ids or model not in CHANGELISTS, f"no acme {model} to test isolation with"
        for query in ("", "?q=alice", "?q=MSA", "?q=acme", "?attention=yes"):
            if query == "?attention=yes" and model != "clarify/clarification":
                continue
            html = page(sally, f"/admin/{model}/{query}")
            assert not admin_ids(html, model) & acme_ids, (model, query)
            assert not any(w in html for w in ACME_WORDS), (model, query)
        # acme's own steward does see them (the check above is not vacuous).
        if acme_ids:
            assert admin_ids(page(steward_client, f"/admin/{model}/"), model) & acme_ids, model
    globex_versions = NodeVersion.objects.filter(node__tenant=globex.tenant)
    assert admin_ids(page(sally, "/admin/graph/nodeversion/"), "graph/nodeversion") == {
        str(v.pk) for v in globex_versions
    }
    assert "Globex deal" in page(sally, "/admin/graph/source/")
    for url in (
        "/admin/clarify/clarification/digest/",
        "/admin/clarify/clarification/queue/",
        "/admin/",
    ):
        html = sally.get(url, follow=True).content.decode()
        assert not any(w in html for w in ACME_WORDS), url
        assert not any(str(pk) in html for pk in acme_objects["clarify/clarification"]), url
    # Autocomplete goes through the same scoped querysets.
    resp = sally.get(
        "/admin/autocomplete/",
        {"app_label": "tenancy", "model_name": "apikey", "field_name": "person", "term": "a"},
    )
    assert resp.status_code in (200, 403, 404)
    if resp.status_code == 200:
        assert not any("acme" in r["text"] for r in resp.json()["results"])
    # The other admins registered on the site (Django's users and groups, django-q's
    # tables) are closed to stewards altogether.
    for model, model_admin in django_admin.site._registry.items():
        if not isinstance(model_admin, TenantScopedAdmin):
            url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
            assert sally.get(url).status_code == 403, url

    # Every change, history and delete page of an acme object: "doesn't exist" or refused.
    for model in scoped:
        for pk in acme_objects[model]:
            for suffix in ("change/", "history/", "delete/"):
                url = f"/admin/{model}/{pk}/{suffix}"
                resp = sally.get(url)
                assert resp.status_code in (302, 403, 404), url
                if resp.status_code == 302:
                    assert resp["Location"] == "/admin/", url
                    follow = sally.get(url, follow=True)
                    text = follow.content.decode()
                    assert "doesn\u2019t exist" in text and not any(w in text for w in ACME_WORDS)
                # ...while acme's steward can open the change and history pages.
                if suffix != "delete/":
                    assert steward_client.get(url).status_code == 200, url


def test_admin_tenant_isolation_of_every_action(acme_objects, globex, people):
    sally = globex.steward_client
    clar_id, attested_id = acme_objects["clarify/clarification"]
    policy_id = acme_objects["clarify/clarifypolicy"][0]
    before = snapshot()
    counted = (ResponseRecord, NodeVersion, Job, AuditEvent)
    n_before = {m.__name__: m.objects.count() for m in counted}
    posts = [
        (clar_id, {"action": "override", "answer_index": "1", "reason": "sally was here"}),
        (clar_id, {"action": "override", "valid_from": "2026-01-01", "valid_to": "2026-12-31"}),
        (attested_id, {"action": "confirm", "response_id": str(acme_objects["attestation"])}),
        (attested_id, reask_form(people["olga"])),
        (attested_id, reask_form(globex.people["gina"])),
        (clar_id, {"action": "erase", "person_id": str(people["alice"].pk)}),
        (attested_id, {"action": "erase", "person_id": str(people["vera"].pk)}),
    ]
    for pk, data in posts:
        resp = sally.post(change_url(pk), data)
        assert resp.status_code == 302 and resp["Location"] == "/admin/", data
    for model in scoped_admins():
        for pk in acme_objects[model]:
            resp = sally.post(f"/admin/{model}/{pk}/change/", {"name": "pwned", "_save": "Save"})
            assert resp.status_code in (302, 403, 404), model
            resp = sally.post(f"/admin/{model}/{pk}/delete/", {"post": "yes"})
            assert resp.status_code in (302, 403, 404), model
    resp = sally.post(
        f"/admin/clarify/clarifypolicy/{policy_id}/change/",
        {
            "severity_elevate": "",
            "quorum_enabled": "false",
            "critical_required_confirmations": "9",
            "required_roles": "",
            "allow_steward_override": "false",
            "_save": "Save",
        },
    )
    assert resp.status_code in (302, 403, 404)
    assert {m.__name__: m.objects.count() for m in counted} == n_before
    assert_nothing_written(before)
    # Sally's own tenant got its policy row only through her own add page, never acme's.
    assert not ClarifyPolicy.objects.filter(tenant=globex.tenant).exists()


# --- the decide page's actions --------------------------------------------------------------


def test_override_choosing_a_candidate_binds_with_the_reason(conflicted, people, steward_client):
    clar = conflicted()
    prior = list(NodeVersion.objects.filter(node=clar.target).order_by("seq").values())
    prior_responses = list(ResponseRecord.objects.filter(clarification=clar).values())
    html = page(steward_client, change_url(clar))
    assert 'name="answer_index"' in html and "Bind this answer" in html

    reason = "Countersigned copy is dated 12 June"
    resp = act(steward_client, clar, action="override", answer_index="1", reason=reason)
    assert messages_of(resp) == ["Override recorded: bound."]
    clar.refresh_from_db()
    assert (clar.state, clar.quorum_state) == (State.ANSWERED, "satisfied")
    assert clar.binding.evidence_class == "steward_override"
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.valid_to, current.evidence_class, current.pending) == (
        JUN_2026,
        None,
        "steward_override",
        False,
    )
    assert clar.fact_version_tx == current.tx_from == clar.binding.bound_tx
    # The earlier belief is still there, closed at the correction (nothing edited in place
    # except the closing tx_to).
    after = list(NodeVersion.objects.filter(node=clar.target).order_by("seq").values())
    assert len(after) == len(prior) + 1
    assert [{**v, "tx_to": None} for v in after[: len(prior)]] == [
        {**v, "tx_to": None} for v in prior
    ]
    assert after[len(prior) - 1]["tx_to"] == current.tx_from
    # Prior responses untouched; the override is appended as the steward's record.
    assert (
        list(
            ResponseRecord.objects.filter(clarification=clar)
            .exclude(binding_status=BindingStatus.STEWARD_OVERRIDE)
            .values()
        )
        == prior_responses
    )
    override = ResponseRecord.objects.get(clarification=clar, binding_status="steward_override")
    assert (override.responder, override.channel, override.answer_index) == (
        people["sam"].pk,
        "admin",
        1,
    )
    types = event_types(clar)
    assert {"steward_override", "bound", "override_reason"} <= set(types)
    [why] = events(clar, "override_reason")
    assert why.detail == {"by": str(people["sam"].pk), "reason": reason}
    # The new version is on the decide page's timeline, marked as bound.
    html = page(steward_client, change_url(clar))
    assert "bound by this clarification" in html and "2026-06-12 00:00:00 UTC" in html
    # An answered clarification offers no further override.
    assert 'value="override"' not in html and "is answered" in html
    assert 'value="reask"' not in html  # nor a re-ask (the service would refuse it)


def test_override_with_an_interval(conflicted, steward_client):
    clar = conflicted()
    resp = act(
        steward_client,
        clar,
        action="override",
        answer_index="",
        valid_from="2026-06-15",
        valid_to="2027-06-15",
        reason="",
    )
    assert messages_of(resp) == ["Override recorded: bound."]
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.valid_to) == (1_781_481_600_000_000, 1_813_017_600_000_000)
    assert current.evidence_class == "steward_override"
    assert "override_reason" not in event_types(clar)
    record = ResponseRecord.objects.get(clarification=clar, binding_status="steward_override")
    assert record.answer_index is None
    assert (record.interval_from, record.interval_to) == (current.valid_from, current.valid_to)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"answer_index": "7"}, "Invalid override"),
        ({"answer_index": "x"}, "Invalid override"),
        ({"answer_index": "", "valid_from": "2026-13-45"}, "Invalid override"),
        (
            {"answer_index": "", "valid_from": "2027-01-01", "valid_to": "2026-01-01"},
            "Refused (CLARIFY_UNPARSEABLE_ANSWER)",
        ),
        ({"answer_index": ""}, "Refused (CLARIFY_UNPARSEABLE_ANSWER)"),
    ],
)
def test_invalid_overrides_write_nothing(conflicted, steward_client, data, message):
    clar = conflicted()
    before = snapshot()
    resp = act(steward_client, clar, action="override", **data)
    [text] = messages_of(resp)
    assert text.startswith(message), text
    assert_nothing_written(before)


def test_override_refused_when_the_pinned_policy_forbids_it(submit, workspace, steward_client):
    ClarifyPolicy.objects.create(tenant=workspace, allow_steward_override=False)
    clar = submit(severity_hint="critical")
    assert clar.quorum_policy["allowStewardOverride"] is False
    assert clar.state == State.OPEN
    html = page(steward_client, change_url(clar))
    assert "Steward override is not allowed by this clarification" in html
    assert 'value="override"' not in html
    before = snapshot()
    resp = act(steward_client, clar, action="override", answer_index="1", reason="because")
    [text] = messages_of(resp)
    assert text.startswith("Refused (STEWARD_OVERRIDE_FORBIDDEN)"), text
    assert_nothing_written(before)


def test_override_allowed_on_conflict_even_when_policy_forbids(
    conflicted, workspace, steward_client
):
    ClarifyPolicy.objects.create(tenant=workspace, allow_steward_override=False)
    clar = conflicted()
    assert clar.quorum_policy["allowStewardOverride"] is False
    resp = act(steward_client, clar, action="override", answer_index="0")
    assert messages_of(resp) == ["Override recorded: bound."]
    assert Clarification.objects.get(pk=clar.pk).binding.evidence_class == "steward_override"


def test_confirm_a_viewers_attestation(submit, answer, people, steward_client):
    clar = submit()
    assert answer("vera", clar, index=1).status_code == 202
    attestation = ResponseRecord.objects.get(clarification=clar)
    assert attestation.binding_status == BindingStatus.ATTESTATION
    clar.refresh_from_db()
    assert clar.state == State.ATTESTED
    html = page(steward_client, change_url(clar))
    assert f'name="response_id" value="{attestation.pk}"' in html

    resp = act(steward_client, clar, action="confirm", response_id=str(attestation.pk))
    assert messages_of(resp) == ["Attestation confirmed: bound."]
    clar.refresh_from_db()
    assert clar.state == State.ANSWERED
    current = NodeVersion.objects.get(node=clar.target, tx_to__isnull=True)
    assert (current.valid_from, current.evidence_class) == (JUN_2026, "human_clarification")
    confirmation = ResponseRecord.objects.filter(clarification=clar).latest("seq")
    assert (
        confirmation.responder,
        confirmation.rights_at_answer_time,
        confirmation.channel,
        confirmation.binding_status,
        confirmation.answer_index,
    ) == (people["sam"].pk, "steward", "admin", "bound", 1)
    attestation.refresh_from_db()
    assert attestation.binding_status == BindingStatus.ATTESTATION  # not edited
    assert "bound" in event_types(clar)


def test_confirm_refuses_records_that_are_not_this_clarifications_attestation(
    submit, answer, steward_client
):
    clar = submit()
    other = submit(external_id="contracts/other.docx")
    assert answer("vera", other, index=1).status_code == 202
    assert answer("alice", clar, index=1).status_code == 200  # bound, not an attestation
    foreign = ResponseRecord.objects.get(clarification=other)
    own = ResponseRecord.objects.get(clarification=clar)
    before = snapshot()
    for response_id in (str(foreign.pk), str(own.pk), "not-a-uuid", ""):
        resp = act(steward_client, clar, action="confirm", response_id=response_id)
        assert messages_of(resp) == ["That record does not exist in this clarification."]
    resp = act(steward_client, clar, action="launch")
    assert messages_of(resp) == ["Unknown action."]
    assert_nothing_written(before)


def test_reask_with_a_new_ranking(submit, people, passwords, steward_client):
    alice, bob, olga = (people[n] for n in ("alice", "bob", "olga"))
    passwords("alice")
    clar = submit(severity_hint="high")
    assert run_worker() == 1
    old = job_of(clar)
    assert old.status == JobStatus.LEASED
    [card] = Delivery.objects.filter(clarification=clar, kind="question")
    assert (card.person_id, card.nonce_state) == (alice.pk, "active")

    # The form as the browser posts it: one position input per person, in page order
    # (by name: alice, bob, olga, vera); the steward numbers olga 1 and bob 2.
    html = page(steward_client, change_url(clar))
    form = html.split('value="reask"', 1)[1].split("</form>", 1)[0]
    inputs = re.findall(r'<input type="number"[^>]*name="(position_[0-9a-f-]{36})"', form)
    assert inputs == [f"position_{p.pk}" for p in (alice, bob, olga, people["vera"])]
    data = {"action": "reask", **{name: "" for name in inputs}}
    data.update({f"position_{olga.pk}": "1", f"position_{bob.pk}": "2"})
    resp = act(steward_client, clar, **data)
    assert messages_of(resp) == ["Delivery re-enqueued for the new candidates."]
    old.refresh_from_db()
    assert (old.status, old.lease_token, old.last_error) == (
        JobStatus.DONE,
        None,
        "superseded by a re-ask",
    )
    card.refresh_from_db()
    assert card.nonce_state == "revoked"
    new = job_of(clar, status=JobStatus.PENDING)
    assert new.pk != old.pk
    assert new.payload == {
        "v": 1,
        "clarificationId": str(clar.pk),
        "ranking": [str(olga.pk), str(bob.pk)],
    }
    assert (new.max_attempts, new.priority, new.attempts) == (3, 1, 0)
    clar.refresh_from_db()
    assert clar.asked == [str(olga.pk), str(bob.pk)] and clar.state == State.OPEN
    [reasked] = events(clar, "reasked")
    assert reasked.detail == {
        "by": str(people["sam"].pk),
        "ranking": clar.asked,
        "from": "open",
        "to": "open",
    }
    # The new job asks olga first (who cannot read the source), then bob (unreachable: no
    # password), then the steward.
    assert run_worker() == 1
    skipped = events(clar, "skipped")
    assert [(e.detail["attempt"], e.detail["candidate"], e.detail["reason"]) for e in skipped] == [
        (0, str(olga.pk), "NO_READ_PERMISSION"),
        (1, str(bob.pk), "NO_DELIVERY_ALIAS"),
    ]
    assert events(clar, "escalated")


def test_reask_reopens_a_dead_lettered_clarification(submit, people, steward_client):
    sam = people["sam"]
    clar = submit(links=[("AUTHORED_BY", "bob")])  # bob has no password: unreachable
    assert run_worker() == 1  # bob skipped, the steward escalation reaches sam
    [escalation] = Delivery.objects.filter(clarification=clar, kind="escalation")
    assert escalation.person_id == sam.pk and escalation.nonce_state == "active"
    assert lapse_lease(clar).status == JobStatus.DEAD
    clar.refresh_from_db()
    assert clar.state == State.DEAD_LETTERED

    act(steward_client, clar, **reask_form(people["alice"]))
    clar.refresh_from_db()
    assert clar.state == State.OPEN and clar.asked == [str(people["alice"].pk)]
    [reasked] = events(clar, "reasked")
    assert (reasked.detail["from"], reasked.detail["to"]) == ("dead_lettered", "open")
    escalation.refresh_from_db()
    assert escalation.nonce_state == "revoked"
    new = job_of(clar, status=JobStatus.PENDING)
    assert new.payload["ranking"] == [str(people["alice"].pk)] and new.max_attempts == 2
    assert Job.objects.filter(subject=str(clar.pk), status=JobStatus.DEAD).count() == 1


def test_reask_refusals_write_nothing(submit, answer, people, globex, steward_client):
    clar = submit()
    before = snapshot()
    alice, bob = people["alice"], people["bob"]
    refusals = [
        (reask_form(also=(alice, bob)), "Choose at least one person to ask."),
        (reask_form(globex.people["gina"]), "That record does not exist in this clarification."),
        (reask_form(alice, globex.people["gina"]), "That record does not exist"),
        ({"action": "reask", "position_nonsense": "1"}, "That record does not exist"),
        (
            {"action": "reask", f"position_{alice.pk}": "1", f"position_{bob.pk}": "1"},
            "Position 1 is given twice",
        ),
        ({"action": "reask", f"position_{alice.pk}": "first"}, "Positions are whole numbers"),
        ({"action": "reask", f"position_{alice.pk}": "0"}, "Positions are whole numbers"),
    ]
    for data, message in refusals:
        resp = act(steward_client, clar, **data)
        [text] = messages_of(resp)
        assert text.startswith(message), (data, text)
    assert_nothing_written(before)
    assert answer("alice", clar, index=0).status_code == 200
    before = snapshot()
    resp = act(steward_client, clar, **reask_form(people["bob"]))
    [text] = messages_of(resp)
    assert text.startswith("Refused (") and "answered clarification" in text
    assert_nothing_written(before)


def test_erase_attribution_action(submit, answer, people, globex, steward_client):
    alice, bob = people["alice"], people["bob"]
    clar = submit(severity_hint="critical")
    assert answer("alice", clar, index=1).status_code == 202
    before = snapshot()
    resp = act(steward_client, clar, action="erase", person_id=str(globex.people["gina"].pk))
    assert messages_of(resp) == ["That record does not exist in this clarification."]
    assert_nothing_written(before)

    resp = act(steward_client, clar, action="erase", person_id=str(alice.pk))
    assert messages_of(resp) == ["Attribution erased on 1 clarification(s)."]
    clar.refresh_from_db()
    assert clar.asked == [NIL, str(bob.pk)]
    record = ResponseRecord.objects.get(clarification=clar)
    assert (str(record.responder), record.channel, record.message_ref) == (NIL, "erased", None)
    assert (record.rights_at_answer_time, record.answer_index) == ("editor", 1)
    # Audited with the steward who acted, on the clarification and as a tenant event that
    # does not name the erased person.
    sam = people["sam"]
    [erased] = events(clar, "attribution_erased")
    assert erased.detail == {
        "responsesErased": 1,
        "rolesAtAnswerTime": ["editor"],
        "by": str(sam.pk),
        "via": "admin",
    }
    [request] = AuditEvent.objects.filter(clarification=None, type="erasure_requested")
    assert request.detail == {
        "scope": "attribution",
        "by": str(sam.pk),
        "via": "admin",
        "clarifications": 1,
    }
    assert str(alice.pk) not in json.dumps([e.detail for e in events(clar)])
    html = page(steward_client, change_url(clar))
    responses = html.split("<h2>Responses</h2>", 1)[1].split("</section>", 1)[0]
    assert "(erased)" in responses and "Alice Author" not in responses
    assert ">editor<" in responses  # the role-level confirmation marker survives
    asked = html.split("Asked:", 1)[1].split("</p>", 1)[0]
    assert asked.strip() == "(erased), Bob Named"


def test_fact_versions_and_responses_are_not_edited_in_the_admin(conflicted, steward_client):
    clar = conflicted()
    version = NodeVersion.objects.filter(node=clar.target).first()
    before = snapshot()
    html = page(steward_client, change_url(version, "graph/nodeversion"))
    assert 'name="_save"' not in html and 'name="labels"' not in html
    resp = steward_client.post(
        change_url(version, "graph/nodeversion"),
        {
            "node": str(clar.target_id),
            "seq": "9",
            "labels": '["X"]',
            "properties": "{}",
            "confidence": "1",
            "provenance": "{}",
            "evidence_class": "steward_override",
            "_save": "Save",
        },
    )
    assert resp.status_code == 403
    assert (
        steward_client.post(
            f"/admin/graph/nodeversion/{version.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert steward_client.get("/admin/graph/nodeversion/add/").status_code == 403
    # Response records have no admin at all: they are shown on the decide page only.
    assert steward_client.get("/admin/clarify/responserecord/").status_code == 404
    record = ResponseRecord.objects.filter(clarification=clar).first()
    resp = steward_client.post(
        f"/admin/clarify/responserecord/{record.pk}/change/", {"answer_index": "0"}
    )
    assert resp.status_code == 404
    # Nor can the clarification itself be edited as a form, added or deleted.
    assert steward_client.get("/admin/clarify/clarification/add/").status_code == 403
    assert (
        steward_client.post(
            f"/admin/clarify/clarification/{clar.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    # (A source's restriction alone is editable: tests/delivery/test_ask_restriction_admin.py.)
    # A person's page edits only their away (tests/delivery/test_away.py): a posted name
    # is ignored and nothing is written.
    person = Person.objects.first()
    resp = steward_client.post(change_url(person, "tenancy/person"), {"name": "x", "title": "x"})
    assert resp.status_code == 302
    assert Person.objects.get(pk=person.pk).name == person.name
    assert_nothing_written(before)


# --- the clarify policy -------------------------------------------------------------------

POLICY_FORM = {
    "severity_elevate": '{"relative_date": "critical"}',
    "quorum_enabled": "true",
    "critical_required_confirmations": "3",
    "required_roles": '["editor"]',
    "allow_steward_override": "false",
    "_save": "Save",
}


def test_policy_edit_is_audited_and_applies_only_afterwards(
    submit, workspace, people, steward_client
):
    sam = people["sam"]
    opened = submit(severity_hint="critical")
    pinned = dict(opened.quorum_policy)
    assert pinned == {
        "requiredConfirmations": 2,
        "requiredRoles": ["editor"],
        "allowStewardOverride": True,
    }

    resp = steward_client.post("/admin/clarify/clarifypolicy/add/", POLICY_FORM)
    assert resp.status_code == 302, resp.content.decode()[:2000]
    policy = ClarifyPolicy.objects.get(tenant=workspace)
    assert (
        policy.severity_elevate,
        policy.critical_required_confirmations,
        policy.allow_steward_override,
        policy.required_roles,
    ) == ({"relative_date": "critical"}, 3, False, ["editor"])
    [changed] = AuditEvent.objects.filter(tenant=workspace, type="policy_changed")
    assert changed.clarification_id is None
    assert changed.detail["by"] == str(sam.pk)
    assert changed.detail["after"]["critical_required_confirmations"] == 3
    assert changed.detail["before"]["critical_required_confirmations"] is None
    # A second policy cannot be added.
    assert steward_client.get("/admin/clarify/clarifypolicy/add/").status_code == 403

    # The open clarification keeps its pinned policy; a new one gets the new policy.
    opened.refresh_from_db()
    assert opened.quorum_policy == pinned
    html = page(steward_client, change_url(opened))
    assert 'value="override"' in html and "needs 2" in html
    later = submit(external_id="contracts/later.docx")  # relative_date → elevated to critical
    assert later.severity == "critical"
    assert later.quorum_policy == {
        "requiredConfirmations": 3,
        "requiredRoles": ["editor"],
        "allowStewardOverride": False,
    }

    # Editing it again is audited with before and after.
    resp = steward_client.post(
        f"/admin/clarify/clarifypolicy/{policy.pk}/change/",
        {**POLICY_FORM, "critical_required_confirmations": "4"},
    )
    assert resp.status_code == 302
    last = AuditEvent.objects.filter(tenant=workspace, type="policy_changed").latest("id")
    assert (
        last.detail["before"]["critical_required_confirmations"],
        last.detail["after"]["critical_required_confirmations"],
    ) == (3, 4)
    assert ClarifyPolicy.objects.get(tenant=workspace).critical_required_confirmations == 4
    opened.refresh_from_db()
    assert opened.quorum_policy == pinned


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("severity_elevate", "{not json"),
        ("severity_elevate", '{"bogus_kind": "high"}'),
        ("severity_elevate", '{"relative_date": "urgent"}'),
        ("severity_elevate", '["relative_date"]'),
        ("required_roles", "[editor"),
        ("required_roles", '["admin"]'),
        ("required_roles", "[]"),
        ("required_roles", '"editor"'),
    ],
)
def test_invalid_policy_json_is_refused(workspace, steward_client, field, value):
    policy = ClarifyPolicy.objects.create(tenant=workspace, critical_required_confirmations=2)
    before = snapshot()
    resp = steward_client.post(
        f"/admin/clarify/clarifypolicy/{policy.pk}/change/", {**POLICY_FORM, field: value}
    )
    assert resp.status_code == 200
    assert field in resp.context["adminform"].form.errors
    assert "errornote" in resp.content.decode()
    assert_nothing_written(before)


# --- look and queries ---------------------------------------------------------------------


def test_pages_show_dates_badges_and_escape_html(
    submit, answer, conflicted, workspace, steward_client, people
):
    workspace_load(
        data={
            "tenant": "acme",
            "people": [
                {
                    "name": "<img src=x onerror=alert(1)>",
                    "email": "evil@acme.test",
                    "role": "editor",
                }
            ],
        }
    )
    clar = conflicted(
        name='<script>alert("t")</script> term',
        title="<b>Bold</b> doc",
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob"), ("OWNED_BY", "evil")],
    )
    act(steward_client, clar, action="override", answer_index="1", reason="<i>why</i>")
    dead = submit(external_id="contracts/dead.docx")
    Clarification.objects.filter(pk=dead.pk).update(state=State.DEAD_LETTERED)
    source = clar.source_version.source
    version = NodeVersion.objects.filter(node=clar.target).first()
    urls = [
        "/admin/",
        "/admin/clarify/clarification/",
        "/admin/clarify/clarification/?attention=yes",
        "/admin/clarify/clarification/?q=alice",
        change_url(clar),
        change_url(dead),
        "/admin/clarify/clarification/digest/",
        "/admin/graph/nodeversion/",
        change_url(version, "graph/nodeversion"),
        "/admin/graph/source/",
        change_url(source, "graph/source"),
        "/admin/tenancy/person/",
        change_url(people["alice"], "tenancy/person"),
        "/admin/tenancy/apikey/",
    ]
    for url in urls:
        html = page(steward_client, url)
        assert not RAW_US.search(html), (url, RAW_US.search(html))
        assert "<script>alert" not in html and "<img src=x" not in html, url
        assert "<b>Bold</b>" not in html and "<i>why</i>" not in html, url
    listing = page(steward_client, "/admin/clarify/clarification/")
    assert "&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt; term" in listing
    assert re.search(r'<span style="background:#15803d;[^"]*">answered</span>', listing)
    assert re.search(r'<span style="background:#4b5563;[^"]*">dead lettered</span>', listing)
    assert re.search(r'<span style="background:#dc2626;[^"]*">critical</span>', listing)
    decide = page(steward_client, change_url(clar))
    assert "&lt;script&gt;" in decide and "&lt;b&gt;Bold&lt;/b&gt; doc" in decide
    assert "&lt;img src=x onerror=alert(1)&gt;" in decide
    assert "2026-06-12 00:00:00 UTC" in decide  # the bound version's valid time, as a date
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", decide.split("Audit trail")[1])


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(url)
    assert resp.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "url",
    [
        "/admin/clarify/clarification/",
        "/admin/clarify/clarification/?attention=yes",
        "/admin/clarify/clarification/?q=term",
        "/admin/clarify/clarification/?state__exact=conflicted&severity__exact=critical",
        "/admin/clarify/clarification/digest/",
        "/admin/graph/nodeversion/",
    ],
)
def test_clarification_lists_keep_a_constant_query_count(workspace, steward_client, url):
    bulk_clarifications(workspace, 5, prefix="few")
    bulk_clarifications(workspace, 2, state="dead_lettered", prefix="deadfew")
    few = _queries(steward_client, url)
    bulk_clarifications(workspace, 45, prefix="many")
    bulk_clarifications(workspace, 20, state="dead_lettered", prefix="deadmany")
    assert Clarification.objects.count() == 72
    many = _queries(steward_client, url)
    assert many == few, (few, many)


def test_people_keys_and_sources_lists_keep_a_constant_query_count(workspace, steward_client):
    def grow(start: int, stop: int) -> None:
        workspace_load(
            data={
                "tenant": "acme",
                "groups": ["legal", "finance"],
                "people": [
                    {
                        "name": f"Extra {i}",
                        "email": f"extra{i}@acme.test",
                        "role": "editor",
                        "groups": ["legal", "finance"],
                    }
                    for i in range(start, stop)
                ],
            }
        )
        for i in range(start, stop):
            person = Person.objects.get(email=f"extra{i}@acme.test")
            api_key_create(tenant=workspace, person=person, name=f"key {i}")
            Source.objects.create(
                tenant=workspace,
                system="s",
                external_id=f"doc-{i}",
                title=f"Doc {i}",
                acl=["group:legal"],
            )

    grow(0, 3)
    few = {
        m: _queries(steward_client, f"/admin/{m}/")
        for m in ("tenancy/person", "tenancy/apikey", "graph/source", "clarify/clarifypolicy")
    }
    grow(3, 40)
    many = {m: _queries(steward_client, f"/admin/{m}/") for m in few}
    assert many == few


def test_jobs_and_documents_lists_keep_a_constant_query_count(
    workspace, steward_client, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)

    def grow(start: int, stop: int) -> None:
        for i in range(start, stop):
            document_upload(
                tenant=workspace,
                filename=f"memo-{i}.txt",
                size=7,
                content=ContentFile(b"A memo."),
                uploaded_by="key:test",
            )

    grow(0, 3)
    few = {m: _queries(steward_client, f"/admin/{m}/") for m in ("ingest/document", "jobs/job")}
    grow(3, 40)
    many = {m: _queries(steward_client, f"/admin/{m}/") for m in few}
    assert many == few
