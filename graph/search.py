"""Full-text search over fact versions: their property values (names included) and the
text of the spans they were extracted from — `NodeVersion.search_text`, written with
every version (`services.search_text_for`). Labels are not searched (a label such as
CONTRACT_TERM would match every question about a "term"); they are filtered on as labels.

The index is the database's own, derived from that column so it can never drift:

* PostgreSQL: a stored generated `tsvector` column (`to_tsvector('english', search_text)`)
  with a GIN index; queries are `websearch_to_tsquery` ranked by `ts_rank`, through
  `django.contrib.postgres.search`.
* SQLite (the embedded default): an FTS5 external-content table over the same column
  (porter stemmer), kept in step by triggers; ranked by `bm25`.

Both stem and fold case ("Zephyr leases" finds "zephyr lease"), keep numbers, and are
applied to a queryset the caller has already restricted to what the asker may read
(`selectors.readable_nodes`): the search narrows and orders, it never widens.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import F, QuerySet, Value
from django.db.models.expressions import RawSQL

from .models import NodeVersion
from .sql import PG_COLUMN as PG_VECTOR_COLUMN
from .sql import fts_ids as _fts_ids
from .sql import fts_ranked

PG_CONFIG = "english"
# English function words, dropped from every query on both databases (PostgreSQL's
# `english` configuration drops them from documents; FTS5 keeps them, so a query naming
# one would otherwise demand it).
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "so",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
    ]
)
# A question word is a search term of letters and digits only: nothing of it can be
# read as an operator of either query syntax.
_TERM = re.compile(r"[^\W_]+")
# Rows read to correct a misspelt term (the readable facts sharing its first letters).
_TYPO_SAMPLE = 200
_TYPO_CUTOFF = 0.75


def search_terms(text: str) -> list[str]:
    """The words of `text` a search looks for: lower-cased, in order, without repeats
    and without English function words."""
    words = _TERM.findall(text.lower())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


def matching(versions: QuerySet[NodeVersion], terms: Sequence[str]) -> QuerySet[NodeVersion]:
    """The versions of `versions` matching every term (unordered)."""
    if connection.vendor == "postgresql":
        query = _pg_query(terms, any_term=False)
        return versions.annotate(search_doc=_pg_vector()).filter(search_doc=query)
    return versions.filter(pk__in=_fts_ids(_fts_match(terms, any_term=False)))


def versions_search(
    versions: QuerySet[NodeVersion], text: str, *, limit: int, order: str = "relevance"
) -> list[NodeVersion]:
    """The versions of `versions` matching every word of `text` (stemmed, any case),
    the most relevant first (`order="relevance"`, ties by node id) or by node id
    (`order="id"`), at most `limit`. A text of function words only matches nothing."""
    terms = search_terms(text)
    if not terms:
        return []
    if order == "id":
        return list(matching(versions, terms).order_by("node_id")[:limit])
    ids = [pk for pk, _ in ranked(versions, terms, any_term=False, limit=limit)]
    by_id = NodeVersion.objects.in_bulk(ids)
    return [by_id[pk] for pk in ids]


def _pg_query(terms: Sequence[str], *, any_term: bool) -> Any:
    from django.contrib.postgres.search import SearchQuery

    joiner = " or " if any_term else " "
    return SearchQuery(joiner.join(terms), search_type="websearch", config=PG_CONFIG)


def _pg_vector() -> Any:
    from django.contrib.postgres.search import SearchVectorField

    table = connection.ops.quote_name(NodeVersion._meta.db_table)
    column = connection.ops.quote_name(PG_VECTOR_COLUMN)
    return RawSQL(f"{table}.{column}", [], output_field=SearchVectorField())


def _fts_match(terms: Sequence[str], *, any_term: bool, prefix: bool = False) -> str:
    star = "*" if prefix else ""
    return (" OR " if any_term else " ").join(f'"{t}"{star}' for t in terms)


def ranked(
    versions: QuerySet[NodeVersion], terms: Sequence[str], *, any_term: bool, limit: int
) -> list[tuple[int, float]]:
    """`(version id, rank)` of the versions in `versions` matching every term (or, with
    `any_term`, at least one), best first (ties by node id), at most `limit`. A larger
    rank is a better match; ranks compare only within one call."""
    if not terms:
        return []
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchRank

        query = _pg_query(terms, any_term=any_term)
        # Normalization 1 divides by 1 + log(length): a short fact that is all about the
        # words outranks a long one mentioning them once (as bm25 does on SQLite).
        rows = (
            versions.annotate(search_doc=_pg_vector())
            .filter(search_doc=query)
            .annotate(search_rank=SearchRank(F("search_doc"), query, normalization=Value(1)))
            .order_by("-search_rank", "node_id")
            .values_list("pk", "search_rank")[:limit]
        )
        return [(pk, float(rank)) for pk, rank in rows]
    inner, params = versions.order_by().values("pk").query.sql_with_params()
    return fts_ranked(_fts_match(terms, any_term=any_term), inner, params, limit)


def matches_any(versions: QuerySet[NodeVersion], term: str) -> bool:
    """Whether some version of `versions` matches `term` (an index probe; nothing is
    ranked)."""
    return matching(versions, [term]).exists()


def _prefixed_texts(versions: QuerySet[NodeVersion], prefix: str) -> list[str]:
    """The search text of up to `_TYPO_SAMPLE` versions having a word that starts with
    `prefix`, through the index."""
    found: QuerySet[NodeVersion]
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery

        query = SearchQuery(f"{prefix}:*", search_type="raw", config="simple")
        found = versions.annotate(search_doc=_pg_vector()).filter(search_doc=query)
    else:
        found = versions.filter(pk__in=_fts_ids(_fts_match([prefix], any_term=False, prefix=True)))
    return list(found.order_by("node_id").values_list("search_text", flat=True)[:_TYPO_SAMPLE])


def corrected(versions: QuerySet[NodeVersion], term: str) -> str | None:
    """The word of the readable facts closest to a term no readable fact matches (a
    misspelling: "zepyhr" → "zephyr"), looked for among the facts sharing its first
    letters; None if none is close. Only `versions` are read, so a correction never
    comes from a fact the asker may not read."""
    if len(term) < 4 or term.isdigit():
        return None
    words: set[str] = set()
    for text in _prefixed_texts(versions, term[: 3 if len(term) >= 6 else 2]):
        words.update(w for w in _TERM.findall(text) if len(w) >= 3 and not w.isdigit())
    words.discard(term)
    close = difflib.get_close_matches(term, sorted(words), n=1, cutoff=_TYPO_CUTOFF)
    return close[0] if close else None
