"""The confirmation page an email's link opens: `GET /email/answer/<nonce>/<choice>/`
(`choice`: a candidate's index, or `other` for "Something else…").

A `GET` never answers — mail scanners and link previews open links — and writes nothing:
it shows the card and the choice (or the "Something else…" form) with one button. The
button's `POST` answers as the signed-in person with the card's nonce, through the one tap
pipeline (`delivery.actions.card_action_process`, channel `email`). Signed out (or the
session expired), either goes to sign-in (password, or the tenant's single sign-on) and
back here with `next=`.

Refused with a page that says why, before anything is written: a link whose nonce names no
question, a choice that is not one of the card's; another person signed in; the recipient
deprovisioned or no longer allowed to read the source; the card no longer answering (its
nonce revoked or closed, its clarification moved on) or already answered by them — a link
answers once."""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from clarify.models import ResponseRecord

from ..actions import ANSWERED, INVALID, CustomInputs, card_action_process, delivery_for_nonce
from ..cards import OPEN_STATES, SOMETHING_ELSE, build_card, candidate_label
from ..gate import floor_check
from ..models import Delivery, DeliveryKind, NonceState
from ..restriction import excerpt_for_chat
from .render import OTHER


@dataclass(frozen=True)
class Refusal:
    status: int
    title: str
    text: str


UNKNOWN_LINK = Refusal(
    404, "This link does not work", "It names no question we sent. Check that it is complete."
)
WRONG_PERSON = Refusal(
    403,
    "This question was sent to someone else",
    "You are signed in as another person. Sign out, then open the link again and sign in "
    "as the person the email was sent to.",
)
LOST_ACCESS = Refusal(
    403,
    "You can no longer answer this question",
    "You no longer have access to the document it is about, so it has been taken off your "
    "list. Nothing was recorded.",
)
MOVED_ON = Refusal(
    410,
    "This question has moved on",
    "It has been answered, withdrawn or sent to someone else since the email went out. "
    "Nothing was recorded.",
)
ANSWERED_BEFORE = Refusal(
    410,
    "You have answered this question already",
    "Each link answers once. Your earlier answer stands; nothing more was recorded.",
)


def _person(request: HttpRequest) -> Any:
    person = getattr(request.user, "person", None)
    return person if person is not None and person.erased_at is None else None


def _index(delivery: Delivery, choice: str) -> int | Refusal | None:
    """The candidate a choice names (None: "Something else…"), or the refusal."""
    if choice == OTHER:
        return None
    if choice.isdigit() and int(choice) < len(delivery.clarification.candidates):
        return int(choice)
    return UNKNOWN_LINK


def refusal_of(person: Any, delivery: Delivery | None) -> Refusal | None:
    """Why the signed-in `person` may not answer with this link (None: they may). Reads
    only."""
    if delivery is None or delivery.kind != DeliveryKind.QUESTION:
        return UNKNOWN_LINK
    if person is None or person.pk != delivery.person_id:
        return WRONG_PERSON
    if person.deactivated_at is not None:
        return LOST_ACCESS
    clar = delivery.clarification
    if delivery.nonce_state != NonceState.ACTIVE or clar.state not in OPEN_STATES:
        return MOVED_ON
    if ResponseRecord.objects.filter(clarification=clar, responder=person.pk).exists():
        return ANSWERED_BEFORE
    if floor_check(clar, [person]).get(person.pk) is not None:
        return LOST_ACCESS
    return None


def _refused(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    return render(request, "email/refused.html", {"refusal": refusal}, status=refusal.status)


def _sign_in(request: HttpRequest, delivery: Delivery | None) -> HttpResponse:
    """To sign-in and back; the tenant named so its single sign-on is offered."""
    login_url = str(settings.LOGIN_URL)
    if delivery is not None:
        login_url = f"{login_url}?tenant={delivery.tenant.slug}"
    return redirect_to_login(request.path, login_url)


def _custom(request: HttpRequest) -> CustomInputs:
    return CustomInputs(
        valid_from=request.POST.get("valid_from", "")[:32],
        valid_to=request.POST.get("valid_to", "")[:32],
        source_text=request.POST.get("source_text", "")[:2001],
    )


def _confirm(
    request: HttpRequest, delivery: Delivery, index: int | None, **extra: Any
) -> HttpResponse:
    """The card as the inbox shows it to its recipient (no passage of a restricted
    source) and the choice, with the button that answers."""
    clar = delivery.clarification
    card = build_card(clar, delivery.nonce, excerpt_for_chat(clar))
    choice = SOMETHING_ELSE if index is None else candidate_label(clar.candidates[index])
    context = {"card": card, "choice": choice, "other": index is None, **extra}
    return render(request, "email/confirm.html", context, status=400 if "error" in extra else 200)


@require_http_methods(["GET", "POST"])
def answer(request: HttpRequest, nonce: str, choice: str) -> HttpResponse:
    """The confirmation page (module docstring)."""
    delivery = delivery_for_nonce(nonce)
    if not request.user.is_authenticated:
        return _sign_in(request, delivery)
    refusal = refusal_of(_person(request), delivery)
    if refusal is not None:
        return _refused(request, refusal)
    assert delivery is not None
    index = _index(delivery, choice)
    if isinstance(index, Refusal):
        return _refused(request, index)
    if request.method == "GET":
        return _confirm(request, delivery, index)
    custom = _custom(request) if index is None else None
    reply = card_action_process(
        channel="email",
        actor=_person(request),
        clarification_id=str(delivery.clarification_id),
        nonce=delivery.nonce,
        answer_index=index,
        custom=custom,
        message_ref=f"email:{delivery.nonce[:40]}",
        actor_identity=f"user:{request.user.pk}",
    )
    if reply.status == INVALID and custom is not None:
        return _confirm(request, delivery, index, error=reply.text, inputs=custom)
    status = 200 if reply.status == ANSWERED else 409
    return render(request, "email/answered.html", {"reply": reply}, status=status)
