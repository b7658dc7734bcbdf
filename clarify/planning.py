"""Planning ambiguities (architecture page `plan_ambiguities`): pure, before any write."""

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

CLARIFICATION_NAMESPACE = uuid.UUID("6f1c8f1e-7b0a-4c2e-9d4b-2a7c1b9e5d30")
MAX_CANDIDATES_PER_AMBIGUITY = 50


@dataclass(frozen=True)
class PlannedAmbiguity:
    """A validated ambiguity, ready to open (or deduplicate) a clarification."""

    node_ref: int
    kind: str
    severity_hint: str | None
    candidates: list[dict[str, Any]]
    detector_confidence: float
    applied_candidate_confidence: float
    span: tuple[int, int] | None

    @property
    def applied_interval(self) -> tuple[int | None, int | None]:
        first = self.candidates[0]
        return first["validFrom"], first["validTo"]


def plan_ambiguities(
    ambiguities: list[dict[str, Any]],
    *,
    node_index: dict[int, dict[str, Any]],
    spans: list[dict[str, int]],
) -> tuple[list[PlannedAmbiguity], list[dict[str, str]]]:
    """Validate every ambiguity against the submission and plan it. Returns the plans and
    the errors (`{"path", "message"}`); any error means nothing may be written."""
    errors: list[dict[str, str]] = []
    planned: list[PlannedAmbiguity] = []
    seen_nodes: set[int] = set()
    for i, amb in enumerate(ambiguities):
        path = f"ambiguities[{i}]"
        ok = True
        ref = amb["nodeRef"]
        node = node_index.get(ref)
        if node is None:
            errors.append({"path": f"{path}.nodeRef", "message": f"no node with ref {ref}"})
            ok = False
        elif "PERSON" in node["labels"]:
            errors.append({"path": f"{path}.nodeRef", "message": "a PERSON node is not a fact"})
            ok = False
        elif ref in seen_nodes:
            errors.append({"path": f"{path}.nodeRef", "message": "at most one ambiguity per node"})
            ok = False
        seen_nodes.add(ref)
        if not amb["candidates"]:
            errors.append({"path": f"{path}.candidates", "message": "at least one candidate"})
            ok = False
        for j, cand in enumerate(amb["candidates"]):
            cpath = f"{path}.candidates[{j}]"
            vf, vt = cand.get("validFrom"), cand.get("validTo")
            if vf is not None and vt is not None and vf >= vt:
                errors.append({"path": cpath, "message": "validFrom must be before validTo"})
                ok = False
            sref = cand.get("spanRef")
            if sref is not None and not 0 <= sref < len(spans):
                errors.append({"path": f"{cpath}.spanRef", "message": f"no span {sref}"})
                ok = False
        if not ok:
            continue
        span_ref = node_index[ref].get("spanRef")
        if span_ref is not None and not 0 <= span_ref < len(spans):
            span_ref = None  # the node's bad spanRef is reported by the caller; don't crash
        if span_ref is None:
            span_ref = next(
                (c["spanRef"] for c in amb["candidates"] if c.get("spanRef") is not None), None
            )
        span = (spans[span_ref]["start"], spans[span_ref]["end"]) if span_ref is not None else None
        planned.append(
            PlannedAmbiguity(
                node_ref=ref,
                kind=amb["kind"],
                severity_hint=amb.get("severityHint"),
                candidates=[
                    {
                        "index": j,
                        "validFrom": c.get("validFrom"),
                        "validTo": c.get("validTo"),
                        "label": c.get("label", ""),
                        "spanRef": c.get("spanRef"),
                    }
                    for j, c in enumerate(amb["candidates"])
                ],
                detector_confidence=amb["detectorConfidence"],
                applied_candidate_confidence=amb["appliedCandidateConfidence"],
                span=span,
            )
        )
    return planned, errors


def dedup_key(
    *,
    system: str,
    external_id: str,
    content_hash: str,
    span: tuple[int, int] | None,
    kind: str,
    node_key: str,
) -> str:
    """The dedup identity (tenant, source identity, content hash, span, kind), extended with
    the target's key so two facts sharing a span never share a clarification."""
    span_text = f"{span[0]}-{span[1]}" if span else "-"
    raw = "\x1f".join([system, external_id, content_hash, span_text, kind, node_key])
    return hashlib.sha256(raw.encode()).hexdigest()


def clarification_id_for(tenant_id: uuid.UUID, key: str) -> uuid.UUID:
    """Deterministic clarification id derived from the dedup identity."""
    return uuid.uuid5(CLARIFICATION_NAMESPACE, f"{tenant_id}:{key}")
