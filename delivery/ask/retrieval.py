"""The evidence that answers a question (ask-in-chat): full-text search over the facts
the asker may read (`graph.search`), the period filter of time questions, and the
choice of what is kept — the best match decides; others stay only when nearly as
relevant; among those, unrestricted evidence is preferred: restricted evidence as (or
nearly as) relevant as an unrestricted match is left out.

Reads only: the caller hands in the nodes the asker may read (`readable_nodes`, the one
read rule), so nothing here can widen what a person sees.
"""

from dataclasses import dataclass, field

from django.db.models import Q, QuerySet

from graph.models import Node, NodeVersion
from graph.search import corrected, matches_any, matching, ranked

from .questions import END, START, Question

MAX_EVIDENCE = 3
# Ranked matches read per question: the best and those nearly as relevant are kept.
MAX_RANKED = 20
# "Nearly as relevant": a match kept beside the best has at least this share of its rank.
NEAR_BEST = 0.8
# Facts a period question ("what ends in 2031?") reads, in date order.
MAX_LISTED = 50


@dataclass
class Found:
    """The versions kept, best (or earliest) first; `listed`: a period question's list
    (every match counts: `total` of them, or more than that with `more`), not one
    answer."""

    versions: list[NodeVersion] = field(default_factory=list)
    listed: bool = False
    total: int = 0
    more: bool = False


# The versions `restricted` is false for, as a query.
UNRESTRICTED = (
    Q(node__source__isnull=True)
    | Q(node__source__restriction__isnull=True)
    | Q(node__source__restriction="")
)


def restricted(v: NodeVersion) -> bool:
    source = v.node.source
    return source is not None and bool(source.restriction)


def candidates(readable: QuerySet[Node], question: Question) -> QuerySet[NodeVersion]:
    """The transaction-current versions (`tx_to IS NULL`: what is believed now) of the
    readable facts (never a PERSON node) that the question's period admits (`in_period`).
    Valid time is only ever compared with the asked period: a fact valid in the past or
    in the future is found as surely as one valid today, and the time of asking plays no
    part (it only resolves "next year" when the question is read)."""
    versions = NodeVersion.objects.filter(node__in=readable, tx_to__isnull=True).exclude(
        labels__icontains='"PERSON"'
    )
    if question.period is None:
        return versions
    return versions.filter(in_period(question))


def in_period(question: Question) -> Q:
    """The versions whose valid interval `[valid_from, valid_to)` relates to the asked
    period `[first, after)` as the question asks: starting in it (a start question),
    ending in it (an end question: `valid_to`, the date the fact ends on, in the period)
    or, neither asked, overlapping it — a version with no dates at all is in no period.
    Each is a range on one column (served by the partial indexes on the current
    versions' `valid_from` and `valid_to`)."""
    if question.period is None:
        return Q()
    first, after = question.period
    if question.edge == START:
        return Q(valid_from__gte=first, valid_from__lt=after)
    if question.edge == END:
        return Q(valid_to__gte=first, valid_to__lt=after)
    dated = Q(valid_from__isnull=False) | Q(valid_to__isnull=False)
    starts_before_the_end = Q(valid_from__isnull=True) | Q(valid_from__lt=after)
    ends_after_the_start = Q(valid_to__isnull=True) | Q(valid_to__gt=first)
    return dated & starts_before_the_end & ends_after_the_start


def _spelled(versions: QuerySet[NodeVersion], terms: tuple[str, ...]) -> list[str]:
    """The terms as the readable facts spell them: a term no readable fact matches is
    replaced by the closest word they contain ("zepyhr" → "zephyr"), or dropped. When
    as many terms are dropped as kept, nothing is left: the question is about something
    the asker cannot read (or that does not exist), and answering its leftover generic
    words ("term") would be a confident wrong answer."""
    kept: list[str] = []
    dropped = 0
    for term in terms:
        if matches_any(versions, term):
            kept.append(term)
        elif (fixed := corrected(versions, term)) is not None:
            kept.append(fixed)
        elif term.isdigit():
            return []  # a number names one fact ("lease term 517"): never another one
        else:
            dropped += 1
    return list(dict.fromkeys(kept)) if len(kept) > dropped else []


def _hits(
    versions: QuerySet[NodeVersion], terms: tuple[str, ...], *, relax: bool, limit: int
) -> list[tuple[int, float]]:
    """Ranked `(version id, rank)`: every term matched; else with misspelt or unknown
    terms corrected or dropped; else (with `relax`) any of them, ranked."""
    hits = ranked(versions, terms, any_term=False, limit=limit)
    if hits:
        return hits
    spelled = _spelled(versions, terms)
    if spelled and spelled != list(terms):
        hits = ranked(versions, spelled, any_term=False, limit=limit)
    if not hits and relax and len(spelled) > 1:
        hits = ranked(versions, spelled, any_term=True, limit=limit)
    return hits


def _loaded(ids: list[int]) -> list[NodeVersion]:
    by_id = NodeVersion.objects.select_related("node__source").in_bulk(ids)
    return [by_id[pk] for pk in ids if pk in by_id]


def _unrestricted_first(versions: list[NodeVersion]) -> list[NodeVersion]:
    """The evidence kept of the best and nearly-as-relevant `versions`: the unrestricted
    ones whenever there is one, so a readable fact as relevant as a restricted one (a tie,
    or within NEAR_BEST) is the answer, never the teaser, whatever order the tie came in;
    restricted evidence stays only when every near-best match is restricted."""
    unrestricted = [v for v in versions if not restricted(v)]
    return unrestricted or versions


def _date_order(question: Question) -> list[str]:
    return ["valid_to" if question.edge == END else "valid_from", "node_id"]


def _listed(versions: QuerySet[NodeVersion], question: Question) -> Found:
    """A period question: every readable fact in the period that matches its words (all
    of them in the period without words), in date order; `more` when over MAX_LISTED."""
    if question.terms:
        spelled = list(question.terms)
        if not matching(versions, spelled).exists():
            spelled = _spelled(versions, question.terms)
        if not spelled:
            return Found(listed=True)
        versions = matching(versions, spelled)
    ordered = versions.select_related("node__source").order_by(*_date_order(question))
    # The count is of the facts listed: the unrestricted ones when there are any (`more`:
    # more than MAX_LISTED of those), else the restricted ones (the chat's teaser).
    found = list(ordered.filter(UNRESTRICTED)[: MAX_LISTED + 1]) or list(ordered[: MAX_LISTED + 1])
    kept = found[:MAX_LISTED]
    return Found(kept[:MAX_EVIDENCE], listed=True, total=len(kept), more=len(found) > MAX_LISTED)


def evidence_for(readable: QuerySet[Node], question: Question) -> Found:
    """The evidence answering `question` among the `readable` nodes' facts."""
    versions = candidates(readable, question)
    if question.period is not None:
        return _listed(versions, question)
    if not question.terms:
        return Found()
    hits = _hits(versions, question.terms, relax=True, limit=MAX_RANKED)
    if not hits:
        return Found()
    best = hits[0][1]
    near = [pk for pk, rank in hits if rank >= NEAR_BEST * best]
    kept = _unrestricted_first(_loaded(near))
    return Found(kept[:MAX_EVIDENCE], total=len(kept))
