"""One card model, rendered per channel (Slack Block Kit, inbox, Teams), and the outcome
copy of spec §7. A redacted card (the steward escalation) never carries span text."""

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse

from clarify.models import CLOSED_STATES, Clarification, ResponseRecord, Severity, State
from clarify.reports import target_name
from common.times import from_us
from tenancy.models import Person

SOMETHING_ELSE = "Something else…"
MOVED_ON = "This clarification has moved on."
# A clarification in one of these states is still asked: its cards' buttons answer it.
OPEN_STATES = frozenset(s for s in State.values if s not in CLOSED_STATES)


@dataclass(frozen=True)
class CardButton:
    index: int
    label: str


@dataclass(frozen=True)
class Card:
    """What a person is asked: one sentence, candidate buttons, "Something else…"."""

    clarification_id: str
    nonce: str
    question: str
    buttons: list[CardButton]
    document_title: str
    document_url: str
    excerpt: str = ""
    note: str = ""
    severity: str = Severity.NORMAL
    passage_path: str = ""  # the document page on this server (`DocumentLink.passage_path`)
    original_url: str = ""  # the source system's address, when there is one

    def action(self, index: int) -> dict[str, Any]:
        """The card action payload of CONTRACT §3.5."""
        return {
            "kind": "clarify_answer",
            "clarificationId": self.clarification_id,
            "answerIndex": index,
            "nonce": self.nonce,
        }


@dataclass(frozen=True)
class Escalation:
    """The redacted steward escalation: document link and title, never span text."""

    clarification_id: str
    text: str
    document_title: str
    document_url: str
    review_url: str
    skip_reasons: list[dict[str, Any]] = field(default_factory=list)
    passage_path: str = ""
    original_url: str = ""


def _date(us: int | None) -> str:
    if us is None:
        return "open-ended"
    return from_us(us).strftime("%-d %B %Y")


def candidate_label(candidate: dict[str, Any]) -> str:
    label = candidate.get("label")
    if label:
        return str(label)
    return f"{_date(candidate.get('validFrom'))} → {_date(candidate.get('validTo'))}"


def linkable(uri: str) -> bool:
    """Only http(s) URIs become links: a submitted `javascript:`/`data:` URI would run when
    clicked however well it is escaped."""
    try:
        return urlsplit(uri).scheme.lower() in ("http", "https")
    except ValueError:
        return False


@dataclass(frozen=True)
class DocumentLink:
    """Where a card sends a person to read the document. `passage_path`: the read-only
    document page on this server (`/inbox/documents/<source id>/`), for whoever may read
    the source, the question's span highlighted and scrolled to; `original_url`: the
    source system's http(s) address, when the source has one; `url` (absolute, for chat
    messages): the original when there is one, else the document page under
    PUBLIC_BASE_URL."""

    title: str
    url: str
    passage_path: str
    original_url: str


def passage_path(source_id: Any, clarification_id: Any | None = None) -> str:
    """The document page's path, naming the clarification whose span to highlight."""
    path = reverse("inbox-document", args=[source_id])
    return f"{path}?clarification={clarification_id}#passage" if clarification_id else path


def document_of(clar: Clarification) -> DocumentLink:
    source = clar.source_version.source
    original = source.uri if linkable(source.uri) else ""
    path = passage_path(source.pk, clar.pk)
    return DocumentLink(
        title=source.title or source.external_id,
        url=original or f"{settings.PUBLIC_BASE_URL}{path}",
        passage_path=path,
        original_url=original,
    )


QUESTION_BY_KIND = {
    "relative_date": "When does “{name}” take effect?",
    "conflicting_dates": "Which date is right for “{name}”?",
    "undated": "What date applies to “{name}”?",
    "low_confidence_extraction": "Which date is right for “{name}”?",
}


def quorum_note(clar: Clarification) -> str:
    required = clar.required_confirmations
    if required > 1:
        return (
            "This clarification affects a high-stakes date and requires "
            f"{_count_word(required)} confirmations."
        )
    return ""


