"""Child process of tests/steward/test_erasure_bytes.py: on a file-backed SQLite database
(DATABASE_URL), load two tenants, let alice leave her email, name and aliases in facts,
source text, answers, uploads' stored names and another tenant's audit, erase her
(`telha gdpr_erase`, or with `plain` the in-tenant executor alone, as before issue 19)
and print, as JSON, which needles the database file and its WAL, and the stored uploads
(MEDIA_ROOT), hold before and after.

    python -m tests.steward.erasure_bytes_child {cli|plain|blocked}
"""

import json
import sys
from pathlib import Path
from typing import Any

import django

NEEDLES = {
    "email": "alice@acme.test",
    "name": "Alice Quennevilleson",
    "slackUserId": "U0ALICEBYTES",
    "teamsUserId": "29:alice-bytes-teams",
    "aadOid": "9f0c1a2b-0000-4000-8000-0000b17e5a11",
    # Her user principal name: provisioned by SCIM as her userName (alias and sign-in name).
    "upn": "alice.bytes@corp.acme.test",
    # Her surname as the SQLite search index holds it (an FTS5 porter term). A surname no
    # other text holds and too long to occur by chance in the file's random bytes (salts,
    # nonces, session keys): a 4-byte stem such as "alic" did, about once in 30 runs.
    "searchTerm": "quennevilleson",
    # Her name and email as storage rewrote uploaded file names (the stored name, in
    # ingest_document.file and on disk): spaces to underscores, "@" dropped.
    "storedName": "Alice_Quennevilleson",
    "storedEmail": "aliceacme.test",
}


def db_files(db: Path) -> list[Path]:
    return [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]


def found(db: Path) -> dict[str, list[str]]:
    """Which needles each file holds (bytes, case-insensitive; UTF-8 and its JSON-escaped
    form are the same for these ASCII needles)."""
    out: dict[str, list[str]] = {}
    for path in db_files(db):
        data = path.read_bytes().lower()
        hits = [k for k, v in NEEDLES.items() if v.lower().encode() in data]
        if hits:
            out[path.name] = hits
    return out


def found_media(root: Path) -> dict[str, list[str]]:
    """Which needles the stored uploads hold, in their names or their bytes."""
    out: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if path.is_file():
            data = path.name.lower().encode() + b"\n" + path.read_bytes().lower()
            hits = [k for k, v in NEEDLES.items() if v.lower().encode() in data]
            if hits:
                out[str(path.relative_to(root))] = hits
    return out


def _uploads(acme: Any) -> None:
    """Uploads named after her, stored the way uploads were before they got neutral names
    (storage rewrites "Alice Quennevilleson CV.txt" to Alice_Quennevilleson_CV.txt, a
    second one of that name to Alice_Quennevilleson_CV_xxxxxxx.txt, "alice@acme.test-notes.txt" to
    aliceacme.test-notes.txt); their content does not name her."""
    from django.core.files.base import ContentFile

    from ingest.uploads import document_upload

    names = [f"{NEEDLES['name']} CV.txt"] * 2 + ["alice@acme.test-notes.txt"]
    for name in names:
        doc = document_upload(tenant=acme, filename=name, content=ContentFile(b"A CV."), size=5)
        doc.file.delete(save=False)
        doc.file.save(name, ContentFile(b"A CV."), save=True)


