"""Audit events' and responses' foreign keys lose their own indexes: the (clarification,
at), (tenant, at) and unique (clarification, seq) indexes lead with them.

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
        ("clarify", "0003_clarifypolicy_channel_order"),
        ("tenancy", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="auditevent",
                    name="clarification",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="clarify.clarification",
                    ),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="tenant",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="audit_events",
                        to="tenancy.tenant",
                    ),
                ),
                migrations.AlterField(
                    model_name="responserecord",
                    name="clarification",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="responses",
                        to="clarify.clarification",
                    ),
                ),
            ],
            database_operations=[
                drop_index(
                    "clarify_auditevent",
                    "clarification_id",
                    "clarify_auditevent_clarification_id_be664d9a",
                ),
                drop_index("clarify_auditevent", "tenant_id", "clarify_auditevent_tenant_id_a85f7cc5"),
                drop_index(
                    "clarify_responserecord",
                    "clarification_id",
                    "clarify_responserecord_clarification_id_14973996",
                ),
            ],
        ),
    ]
