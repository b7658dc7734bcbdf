"""The read-only document page a card's "Document" link opens: `/inbox/documents/<source
id>/`, outside the steward admin, for any signed-in person who may read the source (the
one read rule, `graph.access`). It shows the extracted text of the document; with
`?clarification=<id>` (a question about that document) the text of the version the
question was asked on, its span highlighted and scrolled to (`#passage`). A source the
person may not read, another tenant's, or an unknown id is a 404 — the same page, so a
source's existence is not revealed. It writes nothing."""

import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from clarify.models import Clarification
from clarify.reports import target_name
from common.times import iso
from graph.access import person_reader
from graph.models import Source, SourceVersion
from graph.selectors import readable_sources
from ingest.highlight import passage_highlighted
from tenancy.models import Person

from .cards import QUESTION_BY_KIND, linkable
from .identity import signed_in_person


def _uuid(raw: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


def readable_source(person: Person | None, source_id: Any) -> Source:
    """The source, if the person may read it now; else 404 (unknown, another tenant's,
    not readable, or no person)."""
    pk = _uuid(source_id)
    source = (
        readable_sources(person_reader(person)).filter(pk=pk).first()
        if person is not None and pk is not None
        else None
    )
    if source is None:
        raise Http404("No such document.")
    return source


def asked_on(source: Source, clarification_id: Any) -> Clarification | None:
    """The clarification named by the link, if it is about this source (its own tenant's,
    then): the text shown is the version it was asked on."""
    pk = _uuid(clarification_id) if clarification_id else None
    if pk is None:
        return None
    return (
        Clarification.objects.filter(pk=pk, tenant_id=source.tenant_id)
        .filter(source_version__source=source)
        .select_related("source_version", "target")
        .first()
    )


def _question(clar: Clarification) -> str:
    template = QUESTION_BY_KIND.get(clar.kind, "Which date is right for “{name}”?")
    return template.format(name=target_name(clar))


@login_required
@require_http_methods(["GET"])
def document(request: HttpRequest, source_id: str) -> HttpResponse:
    """The document page (module docstring)."""
    source = readable_source(signed_in_person(request), source_id)
    clar = asked_on(source, request.GET.get("clarification"))
    version: SourceVersion | None = (
        clar.source_version if clar is not None else source.versions.order_by("-tx").first()
    )
    text, marked = passage_highlighted(version.text if version else "", clar)
    return render(
        request,
        "inbox/document.html",
        {
            "source": source,
            "title": source.title or source.external_id,
            "original_url": source.uri if linkable(source.uri) else "",
            "version": version,
            "recorded": iso(version.tx) if version else "",
            "question": _question(clar) if clar is not None else "",
            "marked": marked,
            "text": text,
        },
    )
