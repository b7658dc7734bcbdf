"""Signed events out (issue 33, CONTRACT §2 `telha webhooks`, §3.9): a real local receiver
checks every message's signature with the `standardwebhooks` library; the messages come
from an outbox written in the answer's own transaction and are sent by the lease queue."""

import json
import socket
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from clarify.models import Clarification, State
from events.models import WEBHOOK_EVENT_TYPES, WebhookDelivery, WebhookEndpoint
from events.outbox import WEBHOOK_KIND
from graph.models import NodeVersion
from jobs.models import Job, JobStatus

from .conftest import answer, run_clarify, send_webhooks, telha

ALL = ",".join(WEBHOOK_EVENT_TYPES)
CLARIFICATION_KEYS = {"tenant", "clarificationId", "state", "severity", "kind", "target"}
CORRECTION_KEYS = {
    "tenant",
    "nodeId",
    "clarificationId",
    "evidenceClass",
    "before",
    "after",
    "versionTx",
}


@pytest.fixture(autouse=True)
def quick_retries(settings):
    settings.WEBHOOKS = {
        "TIMEOUT_SECONDS": 0.5,
        "BACKOFF_BASE_SECONDS": 60.0,
        "BACKOFF_CAP_SECONDS": 600.0,
        "MAX_ATTEMPTS": 3,
    }


def add(hooks, name: str, events: str = ALL, *extra: str) -> int:
    result = telha(
        "webhooks",
        "add",
        "--tenant",
        "acme",
        "--url",
        hooks.url(name),
        "--events",
        events,
        *extra,
        "--json",
    )
    assert result.code == 0, result.err
    created = json.loads(result.out)
    assert set(created) == {"id", "secret"} and created["secret"].startswith("whsec_")
    hooks.secrets[name] = created["secret"]
    return created["id"]


def backoff_over() -> None:
    """The backoff of every waiting message runs out (time passes)."""
    Job.objects.filter(kind=WEBHOOK_KIND, status=JobStatus.PENDING).update(
        run_after=timezone.now() - timedelta(seconds=1)
    )


def test_an_answer_is_announced_signed_and_in_order(hooks, inbox, submit, person_client):
    add(hooks, "all")
    clar_id = submit("lease-renewal")
    assert run_clarify() == 1
    resp = answer(person_client("alice"), clar_id, 1)
    assert resp.status_code == 200 and resp.json()["outcome"] == "bound"

    assert send_webhooks() == 3
    got = hooks.verified("all")
    assert [m["type"] for m in got] == [
        "clarification.opened",
        "clarification.answered",
        "fact.corrected",
    ]
    for received in hooks.got:
        assert {"webhook-id", "webhook-timestamp", "webhook-signature"} <= set(received.headers)
        assert received.headers["content-type"] == "application/json"
        assert received.headers["webhook-signature"].startswith("v1,")
        assert received.headers["webhook-id"].startswith("msg_")
    opened, answered, corrected = got
    for message in got:
        assert set(message) == {"type", "timestamp", "data"}
    clar = Clarification.objects.get(pk=clar_id)
    assert set(opened["data"]) == set(answered["data"]) == CLARIFICATION_KEYS
    assert opened["data"] == {
        "tenant": "acme",
        "clarificationId": clar_id,
        "state": "open",
        "severity": clar.severity,
        "kind": clar.kind,
        "target": str(clar.target_id),
    }
    assert answered["data"]["state"] == State.ANSWERED
    assert set(corrected["data"]) == CORRECTION_KEYS
    data = corrected["data"]
    assert data["versionTx"] == resp.json()["factVersionTx"] == clar.fact_version_tx
    assert data["nodeId"] == str(clar.target_id) and data["evidenceClass"]
    assert set(data["before"]) == set(data["after"]) == {"validFrom", "validTo"}
    after = NodeVersion.objects.get(node=clar.target_id, tx_from=data["versionTx"])
    before = NodeVersion.objects.get(node=clar.target_id, tx_to=data["versionTx"])
    assert data["after"] == {"validFrom": after.valid_from, "validTo": after.valid_to}
    assert data["before"] == {"validFrom": before.valid_from, "validTo": before.valid_to}
    assert data["before"] != data["after"]
    # Sent: nothing left to send, and a second pass sends nothing again.
    assert not Job.objects.filter(kind=WEBHOOK_KIND).exclude(status=JobStatus.DONE).exists()
    assert send_webhooks() == 0


