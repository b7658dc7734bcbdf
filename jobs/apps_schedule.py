"""The sweep schedule is created (idempotently) after migrations."""

from typing import Any


def ensure_sweep_schedule(**kwargs: Any) -> None:
    from django_q.models import Schedule

    Schedule.objects.update_or_create(
        name="telha-jobs-sweep",
        defaults={
            "func": "jobs.tasks.sweep",
            "schedule_type": Schedule.MINUTES,
            "minutes": 1,
            "repeats": -1,
        },
    )