def _count_word(n: int) -> str:
    return {2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


def build_card(clar: Clarification, nonce: str, excerpt: str, name: str | None = None) -> Card:
    """`name`: the target's display name when already known (`target_names`)."""
    doc = document_of(clar)
    name = target_name(clar) if name is None else name
    question = QUESTION_BY_KIND.get(clar.kind, "Which date is right for “{name}”?").format(
        name=name
    )
    return Card(
        clarification_id=str(clar.pk),
        nonce=nonce,
        question=f"{question} (from “{doc.title}”)",
        buttons=[
            CardButton(index=i, label=candidate_label(c)) for i, c in enumerate(clar.candidates)
        ],
        document_title=doc.title,
        document_url=doc.url,
        excerpt=excerpt,
        note=quorum_note(clar),
        severity=clar.severity,
        passage_path=doc.passage_path,
        original_url=doc.original_url,
    )


def delegated_card(card: Card, absent: Person) -> Card:
    """A delegate's card: it says on whose behalf it was routed (issue 32)."""
    until = absent.away_until.strftime("%-d %B %Y") if absent.away_until else ""
    note = f"Asked of you on behalf of {absent.name or 'a colleague'}, who is away" + (
        f" until {until}." if until else "."
    )
    return replace(card, note=f"{note} {card.note}".strip())


def card_of_row(card: Card, delivery: Any) -> Card:
    """A card rebuilt from its delivery row (inbox, digest): a delegate's says so."""
    absent = delivery.on_behalf_of if delivery.on_behalf_of_id else None
    return delegated_card(card, absent) if absent is not None else card


def reminder_card(card: Card) -> Card:
    """The one reminder of an unanswered card: the same card, same nonce, marked."""
    return replace(card, question=f"Reminder: {card.question}")


def build_escalation(clar: Clarification, skip_reasons: list[dict[str, Any]]) -> Escalation:
    doc = document_of(clar)
    reasons = ", ".join(sorted({str(r.get("reason")) for r in skip_reasons if r.get("reason")}))
    text = (
        f"Nobody in the ranking could answer a {clar.severity} question about a date in "
        f"“{doc.title}”. Please review it." + (f" Reasons: {reasons}." if reasons else "")
    )
    return Escalation(
        clarification_id=str(clar.pk),
        text=text,
        document_title=doc.title,
        document_url=doc.url,
        review_url=review_url(clar),
        skip_reasons=skip_reasons,
        passage_path=doc.passage_path,
        original_url=doc.original_url,
    )


def build_steward_notice(clar: Clarification, asked: Person) -> Escalation:
    """The FYI stewards get when a high-severity question goes direct (spec §5 "high
    direct with steward notified"): redacted like the escalation, no action needed."""
    doc = document_of(clar)
    return Escalation(
        clarification_id=str(clar.pk),
        text=(
            f"For your information: a {clar.severity}-severity question about a date in "
            f"“{doc.title}” was sent to {asked.name or 'its first candidate'}. Nothing to do "
            "unless it stalls."
        ),
        document_title=doc.title,
        document_url=doc.url,
        review_url=review_url(clar),
        passage_path=doc.passage_path,
        original_url=doc.original_url,
    )


def review_url(clar: Clarification) -> str:
    """The steward's decide page of the clarification in the admin."""
    return f"{settings.PUBLIC_BASE_URL}/admin/clarify/clarification/{clar.pk}/change/"


def _first_name(person: Person | None) -> str:
    return person.name.split()[0] if person is not None and person.name else "an erased responder"


def _today() -> str:
    return datetime.now(UTC).strftime("%-d %b %Y")


def outcome_copy(clar: Clarification, body: dict[str, Any], responder: Person | None) -> str:
    """The card's outcome text after an answer (spec §7), from the answer service's body."""
    outcome = body.get("outcome")
    if outcome == "attestation":
        return (
            "Your answer is recorded as an attestation. A steward or editor must confirm it "
            "before the fact is corrected."
        )
    if outcome == "conflict":
        if body.get("postBinding"):
            return (
                f"{MOVED_ON} Your different answer is recorded as a conflicting attestation "
                "and a steward has been notified."
            )
        return (
            "A conflicting answer has been recorded. "
            "This clarification now requires steward review."
        )
    answer = _answer_label(clar)
    if outcome == "partial_confirmation":
        remaining = int(body.get("quorumRemaining", 1))
        more = (
            "One more confirmation is" if remaining == 1 else f"{remaining} more confirmations are"
        )
        return (
            f"First confirmation recorded: {answer} ({_first_name(responder)}). {more} required "
            "before the correction becomes binding."
        )
    if outcome == "bound":
        names = _bound_names(clar)
        if clar.required_confirmations > 1:
            return f"✓ Recorded as binding evidence: {answer}, confirmed by {names}, {_today()}."
        return f"✓ Recorded as evidence: {answer}, confirmed by {names}, {_today()}."
    return MOVED_ON


def shown_outcome(outcome: str, answers: bool) -> str:
    """The line a re-rendered card shows under its question: the tap's outcome copy, else
    "moved on" once its buttons no longer answer (the clarification closed, or the card's
    nonce did)."""
    return outcome or ("" if answers else MOVED_ON)


def _answer_label(clar: Clarification) -> str:
    record = clar.responses.order_by("-seq").first()
    if record is None:
        return ""
    if record.answer_index is not None and 0 <= record.answer_index < len(clar.candidates):
        return candidate_label(clar.candidates[record.answer_index])
    return f"{_date(record.interval_from)} → {_date(record.interval_to)}"


def _bound_names(clar: Clarification) -> str:
    responders = list(
        ResponseRecord.objects.filter(
            clarification=clar, binding_status__in=["bound", "steward_override"]
        )
        .order_by("seq")
        .values_list("responder", flat=True)
    )
    people = {p.pk: p for p in Person.objects.filter(pk__in=responders)}
    names = [_first_name(people.get(r)) for r in responders]
    return " and ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)
