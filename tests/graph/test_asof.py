"""As-of semantics of the bitemporal store (architecture "Times", "Bitemporal versions"),
checked against a simple reference model, and the database constraints behind them."""

import re
from dataclasses import dataclass
from itertools import pairwise
from unittest import mock

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.models import Node, NodeVersion
from graph.selectors import node_version_as_of, node_version_visible, versions_visible
from graph.services import node_update, node_version_write

from ..factories import NodeFactory, NodeVersionFactory, TenantFactory

pytestmark = pytest.mark.django_db

BASE = 1_700_000_000_000_000


# --- the reference model ---


@dataclass
class RefVersion:
    seq: int
    tx_from: int
    tx_to: int | None
    valid_from: int | None
    valid_to: int | None
    marker: int


class Reference:
    """The spec, written as plainly as possible: a list of versions; a write at clock `c`
    happens at `max(c, previous.tx_from + 1)` and closes the previous version there."""

    def __init__(self) -> None:
        self.versions: list[RefVersion] = []

    def write(self, clock: int, valid_from: int | None, valid_to: int | None, marker: int) -> None:
        prev = self.versions[-1] if self.versions else None
        tx = clock if prev is None else max(clock, prev.tx_from + 1)
        if prev is not None:
            prev.tx_to = tx
        seq = len(self.versions) + 1
        self.versions.append(RefVersion(seq, tx, None, valid_from, valid_to, marker))

    def as_of(self, t: int) -> RefVersion | None:
        for v in self.versions:
            if v.tx_from <= t and (v.tx_to is None or t < v.tx_to):
                return v
        return None

    def visible(self, valid_at: int, tx_at: int) -> RefVersion | None:
        v = self.as_of(tx_at)
        if v is None:
            return None
        if v.valid_from is not None and valid_at < v.valid_from:
            return None
        if v.valid_to is not None and valid_at >= v.valid_to:
            return None
        return v


# --- strategies ---

# Small clock deltas make equal and backwards clock readings frequent.
clock_steps = st.one_of(
    st.just(0),  # the same clock value again
    st.integers(min_value=-5, max_value=-1),  # the clock goes backwards
    st.integers(min_value=1, max_value=5),
    st.integers(min_value=6, max_value=1_000_000),
)


@st.composite
def valid_intervals(draw):
    """[from, to) with either end open; never empty when both are given."""
    lo = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=100)))
    width = draw(st.one_of(st.none(), st.integers(min_value=1, max_value=50)))
    if width is None:
        return lo, None
    return lo, (lo if lo is not None else draw(st.integers(0, 100))) + width


writes = st.lists(st.tuples(clock_steps, valid_intervals()), min_size=1, max_size=12)


def probe_times(ref: Reference, extra: list[int]) -> list[int]:
    """Before the first version, at and around every boundary, between, after the last."""
    ts = {ref.versions[0].tx_from - 1_000, ref.versions[-1].tx_from + 1_000, *extra}
    for v in ref.versions:
        for base in (v.tx_from, v.tx_to):
            if base is not None:
                ts.update({base - 1, base, base + 1})
    return sorted(ts)


def probe_valid_times(version: RefVersion | None) -> list[int]:
    ts = {-1, 200}
    for base in (version.valid_from, version.valid_to) if version else ():
        if base is not None:
            ts.update({base - 1, base})
    return sorted(ts)


def apply(node: Node, ref: Reference, steps, start: int = BASE) -> list[NodeVersion]:
    clock = start
    written = []
    for marker, (step, (vf, vt)) in enumerate(steps):
        clock += step
        ref.write(clock, vf, vt, marker)
        with mock.patch("graph.services.now_us", return_value=clock):
            written.append(
                node_version_write(
                    node=node,
                    labels=["CONTRACT_TERM"],
                    properties={"marker": marker},
                    valid_from=vf,
                    valid_to=vt,
                    confidence=1.0,
                    provenance={},
                )
            )
    return written


