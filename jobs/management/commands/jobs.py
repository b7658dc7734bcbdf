"""`telha jobs ls [--status S] [--json]` and `telha jobs sweep`."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from jobs.models import Job, JobStatus
from jobs.services import jobs_sweep


class Command(BaseCommand):
    help = "Inspect the job queue, or run one reaper/kick pass."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("ls", help="list jobs, newest first")
        ls.add_argument("--status", choices=JobStatus.values)
        ls.add_argument("--kind", help="kind or prefix, e.g. clarify:")
        ls.add_argument("--limit", type=int, default=100)
        ls.add_argument("--json", action="store_true")
        sub.add_parser("sweep", help="reap expired leases and wake workers now")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["action"] == "sweep":
            result = jobs_sweep()
            self.stdout.write(
                f"Reaped {result['reaped']} expired lease(s); "
                f"ready kinds: {', '.join(result['kicked']) or '-'}"
            )
            return
        qs = Job.objects.select_related("tenant").order_by("-id")
        if opts["status"]:
            qs = qs.filter(status=opts["status"])
        if opts["kind"]:
            qs = qs.filter(kind__startswith=opts["kind"])
        rows: list[dict[str, Any]] = [
            {
                "id": j.pk,
                "tenant": j.tenant.slug,
                "kind": j.kind,
                "status": j.status,
                "priority": j.priority,
                "attempts": j.attempts,
                "maxAttempts": j.max_attempts,
                "runAfter": j.run_after.isoformat(),
                "leaseExpiresAt": j.lease_expires_at.isoformat() if j.lease_expires_at else None,
                "subject": j.subject,
                "lastError": j.last_error,
                "result": j.result,
            }
            for j in qs[: opts["limit"]]
        ]
        if opts["json"]:
            self.stdout.write(json.dumps(rows))
            return
        self.stdout.write(f"{'ID':>6}  {'KIND':22} {'STATUS':8} {'ATT':>7}  {'RUN AFTER':25} ERROR")
        for r in rows:
            self.stdout.write(
                f"{r['id']:>6}  {r['kind']:22} {r['status']:8} "
                f"{r['attempts']:>3}/{r['maxAttempts']:<3}  {r['runAfter'][:25]:25} "
                f"{r['lastError'][:60]}"
            )
