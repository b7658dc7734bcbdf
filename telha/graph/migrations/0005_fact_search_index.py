"""Full-text search over fact versions (telha.graph.search).

1. Backfill: every version's `search_text` gains the text of the spans it cites.
2. The index, derived from `search_text` by the database: on PostgreSQL a stored
   generated tsvector column with a GIN index (adding it computes it for every row); on
   SQLite an FTS5 external-content table, its triggers and a rebuild.
"""

from typing import Any

from django.db import migrations

from telha.graph.fts import fts_drop, fts_install


def _backfill_span_text(apps: Any, schema_editor: Any) -> None:
    from telha.graph.services import cited_text, search_text_for

    NodeVersion = apps.get_model("graph", "NodeVersion")
    SourceVersion = apps.get_model("graph", "SourceVersion")
    cached: tuple[Any, str] = (None, "")  # versions in id order come source by source
    batch = []
    versions = NodeVersion.objects.filter(node__source__isnull=False).exclude(provenance={})
    for v in versions.select_related("node").order_by("pk").iterator(chunk_size=500):
        tx = v.provenance.get("sourceVersionTx") if isinstance(v.provenance, dict) else None
        spans = [s for s in (v.provenance.get("spans") or []) if isinstance(s, dict)]
        if tx is None or not spans:
            continue
        key = (v.node.source_id, tx)
        if cached[0] != key:
            text = SourceVersion.objects.filter(source_id=key[0], tx=tx).values_list("text")
            cached = (key, (text.first() or ("",))[0])
        cited = cited_text(cached[1], spans)
        v.search_text = search_text_for(v.labels, v.properties, cited)
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
        migrations.RunPython(_backfill_span_text, migrations.RunPython.noop),
        migrations.RunPython(_install, _drop),
    ]
