"""Ask in chat (behind ASK_ENABLED): a read-scoped, deterministic answer from the facts the
person may read, with an evidence card. No language model anywhere.

By construction this module has no route to the answer path: it imports nothing that
records a response or binds a fact. "Ask <person> now?" re-enqueues the existing
clarification's routing job (the RBAC gate and quorum still apply when it is delivered);
it never opens a second clarification and nothing is sent as a side effect of a question.
"""

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from clarify.models import Clarification, ResponseRecord, State
from clarify.selectors import pending_caveat, routing_jobs
from clarify.services import audit_event_append, clarification_route
from common.times import from_us, now_us
from graph.access import person_reader
from graph.models import EvidenceClass, NodeVersion
from graph.selectors import readable_nodes
from tenancy.auth import Caller
from tenancy.models import Person

from ..cards import OPEN_STATES, candidate_label
from ..models import ChatTurn
from ..provenance import gate_outbound, normalize_channel_origin, parse_restriction_provenance
from ..restriction import restricted_excerpts_in
from .questions import END, START, Question, question_parse
from .retrieval import Found, evidence_for

NOTHING_TO_ASK = "There is nothing to ask about that any more."
VERDICTS: dict[str, str] = {
    EvidenceClass.SYSTEM_EXTRACTION: "source-derived",
    EvidenceClass.HUMAN_CLARIFICATION: "human-confirmed",
    EvidenceClass.QUORUM_CONFIRMATION: "quorum-confirmed",
    EvidenceClass.STEWARD_OVERRIDE: "steward-overridden",
    EvidenceClass.HUMAN_ATTESTATION: "attested",
}
QUORUM_TEXT: dict[str, str] = {
    "not_required": "no quorum required",
    "pending": "quorum pending",
    "satisfied": "quorum satisfied",
    "conflicted": "quorum conflicted",
}


@dataclass
class Evidence:
    node_id: str
    name: str
    valid: str
    verdict: str
    confirmations: int
    trace_url: str
    source_id: str | None
    restriction: str | None
    pending: dict[str, Any] | None = None
    caveat: str = ""


@dataclass
class AskAnswer:
    text: str
    evidence: list[Evidence] = field(default_factory=list)
    provenance: list[dict[str, Any]] = field(default_factory=list)
    restricted_excerpts: list[str] = field(default_factory=list)
    ask_now: dict[str, Any] | None = None
    tenant_id: Any = None

    def excerpts_in(self, text: str) -> list[str]:
        """What the delivery gate looks for in `text`: the spans of the answer's own
        facts, and every restricted excerpt of the tenant that `text` quotes verbatim
        (complete: the database is asked, however many restricted spans exist)."""
        if self.tenant_id is None:
            return list(self.restricted_excerpts)
        return [*self.restricted_excerpts, *restricted_excerpts_in(self.tenant_id, text)]


def reader_for(person: Person) -> Caller:
    """The person as a read-only caller (the one read rule's `person_reader`)."""
    return person_reader(person)


def _day(us: int | None, open_text: str) -> str:
    return from_us(us).strftime("%-d %B %Y") if us is not None else open_text


def _valid_text(v: NodeVersion) -> str:
    if v.valid_from is None and v.valid_to is None:
        return "no known validity dates"
    start, end = _day(v.valid_from, "the beginning"), _day(v.valid_to, "further notice")
    return f"valid from {start} until {end}"


def search(person: Person, question: str) -> list[NodeVersion]:
    """The current versions of readable facts that answer `question`, best first
    (`delivery.ask.retrieval`: full-text search, the period filter, the best match and
    those nearly as relevant); deterministic, no model."""
    parsed = question_parse(question, now_us=now_us())
    return evidence_for(readable_nodes(reader_for(person)), parsed).versions


def _verdict_text(e: Evidence) -> str:
    """The verdict and who confirmed it: "human-confirmed by 1 person"."""
    if not e.confirmations:
        return e.verdict
    who = "steward" if e.verdict == VERDICTS[EvidenceClass.STEWARD_OVERRIDE] else "person"
    plural = "people" if who == "person" else "stewards"
    return f"{e.verdict} by {e.confirmations} {who if e.confirmations == 1 else plural}"


def _edge_text(e: Evidence, v: NodeVersion, edge: str | None) -> str:
    """One fact's answer: its start, its end, or its whole validity."""
    name, verdict = e.name, _verdict_text(e)
    if edge == START:
        if v.valid_from is None:
            return f"“{name}” has no recorded start; it is {e.valid} ({verdict})."
        return f"“{name}” starts on {_day(v.valid_from, '')} ({verdict})."
    if edge == END:
        if v.valid_to is None:
            return f"“{name}” has no recorded end; it is {e.valid} ({verdict})."
        return f"“{name}” ends on {_day(v.valid_to, '')} ({verdict})."
    return f"“{name}” is {e.valid} ({verdict})."


_EDGE_VERBS = {START: ("starts", "start"), END: ("ends", "end"), None: ("is valid", "are valid")}


