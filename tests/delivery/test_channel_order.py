"""Channel choice (issue 5): the tenant's channel order — empty means the CLARIFY_CHANNELS
default — of which only configured channels count; a person is reached on the first one
where they have a verified alias, else falls through to the next."""

import json

import pytest
from django.test import Client

from clarify.models import AuditEvent, ClarifyPolicy
from clarify.policy import policy_for
from delivery.models import Delivery, DeliveryKind
from tenancy.models import AliasKind, PersonAlias

from .conftest import run_worker, submit_with

STEWARD_PASSWORD = "steward-pass-1"  # sam's, from the shared workspace fixture


def question_rows(clar):
    return [
        (d.person_id, d.channel)
        for d in Delivery.objects.filter(clarification=clar, kind=DeliveryKind.QUESTION)
    ]


def slack_posts_to(stub, user: str) -> list:
    return [c for c in stub.of("chat.postMessage") if c.body.get("channel") == user]


def test_a_person_without_a_verified_slack_alias_falls_through_to_the_inbox(
    slack_settings, slack_stub, submit, with_passwords
):
    alice = with_passwords["alice"]
    PersonAlias.objects.filter(person=alice, kind=AliasKind.SLACK_USER_ID).delete()
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    assert question_rows(clar) == [(alice.pk, "inbox")]
    assert slack_stub.of("chat.postMessage") == []
    # With the alias, the same person is reached on Slack (the first channel).
    PersonAlias.objects.create(
        tenant=alice.tenant, person=alice, kind=AliasKind.SLACK_USER_ID, value="U0ALICE"
    )
    other = submit(external_id="contracts/other.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    assert question_rows(other) == [(alice.pk, "slack")]
    assert len(slack_posts_to(slack_stub, "U0ALICE")) == 1


def test_each_tenant_uses_its_own_channel_order(
    slack_settings, slack_stub, submit, with_passwords, globex
):
    alice = with_passwords["alice"]
    gina = globex.people["gina"]
    PersonAlias.objects.create(
        tenant=globex.tenant, person=gina, kind=AliasKind.SLACK_USER_ID, value="U0GINA"
    )
    # acme prefers the inbox; globex keeps the default (CLARIFY_CHANNELS: slack, inbox).
    ClarifyPolicy.objects.create(tenant=alice.tenant, channel_order=["inbox", "slack"])
    assert policy_for(alice.tenant).channel_order == ["inbox", "slack"]
    assert policy_for(globex.tenant).channel_order == ["slack", "inbox"]

    acme_q = submit(links=[("AUTHORED_BY", "alice")])
    globex_q = submit_with(
        globex.ingest_client,
        external_id="globex/msa.docx",
        links=[("AUTHORED_BY", "gina")],
        email_domain="globex.test",
    )
    run_worker()
    assert question_rows(acme_q) == [(alice.pk, "inbox")]  # alice has Slack, but inbox first
    assert question_rows(globex_q) == [(gina.pk, "slack")]
    assert slack_posts_to(slack_stub, "U0ALICE") == []
    assert len(slack_posts_to(slack_stub, "U0GINA")) == 1


def test_a_channel_in_the_order_that_is_not_configured_is_passed_over(
    settings, submit, with_passwords
):
    settings.SLACK_BOT_TOKEN = settings.SLACK_SIGNING_SECRET = None
    settings.TEAMS_APP_ID = settings.TEAMS_APP_PASSWORD = None
    alice = with_passwords["alice"]
    ClarifyPolicy.objects.create(tenant=alice.tenant, channel_order=["slack", "teams", "inbox"])
    clar = submit(links=[("AUTHORED_BY", "alice")])
    run_worker()
    assert question_rows(clar) == [(alice.pk, "inbox")]


def test_a_digest_follows_the_tenants_channel_order(
    slack_settings, slack_stub, submit, with_passwords, clarify_settings
):
    from datetime import timedelta

    from django.utils import timezone

    from delivery.digests import digests_flush

    alice = with_passwords["alice"]
    clarify_settings(DIGEST_THRESHOLD=1)
    submit(external_id="dg/0.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    ClarifyPolicy.objects.create(tenant=alice.tenant, channel_order=["inbox"])
    queued = submit(external_id="dg/1.docx", links=[("AUTHORED_BY", "alice")])
    run_worker()
    posts = len(slack_stub.of("chat.postMessage"))
    assert digests_flush(now=timezone.now() + timedelta(minutes=31)) == 1
    assert len(slack_stub.of("chat.postMessage")) == posts  # the digest went to the inbox
    [row] = Delivery.objects.filter(clarification=queued)
    assert row.message_ref.startswith(f"inbox:{alice.pk}:digest")


# --- the policy admin: validated, audited ------------------------------------------------

POLICY_FORM = {
    "severity_elevate": "",
    "quorum_enabled": "",
    "critical_required_confirmations": "",
    "required_roles": "",
    "allow_steward_override": "",
    "_save": "Save",
}


@pytest.fixture
def steward_admin(people):
    client = Client()
    assert client.login(username="sam@acme.test", password=STEWARD_PASSWORD)
    return client


@pytest.mark.parametrize(
    "value",
    [
        '["slack", "fax"]',
        '["slack", "slack"]',
        '"slack"',
        '{"slack": 1}',
        "[1]",
        "not json",
    ],
)
def test_an_invalid_channel_order_is_refused_and_nothing_is_written(
    steward_admin, workspace, value
):
    events_before = AuditEvent.objects.count()
    resp = steward_admin.post(
        "/admin/clarify/clarifypolicy/add/", {**POLICY_FORM, "channel_order": value}
    )
    assert resp.status_code == 200  # the form again, with the error
    assert "errorlist" in resp.content.decode()
    assert not ClarifyPolicy.objects.exists()
    assert AuditEvent.objects.count() == events_before


def test_the_channel_order_is_edited_in_the_policy_admin_and_audited(
    steward_admin, workspace, people
):
    resp = steward_admin.post(
        "/admin/clarify/clarifypolicy/add/",
        {**POLICY_FORM, "channel_order": json.dumps(["slack", "inbox"])},
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    policy = ClarifyPolicy.objects.get(tenant=workspace)
    assert policy.channel_order == ["slack", "inbox"]
    [changed] = AuditEvent.objects.filter(tenant=workspace, type="policy_changed")
    assert changed.detail["before"]["channel_order"] is None
    assert changed.detail["after"]["channel_order"] == ["slack", "inbox"]
    assert changed.detail["by"] == str(people["sam"].pk)

    # Emptied again: back to the CLARIFY_CHANNELS default.
    resp = steward_admin.post(
        f"/admin/clarify/clarifypolicy/{policy.pk}/change/", {**POLICY_FORM, "channel_order": ""}
    )
    assert resp.status_code == 302
    assert ClarifyPolicy.objects.get(pk=policy.pk).channel_order is None
    last = AuditEvent.objects.filter(tenant=workspace, type="policy_changed").latest("id")
    assert (last.detail["before"]["channel_order"], last.detail["after"]["channel_order"]) == (
        ["slack", "inbox"],
        None,
    )


def test_an_unset_or_unusable_stored_order_means_the_default(settings, workspace):
    settings.CLARIFY_CHANNELS = ["teams", "slack", "inbox"]
    assert policy_for(workspace).channel_order == ["teams", "slack", "inbox"]
    ClarifyPolicy.objects.create(tenant=workspace, channel_order=["fax"])  # not via the form
    assert policy_for(workspace).channel_order == ["teams", "slack", "inbox"]
