"""Ask in chat over Slack and Teams (issue 9), against the Slack Web API stub with really
signed requests and the Bot Framework stub with locally signed tokens: ASK_ENABLED off
changes nothing; identity binding comes first; answers cross only through the delivery
gate (story `chat-turn-restriction-provenance`, "the sender never receives a restricted
body"); "Ask <person> now?" from a button; and cards about a restricted source are teasers
on chat channels while the inbox shows them in full."""

import json
import logging
import re
from typing import Any

import pytest
from django.test import Client

import delivery.ask.services
import delivery.slack.hooks as slack_hooks
from clarify.models import AuditEvent, Clarification
from delivery.models import ChatTurn, Delivery
from delivery.provenance import RESTRICTED_TEASER
from delivery.restriction import RESTRICTED_CARD_TEXT
from jobs.models import Job, JobStatus
from tenancy.models import PersonAlias

from .conftest import JOB_KIND, SPAN_TEXT, run_worker
from .conftest_ask import (
    MSA_QUESTION,
    RESTRICTED_NAME,
    RESTRICTED_SPAN,
    RESTRICTED_TEXT,
    RESTRICTED_TITLE,
    app_mention,
    im_message,
    rows,
    slack_event,
    span_of,
    turns,
)
from .conftest_slack import EVENTS, INTERACTIVITY, block_actions, form_body
from .conftest_teams import ALICE_CONVERSATION, invoke_action, message_submit

SLACK_WRITES = ("chat.postMessage", "chat.update", "chat.postEphemeral", "views.open")
NOT_FOUND = "I couldn't find a fact you can read that matches that question."


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def assert_never_crossed(bodies: str, *secrets: str) -> None:
    """No secret appears in what crossed, whatever its case or whitespace."""
    haystack = normalised(bodies)
    for secret in secrets:
        assert normalised(secret) not in haystack, secret


def finish_routing(*clars: Clarification) -> None:
    Job.objects.filter(kind=JOB_KIND, subject__in=[str(c.pk) for c in clars]).update(
        status=JobStatus.DONE
    )


# --- Slack helpers ----------------------------------------------------------------------------


def slack_sent(stub: Any) -> list[Any]:
    return [c for c in stub.calls if c.method in SLACK_WRITES]


def slack_bodies(stub: Any) -> str:
    """Everything that crossed to Slack (text and blocks of every write), as one string."""
    return "\n".join(json.dumps(c.body, ensure_ascii=False) for c in slack_sent(stub))


@pytest.fixture
def ask_slack(slack_post):
    """`ask_slack(event)` → the response of a signed Events API POST carrying `event`."""

    def post(event: dict[str, Any], **kwargs: Any) -> Any:
        resp = slack_post(EVENTS, slack_event(event, **kwargs), content_type="application/json")
        assert resp.status_code == 200, resp.content
        return resp

    return post


@pytest.fixture
def tap_ask_now(slack_post):
    """`tap_ask_now(clarification_id, user=…, blocks=…)` → a signed `clarify_ask_now` tap."""

    def tap(clarification_id: Any, *, user: str = "U0ALICE", blocks: Any = None) -> Any:
        payload = block_actions(
            action_id="clarify_ask_now",
            value=json.dumps({"clarificationId": str(clarification_id)}),
            user=user,
            channel="D0ALICE",
            ts="1700000600.000100",
            blocks=blocks,
        )
        return slack_post(INTERACTIVITY, form_body(payload))

    return tap


def the_answer(stub: Any) -> Any:
    [post] = stub.of("chat.postMessage")
    return post


def ask_now_buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e
        for b in blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e.get("action_id") == "clarify_ask_now"
    ]


# --- Slack: off is exactly as before -----------------------------------------------------------


def test_slack_with_ask_off_acks_and_writes_nothing(
    world, ask_slack, tap_ask_now, slack_stub, monkeypatch
) -> None:
    def never(**kwargs: Any) -> None:
        raise AssertionError("the ask handler must not be reached with ASK_ENABLED off")

    monkeypatch.setattr(delivery.ask.services, "respond", never)
    monkeypatch.setattr(delivery.ask.services, "ask_now", never)
    finish_routing(world.msa)
    before = rows()
    ask_slack(im_message(MSA_QUESTION))
    ask_slack(app_mention(MSA_QUESTION))
    tap_ask_now(world.msa.pk)
    assert rows() == before
    assert slack_sent(slack_stub) == []
    handler = slack_hooks.slack_handler()
    listeners = [listener.ack_function for listener in handler.app._listeners]
    assert slack_hooks.ack_only in listeners
    assert slack_hooks.on_ask_message not in listeners
    assert slack_hooks.on_ask_now not in listeners


