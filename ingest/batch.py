"""Applying validated submissions in batches: each step is one statement per table for
the whole batch (sources, grants, source versions, spans, nodes, node versions, edges,
clarifications, audit events, jobs), and each lookup reads the whole batch at once
(existing sources, people by alias, existing nodes and their current versions, the
clarifications a dedup identity already opened). The caller runs it in a transaction;
`ingest.services` gives each document its all-or-nothing guarantee around it.

A batch never holds two submissions for the same source (`submissions_apply` splits
them), so every source, and with it every fact node of the batch, is written once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings

from clarify.models import Clarification
from clarify.planning import PlannedAmbiguity, clarification_id_for, dedup_key
from clarify.policy import policy_for
from clarify.services import ClarificationToOpen, clarifications_open
from common.times import now_us
from graph.models import Edge, Node, NodeVersion, Source, SourceVersion, Span
from graph.services import (
    VersionWrite,
    cited_text,
    node_versions_write,
    person_alias_key,
    person_node_get,
    source_acls_sync,
)
from tenancy.models import Person, PersonAlias, Tenant, normalise_alias
from tenancy.selectors import PERSON_ALIAS_PROPERTIES

if TYPE_CHECKING:
    from .plan import SubmissionPlan

_T = TypeVar("_T")


def _resolved(value: _T | None) -> _T:
    """A node or version the batch's lookups filled in before it is read: every wanted
    node is found or created, and a fact node not written here has a current version."""
    assert value is not None
    return value


@dataclass
class Doc:
    """One submission of the batch and what applying it has produced so far."""

    plan: SubmissionPlan
    source: Source | None = None
    created: bool = False
    sv: SourceVersion | None = None
    sv_new: bool = False
    nodes: dict[int, Node] = field(default_factory=dict)
    version_tx: dict[int, int] = field(default_factory=dict)
    clarifications: list[dict[str, Any]] = field(default_factory=list)

    @property
    def src(self) -> dict[str, Any]:
        return self.plan.data["source"]

    def result(self) -> dict[str, Any]:
        """The 201 body (CONTRACT §3.1)."""
        assert self.sv is not None
        nodes = [
            {"ref": n["ref"], "id": self.nodes[n["ref"]].pk, "versionTx": self.version_tx[n["ref"]]}
            for n in self.plan.data["nodes"]
        ]
        clars = sorted(self.clarifications, key=lambda c: c["nodeRef"])
        return {"sourceVersionTx": self.sv.tx, "nodes": nodes, "clarifications": clars}


def batch_apply(*, tenant: Tenant, plans: list[SubmissionPlan]) -> list[Doc]:
    """Apply `plans` (distinct sources) inside the caller's transaction; `Doc.result()`
    is each one's 201 body."""
    docs = [Doc(plan=p) for p in plans]
    _sources_upsert(tenant, docs)
    _source_versions(docs)
    _spans(docs)
    current = _nodes_resolve(tenant, docs)
    to_open = _facts_write(tenant, docs, current)
    _edges(tenant, docs)
    _clarifications_open(tenant, to_open)
    return docs


# --- sources ---------------------------------------------------------------------------


def _sources_upsert(tenant: Tenant, docs: list[Doc]) -> None:
    """Insert the sources not yet known (a concurrent insert of the same identity wins, and
    is then found), lock every source of the batch in one ordered SELECT … FOR UPDATE,
    update what changed and resolve the ACLs of all of them at once."""
    fresh = [
        Source(
            tenant=tenant,
            system=d.src["system"],
            external_id=d.src["externalId"],
            title=d.src["title"],
            uri=d.src["uri"],
            restriction=d.src["restriction"],
            acl=list(d.src["acl"]),
        )
        for d in docs
    ]
    # In identity order, so concurrent batches wait on each other's new rows in one order.
    fresh.sort(key=lambda s: (s.system, s.external_id))
    Source.objects.bulk_create(fresh, ignore_conflicts=True)
    ours = {(s.system, s.external_id): s.pk for s in fresh}
    locked = (
        Source.objects.select_for_update()
        .filter(tenant=tenant, external_id__in={d.src["externalId"] for d in docs})
        .order_by("pk")
    )
    by_identity = {
        (s.system, s.external_id): s for s in locked if (s.system, s.external_id) in ours
    }
    for d in docs:
        identity = (d.src["system"], d.src["externalId"])
        d.source = by_identity[identity]
        d.created = d.source.pk == ours[identity]
        if not d.created:
            _source_refresh(d.source, d.src)
    source_acls_sync(
        tenant=tenant,
        sources=[d.source for d in docs if d.source is not None],
        fresh=[d.source.pk for d in docs if d.created and d.source is not None],
    )


