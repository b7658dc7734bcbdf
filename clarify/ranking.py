"""Who to ask, derived from the graph (spec §3.2; architecture page `rank_candidates`)."""

import uuid

from django.db.models import Q

from telha.graph.models import Edge, Node
from telha.tenancy.models import Rights

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
    rows = (
        Edge.objects.filter(Q(from_node=target) | Q(to_node=target), type__in=list(_RANK_OF))
        .order_by("id")
        .values_list(
            "type",
            "from_node_id",
            "from_node__person_id",
            "from_node__person__role",
            "from_node__person__erased_at",
            "from_node__person__deactivated_at",
            "to_node__person_id",
            "to_node__person__role",
            "to_node__person__erased_at",
            "to_node__person__deactivated_at",
        )
    )
    best: dict[uuid.UUID, tuple[int, int]] = {}
    for order, row in enumerate(rows):
        (
            edge_type,
            from_id,
            f_person,
            f_role,
            f_erased,
            f_gone,
            t_person,
            t_role,
            t_erased,
            t_gone,
        ) = row
        if from_id == target.pk:
            person, role, erased, gone = t_person, t_role, t_erased, t_gone
        else:
            person, role, erased, gone = f_person, f_role, f_erased, f_gone
        if person is None or erased is not None or gone is not None or role == Rights.STEWARD:
            continue
        key = (_RANK_OF[edge_type], order)
        if person not in best or key < best[person]:
            best[person] = key
    ranked = sorted(best, key=lambda p: best[p])
    return ranked[: max(0, max_candidates)]