# --- Slack: a direct message ---------------------------------------------------------------------


def test_a_direct_message_is_answered_in_the_dm(ask_on, world, ask_slack, slack_stub) -> None:
    ask_slack(im_message(MSA_QUESTION))
    post = the_answer(slack_stub)
    assert post.body["channel"] == "D0ALICE"
    assert "thread_ts" not in post.body
    text = json.dumps(post.blocks, ensure_ascii=False)
    assert "MSA term" in text and "pending" in text
    caveat = f"depends on an unresolved clarification (open, no quorum required; id {world.msa.pk})"
    assert caveat in text
    assert f"/inbox/facts/{world.msa.target_id}/" in text
    [button] = ask_now_buttons(post.blocks)
    assert button["text"]["text"] == "Ask Alice Author now?"
    assert json.loads(button["value"]) == {"clarificationId": str(world.msa.pk)}
    asked, answered = turns()
    assert (asked.channel_origin, answered.channel_origin) == ("slack", "slack")
    assert asked.text == MSA_QUESTION and asked.person.email == "alice@acme.test"
    assert answered.delivered_text == answered.text
    # Asking queued nothing: the routing job is the one opened with the clarification.
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 1


def test_a_dm_in_a_thread_is_answered_in_the_thread(ask_on, world, ask_slack, slack_stub) -> None:
    ask_slack(im_message(MSA_QUESTION, thread_ts="1700000000.000042"))
    assert the_answer(slack_stub).body["thread_ts"] == "1700000000.000042"


def test_a_mapped_person_never_sees_another_sources_fact(
    ask_on, world, ask_slack, slack_stub, people
) -> None:
    PersonAlias.objects.create(
        tenant=people["olga"].tenant, person=people["olga"], kind="slackUserId", value="U0OLGA"
    )
    ask_slack(im_message(MSA_QUESTION, user="U0OLGA", channel="D0OLGA"))
    post = the_answer(slack_stub)
    assert post.body["channel"] == "D0OLGA"
    assert NOT_FOUND.replace("'", "") in json.dumps(post.body).replace("'", "")
    assert "MSA" not in slack_bodies(slack_stub)
    assert ask_now_buttons(post.blocks) == []


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(im_message(MSA_QUESTION, bot_id="B0TELHA"), id="from a bot"),
        pytest.param(im_message(MSA_QUESTION, subtype="message_changed"), id="an edit"),
        pytest.param(im_message(MSA_QUESTION, subtype="bot_message"), id="a bot message"),
        pytest.param(
            im_message(MSA_QUESTION, channel_type="channel", channel="C0GENERAL"), id="in a channel"
        ),
        pytest.param(
            im_message(MSA_QUESTION, channel_type="mpim", channel="G0GROUP"), id="in a group DM"
        ),
        pytest.param(app_mention(MSA_QUESTION, bot_id="B0OTHER"), id="a mention by a bot"),
    ],
)
def test_messages_that_are_not_questions_are_ignored(
    ask_on, world, ask_slack, slack_stub, event
) -> None:
    before = rows()
    ask_slack(event)
    assert rows() == before
    assert slack_sent(slack_stub) == []


# --- Slack: identity binding first ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["unknown", "other-tenant-only", "ambiguous", "erased"])
def test_an_unmapped_slack_identity_never_reaches_the_handler(
    ask_on, world, globex, people, ask_slack, slack_stub, monkeypatch, caplog, how
) -> None:
    def never(**kwargs: Any) -> None:
        raise AssertionError("an unmapped identity reached the ask handler")

    monkeypatch.setattr(delivery.ask.services, "respond", never)
    user = {"unknown": "U0NOBODY", "other-tenant-only": "U0GINA"}.get(how, "U0ALICE")
    gina = globex.people["gina"]
    if how in ("other-tenant-only", "ambiguous"):
        PersonAlias.objects.create(tenant=gina.tenant, person=gina, kind="slackUserId", value=user)
    if how == "other-tenant-only":
        gina.erased_at = gina.created_at
        gina.save(update_fields=["erased_at"])
    if how == "erased":
        alice = people["alice"]
        alice.erased_at = alice.created_at
        alice.save(update_fields=["erased_at"])
    before = rows()
    with caplog.at_level(logging.INFO, logger="delivery.slack.hooks"):
        ask_slack(im_message(MSA_QUESTION, user=user, channel=f"D{user[1:]}"))
    assert rows() == before
    assert any("unmapped slack identity" in r.getMessage() for r in caplog.records)
    [post] = slack_stub.of("chat.postMessage")
    assert post.body["text"] == slack_hooks.UNMAPPED_TEXT
    assert "MSA" not in slack_bodies(slack_stub)