def _source_refresh(source: Source, src: dict[str, Any]) -> None:
    # Fail closed: a resubmission may set or change a source's restriction, but one without
    # a restriction never lifts it (a steward may, in the admin).
    wanted = {
        "title": src["title"],
        "uri": src["uri"],
        "restriction": src["restriction"] or source.restriction,
        "acl": list(src["acl"]),
    }
    changed = [name for name, value in wanted.items() if getattr(source, name) != value]
    for name in changed:
        setattr(source, name, wanted[name])
    if changed:
        source.save(update_fields=changed)


def _source_versions(docs: list[Doc]) -> None:
    """The source version of each document's content: the latest if it has the same hash,
    else a new one (one read for the known sources, one insert)."""
    known = [d.source.pk for d in docs if not d.created and d.source is not None]
    latest: dict[Any, SourceVersion] = {}
    rows = SourceVersion.objects.filter(source__in=known).defer("text").order_by("source", "-tx")
    for sv in rows if known else []:
        latest.setdefault(sv.source_id, sv)
    new: list[SourceVersion] = []
    now = now_us()
    for d in docs:
        prev = latest.get(d.source.pk if d.source else None)
        if prev is not None and prev.content_hash == d.plan.content_hash:
            d.sv = prev
            continue
        tx = now if prev is None else max(now, prev.tx + 1)
        d.sv = SourceVersion(
            source=d.source, tx=tx, content_hash=d.plan.content_hash, text=d.src["text"]
        )
        d.sv_new = True
        new.append(d.sv)
    SourceVersion.objects.bulk_create(new)


def _spans(docs: list[Doc]) -> None:
    """Each span once per source version: the spans of a reused version are read first."""
    reused = [d.sv.pk for d in docs if not d.sv_new and d.sv is not None]
    have = set(
        Span.objects.filter(source_version__in=reused).values_list(
            "source_version_id", "start", "end"
        )
        if reused
        else []
    )
    missing: list[Span] = []
    for d in docs:
        assert d.sv is not None
        for span in d.plan.data["spans"]:
            key = (d.sv.pk, span["start"], span["end"])
            if key not in have:
                have.add(key)
                missing.append(Span(source_version=d.sv, start=span["start"], end=span["end"]))
    Span.objects.bulk_create(missing)


# --- nodes -----------------------------------------------------------------------------


def _alias_pairs(props: dict[str, Any]) -> list[tuple[str, str]]:
    """(alias kind, normalised value) of a PERSON node's alias properties, in order."""
    pairs = []
    for prop, kind in PERSON_ALIAS_PROPERTIES.items():
        value = props.get(prop)
        if isinstance(value, str) and value.strip():
            pairs.append((str(kind), normalise_alias(kind, value)))
    return pairs


