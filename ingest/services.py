"""Submissions: validate the whole submission, then apply it in one transaction
(CONTRACT §3.1; architecture "Data flow")."""

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from clarify.planning import plan_ambiguities
from common.errors import SubmissionInvalid
from graph.models import SourceVersion
from graph.services import acl_principal_valid
from tenancy.models import Tenant

from .batch import Doc, batch_apply
from .plan import SubmissionPlan

log = logging.getLogger(__name__)
RESERVED_LABELS = {"CLARIFICATION"}


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


def submission_apply(*, tenant: Tenant, plan: SubmissionPlan) -> dict[str, Any]:
    """Apply a planned submission in one transaction: source, source version, spans, nodes
    (best guess applied at reduced confidence and marked pending), edges, clarifications
    (or their deduplicated originals) and routing jobs. Returns the 201 body."""
    return _apply_one(tenant, plan).result()


def _apply_one(tenant: Tenant, plan: SubmissionPlan) -> Doc:
    with transaction.atomic():
        return batch_apply(tenant=tenant, plans=[plan])[0]


@dataclass
class Applied:
    """One document's outcome in `submissions_apply`: its 201 body, or the error that
    rolled it back alone."""

    result: dict[str, Any] | None = None
    error: Exception | None = None
    source_version: SourceVersion | None = None


def submissions_apply(*, tenant: Tenant, plans: list[SubmissionPlan]) -> list[Applied]:
    """Apply many planned submissions, each all-or-nothing: in batches (one statement per
    table per batch, `ingest.batch`), each batch in a savepoint. A batch that fails
    is rolled back and its documents applied one by one, each in its own savepoint, so a
    failing document rolls back alone and is reported while the others are applied. Two
    submissions of the same source never share a batch (the later one sees the earlier)."""
    out: list[Applied] = []
    for chunk in _chunks(plans):
        try:
            with transaction.atomic():
                docs = batch_apply(tenant=tenant, plans=chunk)
            out += [Applied(result=d.result(), source_version=d.sv) for d in docs]
            continue
        except Exception:  # the batch rolled back: its documents are retried one by one
            log.info("batch of %d rolled back; applying its documents one by one", len(chunk))
        for plan in chunk:
            try:
                doc = _apply_one(tenant, plan)
                out.append(Applied(result=doc.result(), source_version=doc.sv))
            except Exception as exc:  # this document's failure, reported
                out.append(Applied(error=exc))
    return out


def _chunks(plans: list[SubmissionPlan]) -> list[list[SubmissionPlan]]:
    """Consecutive runs of `plans` with distinct source identities."""
    chunks: list[list[SubmissionPlan]] = []
    seen: set[tuple[str, str]] = set()
    for plan in plans:
        src = plan.data["source"]
        identity = (src["system"], src["externalId"])
        if not chunks or identity in seen:
            chunks.append([])
            seen = set()
        chunks[-1].append(plan)
        seen.add(identity)
    return chunks