# --- Slack: a mention in a shared channel -------------------------------------------------------


def test_a_mention_is_answered_by_dm_with_a_pointer_in_the_thread(
    ask_on, world, ask_slack, slack_stub
) -> None:
    event = app_mention(MSA_QUESTION, channel="C0GENERAL")
    ask_slack(event)
    dm, pointer = slack_stub.of("chat.postMessage")
    assert dm.body["channel"] == "U0ALICE"  # the stub opens the DM, as Slack does
    assert "MSA term" in json.dumps(dm.blocks)
    assert pointer.body["channel"] == "C0GENERAL"
    assert pointer.body["thread_ts"] == event["ts"]
    assert pointer.body["text"] == slack_hooks.ASK_DM_POINTER
    assert "MSA" not in json.dumps(pointer.body)
    asked, _ = turns()
    assert asked.text == MSA_QUESTION  # the mention itself is not part of the question


def test_a_mention_with_no_question_gets_a_hint_and_writes_nothing(
    ask_on, world, ask_slack, slack_stub
) -> None:
    before = rows()
    ask_slack(app_mention("", channel="D0ALICE"))
    assert rows() == before
    [post] = slack_stub.of("chat.postMessage")
    assert post.body["text"] == slack_hooks.ASK_EMPTY_TEXT


# --- Slack: the delivery gate ---------------------------------------------------------------------


def test_a_restricted_answer_never_reaches_slack(ask_on, world, ask_slack, slack_stub) -> None:
    source_id = str(world.memo.source_version.source_id)
    ask_slack(im_message("When is the settlement payment due?"))
    post = the_answer(slack_stub)
    bodies = slack_bodies(slack_stub)
    assert_never_crossed(
        bodies,
        RESTRICTED_SPAN,
        RESTRICTED_TITLE,
        RESTRICTED_NAME,
        source_id,
        str(world.memo.target_id),
        "privileged",
    )
    assert normalised(RESTRICTED_TEASER) in normalised(json.dumps(post.blocks))
    assert post.body["text"] == RESTRICTED_TEASER
    assert ask_now_buttons(post.blocks) == []  # no button on a teaser
    [event] = AuditEvent.objects.filter(type="restricted_content_blocked")
    assert event.detail["channel"] == "slack"
    assert event.detail["reason"] == "RESTRICTED_PROVENANCE"
    _, answered = turns()
    assert answered.delivered_text == RESTRICTED_TEASER
    assert RESTRICTED_NAME in answered.text
    assert answered.restriction_provenance == [
        {"kind": "source", "sourceId": source_id, "restriction": "privileged"}
    ]


@pytest.fixture
def quoting(world, ingest_client):
    """A NOT restricted e-mail whose fact quotes the privileged memo's span verbatim (in
    another case and with other whitespace), and one that paraphrases it."""
    from .conftest import build_submission

    def fact(external_id: str, name: str) -> None:
        payload = build_submission(
            external_id=external_id, title="Board e-mail", name=name, acl=["group:legal"]
        )
        payload["ambiguities"] = []
        resp = ingest_client.post("/v1/submissions", payload, format="json")
        assert resp.status_code == 201, resp.content

    fact("mail/quote.eml", "Quoted: " + RESTRICTED_SPAN.upper().replace(" ", "  \n"))
    fact("mail/paraphrase.eml", "Paraphrased deal: Initech is owed a payment next quarter")
    return world


