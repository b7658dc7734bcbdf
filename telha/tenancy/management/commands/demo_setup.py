"""`telha demo_setup`: load the demo workspace and its documents (idempotent)."""

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from telha.ingest.api.serializers import SubmissionInSerializer
from telha.ingest.services import submission_apply, submission_plan
from telha.tenancy.services import workspace_load

DEMO_DIR = Path(settings.BASE_DIR) / "demo"


class Command(BaseCommand):
    help = "Load the demo workspace and apply the demo submissions (safe to run again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", default=str(DEMO_DIR))

    def handle(self, *args: Any, **opts: Any) -> None:
        demo = Path(opts["dir"])
        data = json.loads((demo / "workspace.json").read_text())
        tenant = workspace_load(data=data).tenant
        opened = deduplicated = 0
        for path in sorted((demo / "submissions").glob("*.json")):
            shape = SubmissionInSerializer(data=json.loads(path.read_text()))
            shape.is_valid(raise_exception=True)
            result = submission_apply(tenant=tenant, plan=submission_plan(shape.validated_data))
            for clar in result["clarifications"]:
                deduplicated += clar["deduplicated"]
                opened += not clar["deduplicated"]
        self.stdout.write(
            f"Demo workspace {tenant.slug!r} ready: {tenant.people.count()} people, "
            f"{opened} clarification(s) opened, {deduplicated} already there."
        )
        self.stdout.write("Demo sign-ins (email / password):")
        for person in data["people"]:
            if person.get("password"):
                self.stdout.write(
                    f"  {person['email']:22} {person['password']:18} ({person['role']})"
                )
