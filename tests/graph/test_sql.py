"""`VERSIONS_CLOSE_SQL` (graph.sql), the literal statement every version write
closes the current versions with, writes what the ORM query it replaces writes."""

import pytest
from django.db import transaction

from graph.models import NodeVersion
from graph.sql import versions_close

from ..factories import NodeFactory, NodeVersionFactory

pytestmark = pytest.mark.django_db

TX = 1_800_000_000_000_000


def _after(close):
    """(how many closed, every version row) after `close()`; rolled back."""
    with transaction.atomic():
        count = close()
        rows = list(NodeVersion.objects.order_by("pk").values())
        transaction.set_rollback(True)
    return count, rows


@pytest.mark.parametrize("how_many", [1, 3])
def test_closes_what_the_orm_query_closes(how_many):
    current = [NodeVersionFactory(node=NodeFactory()) for _ in range(how_many)]
    closed = NodeVersionFactory(node=current[0].node, seq=0, tx_from=1, tx_to=5)
    untouched = NodeVersionFactory(node=NodeFactory())
    pks = [v.pk for v in current] + [closed.pk]

    orm = _after(
        lambda: NodeVersion.objects.filter(pk__in=pks, tx_to__isnull=True).update(tx_to=TX)
    )
    literal = _after(lambda: versions_close(pks, TX))

    assert orm[0] == how_many
    assert literal == orm
    assert NodeVersion.objects.get(pk=untouched.pk).tx_to is None


def test_nothing_to_close_runs_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert versions_close([], TX) == 0