def test_a_verbatim_restricted_excerpt_is_blocked_without_provenance(
    ask_on, quoting, ask_slack, slack_stub
) -> None:
    ask_slack(im_message("what was quoted?"))
    post = the_answer(slack_stub)
    assert post.body["text"] == RESTRICTED_TEASER
    assert_never_crossed(slack_bodies(slack_stub), RESTRICTED_SPAN)
    [event] = AuditEvent.objects.filter(type="restricted_content_blocked")
    assert event.detail["reason"] == "VERBATIM_RESTRICTED_EXCERPT"
    _, answered = turns()
    assert answered.restriction_provenance == []  # not from a restricted source
    assert answered.delivered_text == RESTRICTED_TEASER


def test_the_ask_gate_finds_a_quoted_excerpt_however_many_restricted_spans_exist(
    ask_on, quoting, ask_slack, slack_stub
) -> None:
    """The gate asks the database which restricted excerpts the body quotes: the memo's
    span, older than a thousand newer restricted spans, is still found."""
    from .test_restricted_excerpts import restricted_text

    restricted_text(quoting.msa.tenant, [f"Newer confidential clause {i:05d}" for i in range(1005)])
    ask_slack(im_message("what was quoted?"))
    assert the_answer(slack_stub).body["text"] == RESTRICTED_TEASER
    assert_never_crossed(slack_bodies(slack_stub), RESTRICTED_SPAN)
    [event] = AuditEvent.objects.filter(type="restricted_content_blocked")
    assert event.detail["reason"] == "VERBATIM_RESTRICTED_EXCERPT"


def test_a_paraphrase_passes_the_gate(ask_on, quoting, ask_slack, slack_stub) -> None:
    ask_slack(im_message("the paraphrased deal"))
    post = the_answer(slack_stub)
    assert "Paraphrased deal: Initech is owed a payment next quarter" in json.dumps(post.blocks)
    assert post.body["text"] != RESTRICTED_TEASER
    assert not AuditEvent.objects.filter(type="restricted_content_blocked").exists()


def test_unparseable_provenance_is_blocked(
    ask_on, world, ask_slack, slack_stub, monkeypatch
) -> None:
    """Should a bug hand the gate garbage, the body still never crosses."""
    real = delivery.ask.services.answer_question

    def garbled(person: Any, question: str) -> Any:
        answer = real(person, question)
        answer.provenance = "privileged"  # type: ignore[assignment]
        return answer

    monkeypatch.setattr(delivery.ask.services, "answer_question", garbled)
    before = rows(ChatTurn)
    ask_slack(im_message(MSA_QUESTION))
    assert slack_bodies(slack_stub).count("MSA term") == 0
    assert the_answer(slack_stub).body["text"] == slack_hooks.ASK_FAILED_TEXT
    # The turn itself failed closed: the column never holds what the gate cannot parse.
    assert rows(ChatTurn) == before
    assert not AuditEvent.objects.filter(type="restricted_content_blocked").exists()


def test_the_gate_blocks_unparseable_provenance_before_the_write(world, people) -> None:
    from delivery.provenance import gate_outbound

    answer = delivery.ask.services.answer_question(people["alice"], MSA_QUESTION)
    result = gate_outbound(delivery.ask.services.render(answer), [{"kind": "source"}], [])
    assert result.body == RESTRICTED_TEASER and result.reason == "UNPARSEABLE_PROVENANCE"


# --- Slack: "Ask <person> now?" ------------------------------------------------------------------


def test_the_button_asks_now_once(ask_on, world, ask_slack, tap_ask_now, slack_stub) -> None:
    ask_slack(im_message(MSA_QUESTION))
    shown = the_answer(slack_stub).blocks
    # The routing job is still pending: deduplicated, nothing queued.
    before = rows()
    tap_ask_now(world.msa.pk, blocks=shown)
    assert rows() == before
    [update] = slack_stub.of("chat.update")
    assert "already on its way" in update.body["text"]
    assert ask_now_buttons(update.blocks) == []
    assert "MSA term" in json.dumps(update.blocks)  # the answer stays, the button goes
    # Once the job is done, one new routing job for the same clarification.
    finish_routing(world.msa)
    clarifications = Clarification.objects.count()
    tap_ask_now(world.msa.pk, blocks=shown)
    jobs = Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).order_by("id")
    assert [j.status for j in jobs] == [JobStatus.DONE, JobStatus.PENDING]
    assert Clarification.objects.count() == clarifications
    [event] = AuditEvent.objects.filter(type="ask_now")
    assert event.clarification_id == world.msa.pk
    assert slack_stub.of("chat.update")[-1].body["text"].startswith("Asked.")
    tap_ask_now(world.msa.pk, blocks=shown)
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 2


