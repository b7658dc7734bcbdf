"""Ask in chat, the handler (issue 9; spec §3.9 and OQ-1/OQ-7): read-scoped deterministic
answers with an evidence card, the pending caveat, the user-triggered "Ask <person> now?"
with its deduplication, the writer stamping of chat turns (story
`chat-turn-restriction-provenance`), the inbox ask page and the fact trace, and the
handler's having no route to the answer path — by construction (parsed with `ast`) and at
run time."""

import ast
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

import delivery.ask.services
from clarify.models import AuditEvent, Clarification, ResponseRecord
from delivery.ask.services import (
    answer_question,
    ask_now,
    chat_exchange_record,
    render,
    respond,
)
from delivery.models import ChatTurn, Delivery
from delivery.provenance import RESTRICTED_TEASER, ProvenanceError
from graph.models import NodeVersion
from jobs.models import Job, JobStatus

from .conftest import CANDIDATES, JOB_KIND, build_submission, run_worker
from .conftest_ask import (
    MSA_QUESTION,
    RESTRICTED_NAME,
    RESTRICTED_SPAN,
    RESTRICTED_TEXT,
    RESTRICTED_TITLE,
    rows,
    span_of,
    turns,
)

ROOT = Path(__file__).resolve().parents[2]
PROVENANCE = [{"kind": "source", "sourceId": "src-1", "restriction": "privileged"}]
NOT_FOUND = "I couldn't find a fact you can read that matches that question."


def signed_in(person: Any) -> Client:
    client = Client()
    client.force_login(person.user)
    return client


def routing_jobs(clar: Clarification) -> list[Job]:
    return list(Job.objects.filter(kind=JOB_KIND, subject=str(clar.pk)).order_by("id"))


def finish_routing(clar: Clarification, status: str) -> None:
    Job.objects.filter(kind=JOB_KIND, subject=str(clar.pk)).update(status=status)


def finish_all_routing() -> None:
    Job.objects.filter(kind=JOB_KIND).update(status=JobStatus.DONE)


# --- the handler has no route to the answer path ----------------------------------------------

FORBIDDEN_NAMES = {"clarification_answer", "card_action_process", "bind"}
ASK_MODULES = ["delivery/ask/services.py", "delivery/provenance.py", "delivery/teams/ask_hook.py"]
# Ask handlers that live next to card handling: proven by the functions they can reach.
ASK_LISTENERS = {
    "delivery/slack/hooks.py": ["on_ask_message", "on_ask_mention", "on_ask_now"],
    "delivery/inbox/views.py": ["ask", "ask_now_view"],
}
# What the reachable code may import from the clarify and delivery packages (module →
# names): reads, the audit log, the routing queue, and the ask module itself.
ALLOWED_IMPORTS = {
    "clarify.services": {"audit_event_append", "CLARIFY_JOB_KIND"},
    "delivery.actions": set(),
}


def forbidden_references(source: str) -> set[str]:
    """Names of the answer path a module imports or references: the functions by name or
    attribute, any import of them (aliased or not), and `ResponseRecord.objects.create`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                for part in alias.name.split("."):
                    if part in FORBIDDEN_NAMES:
                        found.add(part)
            if isinstance(node, ast.ImportFrom):
                for part in (node.module or "").split("."):
                    if part in FORBIDDEN_NAMES:
                        found.add(part)
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            if node.attr in FORBIDDEN_NAMES:
                found.add(node.attr)
            if node.attr == "create" and ast.unparse(node.value).endswith("ResponseRecord.objects"):
                found.add("ResponseRecord.objects.create")
        elif isinstance(node, ast.Constant) and node.value in FORBIDDEN_NAMES:
            found.add(f"string {node.value!r}")  # getattr(module, "bind") and friends
    return found


def test_the_check_sees_every_route_it_forbids() -> None:
    """The checker itself is not vacuous: each way of reaching the answer path is found."""
    snippets = {
        "from clarify.services import clarification_answer": "clarification_answer",
        "from delivery.actions import card_action_process as cap": "card_action_process",
        "import clarify.services\nclarify.services.bind(x)": "bind",
        "from clarify import services\nservices.clarification_answer()": "clarification_answer",
        "ResponseRecord.objects.create(seq=1)": "ResponseRecord.objects.create",
        "clarify.models.ResponseRecord.objects.create()": "ResponseRecord.objects.create",
        "getattr(services, 'bind')()": "string 'bind'",
    }
    for snippet, expected in snippets.items():
        assert expected in forbidden_references(snippet), snippet
    assert forbidden_references("ResponseRecord.objects.filter(seq=1).count()") == set()


@pytest.mark.parametrize("path", ASK_MODULES)
def test_the_ask_modules_reference_nothing_of_the_answer_path(path: str) -> None:
    source = (ROOT / path).read_text()
    assert forbidden_references(source) == set()
    # ResponseRecord is only ever read (the verification counts), under its own name.
    tree = ast.parse(source)
    aliases = [a for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert all(a.asname is None for a in aliases if a.name == "ResponseRecord")
    assert ".objects.create" not in re.sub(r"ChatTurn\.objects\.create", "", source)


def _module_name(path: str, node: ast.ImportFrom) -> str:
    """The absolute module of a (possibly relative) `from … import …` in `path`."""
    if not node.level:
        return node.module or ""
    package = path.removesuffix(".py").split("/")[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


def reachable_functions(path: str, source: str, roots: list[str]) -> dict[str, ast.AST]:
    """The module-level functions `roots` can reach by name within the module (calls,
    references, decorators), roots included."""
    tree = ast.parse(source)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    seen: dict[str, ast.AST] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen[name] = defs[name]
        local = _local_names(defs[name])
        for node in ast.walk(defs[name]):
            if isinstance(node, ast.Name) and node.id in defs and node.id not in local:
                todo.append(node.id)
    return seen


def _local_names(fn: ast.AST) -> set[str]:
    """Names a function binds itself (arguments, assignments, local imports): a local
    `answer` is not the module's `answer` view."""
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
    return names


