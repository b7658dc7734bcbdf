"""The email channel's messages: a question, a digest of questions, a steward's
escalation or notice — each an HTML and a plain-text part rendered from the same card
(`delivery.cards`) the chat channels render, so the copy is written once.

Each question lists one link per candidate and one for "Something else…"; a link opens the
confirmation page of `delivery.email.views` (`answer_url`). A card the restriction gate
turned into a teaser has no candidates, hence no answer links: it points to the inbox."""

from dataclasses import dataclass
from email.utils import make_msgid
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from ..cards import SOMETHING_ELSE, Card, Escalation

OTHER = "other"  # the "Something else…" link's choice
SUBJECT_MAX_CHARS = 150


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class Question:
    """A card as an email lists it: the card, its answer links, its document's address
    (the source system's, else the document page here; the inbox for a teaser)."""

    card: Card
    links: list[Link]
    document_url: str


def answer_url(nonce: str, choice: str) -> str:
    """The confirmation page of one choice (a candidate's index, or `OTHER`)."""
    return f"{settings.PUBLIC_BASE_URL}{reverse('email-answer', args=[nonce, choice])}"


def question_of(card: Card) -> Question:
    links = [Link(b.label, answer_url(card.nonce, str(b.index))) for b in card.buttons]
    if links:
        links.append(Link(SOMETHING_ELSE, answer_url(card.nonce, OTHER)))
    return Question(card, links, card.document_url)


def _subject(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUBJECT_MAX_CHARS else text[: SUBJECT_MAX_CHARS - 1] + "…"


def _message(
    address: str, subject: str, template: str, context: dict[str, object]
) -> EmailMultiAlternatives:
    context = {"inbox_url": f"{settings.PUBLIC_BASE_URL}{reverse('inbox')}", **context}
    text = render_to_string(f"email/{template}.txt", context)
    html = render_to_string(f"email/{template}.html", context)
    domain = urlsplit(settings.PUBLIC_BASE_URL).hostname or "telha.invalid"
    message = EmailMultiAlternatives(
        subject=_subject(subject),
        body=text,
        to=[address],
        headers={
            "Message-ID": make_msgid("clarify", domain=domain),
            # An automatic message: out-of-office replies are not wanted (RFC 3834).
            "Auto-Submitted": "auto-generated",
            "X-Auto-Response-Suppress": "All",
        },
    )
    message.attach_alternative(html, "text/html")
    return message


def question_message(address: str, card: Card) -> EmailMultiAlternatives:
    return _message(address, card.question, "question", {"questions": [question_of(card)]})


def digest_message(address: str, cards: list[Card]) -> EmailMultiAlternatives:
    subject = f"{len(cards)} questions about dates are waiting for you"
    return _message(
        address, subject, "question", {"questions": [question_of(c) for c in cards], "digest": True}
    )


def escalation_message(address: str, escalation: Escalation) -> EmailMultiAlternatives:
    return _message(
        address,
        f"Steward review: {escalation.document_title}",
        "escalation",
        {"escalation": escalation},
    )
