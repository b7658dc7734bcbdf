"""Each tenant's audit events as a hash chain (issue 33): computed by the append
(`chain_events`, the before-insert hook of `clarify.audit.audit_events_append`), checked
by `telha audit verify` (`chain_verify`), written out by `telha audit export`
(`export_rows`). The arithmetic is `common.chain`."""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from clarify.models import AuditEvent
from common.chain import GENESIS, commitment, link_hash, new_salt
from common.codes import ChainBreak
from common.times import iso
from tenancy.models import Tenant

from .models import ChainHead
from .sql import (
    chain_head_lock,
    chain_head_move,
    linked_on_insert,
)


def chain_events(events: list[AuditEvent]) -> None:
    """Give each event its salt and its detail's commitment, then — where the database
    does not link the events as they are inserted (`linked_on_insert`: PostgreSQL's
    trigger, which holds the head from the insert to the commit) — link them in order:
    the place, the predecessor's hash and their own, the head moved, in the appending
    (SQLite: IMMEDIATE) transaction."""
    by_tenant: dict[Any, list[AuditEvent]] = {}
    for event in events:
        event.salt = new_salt()
        event.commitment = commitment(event.salt, event.detail)
        by_tenant.setdefault(event.tenant_id, []).append(event)
    if linked_on_insert():
        return
    for tenant_id in sorted(by_tenant, key=str):
        seq, prev = chain_head_lock(tenant_id)
        for event in by_tenant[tenant_id]:
            seq += 1
            event.seq, event.prev_hash = seq, prev
            event.hash = prev = link_hash(
                seq=seq,
                prev_hash=event.prev_hash,
                at=event.at,
                type=event.type,
                clarification=event.clarification_id,
                commitment=event.commitment,
            )
        chain_head_move(tenant_id, seq, prev)


_COLUMNS = (
    "pk",
    "seq",
    "at",
    "type",
    "clarification_id",
    "detail",
    "salt",
    "commitment",
    "prev_hash",
    "hash",
)


@dataclass
class Verdict:
    """What `chain_verify` found: how many events it checked, how many details an erasure
    rewrote (their salts forgotten: attested by their commitment only), the published
    head, and the first break (None: intact)."""

    events: int = 0
    erased_details: int = 0
    head: dict[str, Any] = field(default_factory=dict)
    first_break: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.first_break is None

    def as_json(self) -> dict[str, Any]:
        """CONTRACT §2: broken, exactly `{"ok": false, "firstBreak": {"id", "reason"}}`;
        intact, `{"ok": true}` with what was checked and the head."""
        if self.first_break is not None:
            return {"ok": False, "firstBreak": self.first_break}
        return {
            "ok": True,
            "events": self.events,
            "erasedDetails": self.erased_details,
            "head": self.head,
        }


def link_break(row: dict[str, Any], seq: int, prev: str) -> ChainBreak | None:
    """Why the event `row` (an `_COLUMNS` row) is not the chain's link number `seq` after
    a link hashed `prev`; None when it is."""
    if row["seq"] != seq:
        return ChainBreak.SEQ_GAP
    if row["prev_hash"] != prev:
        return ChainBreak.PREV_HASH_MISMATCH
    if row["salt"] and commitment(row["salt"], row["detail"]) != row["commitment"]:
        return ChainBreak.DETAIL_MISMATCH
    expected = link_hash(
        seq=seq,
        prev_hash=prev,
        at=row["at"],
        type=row["type"],
        clarification=row["clarification_id"],
        commitment=row["commitment"],
    )
    return None if expected == row["hash"] else ChainBreak.HASH_MISMATCH


def chain_head(tenant: Tenant) -> dict[str, Any]:
    head = ChainHead.objects.filter(tenant=tenant).values_list("seq", "hash").first()
    seq, hash = head if head is not None else (0, GENESIS)
    return {"tenant": tenant.slug, "seq": seq, "hash": hash}


def chain_verify(tenant: Tenant) -> Verdict:
    """Walk the tenant's chain in order from the genesis and stop at the first event that
    is not the next link (`link_break`): a missing, edited, or reordered event is named
    by the first one whose link no longer holds; a chain cut short at its end, by its
    published head (`HEAD_MISMATCH`, named by the last event left)."""
    verdict = Verdict(head=chain_head(tenant))
    events = AuditEvent.objects.filter(tenant=tenant)
    unchained = events.filter(seq__isnull=True).order_by("id").values_list("pk", flat=True)
    if (pk := unchained.first()) is not None:
        verdict.first_break = {"id": pk, "reason": ChainBreak.UNCHAINED}
        return verdict
    seq, prev, last = 0, GENESIS, None
    for row in events.order_by("seq").values(*_COLUMNS).iterator(chunk_size=2000):
        seq += 1
        reason = link_break(row, seq, prev)
        if reason is not None:
            verdict.first_break = {"id": row["pk"], "reason": reason}
            return verdict
        verdict.events += 1
        verdict.erased_details += not row["salt"]
        prev, last = row["hash"], row["pk"]
    if (verdict.head["seq"], verdict.head["hash"]) != (seq, prev):
        verdict.first_break = {"id": last, "reason": ChainBreak.HEAD_MISMATCH}
    return verdict


def export_rows(tenant: Tenant, since: int | None = None) -> Iterator[dict[str, Any]]:
    """The tenant's events in chain order as the export writes them — from the first
    event dated at or after `since` (µs), so the lines are one unbroken stretch of the
    chain — then the published head (`{"chainHead": …}`)."""
    events = AuditEvent.objects.filter(tenant=tenant)
    if since is not None:
        start = events.filter(at__gte=since).order_by("seq").values_list("seq", flat=True)
        first = start.first()
        events = events.filter(seq__gte=first) if first is not None else events.none()
    for row in events.order_by("seq").values(*_COLUMNS).iterator(chunk_size=2000):
        clarification = row["clarification_id"]
        yield {
            "id": row["pk"],
            "seq": row["seq"],
            "at": row["at"],
            "time": iso(row["at"]),
            "type": row["type"],
            "clarification": str(clarification) if clarification else None,
            "detail": row["detail"],
            "salt": row["salt"],
            "commitment": row["commitment"],
            "prevHash": row["prev_hash"],
            "hash": row["hash"],
        }
    yield {"chainHead": chain_head(tenant)}
