"""Start-up checks of the clarify settings (`manage.py check`, run before serving)."""

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

from .policy import reminder_errors


@register()
def reminder_below_window(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """CLARIFY_REMINDER_AFTER_HOURS, when set, must be below the escalation window
    (CONTRACT §1): refused at start-up rather than reminding after the question moved on."""
    error = reminder_errors(settings.CLARIFY.get("REMINDER_AFTER_HOURS"))
    if error is None:
        return []
    return [Error(f"CLARIFY_REMINDER_AFTER_HOURS: {error}", id="clarify.E001")]
