"""Ask-in-chat fixtures: ASK_ENABLED, a small world of facts (a pending MSA term, a
privileged memo, a finance-only fact, and one fact per evidence verdict), row snapshots for
"nothing written", and Slack direct-message / mention events.

Imported by tests/delivery/conftest.py. Plain helpers are importable from this module.
"""

import itertools
import json
from types import SimpleNamespace
from typing import Any

import pytest

from clarify.models import AuditEvent, Clarification, ResponseRecord
from delivery.models import CardAction, ChatTurn, Delivery, TeamsConversation
from graph.models import Node, NodeVersion
from jobs.models import Job

from .conftest import OCT_2026, build_submission

# The privileged memo: its span is distinctive, so "never crossed" is a substring check.
RESTRICTED_SPAN = "settlement of USD 4.2M with Initech (PRIV-HOLD-5521)"
RESTRICTED_TEXT = (
    "PRIVILEGED AND CONFIDENTIAL. Counsel advises that the "
    f"{RESTRICTED_SPAN} is payable next quarter, subject to board approval."
)
RESTRICTED_TITLE = "Privileged settlement memo"
RESTRICTED_NAME = "Settlement payment date"
MSA_QUESTION = "When does the MSA start?"

_event_ids = itertools.count(1)

ROW_MODELS: tuple[Any, ...] = (
    ChatTurn,
    AuditEvent,
    Job,
    ResponseRecord,
    NodeVersion,
    Clarification,
    Delivery,
    CardAction,
    TeamsConversation,
)


def rows(*models: Any) -> dict[str, list[dict[str, Any]]]:
    """Every row of the tables asking could write (or the given ones)."""
    return {m.__name__: list(m.objects.order_by("pk").values()) for m in models or ROW_MODELS}


def turns() -> list[ChatTurn]:
    return list(ChatTurn.objects.order_by("created_at", "id"))


def node_of(clar: Clarification) -> Node:
    return clar.target


def span_of(text: str, excerpt: str) -> dict[str, int]:
    start = text.index(excerpt)
    return {"start": start, "end": start + len(excerpt)}


def source_derived_submission(*, external_id: str, name: str, **kwargs: Any) -> dict[str, Any]:
    """A submission with one dated fact and no ambiguity: a source-derived fact."""
    payload = build_submission(external_id=external_id, name=name, **kwargs)
    payload["ambiguities"] = []
    payload["nodes"][0]["validFrom"] = OCT_2026
    return payload


@pytest.fixture
def ask_on(settings: Any) -> Any:
    settings.ASK_ENABLED = True
    return settings


@pytest.fixture
def world(submit, ingest_client, person_client) -> SimpleNamespace:
    """Facts of workspace acme (alice authored, bob mentioned, unless said otherwise):

    * `msa` — "MSA term" (group:legal), pending, its routing job pending;
    * `memo` — "Settlement payment date" from a *privileged* memo (group:legal), pending;
    * `budget` — "Budget freeze period" (group:finance, olga authored), pending;
    * `nda` — "Vendor NDA period", source-derived (no ambiguity);
    * `lease` — "Office lease renewal", bound by alice's answer (human-confirmed);
    * `escrow` — "Escrow release date", critical, confirmed by alice and bob (quorum);
    * `warranty` — "Warranty expiry", bound by sam's steward override.
    """
    msa = submit()
    memo = submit(
        external_id="legal/settlement-memo.docx",
        title=RESTRICTED_TITLE,
        name=RESTRICTED_NAME,
        text=RESTRICTED_TEXT,
        span=span_of(RESTRICTED_TEXT, RESTRICTED_SPAN),
        restriction="privileged",
    )
    budget = submit(
        external_id="finance/budget.xlsx",
        title="Budget plan",
        name="Budget freeze period",
        acl=["group:finance"],
        links=[("AUTHORED_BY", "olga")],
    )
    resp = ingest_client.post(
        "/v1/submissions",
        source_derived_submission(external_id="legal/nda.docx", name="Vendor NDA period"),
        format="json",
    )
    assert resp.status_code == 201, resp.content
    nda = Node.objects.get(pk=resp.json()["nodes"][0]["id"])
    lease = submit(external_id="legal/lease.docx", name="Office lease renewal")
    escrow = submit(
        external_id="legal/escrow.docx", name="Escrow release date", severity_hint="critical"
    )
    warranty = submit(external_id="legal/warranty.docx", name="Warranty expiry")

    def answer(who: str, clar: Clarification, **body: Any) -> None:
        resp = person_client(who).post(f"/v1/clarifications/{clar.pk}/answer", body, format="json")
        assert resp.status_code in (200, 202), resp.content

    answer("alice", lease, answerIndex=0)
    answer("alice", escrow, answerIndex=0)
    answer("bob", escrow, answerIndex=0)
    answer("sam", warranty, answerIndex=2, stewardOverride=True)
    for clar in (lease, escrow, warranty):
        clar.refresh_from_db()
        assert clar.state == "answered"
    return SimpleNamespace(
        msa=msa,
        memo=memo,
        budget=budget,
        nda=nda,
        lease=lease,
        escrow=escrow,
        warranty=warranty,
    )


# --- Slack events -------------------------------------------------------------------------


def slack_event(event: dict[str, Any], *, event_id: str | None = None, team: str = "T0ACME") -> str:
    """An `event_callback` body (JSON) carrying `event`."""
    return json.dumps(
        {
            "token": "legacy-verification-token",
            "team_id": team,
            "api_app_id": "A0TELHA",
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"EvAsk{next(_event_ids):06d}",
            "event_time": 1700000300,
        }
    )


def im_message(
    text: str, *, user: str = "U0ALICE", channel: str = "D0ALICE", **extra: Any
) -> dict[str, Any]:
    """A person's direct message to the bot."""
    return {
        "type": "message",
        "channel_type": "im",
        "user": user,
        "text": text,
        "ts": f"1700000400.{next(_event_ids):06d}",
        "channel": channel,
        "event_ts": "1700000400.000100",
        **extra,
    }


def app_mention(
    text: str, *, user: str = "U0ALICE", channel: str = "C0GENERAL", **extra: Any
) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": user,
        "text": f"<@U0BOT> {text}",
        "ts": f"1700000500.{next(_event_ids):06d}",
        "channel": channel,
        "event_ts": "1700000500.000100",
        **extra,
    }
