"""Job.tenant loses its own index (the (tenant, kind, status) index leads with it); the
subject keeps one plain b-tree (`job_subject`) instead of a b-tree and a pattern-ops twin."""

import django.db.models.deletion
from django.db import migrations, models

from common.migration_ops import foreign_key_index_dropped


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0003_job_request_id"),
        ("tenancy", "0001_initial"),
    ]

    operations = [
        # Drops both of the column's indexes (it has no other single-column index).
        migrations.AlterField(
            model_name="job",
            name="subject",
            field=models.CharField(
                blank=True, help_text="what the job is about (an id)", max_length=64
            ),
        ),
        foreign_key_index_dropped(
            state_operation=migrations.AlterField(
                model_name="job",
                name="tenant",
                field=models.ForeignKey(
                    db_index=False,
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="jobs",
                    to="tenancy.tenant",
                ),
            ),
            table="jobs_job",
            column="tenant_id",
            index="jobs_job_tenant_id_47fdbf2d",
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["subject"], name="job_subject"),
        ),
    ]
