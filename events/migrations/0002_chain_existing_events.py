"""Chain the audit events written before the chain existed: each tenant's, in the order
they were inserted (their ids), from the genesis — every detail committed with a fresh
salt — and the tenant's head set to the last link. Reversing forgets the links."""

from django.db import migrations

from common.chain import GENESIS, commitment, link_hash, new_salt

BATCH = 1000
FIELDS = ["seq", "salt", "commitment", "prev_hash", "hash"]


def chain_existing(apps, schema_editor):
    AuditEvent = apps.get_model("clarify", "AuditEvent")
    ChainHead = apps.get_model("events", "ChainHead")
    Tenant = apps.get_model("tenancy", "Tenant")
    for tenant in Tenant.objects.order_by("pk"):
        head = ChainHead.objects.filter(tenant=tenant).first()
        seq, prev = (head.seq, head.hash) if head else (0, GENESIS)
        pending = []
        unchained = AuditEvent.objects.filter(tenant=tenant, seq__isnull=True).order_by("id")
        for event in unchained.iterator(chunk_size=BATCH):
            seq += 1
            event.seq, event.prev_hash, event.salt = seq, prev, new_salt()
            event.commitment = commitment(event.salt, event.detail)
            event.hash = prev = link_hash(
                seq=seq,
                prev_hash=event.prev_hash,
                at=event.at,
                type=event.type,
                clarification=str(event.clarification_id) if event.clarification_id else None,
                commitment=event.commitment,
            )
            pending.append(event)
            if len(pending) >= BATCH:
                AuditEvent.objects.bulk_update(pending, FIELDS)
                pending = []
        AuditEvent.objects.bulk_update(pending, FIELDS)
        ChainHead.objects.update_or_create(tenant=tenant, defaults={"seq": seq, "hash": prev})


def unchain(apps, schema_editor):
    AuditEvent = apps.get_model("clarify", "AuditEvent")
    AuditEvent.objects.update(seq=None, salt="", commitment="", prev_hash="", hash="")
    apps.get_model("events", "ChainHead").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0001_initial"),
        ("clarify", "0009_audit_chain"),
    ]

    operations = [migrations.RunPython(chain_existing, unchain)]
