"""`telha audit verify|export --tenant SLUG` (CONTRACT §2): the tenant's audit hash chain
checked, or written out as JSON lines with its links and published head."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.times import TimeParseError, parse_us
from events.chain import chain_verify, export_rows
from tenancy.commands import tenant_named


class Command(BaseCommand):
    help = "Verify a tenant's audit hash chain, or export it as JSON lines (chain order)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        verify = sub.add_parser("verify", help="check the chain; exit 1 at the first break")
        verify.add_argument("--tenant", required=True)
        verify.add_argument("--json", action="store_true")
        export = sub.add_parser("export", help="the events as JSON lines, then the chain head")
        export.add_argument("--tenant", required=True)
        export.add_argument("--since", help="µs or RFC 3339")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = tenant_named(opts["tenant"])
        if opts["action"] == "export":
            since = None
            if opts["since"]:
                try:
                    since = parse_us(opts["since"])
                except TimeParseError as exc:
                    raise CommandError(f"--since: {exc}", returncode=2) from exc
            for row in export_rows(tenant, since):
                self.stdout.write(json.dumps(row, default=str))
            return
        verdict = chain_verify(tenant)
        if opts["json"]:
            self.stdout.write(json.dumps(verdict.as_json()))
        elif verdict.ok:
            head = verdict.head
            self.stdout.write(
                f"Intact: {verdict.events} events, head #{head['seq']} {head['hash']}"
                f" ({verdict.erased_details} details erased)"
            )
        if not verdict.ok:
            brk = verdict.first_break or {}
            raise CommandError(
                f"AUDIT_CHAIN_BROKEN: first break at event {brk.get('id')} ({brk.get('reason')})",
                returncode=1,
            )