def imported_names(path: str, source: str, functions: dict[str, ast.AST]) -> set[tuple[str, str]]:
    """(module, name) of every imported name the functions use: module-level imports they
    reference, and the imports inside them."""
    tree = ast.parse(source)
    top: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                top[alias.asname or alias.name] = (_module_name(path, node), alias.name)
    used: set[tuple[str, str]] = set()
    for fn in functions.values():
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id in top:
                used.add(top[node.id])
            elif isinstance(node, ast.ImportFrom):
                used |= {(_module_name(path, node), a.name) for a in node.names}
    return used


def listener_problems(path: str, source: str, roots: list[str]) -> set[str]:
    """Everything of the answer path the roots can reach: forbidden names in any reachable
    function, or an import from `delivery.actions`/`clarify.services` beyond the allowed."""
    functions = reachable_functions(path, source, roots)
    problems = {
        f"{name}: {ref}"
        for name, fn in functions.items()
        for ref in forbidden_references(ast.unparse(fn))
    }
    for module, name in imported_names(path, source, functions):
        allowed = ALLOWED_IMPORTS.get(module.removeprefix("telha."))
        if allowed is not None and name not in allowed:
            problems.add(f"imports {module}.{name}")
    return problems


def test_the_listener_check_follows_helpers_and_imports() -> None:
    """Not vacuous: a listener reaching the answer path through a helper, or importing it
    under another name, is caught; an unrelated function is not followed."""
    source = (
        "from ..actions import card_action_process as process\n"
        "from clarify.services import bind_fact\n"
        "def on_ask(ack): ack(); _helper()\n"
        "def _helper(): return process()\n"
        "def on_card(): return card_action_process()\n"
        "def on_other(): return bind_fact()\n"
        "def on_shadow(on_card): return on_card\n"
    )
    path = "delivery/hooks/x.py"
    assert set(reachable_functions(path, source, ["on_ask"])) == {"on_ask", "_helper"}
    assert listener_problems(path, source, ["on_ask"]) == {
        "imports delivery.actions.card_action_process"
    }
    assert listener_problems(path, source, ["on_card"]) == {"on_card: card_action_process"}
    assert listener_problems(path, source, ["on_other"]) == {"imports clarify.services.bind_fact"}
    assert set(reachable_functions(path, source, ["on_shadow"])) == {"on_shadow"}


@pytest.mark.parametrize(
    ("path", "roots"), [(p, r) for p, roots in ASK_LISTENERS.items() for r in roots]
)
def test_the_channel_ask_listeners_reach_nothing_of_the_answer_path(path: str, roots: str) -> None:
    """The Slack ask listeners live in delivery/slack/hooks.py next to the card handlers, and the
    inbox ask views in delivery/inbox/views.py next to the answer view: every function they can
    reach, and every name those import, is clear of the answer path."""
    source = (ROOT / path).read_text()
    reached = reachable_functions(path, source, [roots])
    assert roots in reached
    assert listener_problems(path, source, [roots]) == set()
    # They do reach the ask module (the check is not looking at the wrong code).
    modules = {m for m, _ in imported_names(path, source, reached)}
    assert "delivery.ask.services" in modules


