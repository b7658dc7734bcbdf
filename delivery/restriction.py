"""What of a source may cross to a chat channel. A restricted source's content never
crosses verbatim: cards carry no excerpt, and on chat channels a card, digest entry or
escalation about a restricted source — or one quoting any restricted excerpt of the
tenant — is replaced by a teaser that names nothing.

The verbatim check is complete: `restricted_excerpts_in` asks the database which of the
tenant's restricted span excerpts occur in the outgoing text (whitespace removed and case
folded on both sides, so it never misses what `provenance.verbatim_match` would catch),
and the gate then applies the exact check to those few."""

from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import CharField, F, Func, TextField, Value
from django.db.models.functions import Length, StrIndex, Substr

from clarify.models import Clarification
from clarify.services import audit_event_append
from graph.models import Span

from .cards import OPEN_STATES, Card, Escalation, build_card
from .models import Delivery, NonceState
from .provenance import MIN_EXCERPT_CHARS, gate_outbound, verbatim_match

CARD_EXCERPT_MAX_CHARS = 280
_SQLITE_FOLD = "telha_fold_text"


RESTRICTED_CARD_TEXT = (
    "You have a question waiting about a restricted document. Open your Telha inbox to answer it."
)
RESTRICTED_ESCALATION_TEXT = (
    "A clarification about a restricted document needs a steward. Open the steward "
    "review to see it."
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


def fold_text(text: str | None) -> str | None:
    """Every whitespace character removed, case folded: coarser than the gate's own
    normalisation (whitespace runs → one space, casefold), so an excerpt that matches
    the body there also matches here."""
    return None if text is None else "".join(text.split()).casefold()


class FoldedText(Func):
    """`fold_text` in SQL: a deterministic Python function registered on SQLite (whose
    LOWER only knows ASCII) and `LOWER(REGEXP_REPLACE(…, '\\s', '', 'g'))` on PostgreSQL
    — the two databases Telha runs on."""

    arity = 1
    output_field = TextField()
    template = "LOWER(REPLACE(%(expressions)s, ' ', ''))"

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        connection.connection.create_function(_SQLITE_FOLD, 1, fold_text, deterministic=True)
        return self.as_sql(compiler, connection, template=f"{_SQLITE_FOLD}(%(expressions)s)")

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="LOWER(REGEXP_REPLACE(%(expressions)s, '\\s', '', 'g'))"
        )


def _restricted_spans(tenant: Any) -> Any:
    """The tenant's restricted span excerpts as an `excerpt` annotation, sliced in the
    database (no document text is loaded)."""
    return (
        Span.objects.filter(
            source_version__source__tenant=tenant,
            source_version__source__restriction__isnull=False,
        )
        .exclude(source_version__source__restriction="")
        .filter(end__gt=F("start"))
        .annotate(excerpt=Substr("source_version__text", F("start") + 1, F("end") - F("start")))
    )


def tenant_has_restricted_excerpts(tenant: Any) -> bool:
    """Whether the tenant has any restricted span excerpt `restricted_excerpts_in` could
    find (one query). When it has none, every outgoing text's excerpts are `[]`, so a
    batch of cards needs no per-card check."""
    return bool(_restricted_spans(tenant).filter(end__gte=F("start") + MIN_EXCERPT_CHARS).exists())


def restricted_excerpts_in(tenant: Any, text: str) -> list[str]:
    """Every restricted span excerpt of the tenant (≥ MIN_EXCERPT_CHARS once normalised)
    that occurs verbatim — case- and whitespace-insensitively — in `text`, however many
    restricted spans the tenant has. The database narrows the spans to those whose folded
    excerpt is a substring of the folded text; the exact check runs on those."""
    folded = fold_text(text) or ""
    if not folded:
        return []
    # Make sure the connection exists before FoldedText registers its SQLite function.
    connection.ensure_connection()
    candidates = (
        _restricted_spans(tenant)
        .filter(end__gte=F("start") + MIN_EXCERPT_CHARS)
        .annotate(folded=FoldedText("excerpt"))
        .annotate(folded_len=Length("folded"))
        .filter(folded_len__gt=0)
        .annotate(at=StrIndex(Value(folded, output_field=CharField()), F("folded")))
        .filter(at__gt=0)
        .values_list("excerpt", flat=True)
        .distinct()
    )
    return [e for e in candidates if verbatim_match(text, [e])]


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


def escalation_text(escalation: Escalation) -> str:
    return "\n".join([escalation.text, escalation.document_title])


def restricted_content_blocked(
    clar: Clarification, *, reason: str, channel: str, message: str, **detail: Any
) -> None:
    """The audit event of a gate block (`restricted_content_blocked`): which message, to
    which channel, and why — never the blocked text."""
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="restricted_content_blocked",
        detail={"message": message, "channel": channel, "reason": reason, **detail},
    )


def gated_card(
    card: Card, clar: Clarification, excerpts: list[str] | None = None
) -> tuple[Card, str]:
    """The card as it may cross to a chat channel, and the block reason ("" if none): a
    card about a restricted source, or one quoting a restricted excerpt verbatim, becomes
    the teaser."""
    text = card_text(card)
    if excerpts is None:
        excerpts = restricted_excerpts_in(clar.tenant_id, text)
    result = gate_outbound(text, provenance_of(clar), excerpts)
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
        passage_path="",
        original_url="",
    )
    return teaser, result.reason


def gated_escalation(escalation: Escalation, clar: Clarification) -> tuple[Escalation, str]:
    """The steward escalation (or notice) as it may cross to a chat channel, and the block
    reason ("" if none) — the same gate as cards: restricted provenance, or a restricted
    excerpt quoted verbatim (e.g. in a document title), sends a teaser that names no
    document and only links to the steward review."""
    text = escalation_text(escalation)
    result = gate_outbound(text, provenance_of(clar), restricted_excerpts_in(clar.tenant_id, text))
    if result.allowed:
        return escalation, ""
    teaser = replace(
        escalation,
        text=RESTRICTED_ESCALATION_TEXT,
        document_title="steward review",
        document_url=escalation.review_url,
        passage_path="",
        original_url="",
    )
    return teaser, result.reason


def card_as_it_stands(delivery: Delivery) -> tuple[Card, bool]:
    """A sent card re-rendered for its chat (a Slack `chat.update`, a Teams invoke
    response): its clarification read afresh, through the same restriction gate as the
    card that was sent, and whether its buttons still answer — the clarification still
    asked and the card's nonce still active (a tap on a closed nonce gets "moved on", one
    on a nonce revoked by a re-ask is dropped)."""
    clar = Clarification.objects.select_related("tenant", "source_version__source", "target").get(
        pk=delivery.clarification_id
    )
    card, _ = gated_card(build_card(clar, delivery.nonce, excerpt_for_chat(clar)), clar)
    return card, clar.state in OPEN_STATES and delivery.nonce_state == NonceState.ACTIVE
