"""What of a source may cross to a chat channel. A restricted source's content never
crosses verbatim: cards carry no excerpt, and on chat channels a card, digest entry or
escalation about a restricted source is replaced by a teaser that names nothing."""

from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Substr

from clarify.models import Clarification
from telha.graph.models import Span

from .cards import Card, Escalation
from .provenance import gate_outbound

CARD_EXCERPT_MAX_CHARS = 280
MAX_KNOWN_EXCERPTS = 1000
RESTRICTED_CARD_TEXT = (
    "You have a question waiting about a restricted document. Open your Telha inbox to answer it."
)


def excerpt_for_chat(clar: Clarification) -> str:
    """The span excerpt a card may show, or "" for a restricted source or no span."""
    source = clar.source_version.source
    if source.restriction or clar.span_start is None or clar.span_end is None:
        return ""
    return clar.source_version.text[clar.span_start : clar.span_end][:CARD_EXCERPT_MAX_CHARS]


def provenance_of(clar: Clarification) -> list[dict[str, str]]:
    source = clar.source_version.source
    if not source.restriction:
        return []
    return [{"kind": "source", "sourceId": str(source.pk), "restriction": source.restriction}]


def known_restricted_excerpts(tenant: Any) -> list[str]:
    """The span texts of the tenant's restricted sources (newest first, bounded): what the
    verbatim check of the delivery gate looks for in any body about to cross to a chat
    channel, whatever source that body is about. Sliced in the database, so no document
    text is loaded."""
    return list(
        Span.objects.filter(
            source_version__source__tenant=tenant,
            source_version__source__restriction__isnull=False,
        )
        .exclude(source_version__source__restriction="")
        .filter(end__gt=F("start"))
        .annotate(excerpt=Substr("source_version__text", F("start") + 1, F("end") - F("start")))
        .order_by("-source_version__tx", "start")
        .values_list("excerpt", flat=True)[:MAX_KNOWN_EXCERPTS]
    )


def card_text(card: Card) -> str:
    return "\n".join(
        [
            card.question,
            card.excerpt,
            card.note,
            card.document_title,
            *[b.label for b in card.buttons],
        ]
    )


def gated_card(
    card: Card, clar: Clarification, excerpts: list[str] | None = None
) -> tuple[Card, str]:
    """The card as it may cross to a chat channel, and the block reason ("" if none): a
    card about a restricted source, or one quoting a known restricted excerpt verbatim,
    becomes the teaser."""
    if excerpts is None:
        excerpts = known_restricted_excerpts(clar.tenant_id)
    result = gate_outbound(card_text(card), provenance_of(clar), excerpts)
    if result.allowed:
        return card, ""
    teaser = replace(
        card,
        question=RESTRICTED_CARD_TEXT,
        buttons=[],
        excerpt="",
        note="",
        document_title="your Telha inbox",
        document_url=f"{settings.PUBLIC_BASE_URL}/inbox/",
    )
    return teaser, result.reason


def gated_escalation(escalation: Escalation, clar: Clarification) -> Escalation:
    if not provenance_of(clar):
        return escalation
    return replace(
        escalation,
        text=(
            "A clarification about a restricted document needs a steward. Open the steward "
            "review to see it."
        ),
        document_title="steward review",
        document_url=escalation.review_url,
    )
