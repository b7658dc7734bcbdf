"""The demo workspace (`telha demo_setup`, what `make run` loads): idempotent, opens
clarifications of every kind from the shipped documents, and after the delivery worker
runs the demo people have cards in their inboxes."""

import io
import json
import re
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client

from clarify.models import Clarification
from delivery.models import Delivery
from graph.models import Edge, Node, Source, SourceVersion
from jobs.models import Job
from jobs.tasks import work
from tenancy.models import Person, Tenant

pytestmark = pytest.mark.django_db

DEMO = Path(django_settings.BASE_DIR) / "demo"
KINDS = {"conflicting_dates", "relative_date", "undated", "low_confidence_extraction"}


@pytest.fixture(autouse=True)
def inbox_only(settings):
    """The demo's default channels without Slack/Teams credentials: the inbox."""
    settings.CLARIFY_CHANNELS = ["teams", "slack", "inbox"]
    settings.SLACK_BOT_TOKEN = settings.SLACK_SIGNING_SECRET = ""
    settings.TEAMS_APP_ID = settings.TEAMS_APP_PASSWORD = ""


def demo_setup() -> str:
    out = io.StringIO()
    call_command("demo_setup", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def counts() -> dict[str, int]:
    return {
        "Person": Person.objects.count(),
        "Source": Source.objects.count(),
        "SourceVersion": SourceVersion.objects.count(),
        "Node": Node.objects.count(),
        "Edge": Edge.objects.count(),
        "Clarification": Clarification.objects.count(),
        "Job": Job.objects.count(),
    }


def run_delivery() -> int:
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work("clarify:temporal", max_seconds=10)


def demo_password(email: str) -> str:
    data = json.loads((DEMO / "workspace.json").read_text())
    return next(p["password"] for p in data["people"] if p["email"] == email)


def inbox_cards(email: str) -> list[str]:
    client = Client()
    assert client.login(username=email, password=demo_password(email))
    page = client.get("/inbox/")
    assert page.status_code == 200
    return re.findall(r'<section class="card" data-clarification="([^"]+)">', page.content.decode())


def test_the_demo_files_are_shipped():
    documents = sorted(
        p.relative_to(DEMO / "documents").as_posix()
        for p in (DEMO / "documents").rglob("*")
        if p.is_file()
    )
    assert any(d.startswith("contracts/") and d.endswith(".md") for d in documents)
    assert "policies/policies.csv" in documents
    assert sum(d.endswith(".eml") for d in documents) >= 2
    data = json.loads((DEMO / "workspace.json").read_text())
    roles = {p["role"] for p in data["people"]}
    assert roles == {"viewer", "editor", "steward"}
    assert len(data["groups"]) == 2


def test_demo_setup_is_idempotent_and_opens_every_kind():
    first = demo_setup()
    tenant = Tenant.objects.get(slug="acme")
    opened = Clarification.objects.filter(tenant=tenant)
    assert {c.kind for c in opened} == KINDS
    n = opened.count()
    assert f"{n} clarification(s) opened, 0 already there" in first
    assert "alice@acme.test" in first and "demo-alice-2026" in first  # the demo sign-ins
    before = counts()

    second = demo_setup()
    assert counts() == before
    assert f"0 clarification(s) opened, {n} already there" in second


def test_demo_clarifications():
    demo_setup()
    by_source = {}
    for clar in Clarification.objects.select_related("source_version__source"):
        by_source.setdefault(clar.source_version.source.external_id, []).append(clar.kind)
    assert sorted(by_source["contracts/acme-globex-msa.md"]) == [
        "conflicting_dates",
        "relative_date",
    ]
    assert by_source["contracts/supplier-payment-terms.md"] == ["relative_date"]
    assert by_source["contracts/initech-nda.md"] == ["relative_date"]
    assert by_source["contracts/warehouse-mou.md"] == ["undated"]
    assert sorted(by_source["policies/policies.csv"]) == [
        "conflicting_dates",
        "low_confidence_extraction",
    ]
    assert by_source["mail/renewal-notice.eml"] == ["conflicting_dates"]
    assert by_source["mail/undated-board-note.eml"] == ["undated"]
    # The signature conflict is critical in the demo policy.
    msa = Clarification.objects.get(
        source_version__source__external_id="contracts/acme-globex-msa.md", kind="conflicting_dates"
    )
    assert msa.severity == "critical"
    assert [c["label"] for c in msa.candidates] == [
        "12 June (signature)",
        "19 June (countersignature)",
    ]


def test_after_the_delivery_worker_the_demo_people_have_cards():
    demo_setup()
    assert run_delivery() >= 1
    for email in ("alice@acme.test", "ahmed@acme.test", "fiona@acme.test"):
        assert inbox_cards(email), f"{email} has no card"
    delivered = set(Delivery.objects.values_list("person__email", flat=True))
    assert {"alice@acme.test", "ahmed@acme.test", "fiona@acme.test"} <= delivered
    # The viewer is never asked (a viewer cannot bind an answer).
    assert inbox_cards("victor@acme.test") == []
    # Running the setup again does not re-ask anyone.
    before = Delivery.objects.count()
    demo_setup()
    run_delivery()
    assert Delivery.objects.count() == before
