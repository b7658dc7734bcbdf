"""The record shape of facts (CONTRACT §3.3)."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from telha.graph.models import NodeVersion


@dataclass(frozen=True)
class PendingNote:
    """What the layer owning clarifications says of a pending version's clarification:
    its caveat (`pendingClarification`) and the evidence class to present, if not the
    version's own."""

    caveat: dict[str, Any]
    evidence_class: str | None = None


# The seam: the graph never imports clarify (above it). Clarify registers, in its
# `AppConfig.ready`, a function from the pending versions to their notes, keyed by
# clarification id (one query for all of them).
PENDING_NOTES: list[Callable[[list[NodeVersion]], dict[str, PendingNote]]] = []


def render_records(versions: list[NodeVersion]) -> list[dict[str, Any]]:
    """Records for versions, with the pending caveat of any pending clarification they
    depend on. A guessed interval is never presented as confirmed. A pending version whose
    only human support is attestation reads `human_attestation`, whatever the
    clarification's lifecycle state (one query for all the clarifications)."""
    pending = [v for v in versions if v.pending]
    notes: dict[str, PendingNote] = {}
    for noter in PENDING_NOTES if pending else []:
        notes.update(noter(pending))
    out = []
    for v in versions:
        note = notes.get(v.provenance.get("clarification") or "") if v.pending else None
        evidence = (note.evidence_class if note else None) or v.evidence_class
        out.append(
            {
                "id": str(v.node_id),
                "labels": v.labels,
                "properties": v.properties,
                "validFrom": v.valid_from,
                "validTo": v.valid_to,
                "txFrom": v.tx_from,
                "txTo": v.tx_to,
                "confidence": v.confidence,
                "provenance": {
                    "sourceVersionTx": v.provenance.get("sourceVersionTx"),
                    "spans": v.provenance.get("spans", []),
                    "clarification": v.provenance.get("clarification"),
                },
                "evidenceClass": evidence,
                "pendingClarification": note.caveat if note is not None else None,
            }
        )
    return out