def test_conflict_and_dead_letter_reach_only_their_subscribers(hooks, inbox, submit, person_client):
    add(hooks, "conflicts", "clarification.conflicted")
    add(hooks, "dead", "clarification.dead_lettered", "--with-text")
    disputed = submit("disputed", severity_hint="critical")
    assert run_clarify() == 1
    assert answer(person_client("alice"), disputed, 1).json()["outcome"] == "partial_confirmation"
    assert answer(person_client("bob"), disputed, 2).json()["outcome"] == "conflict"
    abandoned = submit("abandoned")
    job = Job.objects.get(subject=abandoned, kind="clarify:temporal")
    Job.objects.filter(pk=job.pk).update(max_attempts=1)
    assert telha("jobs", "sweep").code == 0
    from jobs.services import job_fail, job_lease

    [lease] = job_lease(tenant=None, audience="clarify", kinds=["clarify:"], holder="test")
    job_fail(tenant=None, job_id=lease.job.pk, token=lease.token, retryable=False, reason="X")
    assert Clarification.objects.get(pk=abandoned).state == State.DEAD_LETTERED

    assert send_webhooks() == 2
    [conflicted] = hooks.verified("conflicts")
    assert conflicted["type"] == "clarification.conflicted"
    assert set(conflicted["data"]) == CLARIFICATION_KEYS  # no passage without --with-text
    assert conflicted["data"]["clarificationId"] == disputed
    [dead] = hooks.verified("dead")
    assert dead["type"] == "clarification.dead_lettered"
    assert set(dead["data"]) == CLARIFICATION_KEYS | {"passage"}
    assert dead["data"]["clarificationId"] == abandoned and dead["data"]["passage"]


def test_a_restricted_source_s_passage_is_never_sent(hooks, inbox, submit):
    """Even to an endpoint added --with-text: a restricted source's text leaves only
    through a steward, as on the cards."""
    add(hooks, "texts", "clarification.opened", "--with-text")
    submit("privileged-memo", restriction="privileged")
    submit("plain-memo")
    assert send_webhooks() == 2
    passages = [m["data"]["passage"] for m in hooks.verified("texts")]
    assert None in passages and any(passages)  # the plain memo's passage is sent


def test_a_rolled_back_answer_sends_nothing(hooks, inbox, submit, person_client):
    clar_id = submit("rolled-back")
    assert run_clarify() == 1
    add(hooks, "all")

    with pytest.raises(RuntimeError), transaction.atomic():
        assert answer(person_client("alice"), clar_id, 1).json()["outcome"] == "bound"
        assert Job.objects.filter(kind=WEBHOOK_KIND).count() == 2  # in the outbox …
        raise RuntimeError("the change is abandoned")

    assert Clarification.objects.get(pk=clar_id).state == State.OPEN
    assert not Job.objects.filter(kind=WEBHOOK_KIND).exists()  # … and gone with it
    assert send_webhooks() == 0 and hooks.got == []


def test_receiver_down_slow_or_failing_loses_nothing_and_keeps_order(
    hooks, inbox, submit, person_client
):
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        down_url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook/down"
    add(hooks, "failing")
    add(hooks, "slow")
    down = add(hooks, "down")
    WebhookEndpoint.objects.filter(pk=down).update(url=down_url)
    hooks.modes.update(failing="fail", slow="slow")
    clar_id = submit("unlucky")
    assert run_clarify() == 1

    # The answer is not held up by any receiver: it only writes the outbox.
    assert answer(person_client("alice"), clar_id, 1).json()["outcome"] == "bound"
    # Three streams of three: each stream's first message tried and failed, the two after
    # it wait for it (unattempted), so none can overtake it.
    assert send_webhooks() == 9
    jobs = Job.objects.filter(kind=WEBHOOK_KIND)
    assert jobs.count() == 9 and not jobs.filter(status=JobStatus.DONE).exists()
    errors = sorted((j.last_error.split(":")[0], j.attempts) for j in jobs)
    assert errors == [
        *[("WAITING_FOR_EARLIER", 0)] * 6,
        ("WEBHOOK_REJECTED", 1),
        *[("WEBHOOK_UNREACHABLE", 1)] * 2,  # refused, and timed out
    ]
    assert hooks.verified("failing") == hooks.verified("slow") == []

    hooks.modes.clear()  # all three receivers are back
    WebhookEndpoint.objects.filter(pk=down).update(url=hooks.url("down"))
    backoff_over()
    for _ in range(3):
        send_webhooks()
        backoff_over()
    for name in ("failing", "slow", "down"):
        assert [m["type"] for m in hooks.verified(name)] == [
            "clarification.opened",
            "clarification.answered",
            "fact.corrected",
        ], name
    assert set(jobs.values_list("status", flat=True)) == {JobStatus.DONE}


