"""`telha sso configure --tenant SLUG --issuer URL --client-id ID --client-secret SECRET`
(CONTRACT §2): the tenant's OpenID provider, found by discovery from the issuer."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import DomainError
from identity.services import sso_configure
from tenancy.commands import tenant_named


class Command(BaseCommand):
    help = "Configure a tenant's OpenID Connect sign-in."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        conf = sub.add_parser("configure", help="set the tenant's OpenID provider")
        conf.add_argument("--tenant", required=True)
        conf.add_argument("--issuer", required=True)
        conf.add_argument("--client-id", required=True)
        conf.add_argument("--client-secret", required=True)
        conf.add_argument("--name", default="", help="the button's label (default: host)")
        conf.add_argument(
            "--passwords",
            choices=["on", "off"],
            default=None,
            help="whether the tenant's people may still sign in with a password",
        )
        conf.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = tenant_named(opts["tenant"])
        try:
            provider = sso_configure(
                tenant=tenant,
                issuer=opts["issuer"],
                client_id=opts["client_id"],
                client_secret=opts["client_secret"],
                display_name=opts["name"],
                password_login=None if opts["passwords"] is None else opts["passwords"] == "on",
            )
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.detail}", returncode=1) from exc
        out = {
            "tenant": tenant.slug,
            "issuer": provider.issuer,
            "clientId": provider.client_id,
            "login": f"/sso/{tenant.slug}/login/",
            "callback": f"/sso/{tenant.slug}/callback/",
            "passwordLogin": provider.password_login,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(out))
        else:
            self.stdout.write(
                f"Sign-in for {tenant.slug} through {provider.issuer}. Register the redirect "
                f"URI <PUBLIC_BASE_URL>{out['callback']} with the provider."
            )
