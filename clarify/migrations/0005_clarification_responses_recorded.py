"""Clarification.responses_recorded: the latest response's seq (0: none), kept with every
response so a first answer need not read the responses; existing rows are counted."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def count_recorded(apps, schema_editor):
    Clarification = apps.get_model("clarify", "Clarification")
    ResponseRecord = apps.get_model("clarify", "ResponseRecord")
    latest = (
        ResponseRecord.objects.filter(clarification=OuterRef("pk"))
        .order_by("-seq")
        .values("seq")[:1]
    )
    Clarification.objects.filter(responses__isnull=False).update(
        responses_recorded=Coalesce(Subquery(latest), Value(0))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("clarify", "0004_drop_redundant_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="clarification",
            name="responses_recorded",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_recorded, migrations.RunPython.noop),
    ]