def _listed_text(found: Found, evidence: list[Evidence], question: Question) -> str:
    """A period question's answer: how many readable facts, and the first few with
    their dates."""
    one, many = _EDGE_VERBS[question.edge]
    if not found.total:
        return f"I couldn't find a fact you can read that {one} {question.period_text}."
    items = []
    for e, v in zip(evidence, found.versions, strict=True):
        when = v.valid_to if question.edge == END else v.valid_from
        day = f" on {_day(when, '')}" if when is not None and question.edge else ""
        items.append(f"“{e.name}”{day} ({_verdict_text(e)})")
    count = "1 fact you can read" if found.total == 1 else f"{found.total} facts you can read"
    if found.more:
        count = f"More than {found.total} facts you can read"
    verb = one if found.total == 1 else many
    more = f"; the first {len(items)} are" if found.more or found.total > len(items) else ":"
    return f"{count} {verb} {question.period_text}{more} " + "; ".join(items) + "."


def answer_question(person: Person, question: str) -> AskAnswer:
    """The deterministic answer and its evidence card."""
    parsed = question_parse(question, now_us=now_us())
    found = evidence_for(readable_nodes(reader_for(person)), parsed)
    if not found.versions:
        if found.listed:
            return AskAnswer(_listed_text(found, [], parsed))
        return AskAnswer("I couldn't find a fact you can read that matches that question.")
    answer = _evidence_card(person, found.versions)
    if found.listed:
        answer.text = _listed_text(found, answer.evidence, parsed)
    else:
        answer.text = _edge_text(answer.evidence[0], found.versions[0], parsed.edge)
    if answer.evidence[0].caveat:
        answer.text += f" {answer.evidence[0].caveat}"
    return answer


def _evidence_card(person: Person, versions: list[NodeVersion]) -> AskAnswer:
    """The evidence of `versions` (verdicts, confirmation counts, pending caveats, the
    one "Ask <person> now?" offer) and the provenance of any restricted source."""
    clar_ids = [c for v in versions if (c := v.provenance.get("clarification"))]
    clarifications = {str(c.pk): c for c in Clarification.objects.filter(pk__in=clar_ids)}
    bound = {str(cid): n for cid, n in _count_bound(clar_ids).items()}
    evidence: list[Evidence] = []
    provenance: list[dict[str, Any]] = []
    excerpts: list[str] = []
    ask_now = None
    for v in versions:
        source = v.node.source
        clar = clarifications.get(str(v.provenance.get("clarification") or ""))
        pending = None
        verdict = VERDICTS.get(v.evidence_class, v.evidence_class)
        if v.pending:
            # A guessed interval is never presented as confirmed (spec §3.9).
            verdict = "pending"
        if v.pending and clar is not None and clar.state != State.ANSWERED:
            pending = pending_caveat(clar)  # CONTRACT §3.3 pendingClarification
            if ask_now is None and clar.state in OPEN_STATES:
                # One offer: for the best-ranked fact a person can be asked about; it
                # names that fact, whose caveat is shown with it.
                ask_now = _ask_now_offer(clar, fact=str(v.properties.get("name") or v.node.key))
        if source is not None and source.restriction:
            provenance.append(
                {"kind": "source", "sourceId": str(source.pk), "restriction": source.restriction}
            )
            excerpts.extend(_restricted_spans(v, source))
        evidence.append(
            Evidence(
                node_id=str(v.node_id),
                name=str(v.properties.get("name") or v.node.key),
                valid=_valid_text(v),
                verdict=verdict,
                confirmations=bound.get(str(v.provenance.get("clarification") or ""), 0),
                trace_url=f"{settings.PUBLIC_BASE_URL}/inbox/facts/{v.node_id}/",
                source_id=str(source.pk) if source else None,
                restriction=source.restriction if source else None,
                pending=pending,
                caveat=caveat_text(pending) if pending else "",
            )
        )
    return AskAnswer("", evidence, provenance, excerpts, ask_now, tenant_id=person.tenant_id)


def _restricted_spans(v: NodeVersion, source: Any) -> list[str]:
    """The cited text of a restricted fact (what the gate must never let cross): the
    spans index the source version this fact version was extracted from."""
    text = (
        source.versions.filter(tx=v.provenance.get("sourceVersionTx"))
        .values_list("text", flat=True)
        .first()
    ) or ""
    return _spans(v, text)


def caveat_text(pending: dict[str, Any]) -> str:
    """The pending caveat of spec §3.9 in words: the clarification (id, state, quorum
    state), its candidates and the applied guess's confidence."""
    candidates = ", ".join(candidate_label(c) for c in pending["candidates"])
    quorum = QUORUM_TEXT.get(pending["quorumState"], f"quorum {pending['quorumState']}")
    return (
        f"This depends on an unresolved clarification ({pending['state']}, {quorum}; "
        f"id {pending['id']}): candidates {candidates}; the applied guess has confidence "
        f"{pending['appliedCandidateConfidence']:.2f}."
    )


def _spans(v: NodeVersion, text: str) -> list[str]:
    return [
        text[s["start"] : s["end"]]
        for s in v.provenance.get("spans", [])
        if isinstance(s, dict) and 0 <= s.get("start", -1) < s.get("end", -1) <= len(text)
    ]


