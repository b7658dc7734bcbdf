"""`signature` (SIGNATURE_DATE) facts detected before `date` (DOCUMENT_DATE) existed are
carried into `date` with their history (ingest/legacy.py): re-keyed, or — for a source
re-ingested since, which holds both — merged, the old history first. Not reversible in
its merges; reversing leaves the data as it is."""

from typing import Any

from django.db import migrations


def forwards(apps: Any, schema_editor: Any) -> None:
    from ingest.legacy import signature_dates_rekey

    signature_dates_rekey(
        node_model=apps.get_model("graph", "Node"),
        version_model=apps.get_model("graph", "NodeVersion"),
        clarification_model=apps.get_model("clarify", "Clarification"),
        edge_model=apps.get_model("graph", "Edge"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("graph", "0006_current_validity_indexes"),
        ("clarify", "0007_metrics_backlog_index"),
        ("ingest", "0004_document_source"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
