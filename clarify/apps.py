from django.apps import AppConfig


class ClarifyConfig(AppConfig):
    name = "clarify"
    verbose_name = "Clarifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import routing

        routing.register()
