"""The webhook outbox (issue 33, CONTRACT §3.9): the hooks of
`clarify.audit.audit_events_append` turn the audit events that announce something to
the outside into one `events:webhook` job per subscribed endpoint — the endpoints and
the bodies read before the insert (`outbox_prepare`), the jobs written after it
(`outbox_write`) — in the transaction that wrote them (a rolled-back change sends
nothing), and wakes the sender once it commits. Each job's payload is the message as
it will be sent (its id, type, timestamp and data), so a retry or a re-send sends the
same message."""

from typing import Any

from django.db import transaction
from django.db.models import Q

from clarify.models import AuditEvent, Clarification
from common.times import from_us
from graph.models import NodeVersion
from jobs import dispatch
from jobs.services import JobSpec, jobs_enqueue

from .models import WEBHOOK_KIND, WebhookEndpoint

# The states whose `state_changed` event is announced, and as what.
_STATE_TYPES = {
    "answered": "clarification.answered",
    "conflicted": "clarification.conflicted",
    "dead_lettered": "clarification.dead_lettered",
}


def webhook_type(event: AuditEvent) -> str | None:
    """The webhook event type `event` announces, if any."""
    if event.clarification_id is None:
        return None
    if event.type == "opened":
        return "clarification.opened"
    if event.type == "state_changed" and isinstance(event.detail, dict):
        return _STATE_TYPES.get(str(event.detail.get("to")))
    if event.type == "bound":
        return "fact.corrected"
    return None


def timestamp(at: int) -> str:
    """An event's time in the message body: RFC 3339 UTC with microseconds (Standard
    Webhooks' `timestamp`)."""
    return from_us(at).isoformat().replace("+00:00", "Z")


def _passage(clar: Clarification) -> str | None:
    """The span's text; none for a restricted source (a label such as "privileged": its
    text leaves the product only through a steward, as the cards' gate has it)."""
    version, start, end = clar.source_version, clar.span_start, clar.span_end
    if version is None or start is None or end is None or version.source.restriction:
        return None
    return str(version.text[start:end])


def clarification_data(event: AuditEvent, with_text: bool) -> dict[str, Any]:
    clar = event.clarification
    assert clar is not None
    state = "open" if event.type == "opened" else str(event.detail.get("to"))
    data: dict[str, Any] = {
        "tenant": event.tenant.slug,
        "clarificationId": str(clar.pk),
        "state": state,
        "severity": clar.severity,
        "kind": clar.kind,
        "target": str(clar.target_id),
    }
    if with_text:
        data["passage"] = _passage(clar)
    return data


def correction_data(event: AuditEvent, with_text: bool) -> dict[str, Any]:
    """`fact.corrected`: the bound version and the one it replaced (closed at the same
    transaction time), read from the graph."""
    clar = event.clarification
    assert clar is not None
    tx = int(event.detail["factVersionTx"])
    versions = NodeVersion.objects.filter(node_id=clar.target_id).filter(
        Q(tx_from=tx) | Q(tx_to=tx)
    )
    intervals: dict[str, dict[str, int | None]] = {"before": {"validFrom": None, "validTo": None}}
    for tx_from, valid_from, valid_to in versions.values_list("tx_from", "valid_from", "valid_to"):
        intervals["after" if tx_from == tx else "before"] = {
            "validFrom": valid_from,
            "validTo": valid_to,
        }
    data: dict[str, Any] = {
        "tenant": event.tenant.slug,
        "nodeId": str(clar.target_id),
        "clarificationId": str(clar.pk),
        "evidenceClass": event.detail.get("evidenceClass"),
        "before": intervals["before"],
        "after": intervals.get("after", {"validFrom": None, "validTo": None}),
        "versionTx": tx,
    }
    if with_text:
        data["passage"] = _passage(clar)
    return data


def message(event: AuditEvent, type: str, with_text: bool) -> dict[str, Any]:
    build = correction_data if type == "fact.corrected" else clarification_data
    return {"type": type, "timestamp": timestamp(event.at), "data": build(event, with_text)}


def outbox_prepare(events: list[AuditEvent]) -> None:
    """Before the events' insert — outside the chain head's lock, which the insert takes —
    what each event announces to whom: its tenant's endpoints subscribed to its type and
    the message body for each (built once per event, with or without the passage). A
    batch with nothing to announce costs nothing; one with something, one query for its
    tenants' endpoints."""
    announced = [(event, t) for event in events if (t := webhook_type(event)) is not None]
    if not announced:
        return
    tenants = {event.tenant_id for event, _ in announced}
    endpoints = list(WebhookEndpoint.objects.filter(tenant_id__in=tenants).order_by("id"))
    for event, type in announced:
        bodies: dict[bool, dict[str, Any]] = {}
        sends = []
        for endpoint in endpoints:
            if endpoint.tenant_id != event.tenant_id or type not in endpoint.event_types:
                continue
            if endpoint.with_text not in bodies:
                bodies[endpoint.with_text] = message(event, type, endpoint.with_text)
            sends.append((endpoint.pk, bodies[endpoint.with_text]))
        setattr(event, _SENDS, sends)


_SENDS = "_webhook_sends"  # set on an event by outbox_prepare, read by outbox_write


def outbox_write(events: list[AuditEvent]) -> None:
    """After the insert: one `events:webhook` job per announced event and subscribed
    endpoint (`outbox_prepare`). A message's id (`msg_<audit event id>`) is the same for
    every endpoint and every attempt; its job's subject is the endpoint and
    clarification — the stream whose order the sender keeps."""
    specs: dict[Any, list[JobSpec]] = {}
    for event in events:
        for endpoint_pk, body in getattr(event, _SENDS, ()):
            payload = {"v": 1, "endpoint": endpoint_pk, "id": f"msg_{event.pk}", "body": body}
            stream = f"{endpoint_pk}:{event.clarification_id}"
            spec = JobSpec(WEBHOOK_KIND, payload, subject=stream)
            specs.setdefault(event.tenant, []).append(spec)
    for tenant, of_tenant in specs.items():
        jobs_enqueue(tenant=tenant, specs=of_tenant)
    if specs:
        transaction.on_commit(lambda: dispatch.kick(WEBHOOK_KIND))