def same(actual: NodeVersion | None, expected: RefVersion | None) -> bool:
    if expected is None:
        return actual is None
    return actual is not None and (
        actual.seq,
        actual.tx_from,
        actual.tx_to,
        actual.valid_from,
        actual.valid_to,
        actual.properties["marker"],
    ) == (
        expected.seq,
        expected.tx_from,
        expected.tx_to,
        expected.valid_from,
        expected.valid_to,
        expected.marker,
    )


@pytest.fixture
def tenant(db):
    return TenantFactory(slug="asof")


# --- property tests ---


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=writes, extra=st.lists(st.integers(BASE - 10, BASE + 20_000_000), max_size=5))
def test_as_of_reads_agree_with_the_reference_model(tenant, steps, extra):
    node = NodeFactory(tenant=tenant)  # a fresh node per example
    ref = Reference()
    written = apply(node, ref, steps)

    stored = list(NodeVersion.objects.filter(node=node).order_by("seq"))
    assert len(stored) == len(ref.versions)
    for actual, expected in zip(stored, ref.versions, strict=True):
        assert same(actual, expected), (actual.__dict__, expected)
    # the returned versions are the rows as written (tx_to filled in later by the DB)
    assert [w.tx_from for w in written] == [v.tx_from for v in ref.versions]

    nodes = Node.objects.filter(pk=node.pk)
    for t in probe_times(ref, extra):
        expected = ref.as_of(t)
        assert same(node_version_as_of(node_id=node.pk, tx_at=t), expected), t
        # valid times around the boundaries of the version seen at t (and one far off)
        for va in probe_valid_times(expected):
            expected_visible = ref.visible(va, t)
            actual = node_version_visible(node_id=node.pk, valid_at=va, tx_at=t)
            assert same(actual, expected_visible), (va, t)
            listed = list(versions_visible(nodes=nodes, valid_at=va, tx_at=t))
            assert [v.pk for v in listed] == ([actual.pk] if actual else []), (va, t)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=writes)
def test_transaction_times_strictly_increase_and_chain(tenant, steps):
    node = NodeFactory(tenant=tenant)
    apply(node, Reference(), steps)
    versions = list(NodeVersion.objects.filter(node=node).order_by("seq"))
    assert [v.seq for v in versions] == list(range(1, len(versions) + 1))
    assert [v.tx_to is None for v in versions].count(True) == 1
    assert versions[-1].tx_to is None
    for prev, nxt in pairwise(versions):
        assert nxt.tx_from > prev.tx_from
        assert prev.tx_to == nxt.tx_from


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=writes, valid_at=st.integers(-5, 105))
def test_current_query_agrees_with_as_of_now(tenant, steps, valid_at):
    node = NodeFactory(tenant=tenant)
    ref = Reference()
    apply(node, ref, steps)
    nodes = Node.objects.filter(pk=node.pk)
    expected = ref.visible(valid_at, ref.versions[-1].tx_from + 10**9)
    current = list(versions_visible(nodes=nodes, valid_at=valid_at, tx_at=0, current=True))
    assert [v.seq for v in current] == ([expected.seq] if expected else [])


# --- the clock rule, spelled out ---


def write_at(node: Node, clock: int, **fields) -> NodeVersion:
    with mock.patch("graph.services.now_us", return_value=clock):
        return node_version_write(
            node=node,
            labels=fields.get("labels", ["CONTRACT_TERM"]),
            properties=fields.get("properties", {}),
            valid_from=fields.get("valid_from"),
            valid_to=fields.get("valid_to"),
            confidence=1.0,
            provenance={},
        )


def test_same_clock_value_bumps_by_one_microsecond(tenant):
    node = NodeFactory(tenant=tenant)
    first = write_at(node, BASE)
    second = write_at(node, BASE)
    third = write_at(node, BASE)
    assert (first.tx_from, second.tx_from, third.tx_from) == (BASE, BASE + 1, BASE + 2)
    first.refresh_from_db()
    assert first.tx_to == BASE + 1


