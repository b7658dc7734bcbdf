"""`telha api_key create|revoke` (CONTRACT §2)."""

import json
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.codes import ErrorCode
from common.errors import DomainError
from tenancy.commands import tenant_named
from tenancy.models import ApiKey, Audience, Person, Rights
from tenancy.services import api_key_create, api_key_revoke


class Command(BaseCommand):
    help = "Create or revoke API keys and service tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a key; the secret is printed once")
        create.add_argument("--tenant", required=True)
        create.add_argument("--person", help="email of the person the key acts as")
        create.add_argument("--role", choices=Rights.values)
        create.add_argument("--audience", choices=Audience.values)
        create.add_argument("--name", default="")
        create.add_argument("--json", action="store_true")
        revoke = sub.add_parser("revoke", help="revoke a key by id")
        revoke.add_argument("id")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["action"] == "revoke":
            try:
                key = ApiKey.objects.get(pk=uuid.UUID(opts["id"]))
            except (ValueError, ApiKey.DoesNotExist) as exc:
                raise CommandError(f"{ErrorCode.NOT_FOUND}: no such key", returncode=1) from exc
            api_key_revoke(key=key)
            self.stdout.write(f"Revoked {key.pk}")
            return
        tenant = tenant_named(opts["tenant"])
        person = None
        if opts["person"]:
            person = Person.objects.filter(
                tenant=tenant, email=opts["person"].lower(), erased_at__isnull=True
            ).first()
            if person is None:
                raise CommandError(
                    f"{ErrorCode.NOT_FOUND}: no person {opts['person']!r}", returncode=1
                )
        if opts["role"] and person is None:
            raise CommandError("--role needs --person", returncode=2)
        if person is not None and opts["audience"]:
            raise CommandError("a key has --person or --audience, not both", returncode=2)
        try:
            key, secret = api_key_create(
                tenant=tenant,
                person=person,
                role=opts["role"],
                audience=opts["audience"],
                name=opts["name"],
            )
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.detail}", returncode=1) from exc
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "id": str(key.pk),
                        "key": secret,
                        "audience": key.audience,
                        "person": person.email if person else None,
                        "role": key.role,
                    }
                )
            )
        else:
            self.stdout.write(f"Created key {key.pk}. The secret is shown once:\n{secret}")
