"""Audit events' and responses' foreign keys lose their own indexes: the (clarification,
at), (tenant, at) and unique (clarification, seq) indexes lead with them."""

import django.db.models.deletion
from django.db import migrations, models

from common.migration_ops import foreign_key_index_dropped


class Migration(migrations.Migration):
    dependencies = [
        ("clarify", "0003_clarifypolicy_channel_order"),
        ("tenancy", "0001_initial"),
    ]

    operations = [
        foreign_key_index_dropped(
            state_operation=migrations.AlterField(
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
            table="clarify_auditevent",
            column="clarification_id",
            index="clarify_auditevent_clarification_id_be664d9a",
        ),
        foreign_key_index_dropped(
            state_operation=migrations.AlterField(
                model_name="auditevent",
                name="tenant",
                field=models.ForeignKey(
                    db_index=False,
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="audit_events",
                    to="tenancy.tenant",
                ),
            ),
            table="clarify_auditevent",
            column="tenant_id",
            index="clarify_auditevent_tenant_id_a85f7cc5",
        ),
        foreign_key_index_dropped(
            state_operation=migrations.AlterField(
                model_name="responserecord",
                name="clarification",
                field=models.ForeignKey(
                    db_index=False,
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="responses",
                    to="clarify.clarification",
                ),
            ),
            table="clarify_responserecord",
            column="clarification_id",
            index="clarify_responserecord_clarification_id_14973996",
        ),
    ]
