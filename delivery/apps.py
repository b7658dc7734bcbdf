from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DeliveryConfig(AppConfig):
    name = "delivery"
    verbose_name = "Delivery"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clarify import integrity as clarify_integrity
        from clarify import reports as clarify_reports
        from clarify import services as clarify_services
        from clarify import stewardship as clarify_stewardship
        from clarify.models import CLARIFY_JOB_KIND
        from clarify.routing import clarify_job_policy
        from graph import access
        from jobs.policies import KindPolicy, register_kind

        from . import history, integrity, reminders, revocation, worker

        # The routing jobs of clarifications: clarify's policy, this app's round handler.
        register_kind(
            CLARIFY_JOB_KIND, clarify_job_policy, handler=worker.handle_leases, rounds=True
        )
        if worker.close_nonces not in clarify_services.BIND_HOOKS:
            clarify_services.BIND_HOOKS.append(worker.close_nonces)
        # What clarify does, reports or checks about cards, each through clarify's own seam.
        if revocation.reask_revoke not in clarify_stewardship.REASK_HOOKS:
            clarify_stewardship.REASK_HOOKS.append(revocation.reask_revoke)
        _register(clarify_reports.DETAIL_SECTIONS, ("deliveryHistory", history.delivery_history))
        _register(clarify_integrity.CHECKS, ("nonces", integrity.check_nonces))
        # Losing read access revokes the cards sent (the core's seam, never an import up).
        if revocation.read_access_recheck not in access.READ_ACCESS_HOOKS:
            access.READ_ACCESS_HOOKS.append(revocation.read_access_recheck)
        # A reminder job waits in `run_after` (the delay), then runs once, a round at a time.
        register_kind(
            reminders.REMINDER_KIND,
            lambda: KindPolicy(max_attempts=1),
            handler=worker.handle_reminders,
            rounds=True,
        )
        post_migrate.connect(_ensure_digest_schedule, sender=self)


def _register(registry: list[Any], entry: Any) -> None:
    """Append `entry` once (`ready` may run more than once, e.g. in tests)."""
    if entry not in registry:
        registry.append(entry)


def _ensure_digest_schedule(**kwargs: object) -> None:
    from django_q.models import Schedule

    Schedule.objects.update_or_create(
        name="telha-digest-flush",
        defaults={
            "func": "delivery.digests.digests_flush",
            "schedule_type": Schedule.MINUTES,
            "minutes": 1,
            "repeats": -1,
        },
    )
