"""`telha load_workspace FILE.json` (CONTRACT §2.1)."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.codes import ErrorCode
from common.errors import DomainError
from tenancy.services import workspace_load


class Command(BaseCommand):
    help = "Load (or re-load, idempotently) a workspace file: people, groups, roles, aliases."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            with open(opts["file"], encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as exc:
            raise CommandError(f"cannot read {opts['file']}: {exc.strerror}", returncode=2) from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CommandError(
                f"{ErrorCode.WORKSPACE_INVALID}: not valid JSON: {exc}", returncode=1
            ) from exc
        try:
            result = workspace_load(data=data)
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.detail}", returncode=1) from exc
        summary = {
            "tenant": result.tenant.slug,
            "created": result.created_people,
            "updated": result.updated_people,
            "groups": result.groups,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(
                f"Loaded workspace {result.tenant.slug}: {result.created_people} people created, "
                f"{result.updated_people} updated, groups: {', '.join(result.groups) or '-'}"
            )
