"""A tenant's user names are its own: every person's Django user is named by the person's
id (no longer by their email or SCIM userName, which another tenant may hold), and a
person without a `upn` alias gets their former user name as one (their SCIM userName,
unique in the tenant by `alias_unique_value`). Sign-in by email keeps working
(`identity.backends.PersonBackend`); sessions stay valid (they name the user's key)."""

from django.conf import settings
from django.db import migrations

BATCH = 500


def _people(Person):
    """Every person with a user, in batches read before any is written (SQLite gives no
    isolation between a cursor and writes on the same connection)."""
    ids = list(Person.objects.filter(user__isnull=False).order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        yield from Person.objects.filter(pk__in=ids[start : start + BATCH]).select_related("user")


def tenant_scoped_names(apps, schema_editor):
    Person = apps.get_model("tenancy", "Person")
    PersonAlias = apps.get_model("tenancy", "PersonAlias")
    for person in _people(Person):
        user = person.user
        former = user.username.strip().lower()
        has_upn = PersonAlias.objects.filter(person=person, kind="upn").exists()
        taken = PersonAlias.objects.filter(tenant_id=person.tenant_id, kind="upn", value=former)
        if not has_upn and not taken.exists():
            PersonAlias.objects.create(
                tenant_id=person.tenant_id, person=person, kind="upn", value=former
            )
        user.username = str(person.pk)
        user.first_name = person.name[:150]
        user.save(update_fields=["username", "first_name"])


def global_names(apps, schema_editor):
    """Back to user names that are the person's `upn` alias, else email, where that name is
    still free on the installation (else the id stays: the old schema could not hold two)."""
    Person = apps.get_model("tenancy", "Person")
    PersonAlias = apps.get_model("tenancy", "PersonAlias")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    for person in _people(Person):
        upn = PersonAlias.objects.filter(person=person, kind="upn").first()
        name = upn.value if upn is not None else person.email
        if not User.objects.filter(username=name).exclude(pk=person.user_id).exists():
            person.user.username = name
            person.user.save(update_fields=["username"])


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0002_identity_provisioning"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(tenant_scoped_names, global_names)]
