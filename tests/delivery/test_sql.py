"""The delivery worker's literal SQL (`delivery.sql`) writes what the ORM call it
replaces writes, on SQLite and PostgreSQL."""

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from delivery import sql
from delivery.models import Delivery, DeliveryStatus

from .conftest import deliveries, run_worker

pytestmark = pytest.mark.django_db


def test_the_sent_rows_update_writes_what_bulk_update_writes(submit, channel, clarify_settings):
    clarify_settings(PER_PERSON_DAILY_CAP=100, DIGEST_THRESHOLD=100)
    clars = [
        submit(external_id=f"contracts/sql-{i}.docx", links=[("AUTHORED_BY", who)])
        for i, who in enumerate(["alice", "vera", "alice", "vera"])
    ]
    assert run_worker() == 4
    rows = [d for c in clars for d in deliveries(c)]
    assert len(rows) == 4
    fields = list(sql.SENT_FIELDS)

    def written() -> list[tuple[Any, ...]]:
        return list(
            Delivery.objects.filter(pk__in=[d.pk for d in rows])
            .order_by("pk")
            .values_list("pk", *fields)
        )

    sent_at = timezone.now().replace(microsecond=123456)
    for i, d in enumerate(rows):
        d.status, d.message_ref = DeliveryStatus.SENT, f"ref-{i}"
        d.sent_at, d.redacted = sent_at + timedelta(seconds=i), i % 2 == 1
    Delivery.objects.bulk_update(rows, fields)
    by_orm = written()
    Delivery.objects.filter(pk__in=[d.pk for d in rows]).update(
        status=DeliveryStatus.FAILED, message_ref="", sent_at=None, redacted=False
    )
    assert written() != by_orm
    with CaptureQueriesContext(connection) as queries:
        sql.sent_rows_write(rows)
    assert written() == by_orm
    assert sum("UPDATE" in q["sql"] for q in queries) == 1  # one executemany
