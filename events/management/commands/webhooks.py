"""`telha webhooks add|ls|rm` (CONTRACT §2): a tenant's signed-event endpoints."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.codes import ErrorCode
from common.errors import DomainError
from events.models import WebhookEndpoint
from events.services import webhook_add, webhook_remove
from tenancy.commands import tenant_named


class Command(BaseCommand):
    help = "Add, list or remove a tenant's webhook endpoints (Standard Webhooks)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="add an endpoint; its secret is printed once")
        add.add_argument("--tenant", required=True)
        add.add_argument("--url", required=True)
        add.add_argument("--events", required=True, help="comma list of event types")
        add.add_argument("--with-text", action="store_true", help="may receive passage text")
        add.add_argument("--json", action="store_true")
        ls = sub.add_parser("ls", help="list a tenant's endpoints")
        ls.add_argument("--tenant", required=True)
        ls.add_argument("--json", action="store_true")
        rm = sub.add_parser("rm", help="remove an endpoint (its unsent messages are dropped)")
        rm.add_argument("id")

    def handle(self, *args: Any, **opts: Any) -> None:
        getattr(self, f"_{opts['action']}")(opts)

    def _add(self, opts: dict[str, Any]) -> None:
        tenant = tenant_named(opts["tenant"])
        try:
            endpoint = webhook_add(
                tenant=tenant,
                url=opts["url"],
                event_types=opts["events"].split(","),
                with_text=opts["with_text"],
            )
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.detail}", returncode=2) from exc
        if opts["json"]:
            self.stdout.write(json.dumps({"id": endpoint.pk, "secret": endpoint.secret}))
        else:
            self.stdout.write(
                f"Added webhook {endpoint.pk}. Its secret is shown once:\n{endpoint.secret}"
            )

    def _ls(self, opts: dict[str, Any]) -> None:
        tenant = tenant_named(opts["tenant"])
        rows = [
            {
                "id": e.pk,
                "url": e.url,
                "events": e.event_types,
                "withText": e.with_text,
                "createdAt": e.created_at.isoformat(),
            }
            for e in WebhookEndpoint.objects.filter(tenant=tenant).order_by("id")
        ]
        if opts["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            text = " with text" if row["withText"] else ""
            self.stdout.write(f"{row['id']}  {row['url']}  {','.join(row['events'])}{text}")

    def _rm(self, opts: dict[str, Any]) -> None:
        endpoint = None
        if opts["id"].isdigit():
            endpoint = WebhookEndpoint.objects.filter(pk=int(opts["id"])).first()
        if endpoint is None:
            raise CommandError(f"{ErrorCode.NOT_FOUND}: no such webhook", returncode=1)
        webhook_remove(endpoint)
        self.stdout.write(f"Removed webhook {opts['id']}")
