"""Facts detection wrote in an earlier shape, carried into the current one with their
history (used by data migrations, so every model is passed in: the migration's
historical models, or the live ones in tests).

`signature` (`SIGNATURE_DATE`) became `date` (`DOCUMENT_DATE`, CONTRACT §2.2): the day a
document was made or signed. A source detected before keeps its `signature` node; the
next ingest writes `date`. `signature_dates_rekey` makes them one fact:

* a source with a `signature` node and no `date` node: the node is re-keyed `date`, its
  versions untouched (their labels say SIGNATURE_DATE: what was recorded then); the next
  ingest appends the DOCUMENT_DATE version to the same history;
* a source re-ingested before this ran, so holding both: the `date` node takes the
  `signature` node's history before its own — the old node's last version closed when
  the `date` node's first was recorded, its versions numbered first — and its questions
  and edges; the old node goes. As of any earlier transaction time the same belief is
  visible as before, now under `date`.

Only nodes detection wrote are touched: key `signature` on a source, SIGNATURE_DATE
among the labels of a version."""

from typing import Any

OLD_KEY, NEW_KEY = "signature", "date"
OLD_LABEL = "SIGNATURE_DATE"
_SEQ_SHIFT = 1_000_000  # renumbering in two steps: no (node, seq) pair repeats midway


def _detected(node_versions: Any, node: Any) -> bool:
    labels = node_versions.filter(node=node).values_list("labels", flat=True)
    return any(OLD_LABEL in (row or []) for row in labels)


def signature_dates_rekey(
    *, node_model: Any, version_model: Any, clarification_model: Any, edge_model: Any
) -> dict[str, int]:
    """Carry every detected `signature` node into `date` (see the module). Returns
    {"rekeyed": n, "merged": n}."""
    done = {"rekeyed": 0, "merged": 0}
    old_nodes = node_model.objects.filter(key=OLD_KEY, source__isnull=False).order_by("pk")
    for old in old_nodes:
        if not _detected(version_model.objects, old):
            continue
        new = node_model.objects.filter(
            tenant_id=old.tenant_id, source_id=old.source_id, key=NEW_KEY
        ).first()
        if new is None or not version_model.objects.filter(node=new).exists():
            if new is not None:
                new.delete()  # a node without a version holds nothing
            old.key = NEW_KEY
            old.save(update_fields=["key"])
            done["rekeyed"] += 1
        elif _merge(old, new, version_model, clarification_model, edge_model):
            done["merged"] += 1
    return done


def _merge(old: Any, new: Any, versions: Any, clarifications: Any, edges: Any) -> bool:
    """The old node's history put before the new node's (see the module). False, and
    nothing changed, when the two histories overlap (the old one written after the new
    one began): then they are not one fact told twice."""
    first_new = versions.objects.filter(node=new).order_by("tx_from").first()
    old_versions = versions.objects.filter(node=old)
    if old_versions.filter(tx_from__gte=first_new.tx_from).exists():
        return False
    last_seq = max(old_versions.values_list("seq", flat=True))
    old_versions.filter(tx_to__isnull=True).update(tx_to=first_new.tx_from)
    new_versions = versions.objects.filter(node=new)
    for version in new_versions.order_by("-seq"):
        version.seq += _SEQ_SHIFT
        version.save(update_fields=["seq"])
    for version in versions.objects.filter(node=new).order_by("seq"):
        version.seq = version.seq - _SEQ_SHIFT + last_seq
        version.save(update_fields=["seq"])
    old_versions.update(node=new)
    clarifications.objects.filter(target=old).update(target=new)
    for edge in edges.objects.filter(from_node=old):
        twin = edges.objects.filter(from_node=new, to_node_id=edge.to_node_id, type=edge.type)
        if not twin.exists():
            edges.objects.filter(pk=edge.pk).update(from_node=new)
    for edge in edges.objects.filter(to_node=old):
        twin = edges.objects.filter(from_node_id=edge.from_node_id, to_node=new, type=edge.type)
        if not twin.exists():
            edges.objects.filter(pk=edge.pk).update(to_node=new)
    old.delete()
    return True
