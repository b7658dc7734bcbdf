"""Clarification.cards_issued: set with the clarification's first card, so binding skips
closing nonces when no card was ever sent. Existing rows are set by delivery's 0005 (the
app that owns the cards)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clarify", "0005_clarification_responses_recorded"),
    ]

    operations = [
        migrations.AddField(
            model_name="clarification",
            name="cards_issued",
            field=models.BooleanField(default=False),
        ),
    ]
