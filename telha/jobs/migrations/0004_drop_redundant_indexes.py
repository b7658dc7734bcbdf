"""Job.tenant loses its own index (the (tenant, kind, status) index leads with it); the
subject keeps one plain b-tree (`job_subject`) instead of a b-tree and a pattern-ops twin.

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
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="job",
                    name="tenant",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="jobs",
                        to="tenancy.tenant",
                    ),
                ),
            ],
            database_operations=[
                drop_index("jobs_job", "tenant_id", "jobs_job_tenant_id_47fdbf2d"),
            ],
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["subject"], name="job_subject"),
        ),
    ]
