from django.apps import AppConfig
from django.db.models.signals import post_migrate


class JobsConfig(AppConfig):
    name = "jobs"
    label = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the cluster routing check)
        from .apps_schedule import ensure_sweep_schedule

        post_migrate.connect(ensure_sweep_schedule, sender=self)
