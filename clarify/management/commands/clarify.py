"""`telha clarify ls|show|answer|queue|review|erase-attribution` (CONTRACT §2).

The CLI is the local operator's trust boundary: `--responder` is declared explicitly and
recorded with channel "cli"; the responder answers with their own rights.
"""

import json
import uuid
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet

from clarify.answering import AnswerCaller, AnswerInput
from clarify.api.outcomes import answer_reply
from clarify.errors import NoReadPermission
from clarify.models import Clarification, Severity, State
from clarify.reports import clarification_detail, clarification_row, target_names
from clarify.selectors import needs_steward_attention_q, waiting_on_away_q
from clarify.services import clarification_answer
from clarify.stewardship import clarification_override, erase_person_attribution
from common.codes import ErrorCode
from common.errors import DomainError
from common.times import TimeParseError, iso, parse_us
from tenancy.commands import tenant_named
from tenancy.models import Person, Rights, Tenant


def _tenant(slug: str | None) -> Tenant | None:
    if slug is None:
        return None
    return tenant_named(slug)


def _interval(opts: dict[str, Any]) -> tuple[int | None, int | None] | None:
    """`--from`/`--to` as µs, or None for `--index` (exactly one of the two is given)."""
    has_index = opts["index"] is not None
    has_range = opts["valid_from"] is not None or opts["valid_to"] is not None
    if has_index == has_range:
        raise CommandError("give either --index N or --from T [--to T]", returncode=2)
    if not has_range:
        return None
    try:
        return (
            parse_us(opts["valid_from"]) if opts["valid_from"] else None,
            parse_us(opts["valid_to"]) if opts["valid_to"] else None,
        )
    except TimeParseError as exc:
        raise CommandError(f"{ErrorCode.CLARIFY_UNPARSEABLE_ANSWER}: {exc}", returncode=1) from exc


def _clarification(raw: str) -> Clarification:
    try:
        return Clarification.objects.select_related("tenant", "target").get(pk=uuid.UUID(raw))
    except (ValueError, Clarification.DoesNotExist) as exc:
        raise CommandError(
            f"{ErrorCode.NOT_FOUND}: no clarification {raw!r}", returncode=1
        ) from exc


LS_CHUNK = 500


def _chunks(items: Iterator[Clarification], size: int) -> Iterator[list[Clarification]]:
    while chunk := list(islice(items, size)):
        yield chunk


