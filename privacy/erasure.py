"""`person_erase`: the full erasure (`telha gdpr_erase`) as one unit — the tenant's own
executor (`privacy.executor.gdpr_erase`), the person's identifiers in other tenants'
audit events, and the database files left holding none of the erased bytes."""

from django.apps import apps
from django.db import connection, transaction

from clarify.models import AuditEvent
from clarify.stewardship import ErasureSubject, audit_details_scrub
from common.storage import secure_delete, storage_reclaim
from graph.sql import fts_compact
from tenancy.models import Person, PersonAlias, Tenant

from .executor import gdpr_erase


def erased_tables() -> list[str]:
    """Every table of the application's models (many-to-many tables included): the
    erasure deletes from or rewrites most of them, and a `VACUUM` of a table with no dead
    tuples is cheap (its visibility map lets it skip every page)."""
    return sorted(
        {
            model._meta.db_table
            for model in apps.get_models(include_auto_created=True)
            if model._meta.managed and not model._meta.proxy
        }
    )


def other_tenants_audit_scrub(*, tenant: Tenant, person: Person) -> int:
    """The person's identifiers — id, email and alias values (their Slack and Teams ids,
    Entra object id, UPN …) — erased from the audit details of every *other* tenant (a tap
    on another tenant's card by an identity unmapped there is audited in that tenant,
    naming the identity). A value that a live person of that other tenant also holds
    identifies that tenant's own person there and is left alone; names are not matched
    across tenants. Returns how many events changed."""
    aliases = list(PersonAlias.objects.filter(person=person).values_list("value", flat=True))
    terms = {str(person.pk), person.pk.hex, person.email.lower(), *(a.lower() for a in aliases)}
    subject = ErasureSubject(terms=terms)
    others = AuditEvent.objects.exclude(tenant=tenant).filter(subject.q("detail"))
    changed = 0
    for other in Tenant.objects.filter(pk__in=others.values("tenant_id")):
        held = {
            *PersonAlias.objects.filter(
                person__tenant=other, person__erased_at__isnull=True, value__in=aliases
            ).values_list("value", flat=True),
            *Person.objects.filter(
                tenant=other, erased_at__isnull=True, email=person.email
            ).values_list("email", flat=True),
        }
        theirs = ErasureSubject(terms=terms - {h.lower() for h in held})
        changed += audit_details_scrub(AuditEvent.objects.filter(tenant=other), theirs)
    return changed


def person_erase(
    *, tenant: Tenant, person: Person, actor: Person | None = None, via: str = "cli"
) -> dict[str, int]:
    """Erase a person everywhere, in one transaction: `gdpr_erase` in their tenant, then
    their identifiers in other tenants' audit events (`otherTenantsAuditEvents` in the
    counts returned). On SQLite the transaction runs with `secure_delete` on and the WAL
    is checkpointed and truncated after it (`walCheckpointPending` 1 in the counts when a
    reader still blocked it after the retries); on PostgreSQL the erased tables are vacuumed
    after it (`common.storage`)."""
    with secure_delete(), transaction.atomic():
        # Before the executor deletes the aliases this needs.
        elsewhere = other_tenants_audit_scrub(tenant=tenant, person=person)
        counts = gdpr_erase(tenant=tenant, person=person, actor=actor, via=via)
        counts["otherTenantsAuditEvents"] = elsewhere
        fts_compact(connection)  # the search index's old segments hold the erased terms
        reclaim = storage_reclaim(erased_tables())
    if reclaim.ran and connection.vendor == "sqlite":
        counts["walCheckpointPending"] = int(reclaim.pending)
    return counts
