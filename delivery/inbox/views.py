"""The inbox channel's pages: a signed-in person's open cards, answered with the same
nonce and answer path as Slack and Teams, and — for a steward — the steward escalations
and notices addressed to them while their clarification is unresolved (redacted: document
title, links to the document and the decide page, skip reasons; never span text).
CSRF-protected.

A tap whose session expired meanwhile is not lost: the form's fields are kept in the
(new, anonymous) session and the person is sent to sign in, then back to
`GET /inbox/answer`, which shows their card with the choice still to confirm — if the
card is still theirs and open. Nothing is recorded before they confirm (a GET never
answers), and the confirmation goes through the one tap pipeline like any tap."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from clarify.models import State
from clarify.routing import skip_reasons_by_clarification
from tenancy.models import Person, Rights

from ..actions import ANSWERED, CustomInputs, card_action_process, delivery_for_nonce
from ..cards import (
    Escalation,
    build_card,
    build_escalation,
    build_steward_notice,
    candidate_label,
    card_of_row,
)
from ..identity import signed_in_person
from ..models import Delivery, DeliveryKind, NonceState
from ..restriction import excerpt_for_chat
from .away import delegated_cards


def open_cards(person: Person) -> list[dict[str, Any]]:
    """Every open question addressed to the person, whatever channel carried it, newest
    first — those reminded (their card's `reminded_at`, issue 32) before the others,
    marked `reminded` (the page's "Reminder" badge)."""
    deliveries = (
        Delivery.objects.filter(
            person=person, kind=DeliveryKind.QUESTION, nonce_state=NonceState.ACTIVE
        )
        .exclude(clarification__state__in=[State.ANSWERED])
        .select_related(
            "clarification__source_version__source", "clarification__target", "on_behalf_of"
        )
        .order_by("-created_at")
    )
    seen: set[Any] = set()
    cards = []
    for d in deliveries:
        if d.clarification_id in seen:
            continue
        seen.add(d.clarification_id)
        cards.append(
            {
                "card": card_of_row(
                    build_card(d.clarification, d.nonce, excerpt_for_chat(d.clarification)), d
                ),
                "delivery": d,
                "reminded": d.reminded_at is not None,
            }
        )
    cards.sort(key=lambda item: not item["reminded"])  # stable: newest first in each group
    return cards


@dataclass(frozen=True)
class StewardItem:
    """One steward escalation or high-severity notice, as the inbox shows it."""

    kind: str  # "escalation" | "notice"
    message: Escalation
    severity: str
    state: str
    reasons: list[str]
    at: datetime


def steward_items(person: Person) -> list[StewardItem]:
    """For a steward (now): the escalations and high-severity notices addressed to them,
    one per clarification (the latest), while the clarification is not answered —
    whatever channel carried them, sent or failed. Escalations first. Redacted: built
    like the chat messages (title, links, reasons), never with span text."""
    if person.role != Rights.STEWARD:
        return []
    deliveries = (
        Delivery.objects.filter(person=person, kind=DeliveryKind.ESCALATION)
        .exclude(clarification__state=State.ANSWERED)
        .select_related("clarification__source_version__source", "clarification__tenant")
        .defer("clarification__source_version__text")
        .order_by("-attempt", "-created_at")
    )
    latest: dict[Any, Delivery] = {}
    for d in deliveries:
        latest.setdefault(d.clarification_id, d)
    reasons = skip_reasons_by_clarification(latest)
    asked_ids = {
        d.clarification.asked[d.attempt]
        for d in latest.values()
        if d.attempt < len(d.clarification.asked)
    }
    asked = {str(p.pk): p for p in Person.objects.filter(pk__in=asked_ids)}
    items = []
    for d in latest.values():
        clar = d.clarification
        candidate = clar.asked[d.attempt] if d.attempt < len(clar.asked) else None
        if candidate is None:
            message = build_escalation(clar, reasons.get(clar.pk, []))
        else:
            message = build_steward_notice(clar, asked.get(candidate) or Person(name=""))
        items.append(
            StewardItem(
                kind="notice" if candidate is not None else "escalation",
                message=message,
                severity=clar.severity,
                state=clar.state,
                reasons=sorted({str(r["reason"]) for r in reasons.get(clar.pk, []) if r["reason"]}),
                at=d.created_at,
            )
        )
    items.sort(key=lambda i: (i.kind != "escalation", -i.at.timestamp()))
    return items


@login_required
@require_http_methods(["GET"])
def inbox(request: HttpRequest) -> HttpResponse:
    person = signed_in_person(request)
    cards = open_cards(person) if person is not None else []
    stewarding = steward_items(person) if person is not None else []
    delegated = delegated_cards(person) if person is not None else []
    return render(
        request,
        "inbox/inbox.html",
        {"person": person, "cards": cards, "stewarding": stewarding, "delegated": delegated},
    )


def _answer_of(data: Any) -> tuple[int | None, CustomInputs | None]:
    """The form's answer: the candidate button pressed, else the "Something else…" inputs."""
    if data.get("answer_index", "") == "":
        return None, CustomInputs(
            valid_from=data.get("valid_from", ""),
            valid_to=data.get("valid_to", ""),
            source_text=data.get("source_text", ""),
        )
    try:
        return int(data["answer_index"]), None
    except ValueError:
        return -1, None  # not a number: no candidate, refused as such


# The answer form's fields, kept in the session across a sign-in (each cut to a length no
# valid answer exceeds, so the session stays small; a cut value is refused as before).
PENDING_TAP = "inbox_pending_tap"
TAP_FIELDS = {
    "clarification_id": 64,
    "nonce": 128,
    "answer_index": 16,
    "valid_from": 32,
    "valid_to": 32,
    "source_text": 2001,
}
NOT_KEPT = (
    "The answer you chose before signing in was not recorded: that card is no longer open to you."
)


@require_http_methods(["GET", "POST"])
def answer(request: HttpRequest) -> HttpResponse:
    """A card's form, as a tap by the signed-in person; the outcome (or why not) is shown
    as a message. Signed out (the session expired): the tap is kept for after sign-in,
    where `GET` shows it to confirm; `GET` with nothing kept is the inbox."""
    if not request.user.is_authenticated:
        if request.method == "POST":
            request.session[PENDING_TAP] = {
                name: str(request.POST.get(name, ""))[:limit] for name, limit in TAP_FIELDS.items()
            }
        return redirect_to_login(reverse("inbox-answer"))
    if request.method == "GET":
        return _pending_tap(request)
    request.session.pop(PENDING_TAP, None)
    data = request.POST
    index, custom = _answer_of(data)
    reply = card_action_process(
        channel="inbox",
        actor=signed_in_person(request),
        clarification_id=data.get("clarification_id", ""),
        nonce=data.get("nonce", ""),
        answer_index=index,
        custom=custom,
        message_ref=f"inbox:{data.get('nonce', '')[:40]}",
        actor_identity=f"user:{request.user.pk}",
    )
    if reply.status == ANSWERED:
        messages.add_message(request, outcome_level(reply.body), reply.text)
    else:
        messages.error(request, reply.text)
    return HttpResponseRedirect("/inbox/")


def outcome_level(body: dict[str, Any] | None) -> int:
    """How an answer's outcome is shown: success only when it bound the fact; a recorded
    confirmation or attestation still waiting is information; a conflict (a stale card's
    different answer, or a disagreement) is a warning."""
    outcome = (body or {}).get("outcome")
    if outcome == "bound":
        return messages.SUCCESS
    if outcome == "conflict":
        return messages.WARNING
    return messages.INFO


def open_delivery(person: Person, nonce: str, clarification_id: str) -> Delivery | None:
    """The person's card with this nonce, if it is still one the inbox shows them (its
    nonce active, its clarification not answered) and names this clarification."""
    delivery = delivery_for_nonce(nonce)
    if (
        delivery is None
        or delivery.person_id != person.pk
        or str(delivery.clarification_id) != clarification_id
        or delivery.nonce_state != NonceState.ACTIVE
        or delivery.clarification.state == State.ANSWERED
    ):
        return None
    return delivery


def _choice(delivery: Delivery, tap: dict[str, str]) -> str:
    """The kept answer in words: the candidate's label, or the "Something else…" dates."""
    raw = tap.get("answer_index", "")
    if raw == "":
        valid_to = tap.get("valid_to") or "open-ended"
        return f"Something else: {tap.get('valid_from', '')} → {valid_to}"
    candidates = delivery.clarification.candidates
    if raw.isdigit() and int(raw) < len(candidates):
        return candidate_label(candidates[int(raw)])
    return f"choice {raw}"


def _pending_tap(request: HttpRequest) -> HttpResponse:
    """After sign-in: the kept tap's card with the choice to confirm (taken out of the
    session: a reload shows the inbox, where the card still is). Writes nothing."""
    tap = request.session.pop(PENDING_TAP, None)
    person = signed_in_person(request)
    if not isinstance(tap, dict):
        return HttpResponseRedirect("/inbox/")
    tap = {name: str(tap.get(name, "")) for name in TAP_FIELDS}
    delivery = open_delivery(person, tap["nonce"], tap["clarification_id"]) if person else None
    if delivery is None:
        messages.error(request, NOT_KEPT)
        return HttpResponseRedirect("/inbox/")
    clar = delivery.clarification
    card = build_card(clar, delivery.nonce, excerpt_for_chat(clar))
    return render(
        request,
        "inbox/confirm.html",
        {"person": person, "card": card, "tap": tap, "choice": _choice(delivery, tap)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def ask(request: HttpRequest) -> HttpResponse:
    """Ask a question about the facts you may read (ASK_ENABLED)."""
    from django.conf import settings
    from django.http import Http404

    from ..ask.services import respond

    if not settings.ASK_ENABLED:
        raise Http404("Asking is not enabled.")
    person = signed_in_person(request)
    context: dict[str, Any] = {"person": person, "question": "", "answer": None}
    if request.method == "POST" and person is not None:
        question = request.POST.get("question", "").strip()[:1000]
        if question:
            _, answer = respond(person=person, question=question, channel="inbox")
            context.update(question=question, answer=answer)
    return render(request, "inbox/ask.html", context)


@login_required
@require_POST
def ask_now_view(request: HttpRequest) -> HttpResponse:
    from django.conf import settings
    from django.http import Http404

    from ..ask.services import ask_now

    person = signed_in_person(request)
    if not settings.ASK_ENABLED or person is None:
        raise Http404("Asking is not enabled.")
    messages.info(
        request, ask_now(requester=person, clarification_id=request.POST.get("clarification_id"))
    )
    return HttpResponseRedirect("/inbox/ask/")


@login_required
@require_http_methods(["GET"])
def fact(request: HttpRequest, node_id: str) -> HttpResponse:
    """The full trace of a fact you may read: every version with its evidence. It is the
    "Open full trace" link of ask in chat and nothing else links to it, so with
    ASK_ENABLED off it is 404 like the other ask pages (off behaves exactly as before)."""
    import uuid as _uuid

    from django.conf import settings
    from django.http import Http404

    if not settings.ASK_ENABLED:
        raise Http404("Asking is not enabled.")

    from common.times import iso
    from graph.models import NodeVersion
    from graph.selectors import readable_nodes
    from graph.timeline import versions_svg

    from ..ask.services import reader_for

    person = signed_in_person(request)
    try:
        pk = _uuid.UUID(node_id)
    except ValueError as exc:
        raise Http404 from exc
    if person is None or not readable_nodes(reader_for(person)).filter(pk=pk).exists():
        raise Http404("No such fact.")
    rows = list(NodeVersion.objects.filter(node_id=pk).order_by("tx_from"))
    versions = [
        {
            "seq": v.seq,
            "name": v.properties.get("name", ""),
            "valid": f"{iso(v.valid_from)} → {iso(v.valid_to)}",
            "recorded": f"{iso(v.tx_from)} → {iso(v.tx_to)}",
            "confidence": v.confidence,
            "evidence": v.evidence_class,
            "pending": v.pending,
        }
        for v in rows
    ]
    return render(
        request, "inbox/fact.html", {"versions": versions, "timeline_svg": versions_svg(rows)}
    )