def test_an_unmapped_tap_queues_nothing(ask_on, world, tap_ask_now, slack_stub) -> None:
    finish_routing(world.msa)
    before = rows()
    tap_ask_now(world.msa.pk, user="U0NOBODY", blocks=[])
    assert rows() == before


def test_a_tap_about_a_fact_the_person_cannot_read_queues_nothing(
    ask_on, world, tap_ask_now, slack_stub
) -> None:
    finish_routing(world.budget)
    before = rows()
    tap_ask_now(world.budget.pk, blocks=[])  # alice is not in finance
    assert rows() == before
    assert "nothing to ask" in slack_stub.of("chat.update")[-1].body["text"]


# --- Slack: cards about a restricted source ------------------------------------------------------


@pytest.fixture
def restricted_card(slack_settings, slack_stub, submit, people):
    """A clarification about a privileged memo, delivered to alice by the real worker."""
    clar = submit(
        external_id="legal/settlement-memo.docx",
        title=RESTRICTED_TITLE,
        name=RESTRICTED_NAME,
        text=RESTRICTED_TEXT,
        span=span_of(RESTRICTED_TEXT, RESTRICTED_SPAN),
        restriction="privileged",
    )
    assert run_worker() >= 1
    return clar


def test_a_card_about_a_restricted_source_is_a_teaser_on_slack(
    restricted_card, slack_stub, people
) -> None:
    [post] = slack_stub.of("chat.postMessage")
    assert post.body["channel"] == "U0ALICE"
    bodies = slack_bodies(slack_stub)
    assert_never_crossed(
        bodies, RESTRICTED_SPAN, RESTRICTED_TITLE, RESTRICTED_NAME, "settlement-memo"
    )
    assert RESTRICTED_CARD_TEXT in bodies
    # No candidate buttons: the question is answered in the inbox.
    assert not [
        e
        for b in post.blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"].startswith("clarify_answer_")
    ]
    [event] = AuditEvent.objects.filter(
        clarification=restricted_card, type="restricted_content_blocked"
    )
    assert event.detail["channel"] == "slack"
    assert event.detail["reason"] == "RESTRICTED_PROVENANCE"


def test_something_else_on_a_restricted_card_opens_no_restricted_text(
    restricted_card, slack_post, slack_stub
) -> None:
    [post] = slack_stub.of("chat.postMessage")
    d = Delivery.objects.get(clarification=restricted_card, kind="question")
    channel, ts = d.message_ref.split(":")[1:]
    payload = block_actions(
        action_id="clarify_something_else",
        value=json.dumps({"clarificationId": str(restricted_card.pk), "nonce": d.nonce}),
        channel=channel,
        ts=ts,
        blocks=post.blocks,
    )
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200
    [opened] = slack_stub.of("views.open")
    assert_never_crossed(
        slack_bodies(slack_stub), RESTRICTED_TITLE, RESTRICTED_NAME, RESTRICTED_SPAN
    )
    assert RESTRICTED_CARD_TEXT in json.dumps(opened.view)


def test_the_inbox_shows_the_restricted_card_in_full(restricted_card, people) -> None:
    client = Client()
    client.force_login(people["alice"].user)
    page = client.get("/inbox/").content.decode()
    delivery_row = Delivery.objects.get(clarification=restricted_card, kind="question")
    assert f'data-clarification="{restricted_card.pk}"' in page
    assert RESTRICTED_TITLE in page and RESTRICTED_NAME in page
    assert f'value="{delivery_row.nonce}"' in page  # its answer buttons
    assert RESTRICTED_CARD_TEXT not in page


def test_a_re_rendered_restricted_card_stays_a_teaser(restricted_card) -> None:
    """After a tap elsewhere in a digest, sibling cards are re-rendered from their records:
    a restricted one must come back as the teaser."""
    delivery_row = Delivery.objects.get(clarification=restricted_card, kind="question")
    blocks = json.dumps([b.to_dict() for b in slack_hooks._card_for(delivery_row)])
    assert_never_crossed(blocks, RESTRICTED_TITLE, RESTRICTED_NAME, RESTRICTED_SPAN)
    assert RESTRICTED_CARD_TEXT in blocks


