"""Password sign-in when a tenant's names are its own (issue 28, item 2): the same email is
a different person in two tenants; people still sign in with their email (CONTRACT §2),
within the organisation the form names, else the one whose password it is. The Django
user name (a person's id) is never a sign-in name. Keys, erasure and the password-reset
mail keep to the one tenant."""

import io
import json
import re

import pytest
from django.contrib.auth import SESSION_KEY, authenticate, get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client

from identity.models import SsoProvider
from tenancy.forms import AMBIGUOUS_MESSAGE
from tenancy.models import AliasKind, ApiKey, Person, PersonAlias
from tenancy.services import workspace_load

from ..conftest import client_for

pytestmark = pytest.mark.django_db

ACME_SAM = "steward-pass-1"  # Sam's password in the shared Acme workspace
GLOBEX_ALICE = "globex-alice-1"


@pytest.fixture
def globex(workspace):
    """Globex holds two of Acme's emails: Alice's (her own password; Acme's Alice has
    none) and Sam's (the very same password as Acme's Sam)."""
    return workspace_load(
        data={
            "tenant": "globex",
            "name": "Globex",
            "people": [
                {
                    "name": "Alice G",
                    "email": "alice@acme.test",
                    "role": "steward",
                    "password": GLOBEX_ALICE,
                },
                {
                    "name": "Sam G",
                    "email": "sam@acme.test",
                    "role": "steward",
                    "password": ACME_SAM,
                },
            ],
        }
    ).tenant


def person(slug: str, email: str) -> Person:
    return Person.objects.select_related("user").get(tenant__slug=slug, email=email)


def signed_in(response) -> str | None:
    return response.wsgi_request.session.get(SESSION_KEY)


def sign_in(path: str = "/accounts/login/", **form: str):
    client = Client()
    return client, client.post(path, form)


def test_the_password_picks_the_tenant_when_the_form_names_none(globex):
    alice = person("globex", "alice@acme.test")
    assert authenticate(username="Alice@Acme.test", password=GLOBEX_ALICE) == alice.user
    client, response = sign_in(username="alice@acme.test", password=GLOBEX_ALICE)
    assert response.status_code == 302 and signed_in(response) == str(alice.user_id)
    # The header names her by email, never by the Django user name (her id).
    page = client.get("/inbox/").content.decode()
    assert "alice@acme.test" in page and alice.user.username not in page


def test_the_organisation_named_is_the_only_one_signed_into(globex):
    alice = person("globex", "alice@acme.test")
    _, refused = sign_in(username="alice@acme.test", password=GLOBEX_ALICE, tenant="acme")
    assert refused.status_code == 200 and signed_in(refused) is None
    assert "didn't match" in refused.content.decode()
    _, nowhere = sign_in(username="alice@acme.test", password=GLOBEX_ALICE, tenant="initech")
    assert signed_in(nowhere) is None
    _, response = sign_in(username="alice@acme.test", password=GLOBEX_ALICE, tenant="Globex ")
    assert response.status_code == 302 and signed_in(response) == str(alice.user_id)
    # `?tenant=` (the organisation chosen for single sign-on) scopes the password form too.
    page = Client().get("/accounts/login/", {"tenant": "globex"}).content.decode()
    assert '<input type="hidden" name="tenant" value="globex">' in page
    assert 'id="id_org"' not in page
    assert 'id="id_org"' in Client().get("/accounts/login/").content.decode()


def test_one_password_of_two_organisations_asks_for_the_organisation(globex):
    acme_sam, globex_sam = person("acme", "sam@acme.test"), person("globex", "sam@acme.test")
    assert authenticate(username="sam@acme.test", password=ACME_SAM) is None
    _, ambiguous = sign_in(username="sam@acme.test", password=ACME_SAM)
    assert ambiguous.status_code == 200 and signed_in(ambiguous) is None
    assert "more than one organisation" in ambiguous.content.decode()
    # Only the right password earns that message: a wrong one says nothing of the others.
    _, wrong = sign_in(username="sam@acme.test", password="not-his-password")
    assert "more than one organisation" not in wrong.content.decode()
    assert "didn't match" in wrong.content.decode()
    _, response = sign_in(username="sam@acme.test", password=ACME_SAM, tenant="globex")
    assert signed_in(response) == str(globex_sam.user_id)
    # The steward admin's sign-in asks the same, and takes the organisation too.
    _, admin = sign_in("/admin/login/", username="sam@acme.test", password=ACME_SAM)
    assert admin.status_code == 200 and AMBIGUOUS_MESSAGE in admin.content.decode()
    assert 'name="tenant"' in admin.content.decode()
    client, admin = sign_in(
        "/admin/login/?next=/admin/", username="sam@acme.test", password=ACME_SAM, tenant="acme"
    )
    assert admin.status_code == 302 and signed_in(admin) == str(acme_sam.user_id)
    assert client.get("/admin/").status_code == 200


