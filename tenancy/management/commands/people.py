"""`telha people away|back` (CONTRACT §2): a person away until a date, with an optional
delegate asked in their place (skip reason PERSON_AWAY); back again. Exit codes: 0 done,
1 refused (the error code on stderr: NOT_FOUND, AWAY_UNTIL_INVALID, DELEGATE_INVALID),
2 bad usage (e.g. a date that is not YYYY-MM-DD)."""

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.codes import ErrorCode
from tenancy.commands import tenant_named
from tenancy.models import Person, Tenant
from tenancy.services import AwayRefused, person_away_set, person_back


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(
            f"--until must be a date YYYY-MM-DD, got {text!r}", returncode=2
        ) from exc


def _person(tenant: Tenant, email: str, what: str = "person") -> Person:
    person = Person.objects.filter(
        tenant=tenant, email=email.strip().lower(), erased_at__isnull=True
    ).first()
    if person is None:
        raise CommandError(
            f"{ErrorCode.NOT_FOUND}: no {what} {email!r} in {tenant.slug}", returncode=1
        )
    return person


class Command(BaseCommand):
    help = "Mark a person away (with an optional delegate) or back."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        away = sub.add_parser("away", help="away through the end of --until (UTC)")
        away.add_argument("email")
        away.add_argument("--tenant", required=True)
        away.add_argument("--until", required=True, help="YYYY-MM-DD, the last day away")
        away.add_argument("--delegate", help="email of the person asked in their place")
        away.add_argument("--json", action="store_true")
        back = sub.add_parser("back", help="asked again in their own right")
        back.add_argument("email")
        back.add_argument("--tenant", required=True)
        back.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = tenant_named(opts["tenant"])
        if opts["action"] == "away":
            until = _day(opts["until"])
            person = _person(tenant, opts["email"])
            delegate = _person(tenant, opts["delegate"], "delegate") if opts["delegate"] else None
            try:
                person_away_set(person=person, until=until, delegate=delegate, by=None, via="cli")
            except AwayRefused as exc:
                raise CommandError(f"{exc.code}: {exc.detail}", returncode=1) from exc
            text = f"{person.email} is away until {until.isoformat()}" + (
                f"; {delegate.email} is asked in their place." if delegate else "."
            )
        else:
            person = person_back(person=_person(tenant, opts["email"]), by=None, via="cli")
            text = f"{person.email} is back."
        data = {
            "person": person.email,
            "awayUntil": person.away_until.isoformat() if person.away_until else None,
            "delegate": person.away_delegate.email if person.away_delegate else None,
        }
        self.stdout.write(json.dumps(data) if opts["json"] else text)
