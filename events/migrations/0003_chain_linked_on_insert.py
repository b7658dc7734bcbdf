"""On PostgreSQL the audit chain is linked by the database as the events are inserted: a
BEFORE INSERT trigger on the audit events locks the tenant's chain head (creating it at
the genesis if the tenant has none), gives the row its `seq`, `prev_hash` and `hash`
(the same canonical JSON and SHA-256 as `common.chain.link_hash`) and moves the head.
The append needs no statement of its own for the head, and the head is locked from the
insert to the commit only — no round trip to the application for the lock and the move
while it is held (issue 33 item 3). The salt and the commitment stay the application's
(`events.chain.chain_events`): the detail's canonical form is Python's.

A row that arrives linked (`seq` set: an application process of the release before this
one, which locked and moved the head itself, still running during the upgrade) is left
as it is, so both kinds of writer extend one chain.

SQLite: the append links the events itself (`events.chain.chain_events`), its IMMEDIATE
transaction the only writer.

The SQL is written out here, as it was when this migration was made (the trigger and
its function are both named `events_chain_link`)."""

from django.db import migrations

GENESIS = "0" * 64

FUNCTION = f"""
CREATE OR REPLACE FUNCTION events_chain_link() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    s bigint;
    p text;
BEGIN
    IF NEW.seq IS NOT NULL THEN
        RETURN NEW;  -- linked by the application already (a process of the release before)
    END IF;
    SELECT seq, hash INTO s, p FROM events_chainhead
    WHERE tenant_id = NEW.tenant_id FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO events_chainhead (tenant_id, seq, hash)
        VALUES (NEW.tenant_id, 0, '{GENESIS}') ON CONFLICT DO NOTHING;
        SELECT seq, hash INTO s, p FROM events_chainhead
        WHERE tenant_id = NEW.tenant_id FOR UPDATE;
    END IF;
    NEW.seq := s + 1;
    NEW.prev_hash := p;
    -- common.chain.link_hash: sha256 of the canonical JSON (keys sorted, no spaces).
    NEW.hash := encode(sha256(convert_to(
        '{{"at":' || NEW.at
        || ',"clarification":' || COALESCE(to_json(NEW.clarification_id::text)::text, 'null')
        || ',"commitment":' || to_json(NEW.commitment)::text
        || ',"prevHash":' || to_json(p)::text
        || ',"seq":' || NEW.seq
        || ',"type":' || to_json(NEW.type)::text || '}}',
        'UTF8')), 'hex');
    UPDATE events_chainhead SET seq = NEW.seq, hash = NEW.hash WHERE tenant_id = NEW.tenant_id;
    RETURN NEW;
END
$$;
"""

INSTALL = [
    FUNCTION,
    "CREATE TRIGGER events_chain_link BEFORE INSERT ON clarify_auditevent"
    " FOR EACH ROW EXECUTE FUNCTION events_chain_link()",
]

REMOVE = [
    "DROP TRIGGER IF EXISTS events_chain_link ON clarify_auditevent",
    "DROP FUNCTION IF EXISTS events_chain_link()",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("events", "0002_chain_existing_events")]

    operations = [migrations.RunPython(_run(INSTALL), _run(REMOVE))]
