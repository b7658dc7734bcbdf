from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _search_index_ensure(using: str = "default", **_: Any) -> None:
    from django.db import connections

    from .sql import fts_ensure

    fts_ensure(connections[using])


def _identity_resolve(tenant: Any, **_: Any) -> None:
    from .services import tenant_identity_resolve

    tenant_identity_resolve(tenant=tenant)


class GraphConfig(AppConfig):
    name = "graph"
    label = "graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_search_index_ensure, sender=self, dispatch_uid="graph.fts_ensure")
        from tenancy.services import tenant_identity_changed

        tenant_identity_changed.connect(_identity_resolve, dispatch_uid="graph.identity_resolve")
