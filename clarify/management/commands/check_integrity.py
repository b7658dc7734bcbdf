"""`telha check_integrity [--json]`: verify the lifecycle invariants; exit 1 on a violation."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clarify.integrity import integrity_violations
from common.codes import ErrorCode


class Command(BaseCommand):
    help = "Check that no committed state breaks the lifecycle invariants."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        violations = integrity_violations()
        total = sum(len(v) for v in violations.values())
        if opts["json"]:
            self.stdout.write(json.dumps({"ok": total == 0, "violations": violations}))
        else:
            for name, found in violations.items():
                self.stdout.write(
                    f"{name:10} {'ok' if not found else f'{len(found)} violation(s)'}"
                )
                for line in found[:50]:
                    self.stdout.write(f"  - {line}")
        if total:
            raise CommandError(
                f"{ErrorCode.INTEGRITY_VIOLATION}: {total} violation(s)", returncode=1
            )