def test_the_teams_hook_hands_ask_activities_over_before_any_card_handling() -> None:
    """In the Teams hook, ask in chat (`ask_hook.handle`) answers first; `handle_action`
    is only reached when it declined the activity."""
    tree = ast.parse((ROOT / "delivery/teams/hooks.py").read_text())
    [messages] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "messages"]
    calls = [
        ast.unparse(n.func)
        for n in ast.walk(messages)
        if isinstance(n, ast.Call) and ast.unparse(n.func) in ("ask_hook.handle", "handle_action")
    ]
    lines = {
        ast.unparse(n.func): n.lineno
        for n in ast.walk(messages)
        if isinstance(n, ast.Call) and ast.unparse(n.func) in ("ask_hook.handle", "handle_action")
    }
    assert set(calls) == {"ask_hook.handle", "handle_action"}
    assert lines["ask_hook.handle"] < lines["handle_action"]


def test_the_ask_module_imports_only_read_scoping_and_the_queue_from_clarify() -> None:
    tree = ast.parse((ROOT / "delivery/ask/services.py").read_text())
    from_clarify = {
        (n.module, a.name)
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith(("clarify", "delivery"))
        for a in n.names
    }
    assert ("clarify.services", "audit_event_append") in from_clarify
    # The queue: its job kind, and the one service that enqueues a routing job and wakes
    # the workers after commit (issue 20: written once, for open, re-ask and ask-now).
    assert {name for module, name in from_clarify if module == "clarify.services"} <= {
        "CLARIFY_JOB_KIND",
        "audit_event_append",
        "clarification_route",
    }
    assert not {m for m, _ in from_clarify if m and m.startswith(("delivery.actions", "actions"))}


def test_asking_and_ask_now_write_no_answer_and_no_fact_version(world, people) -> None:
    before = rows(ResponseRecord, NodeVersion)
    for who in ("alice", "olga", "sam", "vera"):
        for question in (MSA_QUESTION, "settlement payment", "escrow release", "budget"):
            for channel in ("inbox", "slack", "teams"):
                respond(person=people[who], question=question, channel=channel)
    finish_routing(world.msa, JobStatus.DONE)
    assert ask_now(requester=people["alice"], clarification_id=world.msa.pk).startswith("Asked")
    assert rows(ResponseRecord, NodeVersion) == before


# --- read scope (RBAC) --------------------------------------------------------------------------


def test_a_reader_gets_the_fact_with_its_validity(world, people) -> None:
    answer = answer_question(people["alice"], MSA_QUESTION)
    top = answer.evidence[0]
    assert top.name == "MSA term"
    assert top.node_id == str(world.msa.target_id)
    assert top.valid == "valid from 1 October 2026 until further notice"
    # "When does … start?" is answered with the start of validity.
    assert answer.text.startswith("“MSA term” starts on 1 October 2026 (pending).")
    answer = answer_question(people["alice"], "MSA term")
    assert answer.text.startswith("“MSA term” is valid from 1 October 2026 until further notice")


def test_olga_of_finance_never_sees_a_legal_fact(world, people) -> None:
    olga = people["olga"]
    for question in (MSA_QUESTION, "MSA term", "settlement payment", "vendor nda", "escrow"):
        answer = answer_question(olga, question)
        assert answer.text == NOT_FOUND
        assert answer.evidence == [] and answer.ask_now is None and answer.provenance == []
    delivered, _ = respond(person=olga, question=MSA_QUESTION, channel="slack")
    assert delivered == NOT_FOUND
    assert "MSA" not in delivered
    # Her own finance fact she does get.
    assert answer_question(olga, "budget freeze").evidence[0].name == "Budget freeze period"


@pytest.mark.parametrize(
    ("who", "sees_budget", "sees_msa"),
    [("alice", False, True), ("vera", False, True), ("olga", True, False), ("sam", True, True)],
)
def test_each_person_sees_exactly_what_their_sources_grant(
    world, people, who, sees_budget, sees_msa
) -> None:
    assert bool(answer_question(people[who], "budget freeze").evidence) is sees_budget
    assert bool(answer_question(people[who], "MSA").evidence) is sees_msa


def test_a_person_of_another_tenant_finds_nothing_here(world, globex) -> None:
    assert answer_question(globex.people["gina"], MSA_QUESTION).text == NOT_FOUND
    assert answer_question(globex.people["sally"], "budget freeze").text == NOT_FOUND


def test_a_person_without_a_sign_in_user_reads_nothing(world, people) -> None:
    alice = people["alice"]
    alice.user = None
    assert answer_question(alice, MSA_QUESTION).text == NOT_FOUND


def test_a_question_of_stopwords_only_finds_nothing(world, people) -> None:
    for question in ("", "when does it start?", "?!", "is it"):
        assert answer_question(people["sam"], question).text == NOT_FOUND


def test_people_nodes_are_never_answers(world, people) -> None:
    answer = answer_question(people["sam"], "alice acme")
    assert all("@" not in e.name for e in answer.evidence)