def _known_people(
    tenant: Tenant, pairs: set[tuple[str, str]]
) -> tuple[dict[tuple[str, str], Any], dict[Any, tuple[Any, int]]]:
    """`{alias pair: person id}` for known people (not erased) and `{person id: (node id,
    current tx)}` for those who have a node: one query when every named person has a node,
    a second for the aliases it did not find."""
    if not pairs:
        return {}, {}
    kinds, values = {k for k, _ in pairs}, {v for _, v in pairs}
    person_of: dict[tuple[str, str], Any] = {}
    node_of: dict[Any, tuple[Any, int]] = {}
    rows = NodeVersion.objects.filter(
        tx_to__isnull=True,
        node__tenant=tenant,
        node__person__erased_at__isnull=True,
        node__person__aliases__kind__in=kinds,
        node__person__aliases__value__in=values,
    ).values_list(
        "node__person__aliases__kind",
        "node__person__aliases__value",
        "node__person_id",
        "node_id",
        "tx_from",
    )
    for kind, value, person_id, node_id, tx in rows:
        if (kind, value) in pairs:
            person_of[(kind, value)] = person_id
            node_of[person_id] = (node_id, tx)
    rest = pairs - set(person_of)
    if rest:
        aliases = PersonAlias.objects.filter(
            tenant=tenant,
            kind__in={k for k, _ in rest},
            value__in={v for _, v in rest},
            person__erased_at__isnull=True,
        ).values_list("kind", "value", "person_id")
        for kind, value, person_id in aliases:
            if (kind, value) in rest:
                person_of[(kind, value)] = person_id
    return person_of, node_of


@dataclass
class _Wanted:
    """Nodes the batch names, by identity, before they are looked up."""

    by_source: dict[tuple[Any, str], Node | None] = field(default_factory=dict)
    unresolved: dict[str, Node | None] = field(default_factory=dict)
    # where each node of each document is found: ("fact"|"keyed", key) / ("alias", key) / …
    places: list[tuple[Doc, dict[str, Any], tuple[str, Any]]] = field(default_factory=list)


def _nodes_resolve(tenant: Tenant, docs: list[Doc]) -> dict[Any, NodeVersion | None]:
    """Find or create every node of the batch: fact nodes by (source, key); PERSON nodes
    as the known person's one node, else the unresolved node keyed by the first alias
    (created with the document as its origin), else a node of the document. Fact nodes of
    known sources are locked. Returns the current version of each fact node."""
    pairs = {
        p
        for d in docs
        for n in d.plan.data["nodes"]
        if "PERSON" in n["labels"]
        for p in _alias_pairs(n["properties"])
    }
    person_of, node_of = _known_people(tenant, pairs)
    wanted = _Wanted()
    people: dict[Any, Node] = {}
    for d in docs:
        for n in d.plan.data["nodes"]:
            wanted.places.append((d, n, _place_of(d, n, person_of, wanted)))
    _persons_without_node(wanted, node_of, people)
    current = _source_nodes(tenant, docs, wanted)
    _unresolved_nodes(tenant, wanted)
    for d, n, (kind, key) in wanted.places:
        ref = n["ref"]
        if kind == "person":
            if key in node_of:
                d.nodes[ref] = Node(pk=node_of[key][0], tenant=tenant, person_id=key)
                d.version_tx[ref] = node_of[key][1]
            else:
                d.nodes[ref] = people[key]
        elif kind == "alias":
            d.nodes[ref] = _resolved(wanted.unresolved[key])
        else:
            d.nodes[ref] = _resolved(wanted.by_source[key])
    return current


def _place_of(
    d: Doc, n: dict[str, Any], person_of: dict[tuple[str, str], Any], wanted: _Wanted
) -> tuple[str, Any]:
    assert d.source is not None
    if "PERSON" not in n["labels"]:
        key: Any = (d.source.pk, n.get("key", str(n["ref"])))
        wanted.by_source[key] = None
        return ("fact", key)
    pairs = _alias_pairs(n["properties"])
    for pair in pairs:
        if pair in person_of:
            return ("person", person_of[pair])
    if pairs:
        alias = person_alias_key(*pairs[0])
        wanted.unresolved.setdefault(alias, None)
        return ("alias", alias)
    key = (d.source.pk, n.get("key", f"person-{n['ref']}"))
    wanted.by_source[key] = None
    return ("keyed", key)