def test_a_card_quoting_a_restricted_excerpt_is_a_teaser(
    slack_settings, slack_stub, submit, ingest_client
) -> None:
    """The card is about an ordinary document, but its span quotes the privileged memo."""
    from .conftest import build_submission

    memo = build_submission(
        external_id="legal/settlement-memo.docx",
        title=RESTRICTED_TITLE,
        name=RESTRICTED_NAME,
        text=RESTRICTED_TEXT,
        span=span_of(RESTRICTED_TEXT, RESTRICTED_SPAN),
        restriction="privileged",
        severity_hint="low",
    )
    assert ingest_client.post("/v1/submissions", memo, format="json").status_code == 201
    text = f"Minutes. The board noted the {RESTRICTED_SPAN.upper()} and moved on."
    clar = submit(
        external_id="board/minutes.docx",
        title="Board minutes",
        name="Minutes date",
        text=text,
        span=span_of(text, RESTRICTED_SPAN.upper()),
    )
    assert run_worker() >= 1
    bodies = slack_bodies(slack_stub)
    assert_never_crossed(bodies, RESTRICTED_SPAN)
    assert RESTRICTED_CARD_TEXT in bodies
    [event] = AuditEvent.objects.filter(clarification=clar, type="restricted_content_blocked")
    assert event.detail["reason"] == "VERBATIM_RESTRICTED_EXCERPT"


def test_an_ordinary_card_still_carries_its_excerpt(slack_settings, slack_stub, submit) -> None:
    submit()
    assert run_worker() >= 1
    assert SPAN_TEXT in slack_bodies(slack_stub)
    assert not AuditEvent.objects.filter(type="restricted_content_blocked").exists()


# --- Teams ------------------------------------------------------------------------------------


def teams_message(service_url: str, text: str, **kwargs: Any) -> dict[str, Any]:
    """A person's text message to the bot (no `value`)."""
    activity = message_submit(service_url, {}, **kwargs)
    del activity["value"]
    activity["text"] = text
    return activity


def connector_posts(stub: Any) -> list[Any]:
    return stub.of("activities")


def teams_bodies(stub: Any) -> str:
    return "\n".join(json.dumps(c.body, ensure_ascii=False) for c in connector_posts(stub))


def test_teams_with_ask_off_behaves_as_before(
    world, teams_post, teams_stub, teams_alice, monkeypatch
) -> None:
    def never(**kwargs: Any) -> None:
        raise AssertionError("the ask handler must not be reached with ASK_ENABLED off")

    monkeypatch.setattr(delivery.ask.services, "respond", never)
    monkeypatch.setattr(delivery.ask.services, "ask_now", never)
    finish_routing(world.msa)
    # The conversation reference is remembered as it always was; nothing else is written.
    assert teams_post(teams_message(teams_stub.service_url, "hi")).status_code == 200
    before = rows()
    resp = teams_post(teams_message(teams_stub.service_url, MSA_QUESTION))
    assert resp.status_code == 200 and resp.content == b""
    invoke = teams_post(
        invoke_action(
            teams_stub.service_url, {"kind": "ask_now", "clarificationId": str(world.msa.pk)}
        )
    )
    assert invoke.json()["statusCode"] == 400  # "Not a clarify action.", as before
    rows_after = rows()
    rows_after.pop("TeamsConversation")
    before.pop("TeamsConversation")
    assert rows_after == before
    assert connector_posts(teams_stub) == []