def test_a_tenant_without_passwords_is_never_signed_into_by_password(globex, workspace):
    SsoProvider.objects.create(
        tenant=workspace,
        issuer="https://idp.example.test",
        client_id="c",
        client_secret="s",
        password_login=False,
    )
    globex_sam = person("globex", "sam@acme.test")
    # Acme's Sam is no candidate: the same password now means Globex's Sam alone.
    assert authenticate(username="sam@acme.test", password=ACME_SAM) == globex_sam.user
    assert authenticate(username="sam@acme.test", password=ACME_SAM, tenant="acme") is None


def test_the_django_user_name_and_users_without_a_person_are_no_sign_in(globex):
    alice = person("globex", "alice@acme.test")
    assert authenticate(username=alice.user.username, password=GLOBEX_ALICE) is None
    assert authenticate(username=str(alice.pk), password=GLOBEX_ALICE, tenant="globex") is None
    get_user_model().objects.create_user("root@example.test", "root@example.test", "root-pass-1")
    assert authenticate(username="root@example.test", password="root-pass-1") is None
    assert not Client().login(username="root@example.test", password="root-pass-1")


def test_deprovisioned_and_erased_people_are_no_candidates(globex):
    alice = person("globex", "alice@acme.test")
    alice.deactivated_at = alice.updated_at
    alice.save(update_fields=["deactivated_at"])
    assert authenticate(username="alice@acme.test", password=GLOBEX_ALICE) is None
    alice.deactivated_at = None
    alice.save(update_fields=["deactivated_at"])
    assert authenticate(username="alice@acme.test", password=GLOBEX_ALICE) == alice.user
    alice.user.is_active = False
    alice.user.save(update_fields=["is_active"])
    assert authenticate(username="alice@acme.test", password=GLOBEX_ALICE) is None


def test_a_key_for_an_email_is_the_named_tenants_person(globex):
    out = io.StringIO()
    call_command(
        "api_key",
        "create",
        "--tenant",
        "globex",
        "--person",
        "alice@acme.test",
        "--json",
        stdout=out,
    )
    body = json.loads(out.getvalue())
    key = ApiKey.objects.get(pk=body["id"])
    assert (key.tenant.slug, key.person) == ("globex", person("globex", "alice@acme.test"))
    assert client_for(body["key"]).get("/v1/clarifications").status_code == 200


def test_erasing_a_person_leaves_the_same_email_in_another_tenant_alone(globex):
    globex_alice = person("globex", "alice@acme.test")
    theirs = sorted(PersonAlias.objects.filter(person=globex_alice).values_list("kind", "value"))
    call_command(
        "gdpr_erase", "--tenant", "acme", "--person", "alice@acme.test", stdout=io.StringIO()
    )
    assert person("globex", "alice@acme.test").user_id == globex_alice.user_id
    assert (
        sorted(PersonAlias.objects.filter(person=globex_alice).values_list("kind", "value"))
        == theirs
    )
    assert ("upn", "alice@acme.test") in theirs
    assert authenticate(username="alice@acme.test", password=GLOBEX_ALICE) == globex_alice.user
    assert not PersonAlias.objects.filter(tenant__slug="acme", value="alice@acme.test").exists()


def test_the_password_reset_mail_names_the_organisation(globex, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    response = Client().post("/accounts/password_reset/", {"email": "sam@acme.test"})
    assert response.status_code == 302
    bodies = sorted(m.body for m in mail.outbox)
    assert len(bodies) == 2  # one per organisation whose Sam has a password
    assert "the organisation acme" in bodies[0] and "the organisation globex" in bodies[1]
    for body in bodies:
        assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", body.split("/reset/")[0])


def test_the_workspace_alias_is_the_user_name_scim_shows(globex):
    for slug in ("acme", "globex"):
        assert PersonAlias.objects.filter(
            tenant__slug=slug, kind=AliasKind.UPN, value="sam@acme.test"
        ).exists()