def _persons_without_node(
    wanted: _Wanted, node_of: dict[Any, tuple[Any, int]], people: dict[Any, Node]
) -> None:
    """Known people the batch names who have no node yet (rare): `person_node_get` adopts
    their alias-keyed node or creates theirs, one person at a time."""
    ids = {key for _, _, (kind, key) in wanted.places if kind == "person" and key not in node_of}
    for person in Person.objects.filter(pk__in=ids) if ids else []:
        node = person_node_get(person=person)
        people[person.pk] = node
        tx = NodeVersion.objects.filter(node=node, tx_to__isnull=True).values_list(
            "tx_from", flat=True
        )
        node_of[person.pk] = (node.pk, tx.get())


def _source_nodes(
    tenant: Tenant, docs: list[Doc], wanted: _Wanted
) -> dict[Any, NodeVersion | None]:
    """Nodes keyed by (source, key): those of known sources locked and read with their
    current versions, the rest inserted. Returns `{node id: current version or None}`."""
    known = {d.source.pk for d in docs if not d.created and d.source is not None}
    keys = {key for sid, key in wanted.by_source if sid in known}
    current: dict[Any, NodeVersion | None] = {}
    if known and keys:
        nodes = (
            Node.objects.select_for_update()
            .filter(tenant=tenant, source__in=known, key__in=keys)
            .order_by("pk")
        )
        for node in nodes:
            if (node.source_id, node.key) in wanted.by_source:
                wanted.by_source[(node.source_id, node.key)] = node
                current[node.pk] = None
        versions = NodeVersion.objects.filter(node__in=list(current), tx_to__isnull=True)
        for version in versions if current else []:
            current[version.node_id] = version
    missing = [
        Node(tenant=tenant, source_id=sid, key=key)
        for (sid, key), node in wanted.by_source.items()
        if node is None
    ]
    Node.objects.bulk_create(missing)
    for node in missing:
        wanted.by_source[(node.source_id, node.key)] = node
        current[node.pk] = None
    return current


def _unresolved_nodes(tenant: Tenant, wanted: _Wanted) -> None:
    """Alias-keyed PERSON nodes: found, or created with their first document as origin
    (a concurrent creation of the same key wins) and given their first version."""
    if not wanted.unresolved:
        return
    docs_of = {}
    for d, n, (kind, key) in wanted.places:
        if kind == "alias" and key not in docs_of:
            docs_of[key] = (d, n)
    found = Node.objects.filter(tenant=tenant, source__isnull=True, key__in=list(wanted.unresolved))
    for node in found:
        wanted.unresolved[node.key] = node
    fresh = {
        key: Node(tenant=tenant, source=None, key=key, origin=docs_of[key][0].source)
        for key, node in wanted.unresolved.items()
        if node is None
    }
    if fresh:
        Node.objects.bulk_create(list(fresh.values()), ignore_conflicts=True)
        for node in Node.objects.filter(tenant=tenant, source__isnull=True, key__in=list(fresh)):
            wanted.unresolved[node.key] = node
    writes = []
    for key, node in fresh.items():
        stored = wanted.unresolved[key]
        if stored is not None and stored.pk == node.pk:  # ours, not a concurrent one
            writes.append(_first_version(node, docs_of[key][1]))
    node_versions_write(writes)
    _version_txs(tenant, wanted)


def _first_version(node: Node, n: dict[str, Any]) -> VersionWrite:
    return VersionWrite(
        node=node,
        current=None,
        labels=n["labels"],
        properties=n["properties"],
        valid_from=None,
        valid_to=None,
        confidence=n["confidence"],
        provenance={},
    )


def _version_txs(tenant: Tenant, wanted: _Wanted) -> None:
    """The current version's tx of each alias-keyed node (for the 201 body)."""
    ids = [n.pk for n in wanted.unresolved.values() if n is not None]
    txs = dict(
        NodeVersion.objects.filter(node__in=ids, tx_to__isnull=True).values_list(
            "node_id", "tx_from"
        )
    )
    for d, n, (kind, key) in wanted.places:
        if kind == "alias":
            d.version_tx[n["ref"]] = txs[_resolved(wanted.unresolved[key]).pk]


