"""The record shape of facts (CONTRACT §3.3)."""

from typing import Any

from clarify.selectors import clarifications_for_versions, is_attestation_only, pending_caveat
from telha.graph.models import EvidenceClass, NodeVersion


def render_records(versions: list[NodeVersion]) -> list[dict[str, Any]]:
    """Records for versions, with the pending caveat of any pending clarification they
    depend on. A guessed interval is never presented as confirmed. A pending version whose
    only human support is attestation reads `human_attestation`, whatever the
    clarification's lifecycle state (one query for all the clarifications)."""
    clarifications = clarifications_for_versions(v for v in versions if v.pending)
    out = []
    for v in versions:
        clar = clarifications.get(v.provenance.get("clarification") or "") if v.pending else None
        evidence = v.evidence_class
        if clar is not None and is_attestation_only(clar):
            evidence = EvidenceClass.HUMAN_ATTESTATION
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
                "pendingClarification": pending_caveat(clar) if clar is not None else None,
            }
        )
    return out
