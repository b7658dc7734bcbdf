"""The append-only write path of the fact store and the source ACL."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q, Value
from django.db.models.functions import Concat, Lower

from common.times import now_us
from tenancy.models import AliasKind, Person, PersonAlias, Tenant, TenantGroup

from .models import (
    Edge,
    EvidenceClass,
    Node,
    NodeVersion,
    Source,
    SourceGroupObjectPermission,
    SourceUserObjectPermission,
    SourceVersion,
)
from .sql import versions_close

ACL_KINDS = ("group", "email", "aad")


def acl_principal_valid(principal: object) -> bool:
    """`group:NAME`, `email:ADDR` or `aad:OID` (CONTRACT §2.1)."""
    if not isinstance(principal, str) or ":" not in principal:
        return False
    kind, _, value = principal.partition(":")
    return kind in ACL_KINDS and bool(value.strip()) and len(principal) <= 400


def search_text_for(
    labels: Iterable[str], properties: dict[str, Any], spans: Iterable[str] = ()
) -> str:
    """The lower-cased text a version is found by (`graph.search`, the admin's
    search box): its property values and the text of its spans. Not its labels, which
    the callers pass along with the rest of a version: a label such as CONTRACT_TERM
    would match every question about a "term" (labels are queried as labels). The
    full-text indexes are derived from it by the database, so whatever rewrites it (the
    erasure executor included) re-indexes the version."""
    del labels
    parts = [str(v) for v in properties.values() if isinstance(v, str | int | float)]
    parts += [s for s in spans if s]
    return " ".join(parts).lower()


def span_texts(source_id: Any, provenance: dict[str, Any]) -> list[str]:
    """The text of the spans a version cites (`provenance.spans` over the source version
    at `provenance.sourceVersionTx`); none for a sourceless version."""
    spans = [s for s in provenance.get("spans") or [] if isinstance(s, dict)]
    tx = provenance.get("sourceVersionTx")
    if source_id is None or tx is None or not spans:
        return []
    text = (
        SourceVersion.objects.filter(source_id=source_id, tx=tx)
        .values_list("text", flat=True)
        .first()
    )
    return cited_text(text or "", spans)


def cited_text(text: str, spans: Iterable[Any]) -> list[str]:
    """The pieces of `text` the spans (`{"start", "end"}` dicts) cite; malformed or
    out-of-range spans cite nothing."""
    return [
        text[s["start"] : s["end"]]
        for s in spans
        if isinstance(s, dict)
        and isinstance(s.get("start"), int)
        and isinstance(s.get("end"), int)
        and 0 <= s["start"] < s["end"] <= len(text)
    ]


def source_acl_set(*, source: Source, acl: list[str]) -> None:
    """Replace the source's ACL: the principal list and the guardian permissions.

    Principals that match no known person or group grant nothing; they are kept in `acl`
    and granted when a workspace load brings the person or group (`source_acls_sync`)."""
    source.acl = list(acl)
    source.save(update_fields=["acl"])
    source_acls_sync(tenant=source.tenant, sources=[source])


def source_acls_sync(
    *, tenant: Tenant, sources: Iterable[Source] | None = None, fresh: Iterable[Any] = ()
) -> int:
    """Make the guardian `view_source` rows of `sources` (default: every source of the
    tenant) exactly what their ACL principals resolve to now: people by their `email` and
    `aadOid` aliases, groups by name. Run after anything that changes people, aliases or
    groups (a workspace load), so a principal named before it existed is granted and a
    removed alias loses its grant.

    In bulk, whatever the number of sources: a fixed number of queries reads the ACLs,
    resolves every principal at once and reads the existing rows; the missing rows are
    inserted with one `bulk_create` per table and the stale ones removed with one delete
    per table. Other permissions on sources are left alone. `fresh`: ids of sources just
    created in this transaction, known to have no rows (not read). Returns the number of
    rows inserted or removed (0 when everything was already in place)."""
    from .access import read_access_changed, view_source_permission_id  # (the auth layer)

    if sources is None:
        acls = dict(Source.objects.filter(tenant=tenant).values_list("pk", "acl"))
        scope: dict[str, Any] = {"content_object__tenant": tenant}
    else:
        acls = {s.pk: s.acl for s in sources}
        fresh = set(fresh)
        scope = {"content_object_id__in": [sid for sid in acls if sid not in fresh]}
    principals = {p for acl in acls.values() for p in acl if acl_principal_valid(p)}
    users, groups = _principals_resolve(tenant=tenant, principals=principals)
    want_users = {(sid, users[p]) for sid, acl in acls.items() for p in acl if p in users}
    want_groups = {(sid, groups[p]) for sid, acl in acls.items() for p in acl if p in groups}
    permission = view_source_permission_id()
    changed = 0
    narrowed: set[Any] = set()  # sources some grant was removed from
    tables: list[tuple[Any, str, set[tuple[Any, int]]]] = [
        (SourceUserObjectPermission, "user_id", want_users),
        (SourceGroupObjectPermission, "group_id", want_groups),
    ]
    for model, owner, wanted in tables:
        have: dict[tuple[Any, int], int] = {}
        if scope.get("content_object_id__in", True):  # else every source is fresh
            rows = model.objects.filter(permission_id=permission, **scope)
            have = {
                (sid, oid): pk
                for pk, sid, oid in rows.values_list("pk", "content_object_id", owner)
            }
        stale = [pk for pair, pk in have.items() if pair not in wanted]
        narrowed |= {pair[0] for pair in have if pair not in wanted}
        missing = [
            model(content_object_id=sid, permission_id=permission, **{owner: oid})
            for sid, oid in sorted(wanted - set(have), key=str)
        ]
        for start in range(0, len(stale), _BATCH):
            model.objects.filter(pk__in=stale[start : start + _BATCH]).delete()
        model.objects.bulk_create(missing, batch_size=_BATCH)
        changed += len(stale) + len(missing)
    if narrowed:  # read access ended for someone: the seam (delivery revokes cards)
        read_access_changed(tenant, sources=narrowed)
    return changed


# Rows per delete or insert, and the longest IN list sent (SQLite caps bound parameters).
_BATCH = 500
_ALIAS_OF_PRINCIPAL: dict[str, str] = {
    "email": AliasKind.EMAIL.value,
    "aad": AliasKind.AAD_OID.value,
}


def _principal_value(principal: str) -> str:
    return principal.partition(":")[2].strip()


def _principals_resolve(
    *, tenant: Tenant, principals: set[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """`{principal: user id}` for `email:`/`aad:` principals naming a person of the tenant
    (not erased, with a user) and `{principal: auth group id}` for `group:` principals
    naming a tenant group. Two queries, whatever the number of principals."""
    by_alias: dict[tuple[str, str], list[str]] = {}
    for p in principals:
        alias_kind = _ALIAS_OF_PRINCIPAL.get(p.partition(":")[0])
        if alias_kind is not None:
            by_alias.setdefault((alias_kind, _principal_value(p).lower()), []).append(p)
    users: dict[str, int] = {}
    if by_alias:
        aliases = PersonAlias.objects.filter(
            tenant=tenant,
            kind__in={k for k, _ in by_alias},
            person__erased_at__isnull=True,
            person__user__isnull=False,
        )
        if len(by_alias) <= _BATCH:  # else read the tenant's aliases (no huge IN list)
            aliases = aliases.filter(value__in={v for _, v in by_alias})
        for kind, value, user_id in aliases.values_list("kind", "value", "person__user_id"):
            for p in by_alias.get((kind, value), []):
                users[p] = user_id
    names: dict[str, list[str]] = {}
    for p in principals:
        if p.startswith("group:"):
            names.setdefault(_principal_value(p), []).append(p)
    groups: dict[str, int] = {}
    if names:
        rows = TenantGroup.objects.filter(tenant=tenant)
        if len(names) <= _BATCH:
            rows = rows.filter(name__in=list(names))
        for name, group_id in rows.values_list("name", "auth_group_id"):
            for p in names.get(name, []):
                groups[p] = group_id
    return users, groups


def person_alias_key(kind: str, value: str) -> str:
    """The key of an unresolved PERSON node named by this alias ("email:a@b.test")."""
    return f"{kind}:{value.strip().lower()}"


def _person_version_write(node: Node, person: Person) -> NodeVersion:
    return node_version_write(
        node=node,
        labels=["PERSON"],
        properties={"name": person.name, "email": person.email},
        valid_from=None,
        valid_to=None,
        confidence=1.0,
        provenance={},
    )


def person_node_get(*, person: Person) -> Node:
    """The tenant's one node for a known person: theirs if it exists, else an unresolved
    node keyed by one of their aliases adopted as theirs (`person_nodes_adopt`), else a new
    sourceless node with their name and email. Never a second node for the person."""
    node = Node.objects.filter(tenant_id=person.tenant_id, person=person).first()
    if node is not None:
        return node
    adopted = person_nodes_adopt(tenant=person.tenant, people=[person])
    if person.pk in adopted:
        return adopted[person.pk]
    node, created = Node.objects.get_or_create(
        tenant_id=person.tenant_id, person=person, defaults={"key": f"person:{person.pk}"}
    )
    if created:
        _person_version_write(node, person)
    return node


def person_nodes_adopt(
    *, tenant: Tenant, people: Iterable[Person] | None = None
) -> dict[Any, Node]:
    """Bind unresolved PERSON nodes to the known people whose aliases key them (default:
    every person of the tenant), so resolution never leaves a second node for a person.

    For a person without a node, the oldest matching unresolved node becomes theirs: linked,
    re-keyed `person:<id>`, and given a new version with their name and email (the earlier
    versions stay, and so does the node's `origin`, whose ACL keeps governing it). The edges
    of any further matching node are moved onto the person's node (a relation it already
    has is dropped), leaving that node unlinked. One query when there is nothing to adopt.
    Returns `{person id: adopted node}`."""
    unresolved = Node.objects.filter(tenant=tenant, source__isnull=True, person__isnull=True)
    # The alias as a node key (`person_alias_key`: values are stored stripped), matched in
    # the database: no list of every alias of the tenant is sent.
    aliases = (
        PersonAlias.objects.filter(tenant=tenant, person__erased_at__isnull=True)
        .annotate(node_key=Concat("kind", Value(":"), Lower("value")))
        .filter(node_key__in=unresolved.values("key"))
    )
    if people is not None:
        aliases = aliases.filter(person__in=[p.pk for p in people])
    owner_of = dict(aliases.values_list("node_key", "person_id"))
    if not owner_of:
        return {}
    candidates = list(unresolved.filter(key__in=list(owner_of)).order_by("created_at", "pk"))
    owners = {owner_of[n.key] for n in candidates}
    people_by_id = Person.objects.in_bulk(list(owners))
    node_of: dict[Any, Any] = dict(
        Node.objects.filter(tenant=tenant, person_id__in=owners).values_list("person_id", "pk")
    )
    adopted: dict[Any, Node] = {}
    for node in candidates:
        person = people_by_id[owner_of[node.key]]
        if person.pk in node_of:
            _edges_move(old=node.pk, new=node_of[person.pk])
            continue
        node.person, node.key = person, f"person:{person.pk}"
        node.save(update_fields=["person", "key"])
        _person_version_write(node, person)
        node_of[person.pk] = node.pk
        adopted[person.pk] = node
    return adopted


def _edges_move(*, old: Any, new: Any) -> None:
    """Re-point the edges of node `old` at node `new` (dropping a relation `new` has)."""
    for edge in Edge.objects.filter(Q(from_node_id=old) | Q(to_node_id=old)):
        ends = {
            "from_node_id": new if edge.from_node_id == old else edge.from_node_id,
            "to_node_id": new if edge.to_node_id == old else edge.to_node_id,
        }
        if Edge.objects.filter(type=edge.type, **ends).exists():
            edge.delete()
        else:
            Edge.objects.filter(pk=edge.pk).update(**ends)


def node_lock_current(node_id: Any) -> tuple[Node, NodeVersion | None]:
    """Lock a node (inside a transaction) and read its current version, in that order: a
    version read after the lock is the one the next write closes. Returns the locked node
    and that version; hand both to `node_version_write(node=…, current=…)` in the same
    transaction to skip a second lock and read."""
    node = Node.objects.select_for_update().filter(pk=node_id).get()
    return node, node_current_version(node_id)


def node_current_version(node_id: Any) -> NodeVersion | None:
    """The node's current version (None before the first). Read it after locking the node
    when it is about to be replaced (`node_lock_current`)."""
    return NodeVersion.objects.filter(node_id=node_id, tx_to__isnull=True).first()


_READ = object()  # node_version_write: lock the node and read its current version itself


class CurrentVersionMoved(Exception):
    """node_version_write was handed a `current` version that is no longer current: it
    was read in the same statement that locked the node, from the snapshot taken before
    that statement waited for the lock, and the lock's holder replaced it. Nothing was
    written; the caller holds the node's lock, so it re-reads the current version
    (`node_current_version`), derives the new version from it and writes again."""


@dataclass
class VersionWrite:
    """One version to append in `node_versions_write`: the node, its current version as
    read under the node's lock (None before the first), and the new version's fields."""

    node: Node
    current: NodeVersion | None
    labels: list[str]
    properties: dict[str, Any]
    valid_from: int | None
    valid_to: int | None
    confidence: float
    provenance: dict[str, Any]
    pending: bool = False
    evidence_class: str = EvidenceClass.SYSTEM_EXTRACTION
    # The text of the spans `provenance` cites, when the caller has it (else read here).
    cited: list[str] | None = None
    # The whole search text, when the caller knows it: a version with the current one's
    # labels, properties and cited spans has the current one's text (bind's correction).
    search_text: str | None = None


def node_versions_write(writes: list[VersionWrite]) -> list[NodeVersion]:
    """Append a new version to each of several distinct nodes at one transaction time
    (strictly after every previous version's): close the current versions in one UPDATE,
    insert the new ones in one INSERT. Every `current` must have been read while this
    transaction held its node's lock, or in the statement that took it. If a version is no
    longer current, `CurrentVersionMoved` is raised: for one version nothing was written
    and the caller's transaction goes on; for several, others may have been closed, so the
    enclosing transaction is marked for rollback. Returns the new versions, in order."""
    if not writes:
        return []
    if len({w.node.pk for w in writes}) != len(writes):
        raise ValueError("node_versions_write: one version per node per call")
    currents = [w.current for w in writes if w.current is not None]
    tx = max([now_us(), *(c.tx_from + 1 for c in currents)])
    with transaction.atomic(savepoint=False):
        closed = versions_close([c.pk for c in currents], tx)
        if closed == len(currents):
            versions = [_version_row(w, tx) for w in writes]
            NodeVersion.objects.bulk_create(versions)
            return versions
        if len(currents) > 1:
            # Others of the batch may have been closed: raising inside the block marks the
            # enclosing transaction for rollback, so none of those closes can commit.
            raise CurrentVersionMoved([w.node.pk for w in writes])
    # One version whose current had moved: its UPDATE matched no row, nothing was written,
    # so the block ends cleanly and the caller's transaction may re-read and retry.
    raise CurrentVersionMoved([w.node.pk for w in writes])


def _version_row(w: VersionWrite, tx: int) -> NodeVersion:
    return NodeVersion(
        node=w.node,
        seq=(w.current.seq + 1) if w.current is not None else 1,
        labels=list(w.labels),
        properties=dict(w.properties),
        search_text=w.search_text
        if w.search_text is not None
        else search_text_for(
            w.labels,
            w.properties,
            w.cited if w.cited is not None else span_texts(w.node.source_id, w.provenance),
        ),
        valid_from=w.valid_from,
        valid_to=w.valid_to,
        tx_from=tx,
        confidence=w.confidence,
        provenance=w.provenance,
        pending=w.pending,
        evidence_class=w.evidence_class,
    )


def node_version_write(
    *,
    node: Node,
    labels: list[str],
    properties: dict[str, Any],
    valid_from: int | None,
    valid_to: int | None,
    confidence: float,
    provenance: dict[str, Any],
    pending: bool = False,
    evidence_class: str = EvidenceClass.SYSTEM_EXTRACTION,
    current: Any = _READ,
    search_text: str | None = None,
) -> NodeVersion:
    """Append a new version of `node` (`node_versions_write` of one): lock the node, close
    the current version at the new transaction time (strictly after the previous one) and
    insert the next.

    `current`: the node's current version (or None) read while this transaction already
    held the node's lock (`node_lock_current`), or read in the statement that took the
    lock (then it may predate a write the lock waited for: `CurrentVersionMoved`); by
    default the lock is taken and the current version read here."""
    # No savepoint when nested (two round trips per version): every caller lets a failure
    # propagate, so the enclosing transaction rolls back anyway.
    with transaction.atomic(savepoint=False):
        if current is _READ:
            _, current = node_lock_current(node.pk)
        write = VersionWrite(
            node=node,
            current=current,
            labels=labels,
            properties=properties,
            valid_from=valid_from,
            valid_to=valid_to,
            confidence=confidence,
            provenance=provenance,
            pending=pending,
            evidence_class=evidence_class,
            search_text=search_text,
        )
        try:
            return node_versions_write([write])[0]
        except CurrentVersionMoved as exc:  # nothing written: raised outside this block
            moved = exc
    raise moved


def node_update(*, node: Node, **changes: Any) -> NodeVersion:
    """A new version equal to the current one except for `changes` (labels, properties,
    valid_from, valid_to, confidence, provenance, pending, evidence_class)."""
    current = NodeVersion.objects.get(node=node, tx_to__isnull=True)
    fields = {
        "labels": current.labels,
        "properties": current.properties,
        "valid_from": current.valid_from,
        "valid_to": current.valid_to,
        "confidence": current.confidence,
        "provenance": current.provenance,
        "pending": current.pending,
        "evidence_class": current.evidence_class,
    }
    unknown = set(changes) - set(fields)
    if unknown:
        raise TypeError(f"node_update: unknown fields {sorted(unknown)}")
    fields.update(changes)
    return node_version_write(node=node, **fields)


def tenant_identity_resolve(*, tenant: Tenant) -> None:
    """The graph's side of `tenancy.services.tenant_identity_changed`: re-resolve
    every source ACL of the tenant, tell whoever lost read access (memberships and roles
    changed too: they lose their open cards), and adopt PERSON nodes keyed by a now-known
    alias as that person's node. In the caller's transaction."""
    from .access import read_access_changed

    source_acls_sync(tenant=tenant)
    read_access_changed(tenant)
    person_nodes_adopt(tenant=tenant)