# --- facts -----------------------------------------------------------------------------


@dataclass
class _Fact:
    """What the batch writes for one fact node."""

    doc: Doc
    node: dict[str, Any]
    graph_node: Node
    current: NodeVersion | None
    key: str | None = None  # the dedup identity of its ambiguity


def _facts_write(
    tenant: Tenant, docs: list[Doc], current: dict[Any, NodeVersion | None]
) -> list[tuple[Doc, ClarificationToOpen]]:
    """Every fact's version (unless it would repeat the current one), written in one
    batch; PERSON nodes created here get their first version in it. Returns the
    clarifications to open."""
    facts: list[_Fact] = []
    writes: list[VersionWrite] = []
    written: set[Any] = set()
    for d in docs:
        assert d.source is not None
        for n in d.plan.data["nodes"]:
            node = d.nodes[n["ref"]]
            if "PERSON" not in n["labels"]:
                facts.append(_Fact(d, n, node, current.get(node.pk)))
    for f in facts:
        amb = f.doc.plan.ambiguities.get(f.node["ref"])
        if amb is not None:
            f.key = _dedup_key(f, amb)
    existing = _existing_clarifications(tenant, [f.key for f in facts if f.key])
    enabled = settings.CLARIFY["ENABLED"]
    to_open: list[tuple[Doc, ClarificationToOpen]] = []
    for f in facts:
        write = _fact_version(f, existing, enabled, to_open)
        if write is not None:
            writes.append(write)
            written.add(f.graph_node.pk)
    _person_firsts(docs, current, written, writes)
    versions = node_versions_write(writes)
    tx_of = {v.node_id: v.tx_from for v in versions}
    for d in docs:
        for n in d.plan.data["nodes"]:
            node = d.nodes[n["ref"]]
            if node.pk in tx_of:
                d.version_tx[n["ref"]] = tx_of[node.pk]
            elif n["ref"] not in d.version_tx:
                d.version_tx[n["ref"]] = _resolved(current[node.pk]).tx_from
    return to_open


def _person_firsts(
    docs: list[Doc],
    current: dict[Any, NodeVersion | None],
    written: set[Any],
    writes: list[VersionWrite],
) -> None:
    """A PERSON node of a document (no alias) created here gets its first version."""
    for d in docs:
        for n in d.plan.data["nodes"]:
            node = d.nodes[n["ref"]]
            fresh = node.pk in current and current[node.pk] is None
            if "PERSON" in n["labels"] and fresh and node.pk not in written:
                writes.append(_first_version(node, n))
                written.add(node.pk)


def _dedup_key(f: _Fact, amb: PlannedAmbiguity) -> str:
    assert f.doc.source is not None
    return dedup_key(
        system=f.doc.source.system,
        external_id=f.doc.source.external_id,
        content_hash=f.doc.plan.content_hash,
        span=amb.span,
        kind=amb.kind,
        node_key=f.graph_node.key,
    )


def _existing_clarifications(tenant: Tenant, keys: list[str]) -> dict[str, dict[str, Any]]:
    """`{dedup key: the clarification it already opened}` (one query)."""
    if not keys:
        return {}
    rows = Clarification.objects.filter(tenant=tenant, dedup_key__in=keys).values(
        "dedup_key", "pk", "state", "severity"
    )
    return {r["dedup_key"]: dict(r) for r in rows}


def _deduplicated(f: _Fact, amb: PlannedAmbiguity, existing: dict[str, Any]) -> VersionWrite | None:
    """The same content asked about already: report its clarification; carry a change of
    labels or properties onto the current version's dates and standing."""
    f.doc.clarifications.append(
        {
            "id": existing["pk"],
            "nodeRef": amb.node_ref,
            "state": existing["state"],
            "severity": existing["severity"],
            "deduplicated": True,
        }
    )
    cur, n = f.current, f.node
    if cur is None or (cur.labels == n["labels"] and cur.properties == n["properties"]):
        return None
    return VersionWrite(
        node=f.graph_node,
        current=cur,
        labels=n["labels"],
        properties=n["properties"],
        valid_from=cur.valid_from,
        valid_to=cur.valid_to,
        confidence=cur.confidence,
        provenance=cur.provenance,
        pending=cur.pending,
        evidence_class=cur.evidence_class,
    )