def _world() -> dict[str, Any]:
    from rest_framework.test import APIClient

    from tenancy.services import api_key_create, workspace_load
    from tests.factories import submission_payload

    alice = {
        "name": NEEDLES["name"],
        "email": NEEDLES["email"],
        "role": "editor",
        "groups": ["legal"],
        "aliases": {k: NEEDLES[k] for k in ("slackUserId", "teamsUserId", "aadOid")},
    }
    bob = {"name": "Bob Builder", "email": "bob@acme.test", "role": "editor", "groups": ["legal"]}
    acme = workspace_load(
        data={"tenant": "acme", "name": "Acme", "groups": ["legal"], "people": [alice, bob]}
    ).tenant
    _provision(acme)
    _uploads(acme)
    gil = {"name": "Gil Globex", "email": "gil@globex.test", "role": "editor", "groups": ["x"]}
    globex = workspace_load(
        data={"tenant": "globex", "name": "Globex", "groups": ["x"], "people": [gil]}
    ).tenant
    ingest = APIClient()
    ingest.credentials(
        HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=acme, audience='ingest')[1]}"
    )
    payload = submission_payload()
    payload["source"]["text"] += f" Signed by {NEEDLES['name']} ({NEEDLES['email']})."
    payload["nodes"][1]["properties"]["slackUserId"] = NEEDLES["slackUserId"]
    resp = ingest.post("/v1/submissions", payload, format="json")
    assert resp.status_code == 201, resp.content
    clar_id = resp.json()["clarifications"][0]["id"]
    person = acme.people.get(email=NEEDLES["email"])
    key = api_key_create(tenant=acme, person=person, role="editor")[1]
    answering = APIClient()
    answering.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    resp = answering.post(
        f"/v1/clarifications/{clar_id}/answer",
        {
            "answerCustom": {
                "validFrom": "2026-06-12T00:00:00Z",
                "validTo": None,
                "sourceText": f"{NEEDLES['name']} checked the countersigned copy",
            }
        },
        format="json",
    )
    assert resp.status_code in (200, 202), resp.content
    return {"acme": acme, "globex": globex, "person": person}


def _provision(acme: Any) -> None:
    """Her identity provider provisions her, as a SCIM PUT does: her UPN becomes her
    userName (sign-in name) and `upn` alias."""
    from identity.services import PersonSpec, person_provision

    spec = PersonSpec(
        user_name=NEEDLES["upn"],
        email=NEEDLES["email"],
        name=NEEDLES["name"],
        roles=["editor"],
        external_id=NEEDLES["aadOid"],
    )
    person_provision(tenant=acme, spec=spec, person=acme.people.get(email=NEEDLES["email"]))


def _erase_behind_a_reader(db: Path) -> dict[str, Any]:
    """`telha gdpr_erase --json` while another connection holds a read transaction open
    (its snapshot predates the erasure, so no checkpoint can truncate the log)."""
    import io
    import sqlite3

    from django.core.management import call_command
    from django.core.management.base import CommandError

    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
    out, status, message = io.StringIO(), 0, ""
    try:
        call_command(
            "gdpr_erase", "--tenant", "acme", "--person", NEEDLES["email"], "--json", stdout=out
        )
    except CommandError as exc:
        status, message = exc.returncode, str(exc)
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    return {"counts": json.loads(out.getvalue()), "status": status, "message": message}


def _tap_elsewhere(globex: Any) -> None:
    """Her Slack identity taps a card in globex, where nobody holds it: globex's audit."""
    from clarify.models import AuditEvent
    from delivery.actions import CardTap, card_tap_process
    from delivery.identity import ChatIdentity

    identity = ChatIdentity.of_aliases(
        f"slack:T0GLOBEX:{NEEDLES['slackUserId']}", ("slackUserId", NEEDLES["slackUserId"])
    )
    card_tap_process(
        CardTap(
            channel="slack",
            identity=identity,
            clarification_id="x",
            nonce="n" * 20,
            answer_index=0,
            tenant=globex,
        )
    )
    assert AuditEvent.objects.filter(tenant=globex, detail__icontains=NEEDLES["slackUserId"])


def main(mode: str) -> None:
    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test.utils import setup_test_environment

    setup_test_environment()  # the test client's host, locmem mail
    call_command("migrate", verbosity=0)
    world = _world()
    _tap_elsewhere(world["globex"])
    db = Path(connection.settings_dict["NAME"])
    media = Path(settings.MEDIA_ROOT)
    before = {**found(db), **found_media(media)}
    if mode == "blocked":
        print(json.dumps(_erase_behind_a_reader(db)))
        return
    if mode == "plain":
        from privacy.executor import gdpr_erase

        with transaction.atomic():
            gdpr_erase(tenant=world["acme"], person=world["person"])
    else:
        call_command("gdpr_erase", "--tenant", "acme", "--person", NEEDLES["email"])
    # Scanned with the connection still open: closing the last connection would checkpoint
    # the WAL by itself and hide what an erasure leaves in it.
    print(
        json.dumps(
            {
                "before": before,
                "after": {**found(db), **found_media(media)},
                "files": [p.name for p in db_files(db)],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