def test_a_teams_message_is_answered_in_the_conversation(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    resp = teams_post(teams_message(teams_stub.service_url, MSA_QUESTION))
    assert resp.status_code == 200 and resp.content == b""
    [reply] = connector_posts(teams_stub)
    assert reply.conversation_id == ALICE_CONVERSATION
    assert reply.bearer.startswith("stub-bot-token-")
    # An Adaptive Card (with the plain-text body as its fallback), not plain text.
    assert "text" not in reply.body
    card = reply.card
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.5")
    asked, answered = turns()
    assert card["fallbackText"] == answered.delivered_text == answered.text
    assert reply.body["summary"].startswith("“MSA term” starts on 1 October 2026")
    [action] = card["actions"]
    assert action["type"] == "Action.Execute" and action["title"] == "Ask Alice Author now?"
    assert action["data"] == {"kind": "ask_now", "clarificationId": str(world.msa.pk)}
    assert action["fallback"]["data"] == action["data"]
    assert asked.channel_origin == answered.channel_origin == "teams"
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 1


def card_texts(card: dict[str, Any]) -> list[str]:
    return [b["text"] for b in _blocks(card) if b.get("type") == "TextBlock"]


def _blocks(value: Any) -> list[dict[str, Any]]:
    """Every element of a card body, depth first."""
    out: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if "type" in value:
            out.append(value)
        for key in ("body", "items"):
            out += [b for item in value.get(key) or [] for b in _blocks(item)]
    return out


def test_the_teams_answer_card_carries_the_evidence_card(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    """The answer, each cited fact with validity, verdict and count, every pending fact's
    caveat, the verification counts and an "Open full trace" link per fact (a period
    question: the facts starting then, earliest first)."""
    teams_post(teams_message(teams_stub.service_url, "What starts in October 2026?"))
    [reply] = connector_posts(teams_stub)
    card = reply.card
    _, answered = turns()
    assert card["fallbackText"] == answered.text
    texts = card_texts(card)
    assert texts[0].startswith("4 facts you can read start in October 2026; the first 3 are")
    containers = [b for b in card["body"] if b["type"] == "Container"]
    facts = {
        c["items"][0]["text"]: {f["title"]: f["value"] for f in c["items"][1]["facts"]}
        for c in containers
    }
    verdicts = {
        "MSA term": ("pending", "0", world.msa.target_id),
        "Vendor NDA period": ("source-derived", "0", world.nda.pk),
        "Office lease renewal": ("human-confirmed", "1", world.lease.target_id),
        "Escrow release date": ("quorum-confirmed", "2", world.escrow.target_id),
        "Warranty expiry": ("steward-overridden", "1", world.warranty.target_id),
    }
    assert len(facts) == 3
    for name, f in facts.items():
        assert (f["Verdict"], f["Confirmations"]) == verdicts[name][:2]
        assert f["Valid"].startswith("valid from 1 October 2026")
    links = [
        a["url"]
        for b in _blocks(card)
        if b["type"] == "ActionSet"
        for a in b["actions"]
        if a["type"] == "Action.OpenUrl" and a["title"] == "Open full trace"
    ]
    targets = {verdicts[name][2] for name in facts}
    assert sorted(links) == sorted(f"{ask_on.PUBLIC_BASE_URL}/inbox/facts/{t}/" for t in targets)
    counts: dict[str, int] = {}
    for f in facts.values():
        counts[f["Verdict"]] = counts.get(f["Verdict"], 0) + 1
    line = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    assert f"Verification: {line}" in texts
    caveat = f"unresolved clarification (open, no quorum required; id {world.msa.pk})"
    assert sum(caveat in t for t in texts) == (1 if "MSA term" in facts else 0)


def test_a_restricted_answer_sends_no_card_to_teams(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    """The card goes through the same gate as the text: a gated answer is the teaser as
    plain text, with no card (and so no fact name, link or button) at all."""
    teams_post(teams_message(teams_stub.service_url, "settlement payment escrow"))
    [reply] = connector_posts(teams_stub)
    assert reply.body == {"type": "message", "text": RESTRICTED_TEASER, "textFormat": "plain"}
    assert_never_crossed(teams_bodies(teams_stub), RESTRICTED_NAME, "Escrow release date")


def test_a_card_that_would_quote_a_restricted_excerpt_is_not_sent(
    ask_on, world, people, teams_post, teams_stub, teams_alice, monkeypatch
) -> None:
    """Belt and braces: were the card ever to carry what the body does not (here a fact
    name rewritten after the body was gated), the card's own gate check keeps it back and
    the gated body goes as text."""
    import delivery.teams.ask_hook as teams_ask

    real = teams_ask.answer_card

    def leaky(answer: Any, *, fallback: str) -> dict[str, Any]:
        answer.evidence[0].name = RESTRICTED_SPAN
        answer.restricted_excerpts.append(RESTRICTED_SPAN)
        return real(answer, fallback=fallback)

    monkeypatch.setattr(teams_ask, "answer_card", leaky)
    teams_post(teams_message(teams_stub.service_url, "office lease"))
    [reply] = connector_posts(teams_stub)
    assert "attachments" not in reply.body
    assert "Office lease renewal" in reply.body["text"]
    assert_never_crossed(teams_bodies(teams_stub), RESTRICTED_SPAN)


def test_a_teams_mention_is_stripped_from_the_question(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    teams_post(teams_message(teams_stub.service_url, f"<at>Telha</at> {MSA_QUESTION}"))
    asked, _ = turns()
    assert asked.text == MSA_QUESTION


def test_a_restricted_answer_never_reaches_the_teams_connector(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    teams_post(teams_message(teams_stub.service_url, "When is the settlement payment due?"))
    [reply] = connector_posts(teams_stub)
    assert reply.body["text"] == RESTRICTED_TEASER
    assert "attachments" not in reply.body
    assert_never_crossed(
        teams_bodies(teams_stub),
        RESTRICTED_SPAN,
        RESTRICTED_TITLE,
        RESTRICTED_NAME,
        str(world.memo.source_version.source_id),
    )
    [event] = AuditEvent.objects.filter(type="restricted_content_blocked")
    assert event.detail["channel"] == "teams"


def test_a_verbatim_excerpt_never_reaches_the_teams_connector(
    ask_on, quoting, teams_post, teams_stub, teams_alice
) -> None:
    teams_post(teams_message(teams_stub.service_url, "what was quoted?"))
    [reply] = connector_posts(teams_stub)
    assert reply.body["text"] == RESTRICTED_TEASER
    assert_never_crossed(teams_bodies(teams_stub), RESTRICTED_SPAN)


def test_an_unmapped_teams_sender_never_reaches_the_handler(
    ask_on, world, teams_post, teams_stub, monkeypatch
) -> None:
    def never(**kwargs: Any) -> None:
        raise AssertionError("an unmapped identity reached the ask handler")

    monkeypatch.setattr(delivery.ask.services, "respond", never)
    before = rows()
    activity = teams_message(
        teams_stub.service_url, MSA_QUESTION, user_id="29:nobody", aad_object_id=None
    )
    assert teams_post(activity).status_code == 200
    assert rows() == before
    assert connector_posts(teams_stub) == []


def test_an_unverified_teams_message_is_401_and_writes_nothing(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    before = rows()
    resp = teams_post(teams_message(teams_stub.service_url, MSA_QUESTION), authorization="")
    assert resp.status_code == 401
    assert rows() == before and connector_posts(teams_stub) == []


def test_a_group_chat_gets_no_answer(ask_on, world, teams_post, teams_stub, teams_alice) -> None:
    activity = teams_message(
        teams_stub.service_url,
        MSA_QUESTION,
        conversation_id="19:group-chat",
        conversation_type="groupChat",
    )
    teams_post(activity)
    [reply] = connector_posts(teams_stub)
    assert reply.conversation_id == "19:group-chat"
    assert "MSA" not in json.dumps(reply.body)
    assert ChatTurn.objects.count() == 0


def test_ask_now_from_teams_is_deduplicated(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    data = {"kind": "ask_now", "clarificationId": str(world.msa.pk)}
    resp = teams_post(invoke_action(teams_stub.service_url, data))
    assert resp.json()["statusCode"] == 200
    assert "already on its way" in resp.json()["value"]
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 1
    finish_routing(world.msa)
    resp = teams_post(invoke_action(teams_stub.service_url, data))
    assert resp.json()["value"].startswith("Asked.")
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 2
    assert AuditEvent.objects.filter(type="ask_now").count() == 1
    # The Action.Submit fallback: the outcome comes back as a reply.
    teams_post(message_submit(teams_stub.service_url, data))
    [reply] = connector_posts(teams_stub)
    assert "already on its way" in reply.body["text"]
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 2


def test_teams_ask_now_on_an_unreadable_fact_queues_nothing(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    finish_routing(world.budget)
    before = rows()
    resp = teams_post(
        invoke_action(
            teams_stub.service_url, {"kind": "ask_now", "clarificationId": str(world.budget.pk)}
        )
    )
    assert "nothing to ask" in resp.json()["value"]
    after = rows()
    del after["TeamsConversation"], before["TeamsConversation"]
    assert after == before


def test_card_answers_still_go_the_answer_path_with_ask_on(
    ask_on, world, teams_post, teams_stub, teams_alice
) -> None:
    """Ask in chat only takes what is its own: a clarify_answer action is untouched."""
    data = {
        "kind": "clarify_answer",
        "clarificationId": str(world.msa.pk),
        "nonce": "nope",
        "answerIndex": 0,
    }
    resp = teams_post(invoke_action(teams_stub.service_url, data))
    assert resp.status_code == 200
    assert ChatTurn.objects.count() == 0
    assert not AuditEvent.objects.filter(type="ask_now").exists()