class Command(BaseCommand):
    help = "Inspect and answer clarifications (the operator fallback)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("ls", help="list clarifications")
        ls.add_argument("--tenant")
        ls.add_argument("--state", choices=State.values)
        ls.add_argument("--severity", choices=Severity.values)
        ls.add_argument(
            "--limit",
            type=int,
            help="list at most N clarifications, newest first (default: all of them)",
        )
        ls.add_argument("--json", action="store_true")
        show = sub.add_parser("show", help="one clarification in full")
        show.add_argument("id")
        show.add_argument("--json", action="store_true")
        queue = sub.add_parser("queue", help="the needs-steward-attention set")
        queue.add_argument("--tenant")
        queue.add_argument(
            "--limit",
            type=int,
            help="list at most N clarifications, newest first (default: the whole set)",
        )
        queue.add_argument(
            "--waiting-on-away",
            action="store_true",
            help="instead of the needs-attention set: the open questions routed to, around "
            "or through a delegate for someone away today",
        )
        queue.add_argument("--json", action="store_true")
        erase = sub.add_parser("erase-attribution", help="tombstone a person's attribution")
        erase.add_argument("--tenant", required=True)
        erase.add_argument("--person", required=True, help="email of the person")
        erase.add_argument("--json", action="store_true")
        for name, helptext in (
            ("answer", "answer as a person (channel cli)"),
            ("review", "steward override (the responder must be a steward)"),
        ):
            p = sub.add_parser(name, help=helptext)
            p.add_argument("id")
            p.add_argument("--responder", required=True, help="email of the answering person")
            p.add_argument("--index", type=int)
            p.add_argument("--from", dest="valid_from")
            p.add_argument("--to", dest="valid_to")
            p.add_argument(
                "--reason",
                default="",
                help="why the steward overrides (audited as override_reason)"
                + ("; needs --steward-override" if name == "answer" else ""),
            )
            p.add_argument("--json", action="store_true")
            if name == "answer":
                p.add_argument("--steward-override", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        action = opts["action"]
        handler = getattr(self, f"do_{action.replace('-', '_')}")
        handler(opts)

    def emit(self, opts: dict[str, Any], data: Any, text: str) -> None:
        self.stdout.write(json.dumps(data, default=str) if opts.get("json") else text)

    def do_ls(self, opts: dict[str, Any]) -> None:
        """Every matching clarification (or the newest `--limit`), streamed in chunks of
        LS_CHUNK rows: two queries per chunk, whatever the number of rows."""
        qs = Clarification.objects.select_related("tenant", "target").order_by("-created_at", "id")
        tenant = _tenant(opts["tenant"])
        if tenant is not None:
            qs = qs.filter(tenant=tenant)
        if opts["state"]:
            qs = qs.filter(state=opts["state"])
        if opts["severity"]:
            qs = qs.filter(severity=opts["severity"])
        if opts["limit"] is not None:
            if opts["limit"] < 1:
                raise CommandError("--limit must be a positive integer", returncode=2)
            qs = qs[: opts["limit"]]
        header = f"{'ID':36}  {'STATE':19}  {'SEVERITY':8}  {'KIND':25}  TARGET"
        self.stream_rows(
            opts,
            qs,
            header=header,
            line=lambda r: (
                f"{r['id']:36}  {r['state']:19}  {r['severity']:8}  {r['kind']:25}  "
                f"{r['targetName']}"
            ),
            empty=header,
        )

    def do_queue(self, opts: dict[str, Any]) -> None:
        """The whole needs_steward_attention set (CONTRACT §2), newest first, streamed in
        chunks; `--limit N` keeps the newest N."""
        wanted = waiting_on_away_q() if opts["waiting_on_away"] else needs_steward_attention_q()
        qs = Clarification.objects.select_related("tenant", "target").filter(wanted)
        tenant = _tenant(opts["tenant"])
        if tenant is not None:
            qs = qs.filter(tenant=tenant)
        qs = qs.order_by("-created_at", "id")
        if opts["limit"] is not None:
            if opts["limit"] < 1:
                raise CommandError("--limit must be a positive integer", returncode=2)
            qs = qs[: opts["limit"]]
        self.stream_rows(
            opts,
            qs,
            header=f"{'ID':36}  {'STATE':19}  {'SEVERITY':8}  TARGET",
            line=lambda r: f"{r['id']:36}  {r['state']:19}  {r['severity']:8}  {r['targetName']}",
            empty="Nothing needs attention.",
        )

    def stream_rows(
        self,
        opts: dict[str, Any],
        qs: QuerySet[Clarification],
        *,
        header: str,
        line: Callable[[dict[str, Any]], str],
        empty: str,
    ) -> None:
        """Every clarification of `qs` as list rows, LS_CHUNK at a time (two queries per
        chunk, memory bounded whatever the size): one JSON array with `--json`, else the
        header and one line per row, or `empty` when there are none."""
        as_json = bool(opts["json"])
        written = 0
        for chunk in _chunks(qs.iterator(chunk_size=LS_CHUNK), LS_CHUNK):
            names = target_names(chunk)
            rows = [clarification_row(c, name=names[c.target_id]) for c in chunk]
            if as_json:
                text = ", ".join(json.dumps(r, default=str) for r in rows)
                self.stdout.write(("[" if not written else ", ") + text, ending="")
            else:
                if not written:
                    self.stdout.write(header)
                self.stdout.write("\n".join(line(r) for r in rows))
            written += len(rows)
        if as_json:
            self.stdout.write("]" if written else "[]")
        elif not written:
            self.stdout.write(empty)

    def do_erase_attribution(self, opts: dict[str, Any]) -> None:
        tenant = _tenant(opts["tenant"])
        assert tenant is not None
        person = Person.objects.filter(tenant=tenant, email=opts["person"].lower()).first()
        if person is None:
            raise CommandError(f"{ErrorCode.NOT_FOUND}: no person {opts['person']!r}", returncode=1)
        changed = erase_person_attribution(tenant=tenant, person=person, via="cli")
        self.emit(
            opts,
            {"clarifications": changed},
            f"Attribution of {opts['person']} erased on {changed} clarification(s).",
        )

    def do_show(self, opts: dict[str, Any]) -> None:
        clar = _clarification(opts["id"])
        data = clarification_detail(clar)
        lines = [
            f"Clarification {data['id']} ({data['kind']}, {data['severity']}, {data['state']})",
            f"  target: {data['targetName']} ({data['target']})",
            f"  quorum: {data['quorumState']} {data['quorumPolicy']}",
            "  candidates:",
        ]
        lines += [
            f"    [{c['index']}] {c['label']}  {iso(c['validFrom'])} → {iso(c['validTo'])}"
            for c in data["candidates"]
        ]
        lines.append("  responses:")
        lines += [
            f"    {iso(r['responseTx'])} {r['responderName']} ({r['rightsAtAnswerTime']}, "
            f"{r['channel']}): {r['answer']} → {r['bindingStatus']}"
            for r in data["responses"]
        ] or ["    (none)"]
        lines.append("  delivery history:")
        lines += [
            f"    {'job #' + str(d['job']) + ' ' if d.get('job') else ''}attempt {d['attempt']}: "
            f"{d['candidate'] or 'steward'} — {d['outcome']}"
            f"{' (' + d['reason'] + ')' if d.get('reason') else ''}"
            f"{', delegate ' + d['delegate'] if d.get('delegate') else ''}"
            f"{', on behalf of ' + d['onBehalfOf'] if d.get('onBehalfOf') else ''}"
            f"{', nonce ' + d['nonceState'] if d.get('nonceState') else ''}"
            f"{', via ' + d['channel'] if d.get('channel') else ''}"
            for d in data["deliveryHistory"]
        ] or ["    (none)"]
        lines.append("  events:")
        lines += [
            f"    {iso(e['at'])} {e['type']} {json.dumps(e['detail'])}" for e in data["events"]
        ]
        self.emit(opts, data, "\n".join(lines))

    def _answer(self, opts: dict[str, Any], override: bool) -> None:
        clar = _clarification(opts["id"])
        person = Person.objects.filter(
            tenant=clar.tenant, email=opts["responder"].lower(), erased_at__isnull=True
        ).first()
        if person is None:
            raise CommandError(
                f"{ErrorCode.RESPONDER_NOT_AUTHORISED}: {opts['responder']} is not a person of "
                f"{clar.tenant.slug}",
                returncode=1,
            )
        if override and person.role != Rights.STEWARD:
            raise CommandError(
                f"{ErrorCode.STEWARD_OVERRIDE_FORBIDDEN}: review needs a steward responder",
                returncode=1,
            )
        reason = (opts.get("reason") or "").strip()
        if reason and not override:
            raise CommandError("--reason goes with --steward-override", returncode=2)
        if len(reason) > 500:
            raise CommandError("--reason is at most 500 characters", returncode=2)
        interval = _interval(opts)
        try:
            if override:
                outcome = clarification_override(
                    clarification=clar,
                    steward=person,
                    answer_index=opts["index"],
                    interval=interval,
                    reason=reason,
                    channel="cli",
                    rights=person.role,
                )
            else:
                custom = None
                if interval is not None:
                    custom = {"validFrom": interval[0], "validTo": interval[1]}
                outcome = clarification_answer(
                    caller=AnswerCaller.of_person(person),
                    clarification_id=clar.pk,
                    answer=AnswerInput(
                        answer_index=opts["index"], answer_custom=custom, channel="cli"
                    ),
                )
            reply = answer_reply(outcome)
        except NoReadPermission as exc:  # said as for a missing clarification
            missing = f"{ErrorCode.NOT_FOUND}: no clarification {str(clar.pk)!r}"
            raise CommandError(missing, returncode=1) from exc
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.detail}", returncode=1) from exc
        self.emit(
            opts,
            {"status": reply.status, **reply.body},
            f"{reply.body['outcome']}: state {reply.body['state']}"
            + (" (replayed)" if outcome.replayed else ""),
        )

    def do_answer(self, opts: dict[str, Any]) -> None:
        self._answer(opts, override=opts.get("steward_override", False))

    def do_review(self, opts: dict[str, Any]) -> None:
        self._answer(opts, override=True)
