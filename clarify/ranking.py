"""Who to ask, derived from the graph (spec §3.2; architecture page `rank_candidates`)."""

import uuid
from typing import Any

from django.db.models import Q

from graph.models import Edge, Node
from tenancy.models import Rights

AUTHORITY_RANKS: tuple[tuple[str, ...], ...] = (
    ("AUTHORED_BY", "SENT_BY", "LAST_MODIFIED_BY"),
    ("MENTIONS", "NAMES", "TO", "CC"),
    ("OWNED_BY",),
)
_RANK_OF = {edge_type: rank for rank, types in enumerate(AUTHORITY_RANKS) for edge_type in types}


def rank_candidates(*, target: Node, max_candidates: int) -> list[uuid.UUID]:
    """Person ids to ask about `target`, best first.

    Depth-1 neighbours in both directions over authority edges, people only (PERSON nodes
    resolved to a person of the tenant), each kept at their best rank, first-seen order
    inside a rank, stewards and deprovisioned people never included, capped at
    `max_candidates`. One query, whatever the node's degree."""
    return rank_candidates_many(targets=[target.pk], max_candidates=max_candidates)[target.pk]


def rank_candidates_many(
    *, targets: list[uuid.UUID], max_candidates: int
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """`rank_candidates` of several target nodes: `{target id: person ids}`. One query,
    whatever the number of targets and their degree."""
    wanted = set(targets)
    rows = (
        Edge.objects.filter(
            Q(from_node__in=wanted) | Q(to_node__in=wanted), type__in=list(_RANK_OF)
        )
        .order_by("id")
        .values_list(
            "type",
            "from_node_id",
            "from_node__person_id",
            "from_node__person__role",
            "from_node__person__erased_at",
            "from_node__person__deactivated_at",
            "to_node_id",
            "to_node__person_id",
            "to_node__person__role",
            "to_node__person__erased_at",
            "to_node__person__deactivated_at",
        )
    )
    best: dict[uuid.UUID, dict[uuid.UUID, tuple[int, int]]] = {t: {} for t in wanted}
    for order, row in enumerate(rows):
        edge_type, from_id, to_id = row[0], row[1], row[6]
        # each end that is a target, with the person at the other end
        ends: list[tuple[Any, tuple[Any, ...]]] = [(from_id, row[7:11]), (to_id, row[2:6])]
        for target, (person, role, erased, gone) in ends:
            if target not in wanted or person is None or erased is not None:
                continue
            if gone is not None or role == Rights.STEWARD:
                continue
            key = (_RANK_OF[edge_type], order)
            if person not in best[target] or key < best[target][person]:
                best[target][person] = key
    return {
        target: sorted(found, key=lambda p: found[p])[: max(0, max_candidates)]
        for target, found in best.items()
    }
