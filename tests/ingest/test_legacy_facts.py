"""Facts detected in the earlier shape (issue 30 item 2): a source's `signature`
(SIGNATURE_DATE) fact becomes its `date` (DOCUMENT_DATE) fact with its history — re-keyed,
so the next ingest appends the new shape to it, or merged into the `date` node a
re-ingest already wrote beside it — and never stays current beside it."""

import io
import json
import os
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from clarify.models import Clarification
from graph.models import Edge, Node, NodeVersion
from graph.services import node_update
from ingest.legacy import signature_dates_rekey

pytestmark = pytest.mark.django_db

MTIME = datetime(2026, 9, 1, 12, tzinfo=UTC).timestamp()
LEASE = (
    "LEASE AGREEMENT\n\nThis Lease Agreement is made on 4 March 2025 between Harbour Lofts "
    "Ltd. and Tamsin Reed.\n\nThe Tenant shall pay rent monthly in advance.\n"
)


@pytest.fixture
def lease(tmp_path, monkeypatch):
    path = tmp_path / "leases" / "loft.txt"
    path.parent.mkdir()
    path.write_text(LEASE)
    os.utime(path, (MTIME, MTIME))
    monkeypatch.chdir(tmp_path)
    return path


def ingest(path) -> dict:
    out = io.StringIO()
    call_command("ingest", str(path), "--tenant", "acme", "--json", stdout=out)
    return json.loads(out.getvalue())


def rekey() -> dict[str, int]:
    return signature_dates_rekey(
        node_model=Node,
        version_model=NodeVersion,
        clarification_model=Clarification,
        edge_model=Edge,
    )


def as_before_the_change(node: Node) -> None:
    """The fact as detection wrote it before DOCUMENT_DATE: key `signature`."""
    node.key = "signature"
    node.save(update_fields=["key"])
    NodeVersion.objects.filter(node=node).update(labels=["SIGNATURE_DATE"])


def history(node: Node) -> list[tuple[int, list[str], bool]]:
    return [
        (v.seq, v.labels, v.tx_to is None)
        for v in NodeVersion.objects.filter(node=node).order_by("seq")
    ]


def edit(path, line: str) -> None:
    path.write_text(path.read_text() + line)
    os.utime(path, (MTIME, MTIME))


def test_an_old_signature_fact_is_rekeyed_and_the_next_ingest_supersedes_it(workspace, lease):
    ingest(lease)
    old = Node.objects.get(key="date")
    as_before_the_change(old)
    before = NodeVersion.objects.get(node=old)
    assert rekey() == {"rekeyed": 1, "merged": 0}
    node = Node.objects.get(pk=old.pk)
    assert node.key == "date"
    assert history(node) == [(1, ["SIGNATURE_DATE"], True)]  # history untouched
    edit(lease, "Keys are returned on leaving.\n")
    ingest(lease)
    assert not Node.objects.filter(key="signature").exists()
    assert Node.objects.filter(key="date").count() == 1
    assert history(node) == [(1, ["SIGNATURE_DATE"], False), (2, ["DOCUMENT_DATE"], True)]
    closed = NodeVersion.objects.get(pk=before.pk)
    current = NodeVersion.objects.get(node=node, tx_to__isnull=True)
    assert closed.tx_to == current.tx_from and closed.valid_from == current.valid_from


def test_a_source_already_holding_both_keeps_one_fact_with_the_old_history_first(workspace, lease):
    ingest(lease)
    old = Node.objects.get(key="date")
    as_before_the_change(old)
    node_update(node=old, confidence=0.8)  # a second version of the old fact
    edit(lease, "Keys are returned on leaving.\n")
    ingest(lease)  # as the ingest did before this fix: `date` beside `signature`
    new = Node.objects.get(key="date")
    first_new = NodeVersion.objects.get(node=new).tx_from
    assert rekey() == {"rekeyed": 0, "merged": 1}
    assert not Node.objects.filter(pk=old.pk).exists()
    assert history(new) == [
        (1, ["SIGNATURE_DATE"], False),
        (2, ["SIGNATURE_DATE"], False),
        (3, ["DOCUMENT_DATE"], True),
    ]
    versions = list(NodeVersion.objects.filter(node=new).order_by("seq"))
    assert versions[1].tx_to == first_new == versions[2].tx_from  # no gap, no overlap
    assert rekey() == {"rekeyed": 0, "merged": 0}  # run twice: nothing left to do


def test_a_signature_fact_submitted_by_a_client_is_left_alone(workspace, lease):
    ingest(lease)
    node = Node.objects.get(key="date")
    node.key = "signature"
    node.save(update_fields=["key"])  # its labels are DOCUMENT_DATE: not detection's old shape
    assert rekey() == {"rekeyed": 0, "merged": 0}
    assert Node.objects.get(pk=node.pk).key == "signature"
