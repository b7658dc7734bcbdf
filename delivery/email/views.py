"""The confirmation page an email's link opens: `GET /email/answer/<nonce>/<choice>/`
(`choice`: a candidate's index, or `other` for "Something else…").

A `GET` never answers — mail scanners and link previews open links — and writes nothing:
it shows the card and the choice (or the "Something else…" form) with one button. The
button's `POST` answers as the signed-in person with the card's nonce, through the one tap
pipeline (`delivery.actions.card_action_process`, channel `email`). Signed out (or the
session expired), either goes to sign-in (password, or the tenant's single sign-on) and
back here with `next=`.

The button's `POST` hands the pipeline the delivery row read here (a tap reads it once)
and maps its reply to a page: its refusals (not the recipient, unknown nonce, revoked,
deprovisioned, no read access) write what they write on every channel — the audit event
— and a card whose clarification moved on (nonce closed) answers by the pipeline's "moved
on" rule. Only the link's own rules come before it, writing nothing: a choice that is not
one of the card's, and a link its recipient used already (a link answers once). The `GET`
shows the card only when the pipeline's recipient checks (`recipient_refusal`, the same
function) pass, the link is unused and the recipient may still read the source."""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from clarify.errors import NoReadPermission
from clarify.models import ResponseRecord
from common.codes import TapRefusal

from ..actions import (
    ANSWERED,
    DROPPED,
    INVALID,
    MOVED,
    CardReply,
    CustomInputs,
    card_action_process,
    delivery_for_nonce,
    recipient_refusal,
)
from ..cards import SOMETHING_ELSE, build_card, candidate_label
from ..gate import floor_check
from ..identity import signed_in_person
from ..models import Delivery, DeliveryKind
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


def _index(delivery: Delivery, choice: str) -> int | Refusal | None:
    """The candidate a choice names (None: "Something else…"), or the refusal."""
    if choice == OTHER:
        return None
    if choice.isdigit() and int(choice) < len(delivery.clarification.candidates):
        return int(choice)
    return UNKNOWN_LINK


# The page of each refusal the tap pipeline (or `recipient_refusal`) names.
REFUSAL_PAGES: dict[str, Refusal] = {
    TapRefusal.UNKNOWN_NONCE: UNKNOWN_LINK,
    TapRefusal.NONCE_CLARIFICATION_MISMATCH: UNKNOWN_LINK,
    TapRefusal.NOT_RECIPIENT: WRONG_PERSON,
    TapRefusal.UNMAPPED_IDENTITY: WRONG_PERSON,
    TapRefusal.RESPONDER_NOT_AUTHORISED: LOST_ACCESS,
    TapRefusal.STALE_NONCE: MOVED_ON,
    NoReadPermission.reason: LOST_ACCESS,
}


def _question(nonce: str) -> Delivery | None:
    """The question card the link's nonce names (a reminder's or digest's is none)."""
    delivery = delivery_for_nonce(nonce)
    return delivery if delivery is not None and delivery.kind == DeliveryKind.QUESTION else None


def _used(person: Any, delivery: Delivery) -> Refusal | None:
    """A link answers once: its recipient answered the question already (a quorum may
    still wait on others). Reads only; asked of the recipient only."""
    answered = ResponseRecord.objects.filter(
        clarification_id=delivery.clarification_id, responder=person.pk
    ).exists()
    return ANSWERED_BEFORE if answered else None


def preview_refusal(person: Any, delivery: Delivery | None) -> Refusal | None:
    """Why the confirmation page (GET) does not show the card: the pipeline's recipient
    checks (`recipient_refusal`, the one place), the link used, or the recipient no longer
    allowed to read the source (the card is not shown to them). Reads only; a card whose
    clarification moved on is shown — its POST gets the pipeline's "moved on" rule."""
    if delivery is None:
        return UNKNOWN_LINK
    reason = recipient_refusal(person, delivery)
    if reason is not None:
        return REFUSAL_PAGES[reason]
    used = _used(person, delivery)
    if used is not None:
        return used
    if floor_check(delivery.clarification, [person]).get(person.pk) is not None:
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


def _page(
    request: HttpRequest, delivery: Delivery, index: int | None, reply: CardReply
) -> HttpResponse:
    """The tap pipeline's outcome as the page: a refusal's page, the form again with what
    is wrong, or the outcome copy."""
    if reply.status == DROPPED or (reply.status == MOVED and reply.reason in REFUSAL_PAGES):
        return _refused(request, REFUSAL_PAGES.get(reply.reason, MOVED_ON))
    if reply.status == MOVED:  # answered by others, as the card says
        return _refused(request, MOVED_ON)
    if reply.status == INVALID and index is None:
        return _confirm(request, delivery, index, error=reply.text, inputs=_custom(request))
    status = 200 if reply.status == ANSWERED else 409
    return render(request, "email/answered.html", {"reply": reply}, status=status)


def _post(request: HttpRequest, delivery: Delivery | None, nonce: str, choice: str) -> HttpResponse:
    """The button: through the one tap pipeline with the delivery read here (once). Only
    the link's own rules come first, writing nothing: a choice the card does not have,
    a link used already."""
    person, index = signed_in_person(request), None
    if delivery is not None:
        parsed = _index(delivery, choice)
        if isinstance(parsed, Refusal):
            return _refused(request, parsed)
        index = parsed
        used = _used(person, delivery) if recipient_refusal(person, delivery) is None else None
        if used is not None:
            return _refused(request, used)
    reply = card_action_process(
        channel="email",
        actor=person,
        clarification_id=str(delivery.clarification_id) if delivery is not None else "",
        nonce=nonce,
        answer_index=index,
        custom=_custom(request) if delivery is not None and index is None else None,
        message_ref=f"email:{delivery.nonce[:40]}" if delivery is not None else None,
        actor_identity=f"user:{request.user.pk}",
        tenant=person.tenant if person is not None else None,
        delivery=delivery,
    )
    if delivery is None:
        return _refused(request, REFUSAL_PAGES.get(reply.reason, UNKNOWN_LINK))
    return _page(request, delivery, index, reply)


@require_http_methods(["GET", "POST"])
def answer(request: HttpRequest, nonce: str, choice: str) -> HttpResponse:
    """The confirmation page (module docstring)."""
    delivery = _question(nonce)
    if not request.user.is_authenticated:
        return _sign_in(request, delivery)
    if request.method == "POST":
        return _post(request, delivery, nonce, choice)
    refusal = preview_refusal(signed_in_person(request), delivery)
    if refusal is not None:
        return _refused(request, refusal)
    assert delivery is not None
    index = _index(delivery, choice)
    if isinstance(index, Refusal):
        return _refused(request, index)
    return _confirm(request, delivery, index)
