from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "ingest"
    label = "ingest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobs.policies import register_kind

        from .documents import handle_lease
        from .uploads import INGEST_DOCUMENT_KIND

        register_kind(INGEST_DOCUMENT_KIND, handler=handle_lease)
