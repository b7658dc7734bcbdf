"""The extracted text of a source version with every clarification's span highlighted,
each a link to its clarification in the steward admin (the document and source views).
The offsets are the stored text's, so what is marked is the phrase as extracted."""

from typing import Any

from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from telha.graph.models import SourceVersion

SHOWN_CHARS = 200_000  # a longer text is cut, with a note (the page must stay usable)


def _link(clar: Any) -> str:
    return reverse("admin:clarify_clarification_change", args=[clar.pk])


def highlighted(version: SourceVersion | None) -> SafeString:
    """`<pre>` of the text, each span a `<mark>` inside a link to its clarification;
    the clarifications with no span (an undated scan) listed after it."""
    if version is None:
        return mark_safe("<p>Not extracted yet: the detection job has not run.</p>")
    from clarify.models import Clarification

    text = version.text
    clars = list(Clarification.objects.filter(source_version=version).order_by("span_start"))
    spans = sorted(
        (c.span_start, c.span_end, i)
        for i, c in enumerate(clars)
        if c.span_start is not None and c.span_end is not None and c.span_end > c.span_start
    )
    marked = [clars[i] for _, _, i in spans]
    parts: list[str] = []
    pos = 0
    for start, end, i in spans:
        clar = clars[i]
        if start < pos or end > min(len(text), SHOWN_CHARS):
            continue  # overlapping another span, or past the shown text
        parts.append(escape(text[pos:start]))
        parts.append(
            format_html(
                '<a href="{}" class="clarify-span" title="{} ({})"><mark>{}</mark></a>',
                _link(clar),
                clar.kind,
                clar.state,
                text[start:end],
            )
        )
        pos = end
    parts.append(escape(text[pos:SHOWN_CHARS]))
    note = (
        format_html("<p>… {} more characters not shown.</p>", len(text) - SHOWN_CHARS)
        if len(text) > SHOWN_CHARS
        else ""
    )
    unspanned = format_html_join(
        "",
        '<li><a href="{}">{} ({}) — no span in the text</a></li>',
        ((_link(c), c.kind, c.state) for c in clars if c not in marked),
    )
    body = "".join(parts) or "(no text: nothing was extracted)"
    return format_html(
        '<pre class="extracted-text" style="white-space: pre-wrap">{}</pre>{}{}',
        mark_safe(body),
        note,
        format_html("<ul>{}</ul>", unspanned) if unspanned else "",
    )
