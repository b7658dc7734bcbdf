"""NodeVersion.node loses its own index: the unique (node, seq) and (node, tx_from)
indexes lead with it.

Django's AlterField would drop every single-column index on the column (including the
partial unique `nodeversion_one_current` on graph_nodeversion.node_id) and re-validate the
foreign key; so the state changes here and the database loses exactly the named index."""

import django.db.models.deletion
from django.db import migrations, models


def drop_index(table: str, column: str, name: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        sql=f'DROP INDEX IF EXISTS "{name}"',
        reverse_sql=f'CREATE INDEX "{name}" ON "{table}" ("{column}")',
    )


class Migration(migrations.Migration):
    dependencies = [
        ("graph", "0003_node_origin_governs_unresolved_people"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="nodeversion",
                    name="node",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="versions",
                        to="graph.node",
                    ),
                ),
            ],
            database_operations=[
                drop_index("graph_nodeversion", "node_id", "graph_nodeversion_node_id_57a7a07c"),
            ],
        ),
    ]
