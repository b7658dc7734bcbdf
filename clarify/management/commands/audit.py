"""`telha audit export --tenant SLUG [--since T]`: the audit trail as JSON lines."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clarify.models import AuditEvent
from common.times import TimeParseError, iso, parse_us
from tenancy.models import Tenant


class Command(BaseCommand):
    help = "Export audit events as JSON lines (one event per line, oldest first)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        export = sub.add_parser("export")
        export.add_argument("--tenant", required=True)
        export.add_argument("--since", help="µs or RFC 3339")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = Tenant.objects.filter(slug=opts["tenant"]).first()
        if tenant is None:
            raise CommandError(f"NOT_FOUND: no tenant {opts['tenant']!r}", returncode=1)
        events = AuditEvent.objects.filter(tenant=tenant).order_by("at", "id")
        if opts["since"]:
            try:
                events = events.filter(at__gte=parse_us(opts["since"]))
            except TimeParseError as exc:
                raise CommandError(f"--since: {exc}", returncode=2) from exc
        for e in events.iterator(chunk_size=2000):
            self.stdout.write(
                json.dumps(
                    {
                        "at": e.at,
                        "time": iso(e.at),
                        "type": e.type,
                        "clarification": str(e.clarification_id) if e.clarification_id else None,
                        "detail": e.detail,
                    },
                    default=str,
                )
            )
