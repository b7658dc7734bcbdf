"""The extracted text of a source version with spans highlighted. The offsets are the
stored text's, so what is marked is the phrase as extracted.

- `highlighted`: every clarification's span, each a link to its clarification in the
  steward admin (the admin's document and source views);
- `passage_highlighted`: one clarification's span, for the read-only document page that
  people who may read the source open from their card (no admin link)."""

from collections.abc import Callable, Sequence
from typing import Any

from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from graph.models import SourceVersion

SHOWN_CHARS = 200_000  # a longer text is cut, with a note (the page must stay usable)
PASSAGE_ID = "passage"  # the fragment a card's document link scrolls to


def _link(clar: Any) -> str:
    return reverse("admin:clarify_clarification_change", args=[clar.pk])


def _spanned(clar: Any) -> bool:
    start, end = clar.span_start, clar.span_end
    return start is not None and end is not None and end > start


def text_marked(
    text: str, clars: Sequence[Any], mark: Callable[[Any, str], str]
) -> tuple[SafeString, list[Any]]:
    """`<pre>` of the first SHOWN_CHARS characters of `text`, escaped, with each
    clarification's span rendered by `mark(clarification, phrase)` (a span overlapping an
    earlier one, or past the shown text, is left unmarked), then a note when the text was
    cut; and the clarifications it marked."""
    parts: list[str] = []
    marked: list[Any] = []
    pos = 0
    for clar in sorted((c for c in clars if _spanned(c)), key=lambda c: (c.span_start, c.span_end)):
        start, end = clar.span_start, clar.span_end
        if start < pos or end > min(len(text), SHOWN_CHARS):
            continue
        parts.append(escape(text[pos:start]))
        parts.append(mark(clar, text[start:end]))
        marked.append(clar)
        pos = end
    parts.append(escape(text[pos:SHOWN_CHARS]))
    note = (
        format_html("<p>… {} more characters not shown.</p>", len(text) - SHOWN_CHARS)
        if len(text) > SHOWN_CHARS
        else ""
    )
    body = "".join(parts) or "(no text: nothing was extracted)"
    html = format_html(
        '<pre class="extracted-text" style="white-space: pre-wrap">{}</pre>{}',
        mark_safe(body),
        note,
    )
    return html, marked


def highlighted(version: SourceVersion | None) -> SafeString:
    """`<pre>` of the text, each span a `<mark>` inside a link to its clarification;
    the clarifications with no span (an undated scan) listed after it."""
    if version is None:
        return mark_safe("<p>Not extracted yet: the detection job has not run.</p>")
    from clarify.models import Clarification

    clars = list(Clarification.objects.filter(source_version=version).order_by("span_start"))

    def mark(clar: Any, phrase: str) -> str:
        return format_html(
            '<a href="{}" class="clarify-span" title="{} ({})"><mark>{}</mark></a>',
            _link(clar),
            clar.kind,
            clar.state,
            phrase,
        )

    text, marked = text_marked(version.text, clars, mark)
    unspanned = format_html_join(
        "",
        '<li><a href="{}">{} ({}) — no span in the text</a></li>',
        ((_link(c), c.kind, c.state) for c in clars if c not in marked),
    )
    return format_html("{}{}", text, format_html("<ul>{}</ul>", unspanned) if unspanned else "")


def passage_highlighted(text: str, clarification: Any | None) -> tuple[SafeString, bool]:
    """`<pre>` of the text with the clarification's span (if any, and shown) marked as the
    passage (`<mark id="passage">`); and whether it was marked."""

    def mark(_: Any, phrase: str) -> str:
        return format_html('<mark id="{}" class="passage">{}</mark>', PASSAGE_ID, phrase)

    html, marked = text_marked(text, [clarification] if clarification is not None else [], mark)
    return html, bool(marked)
