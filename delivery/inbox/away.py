"""Away in the inbox (issue 32): a person marks themselves away until a day, optionally
naming a delegate asked in their place (`/inbox/away/`), and back again; what was asked
of their delegate meanwhile shows in their inbox (`delegated_cards`)."""

import uuid
from datetime import date
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from clarify.reports import target_names
from common.codes import AwayError
from tenancy.models import Person
from tenancy.services import AwayRefused, person_away_set, person_back

from ..identity import signed_in_person
from ..models import Delivery, DeliveryKind

DELEGATED_SHOWN = 20


def delegated_cards(person: Person) -> list[dict[str, Any]]:
    """The questions asked of a delegate on the person's behalf, newest first: the
    delegate, the question's target and its state now."""
    rows = list(
        Delivery.objects.filter(on_behalf_of=person, kind=DeliveryKind.QUESTION)
        .select_related("person", "clarification__target")
        .order_by("-created_at")[:DELEGATED_SHOWN]
    )
    names = target_names([d.clarification for d in rows])
    return [
        {
            "delegate": d.person.name,
            "target": names.get(d.clarification.target_id, ""),
            "state": d.clarification.state,
            "at": d.created_at,
        }
        for d in rows
    ]


@login_required
@require_http_methods(["GET", "POST"])
def away(request: HttpRequest) -> HttpResponse:
    """GET: the form (the day, a delegate of the same workspace). POST `action=away`
    marks the signed-in person away, `action=back` back; a refusal is shown with its code
    and nothing is written."""
    person = signed_in_person(request)
    if person is None:
        return render(request, "inbox/away.html", {"person": None}, status=403)
    error = ""
    if request.method == "POST":
        try:
            if request.POST.get("action") == "back":
                person_back(person=person, by=person, via="inbox")
            else:
                person_away_set(
                    person=person,
                    until=_day(request.POST.get("until", "")),
                    delegate=_delegate(person, request.POST.get("delegate", "")),
                    by=person,
                    via="inbox",
                )
            return HttpResponseRedirect(reverse("inbox-away"))
        except AwayRefused as exc:
            error = f"{exc.detail} ({exc.code})"
    colleagues = Person.objects.filter(
        tenant=person.tenant, erased_at__isnull=True, deactivated_at__isnull=True
    ).exclude(pk=person.pk)
    context = {"person": person, "colleagues": colleagues, "error": error}
    return render(request, "inbox/away.html", context, status=422 if error else 200)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise AwayRefused(
            AwayError.AWAY_UNTIL_INVALID, "Give the last day away as a date."
        ) from exc


def _delegate(person: Person, pk: str) -> Person | None:
    """The chosen colleague (by id, of the person's workspace), or None for nobody."""
    if not pk:
        return None
    found = Person.objects.filter(tenant=person.tenant, pk=pk).first() if _uuid(pk) else None
    if found is None:
        raise AwayRefused(AwayError.DELEGATE_INVALID, "Choose a colleague of your workspace.")
    return found


def _uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
