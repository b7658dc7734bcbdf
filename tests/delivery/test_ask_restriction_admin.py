"""Restriction is a property of a source, set in the submission or by a steward in the admin
(issue 9, `chat-turn-restriction-provenance`): only the restriction is editable, only by a
steward of the source's tenant, every change is audited, and it is not the ACL."""

from typing import Any

from django.test import Client

from clarify.models import AuditEvent
from delivery.ask.services import respond
from delivery.provenance import RESTRICTED_TEASER
from graph.models import Source, SourceGroupObjectPermission, SourceVersion

from .conftest import PASSWORD
from .conftest_ask import MSA_QUESTION


def change_url(source: Source) -> str:
    return f"/admin/graph/source/{source.pk}/change/"


def signed_in(person: Any) -> Client:
    client = Client()
    client.force_login(person.user)
    return client


def snapshot() -> dict[str, list[dict[str, Any]]]:
    return {
        m.__name__: list(m.objects.order_by("pk").values())
        for m in (Source, SourceVersion, SourceGroupObjectPermission, AuditEvent)
    }


FORM = {
    "restriction": "privileged",
    # Everything else on the page is read-only: posting it changes nothing.
    "title": "Renamed",
    "acl": '["group:finance"]',
    "uri": "javascript:alert(1)",
    "system": "other",
    "external_id": "x",
}


def test_a_steward_marks_a_source_restricted_and_lifts_it(world, people) -> None:
    source = world.msa.source_version.source
    acl, title, perms = source.acl, source.title, snapshot()["SourceGroupObjectPermission"]
    sam = signed_in(people["sam"])
    page = sam.get(change_url(source)).content.decode()
    assert 'name="restriction"' in page
    for readonly in ("title", "acl", "uri", "system", "external_id"):
        assert f'name="{readonly}"' not in page
    assert "Restriction is not the ACL" in page

    resp = sam.post(change_url(source), FORM)
    assert resp.status_code == 302, resp.content
    source.refresh_from_db()
    assert source.restriction == "privileged"
    assert (source.acl, source.title, source.system) == (acl, title, "sharepoint")
    assert snapshot()["SourceGroupObjectPermission"] == perms  # the ACL is untouched
    [event] = AuditEvent.objects.filter(type="source_restriction_changed")
    assert event.tenant_id == source.tenant_id
    assert event.detail == {
        "source": str(source.pk),
        "by": str(people["sam"].pk),
        "before": None,
        "after": "privileged",
    }
    # From now on nothing of it crosses to a chat channel; the inbox still shows it.
    delivered, answer = respond(person=people["alice"], question=MSA_QUESTION, channel="slack")
    assert delivered == RESTRICTED_TEASER and "MSA term" in answer.text
    delivered, _ = respond(person=people["alice"], question=MSA_QUESTION, channel="inbox")
    assert "MSA term" in delivered

    # Saving the same value again records nothing new.
    assert sam.post(change_url(source), {"restriction": " privileged "}).status_code == 302
    assert AuditEvent.objects.filter(type="source_restriction_changed").count() == 1

    # Lifting it: empty means unrestricted.
    assert sam.post(change_url(source), {"restriction": ""}).status_code == 302
    source.refresh_from_db()
    assert source.restriction is None
    lifted = AuditEvent.objects.filter(type="source_restriction_changed").last()
    assert lifted is not None
    assert (lifted.detail["before"], lifted.detail["after"]) == ("privileged", None)
    delivered, _ = respond(person=people["alice"], question=MSA_QUESTION, channel="slack")
    assert "MSA term" in delivered


def test_another_tenants_steward_cannot_see_or_change_it(world, globex) -> None:
    source = world.msa.source_version.source
    sally = Client()
    assert sally.login(username="sally@globex.test", password=PASSWORD)
    before = snapshot()
    assert sally.get(change_url(source), follow=True).redirect_chain[-1][0] == "/admin/"
    resp = sally.post(change_url(source), {"restriction": "privileged"}, follow=True)
    assert resp.redirect_chain[-1][0] == "/admin/"
    assert snapshot() == before


def test_only_a_steward_may_change_it(world, people) -> None:
    source = world.msa.source_version.source
    before = snapshot()
    for who in ("alice", "vera"):
        resp = signed_in(people[who]).post(change_url(source), {"restriction": "privileged"})
        assert resp.status_code == 302 and "/admin/login/" in resp["Location"]
    assert Client().post(change_url(source), {"restriction": "x"}).status_code == 302
    assert snapshot() == before


def test_an_overlong_or_nul_label_is_refused(world, people) -> None:
    source = world.msa.source_version.source
    sam = signed_in(people["sam"])
    before = snapshot()
    resp = sam.post(change_url(source), {"restriction": "x" * 101})
    assert resp.status_code == 200  # the form again, with the error
    assert "errorlist" in resp.content.decode()
    # A NUL never reaches the form (the request guard refuses it).
    assert sam.post(change_url(source), {"restriction": "privi\x00leged"}).status_code == 400
    assert snapshot() == before


def test_sources_still_cannot_be_added_or_deleted(world, people) -> None:
    source = world.msa.source_version.source
    sam = signed_in(people["sam"])
    before = snapshot()
    assert sam.get("/admin/graph/source/add/").status_code == 403
    assert sam.post(f"/admin/graph/source/{source.pk}/delete/", {"post": "yes"}).status_code == 403
    assert snapshot() == before


def test_a_resubmission_never_lifts_a_restriction(world, people, submit) -> None:
    """Fail closed: a later submission of the same source may set or change its restriction
    but one that names none leaves it as it is; only a steward lifts it."""
    source = world.msa.source_version.source
    assert signed_in(people["sam"]).post(change_url(source), FORM).status_code == 302
    submit()  # the same source again, naming no restriction
    source.refresh_from_db()
    assert source.restriction == "privileged"
    delivered, _ = respond(person=people["alice"], question=MSA_QUESTION, channel="slack")
    assert delivered == RESTRICTED_TEASER

    submit(restriction="secret")
    source.refresh_from_db()
    assert source.restriction == "secret"
