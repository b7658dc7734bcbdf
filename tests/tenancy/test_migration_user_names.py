"""`tenancy.0003_tenant_scoped_user_names` on data written under the old rule (Django
user names were the email or the SCIM userName): each user is renamed to its person's
id, a person without a `upn` alias gets the former name as one, and everyone still signs
in by email. Runs on SQLite and on PostgreSQL; backwards restores the old names."""

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("tenancy", "0002_identity_provisioning")]
AFTER = [("tenancy", "0003_tenant_scoped_user_names")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest():
    """Every app's last migration: the schema the models (and the auth backend) expect."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def test_old_user_names_become_the_person_and_sign_in_keeps_working():
    apps = _migrate(BEFORE)
    Tenant = apps.get_model("tenancy", "Tenant")
    Person = apps.get_model("tenancy", "Person")
    PersonAlias = apps.get_model("tenancy", "PersonAlias")
    User = apps.get_model("auth", "User")
    acme = Tenant.objects.create(slug="acme", name="Acme")
    # Loaded from a workspace file: the email was the user name, no upn alias.
    sam_user = User.objects.create(
        username="sam@acme.test", email="sam@acme.test", password=make_password("sam-pass-1")
    )
    sam = Person.objects.create(
        tenant=acme, name="Sam Steward", email="sam@acme.test", role="steward", user=sam_user
    )
    # Provisioned by SCIM: userName was the user name and is the upn alias already.
    nora_user = User.objects.create(username="nora@corp.test", email="nora@acme.test")
    nora = Person.objects.create(tenant=acme, name="Nora", email="nora@acme.test", user=nora_user)
    PersonAlias.objects.create(tenant=acme, person=nora, kind="upn", value="nora@corp.test")
    # A user of no person (a superuser made by hand) is left as it is.
    User.objects.create(username="root", email="root@example.test")

    apps = _migrate(AFTER)
    User = apps.get_model("auth", "User")
    PersonAlias = apps.get_model("tenancy", "PersonAlias")
    assert User.objects.get(pk=sam_user.pk).username == str(sam.pk)
    assert User.objects.get(pk=sam_user.pk).first_name == "Sam Steward"
    assert User.objects.get(pk=nora_user.pk).username == str(nora.pk)
    assert User.objects.filter(username="root").exists()
    upn = dict(PersonAlias.objects.filter(kind="upn").values_list("person_id", "value"))
    assert upn == {sam.pk: "sam@acme.test", nora.pk: "nora@corp.test"}
    # Sign-in runs the current models: on the current schema (later migrations add columns).
    _migrate(_latest())
    assert authenticate(username="sam@acme.test", password="sam-pass-1").pk == sam_user.pk

    apps = _migrate(BEFORE)
    User = apps.get_model("auth", "User")
    assert User.objects.get(pk=sam_user.pk).username == "sam@acme.test"
    assert User.objects.get(pk=nora_user.pk).username == "nora@corp.test"
    _migrate(_latest())