def _count_bound(clar_ids: list[Any]) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for cid in ResponseRecord.objects.filter(
        clarification_id__in=clar_ids, binding_status__in=["bound", "steward_override"]
    ).values_list("clarification_id", flat=True):
        counts[cid] = counts.get(cid, 0) + 1
    return counts


def _ask_now_offer(clar: Clarification, *, fact: str) -> dict[str, Any] | None:
    first = next((a for a in clar.asked if a), None)
    person = (
        Person.objects.filter(pk=first, tenant=clar.tenant_id, erased_at__isnull=True).first()
        if first
        else None
    )
    if person is None:
        return None
    return {
        "clarificationId": str(clar.pk),
        "person": person.name,
        "fact": fact,
        "label": f"Ask {person.name} now?",
    }


@transaction.atomic
def ask_now(*, requester: Person, clarification_id: Any) -> str:
    """The user-triggered "Ask <person> now?": deduplicates against the existing
    clarification — if its routing job is still pending or leased nothing new is queued;
    otherwise its routing job is enqueued again (delivery still passes the RBAC gate)."""
    try:
        pk = uuid.UUID(str(clarification_id))
    except ValueError:
        return NOTHING_TO_ASK
    clar = (
        Clarification.objects.select_for_update(of=("self",))
        .filter(pk=pk, tenant=requester.tenant, target__in=readable_nodes(reader_for(requester)))
        .first()
    )
    if clar is None or clar.state not in OPEN_STATES:
        return NOTHING_TO_ASK
    if routing_jobs(clar, active=True).exists():
        return "That question is already on its way; you'll see the answer here once it's bound."
    clarification_route(clar)
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="ask_now",
        detail={"requester": str(requester.pk)},
    )
    return "Asked. You'll see the answer here once it's bound."


@transaction.atomic
def chat_exchange_record(
    *,
    person: Person,
    channel_origin: Any,
    question: str,
    answer: str,
    provenance: Any,
    delivered: str = "",
) -> tuple[ChatTurn, ChatTurn]:
    """Persist one exchange as two rows; a malformed origin or provenance fails the turn
    (raises) before anything is written."""
    origin = normalize_channel_origin(channel_origin)
    refs = parse_restriction_provenance(provenance)
    exchange = uuid.uuid4()
    asked = ChatTurn.objects.create(
        tenant=person.tenant,
        person=person,
        exchange=exchange,
        role=ChatTurn.Role.PERSON,
        channel_origin=origin,
        text=question[:4000],
    )
    answered = ChatTurn.objects.create(
        tenant=person.tenant,
        person=person,
        exchange=exchange,
        role=ChatTurn.Role.ASSISTANT,
        channel_origin=origin,
        text=answer,
        delivered_text=delivered or answer,
        restriction_provenance=[r.as_json() for r in refs],
    )
    return asked, answered


def verification_counts(answer: AskAnswer) -> str:
    """How many cited facts carry each verdict ("1 pending, 2 source-derived")."""
    verdicts: dict[str, int] = {}
    for e in answer.evidence:
        verdicts[e.verdict] = verdicts.get(e.verdict, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))


def ask_now_text(offer: dict[str, Any]) -> str:
    return f"{offer['label']} (about “{offer['fact']}”)"


def render(answer: AskAnswer) -> str:
    """The evidence card as text: the answer (with the top fact's caveat), the cited
    evidence with verdicts, counts, every other pending fact's caveat and the trace
    links."""
    lines = [answer.text]
    for i, e in enumerate(answer.evidence):
        count = f", {e.confirmations} confirmation(s)" if e.confirmations else ""
        caveat = f" {e.caveat}" if e.caveat and i else ""  # the top one's is in the answer
        lines.append(
            f"• {e.name}: {e.valid} — {e.verdict}{count}.{caveat} Open full trace: {e.trace_url}"
        )
    if answer.evidence:
        lines.append(f"Verification: {verification_counts(answer)}")
    if answer.ask_now:
        lines.append(f"{ask_now_text(answer.ask_now)}: use the button")
    return "\n".join(lines)


@transaction.atomic
def respond(*, person: Person, question: str, channel: str) -> tuple[str, AskAnswer]:
    """Answer a question and persist the exchange; returns what may be delivered and the
    answer. On chat channels the delivery gate runs before any bytes cross; the inbox (a
    signed-in web page) shows the full answer. A garbage channel raises before anything
    is written; a failed turn writes nothing (not even the block's audit event)."""
    origin = normalize_channel_origin(channel)
    answer = answer_question(person, question)
    body = render(answer)
    delivered = body
    if origin != "inbox":
        result = gate_outbound(body, answer.provenance, answer.excerpts_in(body))
        delivered = result.body
        if not result.allowed:
            audit_event_append(
                tenant=person.tenant,
                type="restricted_content_blocked",
                detail={"channel": origin, "reason": result.reason, "person": str(person.pk)},
            )
    chat_exchange_record(
        person=person,
        channel_origin=origin,
        question=question,
        answer=body,
        provenance=answer.provenance,
        delivered=delivered,
    )
    return delivered, answer