def test_label_words_do_not_match_every_fact(world, people) -> None:
    """ "term" is in every CONTRACT_TERM label; only a fact's own text is matched."""
    answer = answer_question(people["alice"], "When does the MSA term start?")
    assert [e.name for e in answer.evidence] == ["MSA term"]


def test_the_answer_is_deterministic(world, people) -> None:
    answers = {render(answer_question(people["sam"], "date period")) for _ in range(3)}
    assert len(answers) == 1


# --- the evidence card --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "name", "verdict", "confirmations"),
    [
        ("vendor nda", "Vendor NDA period", "source-derived", 0),
        ("office lease", "Office lease renewal", "human-confirmed", 1),
        ("escrow release", "Escrow release date", "quorum-confirmed", 2),
        ("warranty expiry", "Warranty expiry", "steward-overridden", 1),
        ("MSA", "MSA term", "pending", 0),
    ],
)
def test_evidence_carries_its_verdict_and_verification_count(
    world, people, question, name, verdict, confirmations
) -> None:
    answer = answer_question(people["alice"], question)
    [top] = answer.evidence
    assert (top.name, top.verdict, top.confirmations) == (name, verdict, confirmations)
    # The verdict, and for a confirmed fact who confirmed it: how many, of which kind.
    who = {1: "1 person", 2: "2 people"}.get(confirmations, "")
    if verdict == "steward-overridden":
        who = "1 steward"
    expected = f"({verdict} by {who})" if confirmations else f"({verdict})"
    assert expected in answer.text
    card = render(answer)
    assert f"• {name}: " in card and f"— {verdict}" in card
    assert f"Verification: 1 {verdict}" in card
    if confirmations:
        assert f"{confirmations} confirmation(s)" in card
    assert f"Open full trace: {top.trace_url}" in card


def test_a_card_cites_at_most_three_facts_with_counts_per_verdict(world, people) -> None:
    answer = answer_question(people["sam"], "period date renewal expiry")
    assert len(answer.evidence) == 3
    card = render(answer)
    counts = re.search(r"Verification: (.*)$", card, re.M)
    assert counts is not None
    total = sum(int(n) for n in re.findall(r"(\d+) [a-z-]+", counts.group(1)))
    assert total == 3


