"""Full-text search over fact versions (graph.search).

1. Backfill: every version's `search_text` is recomputed as `search_text_for` now
   writes it: its property values and the text of the spans it cites (no labels).
2. The index, derived from `search_text` by the database: on PostgreSQL a stored
   generated tsvector column with a GIN index (adding it computes it for every row); on
   SQLite an FTS5 external-content table, its triggers and a rebuild.
"""

from typing import Any

from django.db import migrations

from graph.sql import fts_drop, fts_install


def _backfill_search_text(apps: Any, schema_editor: Any) -> None:
    from graph.services import cited_text, search_text_for

    NodeVersion = apps.get_model("graph", "NodeVersion")
    SourceVersion = apps.get_model("graph", "SourceVersion")
    cached: tuple[Any, str] = (None, "")  # versions in id order come source by source
    batch = []
    versions = NodeVersion.objects.select_related("node").order_by("pk")
    for v in versions.iterator(chunk_size=500):
        provenance = v.provenance if isinstance(v.provenance, dict) else {}
        tx, spans = provenance.get("sourceVersionTx"), provenance.get("spans") or []
        cited: list[str] = []
        if tx is not None and spans and v.node.source_id is not None:
            key = (v.node.source_id, tx)
            if cached[0] != key:
                text = SourceVersion.objects.filter(source_id=key[0], tx=tx).values_list("text")
                cached = (key, (text.first() or ("",))[0])
            cited = cited_text(cached[1], spans)
        search_text = search_text_for(v.labels, v.properties, cited)
        if search_text == v.search_text:
            continue
        v.search_text = search_text
        batch.append(v)
        if len(batch) >= 500:
            NodeVersion.objects.bulk_update(batch, ["search_text"])
            batch.clear()
    NodeVersion.objects.bulk_update(batch, ["search_text"])


def _install(apps: Any, schema_editor: Any) -> None:
    fts_install(schema_editor.connection)


def _drop(apps: Any, schema_editor: Any) -> None:
    fts_drop(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("graph", "0004_drop_redundant_indexes"),
    ]

    operations = [
        migrations.RunPython(_backfill_search_text, migrations.RunPython.noop),
        migrations.RunPython(_install, _drop),
    ]