def test_backwards_clock_still_moves_forward(tenant):
    node = NodeFactory(tenant=tenant)
    write_at(node, BASE)
    second = write_at(node, BASE - 5_000_000)
    assert second.tx_from == BASE + 1
    assert node_version_as_of(node_id=node.pk, tx_at=BASE - 1) is None
    assert node_version_as_of(node_id=node.pk, tx_at=BASE).seq == 1
    assert node_version_as_of(node_id=node.pk, tx_at=BASE + 1).seq == 2


def test_as_of_boundaries_are_half_open(tenant):
    node = NodeFactory(tenant=tenant)
    write_at(node, BASE, valid_from=10, valid_to=20)
    write_at(node, BASE + 100, valid_from=15, valid_to=None)
    assert node_version_as_of(node_id=node.pk, tx_at=BASE + 99).seq == 1
    assert node_version_as_of(node_id=node.pk, tx_at=BASE + 100).seq == 2
    assert node_version_visible(node_id=node.pk, valid_at=10, tx_at=BASE).seq == 1
    assert node_version_visible(node_id=node.pk, valid_at=9, tx_at=BASE) is None
    assert node_version_visible(node_id=node.pk, valid_at=20, tx_at=BASE) is None
    assert node_version_visible(node_id=node.pk, valid_at=10**12, tx_at=BASE + 100).seq == 2


def test_node_update_keeps_everything_but_the_changes(tenant):
    node = NodeFactory(tenant=tenant)
    write_at(node, BASE, labels=["A"], properties={"x": 1}, valid_from=1, valid_to=9)
    with mock.patch("graph.services.now_us", return_value=BASE + 5):
        v2 = node_update(node=node, valid_to=7, pending=True)
    assert (v2.labels, v2.properties, v2.valid_from, v2.valid_to, v2.pending, v2.seq) == (
        ["A"],
        {"x": 1},
        1,
        7,
        True,
        2,
    )
    with pytest.raises(TypeError):
        node_update(node=node, colour="red")
    assert NodeVersion.objects.filter(node=node).count() == 2


def test_a_node_with_no_versions_is_never_visible(tenant):
    node = NodeFactory(tenant=tenant)
    assert node_version_as_of(node_id=node.pk, tx_at=BASE) is None
    assert node_version_visible(node_id=node.pk, valid_at=0, tx_at=BASE) is None


# --- the as-of SQL form (architecture "Bitemporal versions") ---

# `tx_to IS NULL OR tx_to > T` (or the reverse order): the filter that scans a history.
TX_TO_OR = re.compile(r'"tx_to"\s+IS\s+NULL\s+OR|\bOR\s+[\w."]*"tx_to"\s*>', re.IGNORECASE)
AS_OF_PROBE = re.compile(
    r'"tx_from"\s*<=\s*\d+.*ORDER BY\s+[\w."]*"tx_from"\s+DESC\s+LIMIT\s+1',
    re.IGNORECASE | re.DOTALL,
)


def version_sql(run) -> list[str]:
    """The SQL of the statements on node versions that `run()` executes."""
    with CaptureQueriesContext(connection) as ctx:
        run()
    return [q["sql"] for q in ctx.captured_queries if "graph_nodeversion" in q["sql"]]


def assert_as_of_form(statements: list[str]) -> None:
    assert statements, "no statement read node versions"
    for sql in statements:
        assert not TX_TO_OR.search(sql), sql
        assert AS_OF_PROBE.search(sql), sql


def test_single_node_as_of_read_is_one_index_probe(tenant):
    node = NodeFactory(tenant=tenant)
    for i in range(3):
        write_at(node, BASE + i * 10)
    statements = version_sql(
        lambda: node_version_visible(node_id=node.pk, valid_at=0, tx_at=BASE + 15)
    )
    assert len(statements) == 1
    assert_as_of_form(statements)


