"""`telha demo_setup`: load the demo workspace and ingest its documents (idempotent)."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from clarify.models import ClarifyPolicy
from ingest.detection.build import FileInput
from ingest.documents import IngestOptions, ingest_file, people_by_name
from ingest.formats import SUPPORTED
from tenancy.services import workspace_load

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
# Folders without front-matter ACLs get these readers.
FOLDER_ACL = {"policies": ["group:finance"], "mail": ["group:legal", "group:finance"]}
FIXED_MTIME = datetime(2026, 9, 1, tzinfo=UTC)
DEMO_CHANNELS = ["teams", "slack", "email", "inbox"]


class Command(BaseCommand):
    help = "Load the demo workspace and ingest the demo documents (safe to run again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", default=str(DEMO_DIR))

    def handle(self, *args: Any, **opts: Any) -> None:
        demo = Path(opts["dir"])
        data = json.loads((demo / "workspace.json").read_text())
        tenant = workspace_load(data=data).tenant
        # Signature conflicts are high-stakes in the demo: they need two confirmations.
        # Email comes before the inbox: under `make run` (EMAIL_URL=consolemail://) the
        # questions are printed as emails on the console, their links answer after sign-in
        # (and the inbox still lists every open question, whatever channel carried it).
        ClarifyPolicy.objects.get_or_create(
            tenant=tenant,
            defaults={
                "severity_elevate": {"conflicting_dates": "critical"},
                "channel_order": DEMO_CHANNELS,
            },
        )
        names = people_by_name(tenant)
        opened = deduplicated = 0
        root = demo / "documents"
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix.lower() not in SUPPORTED:
                continue
            relative = path.relative_to(root)
            outcome = ingest_file(
                tenant=tenant,
                file=FileInput(name=str(relative), data=path.read_bytes(), modified=FIXED_MTIME),
                options=IngestOptions(
                    system="demo",
                    clarify=bool(settings.CLARIFY["ENABLED"]),
                    acl=FOLDER_ACL.get(relative.parts[0]),
                    names=names,
                ),
            )
            if outcome.error:
                self.stderr.write(f"  ! {relative}: {outcome.error}")
            opened += outcome.opened
            deduplicated += outcome.deduplicated
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
