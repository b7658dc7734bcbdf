"""Deliveries are keyed by their routing job as well as the attempt: a steward re-ask
enqueues a new job whose attempt N may ask the same person as the superseded job's
attempt N, and that must be a new delivery with a fresh nonce, not the revoked one.

The worker has always stored `job_id`; rows without one (from before it did) are given
the routing job that was current when they were made (the clarification's latest
`clarify:temporal` job created no later than the row, else its earliest), and stay null
only when the clarification has no routing job left. The old key was stricter than the
new one, so the backfill cannot collide. Reversing fails with an IntegrityError once a
re-ask has made two deliveries for the same attempt and person (remove one first)."""

from django.db import migrations, models

JOB_KIND = "clarify:temporal"


def backfill_job_ids(apps, schema_editor):
    Delivery = apps.get_model("delivery", "Delivery")
    Job = apps.get_model("jobs", "Job")
    orphans = Delivery.objects.filter(job_id__isnull=True).order_by("clarification_id")
    for delivery in orphans.iterator():
        jobs = Job.objects.filter(kind=JOB_KIND, subject=str(delivery.clarification_id))
        job_id = (
            jobs.filter(created_at__lte=delivery.created_at)
            .order_by("-created_at", "-id")
            .values_list("id", flat=True)
            .first()
        ) or jobs.order_by("created_at", "id").values_list("id", flat=True).first()
        if job_id is not None:
            Delivery.objects.filter(pk=delivery.pk).update(job_id=job_id)


class Migration(migrations.Migration):
    dependencies = [
        ("delivery", "0003_chatturn"),
        ("jobs", "0003_job_request_id"),
    ]

    operations = [
        migrations.RunPython(backfill_job_ids, migrations.RunPython.noop, elidable=True),
        migrations.RemoveConstraint(
            model_name="delivery",
            name="delivery_unique_attempt_person",
        ),
        migrations.AddConstraint(
            model_name="delivery",
            constraint=models.UniqueConstraint(
                fields=("clarification", "job_id", "attempt", "person", "kind"),
                name="delivery_unique_job_attempt_person",
            ),
        ),
    ]
