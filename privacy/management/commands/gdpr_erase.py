"""`telha gdpr_erase --tenant SLUG --person EMAIL`: the full erasure executor."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.codes import ErrorCode
from privacy.erasure import person_erase
from tenancy.commands import tenant_named
from tenancy.models import Person


class Command(BaseCommand):
    help = (
        "Erase a person: attribution tombstoned everywhere, job rankings nil'd, delivery "
        "records, aliases, keys, chat identities and history removed, every other mention "
        "of their id, email, aliases or name redacted (source texts, facts, documents and "
        "their files, jobs, audit details), their identifiers in other tenants' audit events "
        "erased, the person tombstoned; then the database files are purged of the erased "
        "bytes (SQLite: secure_delete and a WAL checkpoint; PostgreSQL: VACUUM)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--person", required=True, help="email of the person")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = tenant_named(opts["tenant"])
        person = Person.objects.filter(
            tenant=tenant, email=opts["person"].lower(), erased_at__isnull=True
        ).first()
        if person is None:
            raise CommandError(f"{ErrorCode.NOT_FOUND}: no person {opts['person']!r}", returncode=1)
        counts = person_erase(tenant=tenant, person=person, via="cli")
        if opts["json"]:
            self.stdout.write(json.dumps(counts))
        else:
            self.stdout.write(
                "Erased. " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
            )
        if counts.get("walCheckpointPending"):
            # Erased and committed; only the log truncation is missing (exit status 2).
            raise CommandError(
                "CHECKPOINT_PENDING: erased, but a reader blocked the WAL checkpoint, so the "
                "erased bytes may stay in the -wal file: when no other process reads the "
                "database, run `sqlite3 DB 'PRAGMA wal_checkpoint(TRUNCATE)'`",
                returncode=2,
            )