def test_the_trace_link_opens_for_a_reader_and_404s_for_anyone_else(ask_on, world, people) -> None:
    [top] = answer_question(people["alice"], "office lease").evidence
    path = top.trace_url.split("://", 1)[1].split("/", 1)[1]
    assert path == f"inbox/facts/{world.lease.target_id}/"
    page = signed_in(people["alice"]).get(f"/{path}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Office lease renewal" in html
    assert "human_clarification" in html and "system_extraction" in html  # both versions
    # ...and as a picture: the superseded extraction above the human binding.
    assert html.count('<svg class="fact-timeline"') == 1
    assert html.index('class="version version-superseded"') < html.index(
        'class="version version-bound"'
    )
    assert signed_in(people["olga"]).get(f"/{path}").status_code == 404
    missing = f"/inbox/facts/{uuid.uuid4()}/"
    assert signed_in(people["alice"]).get(missing).status_code == 404
    assert signed_in(people["alice"]).get("/inbox/facts/not-a-uuid/").status_code == 404
    anonymous = Client().get(f"/{path}")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_with_ask_off_the_trace_page_is_404_too(world, people, settings) -> None:
    """Only ask in chat links to the fact page, so it is off with it (off behaves exactly
    as before ask existed)."""
    path = f"/inbox/facts/{world.lease.target_id}/"
    client = signed_in(people["alice"])
    settings.ASK_ENABLED = False
    assert client.get(path).status_code == 404
    settings.ASK_ENABLED = True
    assert client.get(path).status_code == 200


# --- the pending caveat (§3.9) ------------------------------------------------------------------


def test_a_pending_fact_is_answered_with_the_caveat(world, people) -> None:
    answer = answer_question(people["alice"], MSA_QUESTION)
    [top] = answer.evidence
    assert top.verdict == "pending"
    # The CONTRACT §3.3 `pendingClarification` shape, as POST /v1/query returns it.
    assert top.pending == {
        "id": str(world.msa.pk),
        "state": "open",
        "severity": "normal",
        "candidates": [
            {"index": i, "validFrom": c["validFrom"], "validTo": None, "label": c["label"]}
            for i, c in enumerate(CANDIDATES)
        ],
        "appliedCandidateConfidence": 0.45,
        "quorumState": "not_required",
    }
    caveat = (
        f"This depends on an unresolved clarification (open, no quorum required; id "
        f"{world.msa.pk}): candidates 1 Oct 2026 (next quarter), 12 June (signature), "
        "1 Jul 2026 (countersignature); the applied guess has confidence 0.45."
    )
    assert top.caveat == caveat
    assert answer.text.endswith(f"(pending). {caveat}")
    assert answer.ask_now == {
        "clarificationId": str(world.msa.pk),
        "person": "Alice Author",
        "fact": "MSA term",
        "label": "Ask Alice Author now?",
    }
    assert "Ask Alice Author now? (about “MSA term”): use the button" in render(answer)
    assert render(answer).count(caveat) == 1  # the top fact's caveat is in the answer


def test_the_caveat_follows_the_clarification_state(world, people) -> None:
    Clarification.objects.filter(pk=world.msa.pk).update(state="expired")
    answer = answer_question(people["alice"], MSA_QUESTION)
    assert answer.evidence[0].pending["state"] == "expired"
    assert "(expired, no quorum required;" in answer.text
    # A conflicted clarification awaits a steward: no one is offered to be asked.
    Clarification.objects.filter(pk=world.msa.pk).update(
        state="conflicted", quorum_state="conflicted"
    )
    answer = answer_question(people["alice"], MSA_QUESTION)
    assert answer.evidence[0].verdict == "pending" and answer.ask_now is None
    assert "(conflicted, quorum conflicted;" in answer.text


def test_the_caveat_shows_the_quorum_state_of_a_critical_fact(
    world, people, submit, person_client
) -> None:
    clar = submit(
        external_id="legal/guarantee.docx", name="Parent guarantee", severity_hint="critical"
    )
    resp = person_client("alice").post(
        f"/v1/clarifications/{clar.pk}/answer", {"answerIndex": 1}, format="json"
    )
    assert resp.status_code == 202, resp.content
    [top] = answer_question(people["sam"], "parent guarantee").evidence
    assert top.pending is not None
    assert (top.pending["state"], top.pending["quorumState"]) == (
        "partially_confirmed",
        "pending",
    )
    assert f"(partially_confirmed, quorum pending; id {clar.pk})" in top.caveat


def test_every_pending_fact_carries_its_full_caveat(world, people) -> None:
    """Not only the top fact: each pending fact cited shows its own caveat."""
    answer = answer_question(people["sam"], "MSA term budget freeze")
    pending = [e for e in answer.evidence if e.verdict == "pending"]
    assert {e.name for e in pending} == {"MSA term", "Budget freeze period"}
    card = render(answer)
    for e in pending:
        clar = world.msa if e.name == "MSA term" else world.budget
        assert e.pending is not None and e.pending["id"] == str(clar.pk)
        assert e.caveat.startswith("This depends on an unresolved clarification (open, ")
        assert f"id {clar.pk})" in e.caveat
        assert card.count(e.caveat) == 1
    top, second = answer.evidence[0], next(e for e in pending if e is not answer.evidence[0])
    assert top.caveat in answer.text and second.caveat not in answer.text
    [line] = [ln for ln in card.splitlines() if ln.startswith(f"• {second.name}:")]
    assert second.caveat in line


def test_the_offer_is_for_the_fact_it_names(world, people) -> None:
    """When the top pending fact cannot be asked about (conflicted: a steward decides), the
    offer goes to the next one — and says which fact it is for, whose caveat is shown."""
    Clarification.objects.filter(pk=world.msa.pk).update(state="conflicted")
    answer = answer_question(people["sam"], "MSA term budget freeze")
    assert answer.ask_now == {
        "clarificationId": str(world.budget.pk),
        "person": "Olga Owner",
        "fact": "Budget freeze period",
        "label": "Ask Olga Owner now?",
    }
    card = render(answer)
    assert "Ask Olga Owner now? (about “Budget freeze period”)" in card
    [budget] = [e for e in answer.evidence if e.name == "Budget freeze period"]
    assert budget.caveat in card


def test_a_confirmed_fact_has_no_caveat_and_offers_nothing(world, people) -> None:
    answer = answer_question(people["alice"], "office lease")
    assert answer.evidence[0].pending is None and answer.ask_now is None
    assert "unresolved" not in answer.text and "Ask " not in render(answer)


# --- "Ask <person> now?" (OQ-7): user-triggered, deduplicated --------------------------------


def test_asking_alone_queues_and_sends_nothing(world, people, channel) -> None:
    finish_all_routing()
    jobs, deliveries = Job.objects.count(), Delivery.objects.count()
    for channel_name in ("inbox", "slack", "teams"):
        respond(person=people["alice"], question=MSA_QUESTION, channel=channel_name)
    assert Job.objects.count() == jobs and Delivery.objects.count() == deliveries
    assert not AuditEvent.objects.filter(type="ask_now").exists()
    run_worker()
    assert channel.cards == []


def test_an_active_routing_job_means_nothing_new_is_queued(world, people, channel) -> None:
    [job] = routing_jobs(world.msa)
    assert job.status == JobStatus.PENDING
    before = rows()
    text = ask_now(requester=people["alice"], clarification_id=world.msa.pk)
    assert "already on its way" in text
    assert rows() == before
    # Leased (the card is out, the escalation window running): still nothing new.
    Job.objects.filter(kind=JOB_KIND).exclude(pk=job.pk).update(status=JobStatus.DONE)
    assert run_worker() >= 1
    [job] = routing_jobs(world.msa)
    assert job.status == JobStatus.LEASED
    before = rows()
    assert "already on its way" in ask_now(requester=people["bob"], clarification_id=world.msa.pk)
    assert rows() == before


@pytest.mark.parametrize("finished", [JobStatus.DONE, JobStatus.DEAD])
def test_after_the_job_finished_one_new_job_for_the_same_clarification(
    world, people, finished
) -> None:
    finish_routing(world.msa, finished)
    clarifications = Clarification.objects.count()
    answers, versions = ResponseRecord.objects.count(), NodeVersion.objects.count()
    text = ask_now(requester=people["vera"], clarification_id=str(world.msa.pk))
    assert text.startswith("Asked.")
    old, new = routing_jobs(world.msa)
    assert old.status == finished and new.status == JobStatus.PENDING
    assert new.payload == {
        "v": 1,
        "clarificationId": str(world.msa.pk),
        "ranking": world.msa.asked,
    }
    assert new.max_attempts == len(world.msa.asked) + 1
    assert new.priority == old.priority
    assert Clarification.objects.count() == clarifications
    assert (ResponseRecord.objects.count(), NodeVersion.objects.count()) == (answers, versions)
    [event] = AuditEvent.objects.filter(type="ask_now")
    assert event.clarification_id == world.msa.pk
    assert event.detail == {"requester": str(people["vera"].pk)}
    # Asking again right away is deduplicated against the job just queued.
    assert "already on its way" in ask_now(requester=people["alice"], clarification_id=world.msa.pk)
    assert len(routing_jobs(world.msa)) == 2
    assert AuditEvent.objects.filter(type="ask_now").count() == 1


def test_the_new_job_asks_the_first_candidate_again_through_the_worker(
    world, people, channel
) -> None:
    """Delivery still goes through the worker (and its RBAC gate): alice gets the card."""
    Job.objects.filter(kind=JOB_KIND).exclude(subject=str(world.msa.pk)).update(
        status=JobStatus.DONE
    )
    assert run_worker() >= 1
    [(address, first)] = channel.cards
    assert channel.person_of(address) == people["alice"]
    assert first.clarification_id == str(world.msa.pk)
    finish_routing(world.msa, JobStatus.DONE)
    ask_now(requester=people["bob"], clarification_id=world.msa.pk)
    assert run_worker() >= 1
    assert len(channel.cards) == 2
    address, again = channel.cards[1]
    assert channel.person_of(address) == people["alice"]
    assert again.clarification_id == str(world.msa.pk)


@pytest.mark.parametrize(
    "target",
    ["answered", "budget-for-alice", "garbage", "missing", "other-tenant", "none"],
)
def test_ask_now_refuses_what_it_may_not_ask_and_writes_nothing(
    world, people, globex, target
) -> None:
    finish_routing(world.msa, JobStatus.DONE)
    finish_routing(world.budget, JobStatus.DONE)
    requester = people["alice"]
    clarification_id: Any = {
        "answered": world.lease.pk,
        "budget-for-alice": world.budget.pk,  # she cannot read the finance source
        "garbage": "not-a-uuid",
        "missing": uuid.uuid4(),
        "none": None,
    }.get(target)
    if target == "other-tenant":
        requester, clarification_id = globex.people["gina"], world.msa.pk
    before = rows()
    assert ask_now(requester=requester, clarification_id=clarification_id) == (
        "There is nothing to ask about that any more."
    )
    assert rows() == before


# --- the writer: two rows, origin on both, provenance on the assistant's ---------------------


def test_the_default_origin_is_the_inbox(people) -> None:
    asked, answered = chat_exchange_record(
        person=people["alice"], channel_origin=None, question="q?", answer="a.", provenance=None
    )
    assert (asked.channel_origin, answered.channel_origin) == ("inbox", "inbox")
    assert asked.exchange == answered.exchange
    assert (asked.role, answered.role) == ("person", "assistant")
    assert answered.delivered_text == "a."


@pytest.mark.parametrize(("given", "stored"), [("slack", "slack"), (" Teams ", "teams")])
def test_the_channel_origin_is_stamped_on_both_rows(people, given, stored) -> None:
    chat_exchange_record(
        person=people["alice"],
        channel_origin=given,
        question="q?",
        answer="a.",
        provenance=PROVENANCE,
        delivered=RESTRICTED_TEASER,
    )
    asked, answered = turns()
    assert asked.channel_origin == answered.channel_origin == stored
    assert asked.restriction_provenance is None
    assert answered.restriction_provenance == PROVENANCE
    assert (asked.text, answered.text, answered.delivered_text) == ("q?", "a.", RESTRICTED_TEASER)


def test_provenance_is_stored_normalised_and_empty_means_none(people) -> None:
    chat_exchange_record(
        person=people["alice"],
        channel_origin="slack",
        question="q",
        answer="a",
        provenance=[{"restriction": "privileged", "sourceId": "s", "kind": "document"}],
    )
    chat_exchange_record(
        person=people["alice"], channel_origin="slack", question="q", answer="a", provenance=None
    )
    first, second = [t for t in turns() if t.role == "assistant"]
    assert first.restriction_provenance == [
        {"kind": "document", "sourceId": "s", "restriction": "privileged"}
    ]
    assert second.restriction_provenance == []


@pytest.mark.parametrize(
    ("origin", "provenance"),
    [
        ("whatsapp", None),
        (42, None),
        ("slack", [{"kind": "source"}]),
        ("slack", "privileged"),
        ("slack", [{"kind": ["source"], "sourceId": "s"}]),
        ("garbage", [{"kind": "source"}]),
    ],
)
def test_garbage_fails_the_turn_and_writes_no_rows(people, origin, provenance) -> None:
    before = rows()
    with pytest.raises(ProvenanceError):
        chat_exchange_record(
            person=people["alice"],
            channel_origin=origin,
            question="q",
            answer="a",
            provenance=provenance,
        )
    assert rows() == before


def test_the_database_refuses_provenance_on_a_person_turn(people) -> None:
    alice = people["alice"]
    with pytest.raises(IntegrityError), transaction.atomic():
        ChatTurn.objects.create(
            tenant=alice.tenant,
            person=alice,
            exchange=uuid.uuid4(),
            role="person",
            channel_origin="inbox",
            text="q",
            restriction_provenance=PROVENANCE,
        )
    assert ChatTurn.objects.count() == 0


def test_respond_records_the_exchange_it_answered(world, people) -> None:
    delivered, answer = respond(person=people["alice"], question=MSA_QUESTION, channel="slack")
    asked, answered = turns()
    assert (asked.channel_origin, answered.channel_origin) == ("slack", "slack")
    assert asked.text == MSA_QUESTION
    assert answered.text == render(answer) == delivered == answered.delivered_text
    assert answered.restriction_provenance == []
    assert asked.restriction_provenance is None


def test_respond_with_a_garbage_channel_writes_nothing_at_all(world, people) -> None:
    before = rows()
    with pytest.raises(ProvenanceError):
        respond(person=people["alice"], question="settlement payment", channel="fax")
    assert rows() == before  # not even the block's audit event


def test_a_failing_write_rolls_back_the_block_event_too(world, people, monkeypatch) -> None:
    def broken(**kwargs: Any) -> None:
        raise ProvenanceError("simulated")

    monkeypatch.setattr(delivery.ask.services, "chat_exchange_record", broken)
    before = rows()
    with pytest.raises(ProvenanceError):
        respond(person=people["alice"], question="settlement payment", channel="slack")
    assert rows() == before


def test_a_restricted_answer_is_gated_on_chat_and_recorded_with_provenance(world, people) -> None:
    source_id = str(world.memo.source_version.source_id)
    delivered, answer = respond(
        person=people["alice"], question="settlement payment", channel="teams"
    )
    assert delivered == RESTRICTED_TEASER
    assert RESTRICTED_NAME in answer.text
    _, answered = turns()
    assert answered.restriction_provenance == [
        {"kind": "source", "sourceId": source_id, "restriction": "privileged"}
    ]
    assert answered.delivered_text == RESTRICTED_TEASER and RESTRICTED_NAME in answered.text
    [event] = AuditEvent.objects.filter(type="restricted_content_blocked")
    assert event.detail == {
        "channel": "teams",
        "reason": "RESTRICTED_PROVENANCE",
        "person": str(people["alice"].pk),
    }
    assert event.clarification_id is None
    # The inbox (a signed-in page) shows the full answer; nothing is blocked there.
    delivered, _ = respond(person=people["alice"], question="settlement payment", channel="inbox")
    assert RESTRICTED_NAME in delivered
    assert AuditEvent.objects.filter(type="restricted_content_blocked").count() == 1


def test_restricted_excerpts_come_from_the_version_the_spans_index(
    world, people, ingest_client
) -> None:
    answer = answer_question(people["alice"], "settlement payment")
    assert set(answer.restricted_excerpts) == {RESTRICTED_SPAN}
    # A later version of the memo (a cover page in front, about another fact) leaves the
    # settlement fact pointing into the first version: its excerpt must not shift.
    text = "Cover page. " + RESTRICTED_TEXT
    payload = build_submission(
        external_id="legal/settlement-memo.docx",
        title=RESTRICTED_TITLE,
        name="Cover date",
        text=text,
        span=span_of(text, RESTRICTED_SPAN),
        restriction="privileged",
    )
    payload["nodes"][0]["key"] = "cover-date"
    assert ingest_client.post("/v1/submissions", payload, format="json").status_code == 201
    [fact] = answer_question(people["alice"], "settlement payment").evidence
    assert fact.name == RESTRICTED_NAME
    answer = answer_question(people["alice"], "settlement payment")
    assert set(answer.restricted_excerpts) == {RESTRICTED_SPAN}


# --- the inbox ask page -----------------------------------------------------------------------


def test_with_ask_off_the_pages_are_404_and_write_nothing(world, people) -> None:
    client = signed_in(people["alice"])
    before = rows()
    assert client.get("/inbox/ask/").status_code == 404
    assert client.post("/inbox/ask/", {"question": MSA_QUESTION}).status_code == 404
    assert rows() == before
    finish_routing(world.msa, JobStatus.DONE)
    before = rows()
    resp = client.post("/inbox/ask/now", {"clarification_id": str(world.msa.pk)})
    assert resp.status_code == 404
    assert rows() == before


def test_the_ask_page_answers_with_the_full_evidence_card(ask_on, world, people) -> None:
    client = signed_in(people["alice"])
    assert client.get("/inbox/ask/").status_code == 200
    page = client.post("/inbox/ask/", {"question": MSA_QUESTION}).content.decode()
    assert "MSA term" in page and "pending" in page
    base = ask_on.PUBLIC_BASE_URL
    assert f'href="{base}/inbox/facts/{world.msa.target_id}/"' in page
    assert "Open full trace" in page
    assert 'action="/inbox/ask/now"' in page and "Ask Alice Author now?" in page
    assert f'value="{world.msa.pk}"' in page
    asked, answered = turns()
    assert asked.channel_origin == answered.channel_origin == "inbox"
    assert Job.objects.filter(kind=JOB_KIND, subject=str(world.msa.pk)).count() == 1


def test_the_ask_page_shows_every_pending_caveat_and_whom_the_offer_is_for(
    ask_on, world, people
) -> None:
    page = (
        signed_in(people["sam"])
        .post("/inbox/ask/", {"question": "MSA term budget freeze"})
        .content.decode()
    )
    answer = answer_question(people["sam"], "MSA term budget freeze")
    pending = [e for e in answer.evidence if e.pending]
    assert len(pending) == 2
    for e in pending:
        assert e.caveat in page.replace("&#x27;", "'")
    assert f"about “{answer.ask_now['fact']}”" in page


def test_the_inbox_shows_a_restricted_answer_in_full(ask_on, world, people) -> None:
    page = (
        signed_in(people["alice"])
        .post("/inbox/ask/", {"question": "settlement payment"})
        .content.decode()
    )
    assert RESTRICTED_NAME in page and RESTRICTED_TEASER not in page
    _, answered = turns()
    assert answered.restriction_provenance and answered.delivered_text == answered.text
    assert not AuditEvent.objects.filter(type="restricted_content_blocked").exists()


def test_the_ask_page_never_shows_olga_a_legal_fact(ask_on, world, people) -> None:
    page = signed_in(people["olga"]).post("/inbox/ask/", {"question": MSA_QUESTION})
    html = page.content.decode()
    assert "couldn&#x27;t find" in html or "couldn't find" in html
    assert "MSA term" not in html and str(world.msa.target_id) not in html


def test_ask_now_from_the_page_queues_once(ask_on, world, people) -> None:
    client = signed_in(people["alice"])
    finish_routing(world.msa, JobStatus.DONE)
    resp = client.post("/inbox/ask/now", {"clarification_id": str(world.msa.pk)}, follow=True)
    assert resp.status_code == 200 and "Asked." in resp.content.decode()
    resp = client.post("/inbox/ask/now", {"clarification_id": str(world.msa.pk)}, follow=True)
    assert "already on its way" in resp.content.decode()
    assert len(routing_jobs(world.msa)) == 2
    before = rows()
    resp = client.post("/inbox/ask/now", {"clarification_id": "garbage"}, follow=True)
    assert resp.status_code == 200 and "nothing to ask" in resp.content.decode()
    assert rows() == before


def test_the_ask_pages_need_a_sign_in(ask_on, world) -> None:
    before = rows()
    for method, path in (
        ("get", "/inbox/ask/"),
        ("post", "/inbox/ask/"),
        ("post", "/inbox/ask/now"),
    ):
        resp = getattr(Client(), method)(path, {"question": MSA_QUESTION})
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]
    assert rows() == before
