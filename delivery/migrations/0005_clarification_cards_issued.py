"""Marks every clarification that already has a card (a delivery row, whatever its nonce's
state) with clarify's new `cards_issued`."""

from django.db import migrations


def mark_issued(apps, schema_editor):
    Clarification = apps.get_model("clarify", "Clarification")
    Delivery = apps.get_model("delivery", "Delivery")
    Clarification.objects.filter(
        pk__in=Delivery.objects.values("clarification_id")
    ).update(cards_issued=True)


class Migration(migrations.Migration):
    dependencies = [
        ("clarify", "0006_clarification_cards_issued"),
        ("delivery", "0004_delivery_keyed_by_routing_job"),
    ]

    operations = [
        migrations.RunPython(mark_issued, migrations.RunPython.noop),
    ]
