"""The record shape of facts (CONTRACT §3.3)."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graph.models import Node, NodeVersion


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


def record_sources(versions: list[NodeVersion]) -> dict[Any, dict[str, str] | None]:
    """`{node id: {system, externalId, title}}`: the document each version's node comes
    from — a fact's source, else (a PERSON node a document first named) that document,
    else None (a known person's node, which no document stands behind). One query for all
    the versions, whatever their number."""
    rows = Node.objects.filter(pk__in={v.node_id for v in versions}).values_list(
        "pk",
        "source__system",
        "source__external_id",
        "source__title",
        "origin__system",
        "origin__external_id",
        "origin__title",
    )
    out: dict[Any, dict[str, str] | None] = {}
    for pk, system, external_id, title, o_system, o_external_id, o_title in rows:
        if system is None and o_system is not None:
            system, external_id, title = o_system, o_external_id, o_title
        out[pk] = (
            {"system": system, "externalId": external_id, "title": title}
            if system is not None
            else None
        )
    return out


def render_records(versions: list[NodeVersion]) -> list[dict[str, Any]]:
    """Records for versions, with the document each comes from (`source`) and the pending
    caveat of any pending clarification they depend on. A guessed interval is never
    presented as confirmed. A pending version whose only human support is attestation
    reads `human_attestation`, whatever the clarification's lifecycle state. The queries
    do not grow with the number of versions (one for the sources, one for all the
    clarifications)."""
    if not versions:
        return []
    sources = record_sources(versions)
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
                "source": sources.get(v.node_id),
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