def test_query_as_of_read_picks_each_nodes_version_by_a_correlated_probe(tenant):
    nodes = [NodeFactory(tenant=tenant) for _ in range(3)]
    for n, node in enumerate(nodes):
        for i in range(n + 2):
            write_at(node, BASE + i * 10, properties={"marker": i})
    qs = Node.objects.filter(tenant=tenant)
    found: list[NodeVersion] = []
    statements = version_sql(
        lambda: found.extend(versions_visible(nodes=qs, valid_at=0, tx_at=BASE + 15))
    )
    assert_as_of_form(statements)
    assert sorted(v.properties["marker"] for v in found) == [1, 1, 1]
    # the current-version form is the partial index, also without an OR over tx_to
    current = version_sql(
        lambda: list(versions_visible(nodes=qs, valid_at=0, tx_at=0, current=True))
    )
    assert current and not any(TX_TO_OR.search(sql) for sql in current)


# --- database constraints ---


def refused(**fields) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        NodeVersionFactory(**fields)


def test_one_current_version_per_node(tenant):
    node = NodeFactory(tenant=tenant)
    NodeVersionFactory(node=node, seq=1, tx_from=BASE, tx_to=None)
    refused(node=node, seq=2, tx_from=BASE + 1, tx_to=None)
    # a closed version beside the current one is fine
    NodeVersionFactory(node=node, seq=2, tx_from=BASE - 10, tx_to=BASE)
    assert NodeVersion.objects.filter(node=node, tx_to__isnull=True).count() == 1


def test_another_node_may_have_its_own_current_version(tenant):
    a, b = NodeFactory(tenant=tenant), NodeFactory(tenant=tenant)
    NodeVersionFactory(node=a, tx_to=None)
    NodeVersionFactory(node=b, tx_to=None)
    assert NodeVersion.objects.filter(tx_to__isnull=True).count() == 2


@pytest.mark.parametrize("tx_to", [BASE, BASE - 1])
def test_tx_to_must_be_after_tx_from(tenant, tx_to):
    refused(node=NodeFactory(tenant=tenant), tx_from=BASE, tx_to=tx_to)


@pytest.mark.parametrize("valid_to", [100, 99])
def test_valid_to_must_be_after_valid_from(tenant, valid_to):
    refused(node=NodeFactory(tenant=tenant), valid_from=100, valid_to=valid_to)


def test_open_valid_ends_are_allowed(tenant):
    node = NodeFactory(tenant=tenant)
    NodeVersionFactory(node=node, seq=1, tx_from=BASE, tx_to=BASE + 1, valid_from=None, valid_to=5)
    NodeVersionFactory(node=node, seq=2, tx_from=BASE + 1, valid_from=5, valid_to=None)


def test_seq_is_unique_per_node(tenant):
    node = NodeFactory(tenant=tenant)
    NodeVersionFactory(node=node, seq=1, tx_from=BASE, tx_to=BASE + 1)
    refused(node=node, seq=1, tx_from=BASE + 1)


def test_tx_from_is_unique_per_node(tenant):
    node = NodeFactory(tenant=tenant)
    NodeVersionFactory(node=node, seq=1, tx_from=BASE, tx_to=BASE + 1)
    refused(node=node, seq=2, tx_from=BASE)


def test_fact_identity_is_unique_per_source_and_key(tenant):
    node = NodeFactory(tenant=tenant)
    with pytest.raises(IntegrityError), transaction.atomic():
        Node.objects.create(tenant=tenant, source=node.source, key=node.key)


def test_sourceless_node_key_is_unique_per_tenant(tenant):
    Node.objects.create(tenant=tenant, source=None, key="email:x@example.test")
    with pytest.raises(IntegrityError), transaction.atomic():
        Node.objects.create(tenant=tenant, source=None, key="email:x@example.test")
