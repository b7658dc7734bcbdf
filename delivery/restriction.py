"""What of a source may cross to a chat channel. A restricted source's content never
crosses verbatim: its cards carry no excerpt."""

from clarify.models import Clarification

CARD_EXCERPT_MAX_CHARS = 280


def excerpt_for_chat(clar: Clarification) -> str:
    """The span excerpt a card may show, or "" for a restricted source or no span."""
    source = clar.source_version.source
    if source.restriction or clar.span_start is None or clar.span_end is None:
        return ""
    return clar.source_version.text[clar.span_start : clar.span_end][:CARD_EXCERPT_MAX_CHARS]
