"""Submissions: validate the whole submission, then apply it in one transaction
(CONTRACT §3.1; architecture "Data flow")."""

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from clarify.models import Clarification
from clarify.planning import (
    PlannedAmbiguity,
    clarification_id_for,
    dedup_key,
    plan_ambiguities,
)
from clarify.policy import policy_for
from clarify.services import clarification_open
from telha.common.errors import SubmissionInvalid
from telha.common.times import now_us
from telha.graph.models import Edge, Node, NodeVersion, Source, SourceVersion, Span
from telha.graph.services import (
    acl_principal_valid,
    node_version_write,
    person_alias_key,
    person_node_get,
    source_acl_set,
    source_acls_sync,
)
from telha.tenancy.models import Person, Tenant
from telha.tenancy.selectors import PERSON_ALIAS_PROPERTIES, person_by_alias

RESERVED_LABELS = {"CLARIFICATION"}


@dataclass
class SubmissionPlan:
    """A validated submission: nothing about it can fail for input reasons any more."""

    data: dict[str, Any]
    content_hash: str
    node_index: dict[int, dict[str, Any]]
    ambiguities: dict[int, PlannedAmbiguity] = field(default_factory=dict)


def submission_plan(data: dict[str, Any]) -> SubmissionPlan:
    """Check every cross-reference of a (shape-validated) submission. Raises
    `SubmissionInvalid` listing every error with its JSON path; writes nothing."""
    errors: list[dict[str, str]] = []
    source = data["source"]
    text: str = source["text"]
    for i, principal in enumerate(source["acl"]):
        if not acl_principal_valid(principal):
            errors.append(
                {"path": f"source.acl[{i}]", "message": "expected group:, email: or aad:"}
            )
    for i, span in enumerate(data["spans"]):
        if span["start"] > span["end"]:
            errors.append({"path": f"spans[{i}]", "message": "start must not be after end"})
        elif span["end"] > len(text):
            errors.append({"path": f"spans[{i}]", "message": "span lies outside source.text"})
    node_index: dict[int, dict[str, Any]] = {}
    keys: set[str] = set()
    for i, node in enumerate(data["nodes"]):
        path = f"nodes[{i}]"
        if node["ref"] in node_index:
            errors.append({"path": f"{path}.ref", "message": f"duplicate ref {node['ref']}"})
        node_index[node["ref"]] = node
        reserved = RESERVED_LABELS.intersection(node["labels"])
        if reserved:
            errors.append({"path": f"{path}.labels", "message": f"reserved label {reserved.pop()}"})
        key = node.get("key", str(node["ref"]))
        if "PERSON" not in node["labels"]:
            if key in keys:
                errors.append({"path": f"{path}.key", "message": f"duplicate key {key!r}"})
            keys.add(key)
        vf, vt = node["validFrom"], node["validTo"]
        if vf is not None and vt is not None and vf >= vt:
            errors.append({"path": path, "message": "validFrom must be before validTo"})
        if node["spanRef"] is not None and node["spanRef"] >= len(data["spans"]):
            errors.append({"path": f"{path}.spanRef", "message": f"no span {node['spanRef']}"})
    for i, edge in enumerate(data["edges"]):
        for end in ("from", "to"):
            if edge[end] not in node_index:
                errors.append({"path": f"edges[{i}].{end}", "message": f"no node {edge[end]}"})
    planned, amb_errors = plan_ambiguities(
        data["ambiguities"], node_index=node_index, spans=data["spans"]
    )
    errors += amb_errors
    if errors:
        raise SubmissionInvalid(errors)
    return SubmissionPlan(
        data=data,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        node_index=node_index,
        ambiguities={p.node_ref: p for p in planned},
    )


