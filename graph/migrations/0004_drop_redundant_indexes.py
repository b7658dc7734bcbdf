"""NodeVersion.node loses its own index: the unique (node, seq) and (node, tx_from)
indexes lead with it."""

import django.db.models.deletion
from django.db import migrations, models

from common.migration_ops import foreign_key_index_dropped


class Migration(migrations.Migration):
    dependencies = [
        ("graph", "0003_node_origin_governs_unresolved_people"),
    ]

    operations = [
        foreign_key_index_dropped(
            state_operation=migrations.AlterField(
                model_name="nodeversion",
                name="node",
                field=models.ForeignKey(
                    db_index=False,
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="versions",
                    to="graph.node",
                ),
            ),
            table="graph_nodeversion",
            column="node_id",
            index="graph_nodeversion_node_id_57a7a07c",
        ),
    ]