def _fact_version(
    f: _Fact,
    existing: dict[str, dict[str, Any]],
    enabled: bool,
    to_open: list[tuple[Doc, ClarificationToOpen]],
) -> VersionWrite | None:
    """The fact's next version (None if it would repeat the current one): the best guess
    of its ambiguity applied at reduced confidence and pending, a clarification to open."""
    n, d = f.node, f.doc
    amb = d.plan.ambiguities.get(n["ref"])
    if amb is not None and f.key in existing:
        return _deduplicated(f, amb, existing[f.key])
    valid_from, valid_to = n["validFrom"], n["validTo"]
    confidence, pending, clar_id = n["confidence"], False, None
    if amb is not None and f.key is not None:
        first_from, first_to = amb.applied_interval
        if first_from is not None or first_to is not None:
            valid_from, valid_to = first_from, first_to
        confidence = amb.applied_candidate_confidence
        if enabled and amb.detector_confidence >= settings.CLARIFY["MIN_DETECTOR_CONFIDENCE"]:
            pending = True
            assert d.source is not None and d.sv is not None
            clar_id = clarification_id_for(d.source.tenant_id, f.key)
            item = ClarificationToOpen(clar_id, f.graph_node, amb, d.sv, f.key, n["confidence"])
            to_open.append((d, item))
    spans = _span_list(d.plan.data, n["spanRef"], *([amb.candidates[0]["spanRef"]] if amb else []))
    assert d.sv is not None
    provenance = {
        "sourceVersionTx": d.sv.tx,
        "spans": spans,
        "clarification": str(clar_id) if clar_id else None,
    }
    new = (n["labels"], n["properties"], valid_from, valid_to, confidence, pending, provenance)
    cur = f.current
    if cur is not None and new == (
        cur.labels,
        cur.properties,
        cur.valid_from,
        cur.valid_to,
        cur.confidence,
        cur.pending,
        cur.provenance,
    ):
        return None
    cited = cited_text(d.src["text"], spans)
    return VersionWrite(
        f.graph_node, cur, *new[:5], provenance=provenance, pending=pending, cited=cited
    )


def _span_list(data: dict[str, Any], *refs: int | None) -> list[dict[str, int]]:
    out = []
    for ref in refs:
        if ref is not None:
            span = data["spans"][ref]
            item = {"start": span["start"], "end": span["end"]}
            if item not in out:
                out.append(item)
    return out


# --- edges and clarifications ------------------------------------------------------------


def _edges(tenant: Tenant, docs: list[Doc]) -> None:
    """Every edge once (an existing relation is kept as it is): one INSERT."""
    created_tx = now_us()
    edges = [
        Edge(
            tenant=tenant,
            from_node=d.nodes[e["from"]],
            to_node=d.nodes[e["to"]],
            type=e["type"],
            source_version=d.sv,
            created_tx=created_tx,
        )
        for d in docs
        for e in d.plan.data["edges"]
    ]
    Edge.objects.bulk_create(edges, ignore_conflicts=True)


def _clarifications_open(tenant: Tenant, to_open: list[tuple[Doc, ClarificationToOpen]]) -> None:
    if not to_open:
        return
    items = [item for _, item in to_open]
    opened = clarifications_open(tenant=tenant, items=items, policy=policy_for(tenant))
    for (doc, item), clarification in zip(to_open, opened, strict=True):
        doc.clarifications.append(
            {
                "id": clarification.pk,
                "nodeRef": item.planned.node_ref,
                "state": clarification.state,
                "severity": clarification.severity,
                "deduplicated": False,
            }
        )
