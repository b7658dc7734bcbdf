from django.apps import AppConfig


class EventsConfig(AppConfig):
    """Evidence that leaves the building (issue 33): the audit hash chain and the signed
    webhooks, hooked into clarify's one audit write."""

    name = "events"
    verbose_name = "Events out and the audit chain"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clarify.audit import audit_append_hooks_register
        from jobs.policies import register_kind

        from .chain import chain_events
        from .delivery import handle_lease, webhook_policy
        from .outbox import WEBHOOK_KIND, outbox_prepare, outbox_write

        audit_append_hooks_register(before=chain_events, after=outbox_write)
        audit_append_hooks_register(before=outbox_prepare)
        register_kind(WEBHOOK_KIND, webhook_policy, handler=handle_lease)