def _source_upsert(*, tenant: Tenant, src: dict[str, Any]) -> Source:
    source, created = Source.objects.select_for_update().get_or_create(
        tenant=tenant,
        system=src["system"],
        external_id=src["externalId"],
        defaults={
            "title": src["title"],
            "uri": src["uri"],
            "restriction": src["restriction"],
        },
    )
    # Fail closed: a resubmission may set or change a source's restriction, but one without
    # a restriction never lifts it (a steward may, in the admin).
    restriction = src["restriction"] or source.restriction
    wanted = {"title": src["title"], "uri": src["uri"], "restriction": restriction}
    changed = [name for name, value in wanted.items() if getattr(source, name) != value]
    for name in changed:
        setattr(source, name, wanted[name])
    if changed:
        source.save(update_fields=changed)
    if created or source.acl != src["acl"]:
        source_acl_set(source=source, acl=src["acl"])
    else:
        # The same ACL again: re-resolve it anyway (reads only, when nothing changed), so a
        # resubmission also repairs grants for people loaded since.
        source_acls_sync(tenant=tenant, sources=[source])
    return source


def _source_version(*, source: Source, text: str, content_hash: str) -> SourceVersion:
    latest = SourceVersion.objects.filter(source=source).order_by("-tx").first()
    if latest is not None and latest.content_hash == content_hash:
        return latest
    tx = now_us() if latest is None else max(now_us(), latest.tx + 1)
    return SourceVersion.objects.create(source=source, tx=tx, content_hash=content_hash, text=text)


def _person_node(*, tenant: Tenant, source: Source, node: dict[str, Any]) -> Node:
    """A PERSON node: the known person's one node when an alias property matches (never a
    duplicate: an earlier unresolved node for them is adopted), else the unresolved node
    keyed by the first alias — created with this source as its `origin`, whose ACL governs
    reading it — else a node of this source."""
    props = node["properties"]
    person: Person | None = None
    alias_key: str | None = None
    for prop, kind in PERSON_ALIAS_PROPERTIES.items():
        value = props.get(prop)
        if isinstance(value, str) and value.strip():
            alias_key = alias_key or person_alias_key(kind, value)
            person = person_by_alias(tenant=tenant, kind=kind, value=value)
            if person is not None:
                break
    if person is not None:
        return person_node_get(person=person)
    if alias_key is not None:
        graph_node, created = Node.objects.get_or_create(
            tenant=tenant, source=None, key=alias_key, defaults={"origin": source}
        )
    else:
        graph_node, created = Node.objects.get_or_create(
            tenant=tenant, source=source, key=node.get("key", f"person-{node['ref']}")
        )
    if created:
        node_version_write(
            node=graph_node,
            labels=node["labels"],
            properties=props,
            valid_from=None,
            valid_to=None,
            confidence=node["confidence"],
            provenance={},
        )
    return graph_node


def _span_list(data: dict[str, Any], *refs: int | None) -> list[dict[str, int]]:
    out = []
    for ref in refs:
        if ref is not None:
            span = data["spans"][ref]
            item = {"start": span["start"], "end": span["end"]}
            if item not in out:
                out.append(item)
    return out


@transaction.atomic
def submission_apply(*, tenant: Tenant, plan: SubmissionPlan) -> dict[str, Any]:
    """Apply a planned submission in one transaction: source, source version, spans, nodes
    (best guess applied at reduced confidence and marked pending), edges, clarifications
    (or their deduplicated originals) and routing jobs. Returns the 201 body."""
    data = plan.data
    src = data["source"]
    source = _source_upsert(tenant=tenant, src=src)
    sv = _source_version(source=source, text=src["text"], content_hash=plan.content_hash)
    for span in data["spans"]:
        Span.objects.get_or_create(source_version=sv, start=span["start"], end=span["end"])
    conf = settings.CLARIFY
    policy = policy_for(tenant)

    node_results: list[dict[str, Any]] = []
    nodes_by_ref: dict[int, Node] = {}
    to_open: list[tuple[PlannedAmbiguity, Node, str, Any, float]] = []
    clar_results: list[dict[str, Any]] = []
    for node in data["nodes"]:
        ref = node["ref"]
        if "PERSON" in node["labels"]:
            graph_node = _person_node(tenant=tenant, source=source, node=node)
        else:
            key = node.get("key", str(ref))
            graph_node, _ = Node.objects.get_or_create(tenant=tenant, source=source, key=key)
            _write_fact(
                tenant=tenant,
                source=source,
                sv=sv,
                plan=plan,
                node=node,
                graph_node=graph_node,
                conf=conf,
                to_open=to_open,
                clar_results=clar_results,
            )
        nodes_by_ref[ref] = graph_node
        current = NodeVersion.objects.filter(node=graph_node, tx_to__isnull=True).values_list(
            "tx_from", flat=True
        )
        node_results.append({"ref": ref, "id": graph_node.pk, "versionTx": current.get()})

    created_tx = now_us()
    for edge in data["edges"]:
        Edge.objects.get_or_create(
            from_node=nodes_by_ref[edge["from"]],
            to_node=nodes_by_ref[edge["to"]],
            type=edge["type"],
            defaults={"tenant": tenant, "source_version": sv, "created_tx": created_tx},
        )
    for amb, graph_node, key, clar_id, extraction_conf in to_open:
        clarification = clarification_open(
            tenant=tenant,
            clarification_id=clar_id,
            target=graph_node,
            planned=amb,
            source_version=sv,
            dedup_key=key,
            extraction_confidence=extraction_conf,
            policy=policy,
        )
        clar_results.append(
            {
                "id": clarification.pk,
                "nodeRef": amb.node_ref,
                "state": clarification.state,
                "severity": clarification.severity,
                "deduplicated": False,
            }
        )
    clar_results.sort(key=lambda c: c["nodeRef"])
    return {"sourceVersionTx": sv.tx, "nodes": node_results, "clarifications": clar_results}