def test_a_message_is_dead_after_the_attempts_and_can_be_resent(
    hooks, inbox, submit, admin_client_steward
):
    add(hooks, "opened", "clarification.opened")
    hooks.modes["opened"] = "fail"
    submit("never-heard")
    for _ in range(3):
        send_webhooks()
        backoff_over()
    [job] = Job.objects.filter(kind=WEBHOOK_KIND)
    assert (job.status, job.attempts) == (JobStatus.DEAD, 3)
    assert job.last_error == "WEBHOOK_REJECTED: HTTP 500"
    assert hooks.verified("opened") == []

    hooks.modes.clear()
    page = admin_client_steward.get("/admin/events/webhookdelivery/")
    assert page.status_code == 200 and b"clarification.opened" in page.content
    resp = admin_client_steward.post(
        "/admin/events/webhookdelivery/",
        {"action": "resend", "_selected_action": [job.pk]},
    )
    assert resp.status_code == 302
    assert send_webhooks() == 1
    [message] = hooks.verified("opened")
    assert message["type"] == "clarification.opened"
    resent = WebhookDelivery.objects.exclude(pk=job.pk).get()
    assert resent.payload == job.payload and resent.status == JobStatus.DONE


def test_webhooks_ls_and_rm(hooks, workspace):
    first = add(hooks, "one", "fact.corrected")
    listed = telha("webhooks", "ls", "--tenant", "acme", "--json")
    assert listed.code == 0
    [row] = json.loads(listed.out)
    assert set(row) == {"id", "url", "events", "withText", "createdAt"}
    assert (row["id"], row["events"], row["withText"]) == (first, ["fact.corrected"], False)
    assert "whsec_" not in listed.out  # the secret is shown once, at add

    assert telha("webhooks", "rm", str(first)).code == 0
    assert not WebhookEndpoint.objects.exists()
    again = telha("webhooks", "rm", str(first))
    assert again.code == 1 and "NOT_FOUND" in again.err


@pytest.mark.parametrize(
    "argv, code",
    [
        (["--tenant", "acme", "--url", "http://127.0.0.1:9/x", "--events", "fact.deleted"], 2),
        (["--tenant", "acme", "--url", "ftp://127.0.0.1/x", "--events", "fact.corrected"], 2),
        (["--tenant", "nope", "--url", "http://127.0.0.1:9/x", "--events", "fact.corrected"], 1),
    ],
)
def test_webhooks_add_refusals_write_nothing(workspace, argv, code):
    result = telha("webhooks", "add", *argv)
    assert result.code == code and result.out == ""
    assert not WebhookEndpoint.objects.exists()


def test_a_steward_adds_and_removes_an_endpoint_in_the_admin(
    hooks, inbox, submit, admin_client_steward
):
    resp = admin_client_steward.post(
        "/admin/events/webhookendpoint/add/",
        {"url": hooks.url("admin"), "event_types": ["clarification.opened"]},
        follow=True,
    )
    assert resp.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.tenant.slug == "acme" and endpoint.secret.startswith("whsec_")
    assert endpoint.secret in resp.content.decode()  # shown once, in the page's message
    hooks.secrets["admin"] = endpoint.secret
    # Its subscription takes effect: the next opening is in the outbox for it.
    submit("admin-added")
    [job] = Job.objects.filter(kind=WEBHOOK_KIND)
    assert job.payload["endpoint"] == endpoint.pk
    assert job.payload["body"]["type"] == "clarification.opened"

    resp = admin_client_steward.post(
        f"/admin/events/webhookendpoint/{endpoint.pk}/delete/", {"post": "yes"}
    )
    assert resp.status_code == 302 and not WebhookEndpoint.objects.exists()
    submit("admin-removed")  # … and ends with it: nothing more in the outbox
    assert Job.objects.filter(kind=WEBHOOK_KIND).count() == 1
