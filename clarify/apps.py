from typing import Any

from django.apps import AppConfig


def _source_change_audit(tenant: Any, type: str, detail: dict[str, Any], **_: Any) -> None:
    """The audit event of a steward's change to a source (`graph.signals`), or of a
    person's away setting (`tenancy.services.person_away_changed`)."""
    from .audit import audit_event_append

    audit_event_append(tenant=tenant, type=type, detail=detail)


class ClarifyConfig(AppConfig):
    name = "clarify"
    verbose_name = "Clarifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from graph.api.records import PENDING_NOTES
        from graph.signals import source_changed

        from . import checks, selectors  # noqa: F401 (checks registers itself)

        source_changed.connect(_source_change_audit, dispatch_uid="clarify.source_change_audit")
        from tenancy.services import person_away_changed

        person_away_changed.connect(_source_change_audit, dispatch_uid="clarify.away_audit")
        if selectors.pending_notes not in PENDING_NOTES:
            PENDING_NOTES.append(selectors.pending_notes)