def _write_fact(
    *,
    tenant: Tenant,
    source: Source,
    sv: SourceVersion,
    plan: SubmissionPlan,
    node: dict[str, Any],
    graph_node: Node,
    conf: dict[str, Any],
    to_open: list[tuple[PlannedAmbiguity, Node, str, Any, float]],
    clar_results: list[dict[str, Any]],
) -> None:
    """Write a fact node's version unless it would repeat the current one."""
    data = plan.data
    amb = plan.ambiguities.get(node["ref"])
    current = NodeVersion.objects.filter(node=graph_node, tx_to__isnull=True).first()
    valid_from, valid_to = node["validFrom"], node["validTo"]
    confidence = node["confidence"]
    pending = False
    clar_id = None
    if amb is not None:
        key = dedup_key(
            system=source.system,
            external_id=source.external_id,
            content_hash=plan.content_hash,
            span=amb.span,
            kind=amb.kind,
            node_key=graph_node.key,
        )
        existing = Clarification.objects.filter(tenant=tenant, dedup_key=key).first()
        if existing is not None:
            clar_results.append(
                {
                    "id": existing.pk,
                    "nodeRef": amb.node_ref,
                    "state": existing.state,
                    "severity": existing.severity,
                    "deduplicated": True,
                }
            )
            if current is not None and (
                current.labels != node["labels"] or current.properties != node["properties"]
            ):
                node_version_write(
                    node=graph_node,
                    labels=node["labels"],
                    properties=node["properties"],
                    valid_from=current.valid_from,
                    valid_to=current.valid_to,
                    confidence=current.confidence,
                    provenance=current.provenance,
                    pending=current.pending,
                    evidence_class=current.evidence_class,
                )
            return
        first_from, first_to = amb.applied_interval
        if first_from is not None or first_to is not None:
            valid_from, valid_to = first_from, first_to
        confidence = amb.applied_candidate_confidence
        if conf["ENABLED"] and amb.detector_confidence >= conf["MIN_DETECTOR_CONFIDENCE"]:
            pending = True
            clar_id = clarification_id_for(tenant.pk, key)
            to_open.append((amb, graph_node, key, clar_id, node["confidence"]))
    provenance = {
        "sourceVersionTx": sv.tx,
        "spans": _span_list(
            data,
            node["spanRef"],
            *([c["spanRef"] for c in amb.candidates[:1]] if amb else []),
        ),
        "clarification": str(clar_id) if clar_id else None,
    }
    if current is not None and (
        current.labels,
        current.properties,
        current.valid_from,
        current.valid_to,
        current.confidence,
        current.pending,
        current.provenance,
    ) == (
        node["labels"],
        node["properties"],
        valid_from,
        valid_to,
        confidence,
        pending,
        provenance,
    ):
        return
    node_version_write(
        node=graph_node,
        labels=node["labels"],
        properties=node["properties"],
        valid_from=valid_from,
        valid_to=valid_to,
        confidence=confidence,
        provenance=provenance,
        pending=pending,
    )
