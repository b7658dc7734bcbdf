"""The spec §12 named delivery tests: clarify_rbac_gate, clarify_escalation, clarify_caps."""

import json
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from clarify.models import Clarification, State
from clarify.selectors import needs_steward_attention_q
from delivery.digests import digests_flush
from delivery.models import Delivery, DeliveryKind, DeliveryStatus
from graph.models import Source
from jobs.models import Job, JobStatus
from tenancy.models import AliasKind, PersonAlias

from .conftest import (
    PASSWORD,
    SPAN_TEXT,
    deliveries,
    event_types,
    events,
    expire_window,
    job_of,
    lapse_lease,
    run_worker,
    submit_with,
    window_passes,
)


def inbox_page(person) -> str:
    """The person's /inbox/ page, signed in with their email and password."""
    client = Client()
    assert client.login(username=person.email, password=PASSWORD)
    resp = client.get("/inbox/")
    assert resp.status_code == 200
    return resp.content.decode()


def tamper_ranking(clar: Clarification, ranking: list) -> None:
    """Rewrite the routing job's payload ranking (max_attempts kept consistent)."""
    job = job_of(clar)
    ranking = [str(p) for p in ranking]
    Job.objects.filter(pk=job.pk).update(
        payload={**job.payload, "ranking": ranking}, max_attempts=len(ranking) + 1
    )


def skipped(clar: Clarification) -> list[tuple[int, str, str]]:
    return [
        (e.detail["attempt"], e.detail["candidate"], e.detail["reason"])
        for e in events(clar, "skipped")
    ]


def delivered_to(clar: Clarification) -> list[str]:
    return [e.detail["candidate"] for e in events(clar, "delivered")]


def reasons(items: list[dict]) -> list[tuple[int, str, str]]:
    return [(r["attempt"], r["candidate"], r["reason"]) for r in items]


def test_clarify_rbac_gate(submit, channel, with_passwords, globex):
    people, gina, gus, sally = with_passwords, *(globex.people[n] for n in ("gina", "gus", "sally"))
    alice, olga, sam = people["alice"], people["olga"], people["sam"]

    # Control: workspace B's own question reaches B's editor (so an empty page means
    # something below).
    own = submit_with(
        globex.ingest_client,
        external_id="globex/own.docx",
        text="Globex own text, dated soon.",
        span={"start": 0, "end": 16},
        links=[("AUTHORED_BY", "gina")],
        email_domain="globex.test",
    )
    # 1. A question of workspace A whose job ranking was tampered with to put workspace B's
    # people first: they are skipped as TENANT_SCOPE_MISMATCH, olga (finance, the source
    # is legal-only) as NO_READ_PERMISSION, and only alice is asked.
    clar = submit(links=[("AUTHORED_BY", "alice"), ("MENTIONS", "olga")])
    assert clar.asked == [str(alice.pk), str(olga.pk)]
    tamper_ranking(clar, [gina.pk, gus.pk, olga.pk, alice.pk])

    assert run_worker() == 2

    assert skipped(clar) == [
        (0, str(gina.pk), "TENANT_SCOPE_MISMATCH"),
        (1, str(gus.pk), "TENANT_SCOPE_MISMATCH"),
        (2, str(olga.pk), "NO_READ_PERMISSION"),
    ]
    assert delivered_to(clar) == [str(alice.pk)]
    assert [(d.attempt, d.person_id, d.kind) for d in deliveries(clar)] == [
        (3, alice.pk, DeliveryKind.QUESTION)
    ]
    assert delivered_to(own) == [str(gina.pk)]
    # The delivery log: the span text went to alice only, never to a workspace-B person.
    span_sends = [addr for addr, card in channel.cards if SPAN_TEXT in card.excerpt]
    assert span_sends == [f"fake:{alice.pk}"]
    for addr, card in channel.cards:
        if channel.person_of(addr).tenant_id == globex.tenant.pk:
            assert SPAN_TEXT not in repr(card)
            assert card.clarification_id == str(own.pk)
    assert not Delivery.objects.filter(tenant=globex.tenant).exclude(clarification=own).exists()
    assert not Delivery.objects.filter(clarification=clar, person__tenant=globex.tenant).exists()
    # B's inbox pages: their own question, never A's span text or clarification.
    gina_page = inbox_page(gina)
    assert str(own.pk) in gina_page
    for person in (gina, gus, sally):
        page = inbox_page(person)
        assert SPAN_TEXT not in page
        assert str(clar.pk) not in page
    assert SPAN_TEXT in inbox_page(alice)
    assert SPAN_TEXT not in inbox_page(olga)

    # 2. Nobody passes (finance-only source, legal-only candidates): the redacted steward
    # escalation goes out at once, in the same lease, with the NO_READ_PERMISSION codes.
    secret = submit(
        external_id="contracts/finance.docx",
        acl=["group:finance"],
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob"), ("MENTIONS", "vera")],
    )
    ranking = secret.asked
    assert len(ranking) == 3
    sent_before = len(channel.cards)
    assert run_worker() == 1

    assert len(channel.cards) == sent_before  # no question card to anyone
    assert not Delivery.objects.filter(clarification=secret, kind=DeliveryKind.QUESTION).exists()
    assert skipped(secret) == [(i, p, "NO_READ_PERMISSION") for i, p in enumerate(ranking)]
    [esc_row] = deliveries(secret)
    assert (esc_row.kind, esc_row.person_id, esc_row.redacted, esc_row.status, esc_row.attempt) == (
        DeliveryKind.ESCALATION,
        sam.pk,
        True,
        DeliveryStatus.SENT,
        3,
    )
    [escalated] = events(secret, "escalated")
    assert escalated.detail["stewards"] == [str(sam.pk)]
    assert reasons(escalated.detail["skipReasons"]) == [
        (i, p, "NO_READ_PERMISSION") for i, p in enumerate(ranking)
    ]
    [(addr, escalation)] = [
        (a, e) for a, e in channel.escalations if e.clarification_id == str(secret.pk)
    ]
    assert addr == f"fake:{sam.pk}"  # workspace B's steward is never told
    assert escalation.document_title == "Master services agreement"
    assert escalation.document_url == "https://example.test/contracts/finance.docx"
    assert "NO_READ_PERMISSION" in escalation.text
    assert SPAN_TEXT not in repr(escalation)
    assert "ACME-CONFIDENTIAL" not in repr(escalation)
    assert SPAN_TEXT not in inbox_page(sam)
    assert job_of(secret).attempts == 3  # skips burnt no window: straight to the last attempt

    # 3. An unparseable ACL fails closed: NO_READ_PERMISSION for everyone, even for people
    # who still hold view_source on it.
    for n, garbage in enumerate(["garbage", ["group:legal", 42], [""], {"group": "legal"}]):
        broken = submit(external_id=f"contracts/broken-{n}.docx")
        source = broken.source_version.source
        Source.objects.filter(pk=source.pk).update(acl=garbage)
        assert alice.user.has_perm("graph.view_source", source)  # guardian still says yes
        run_worker()
        assert skipped(broken) == [
            (i, p, "NO_READ_PERMISSION") for i, p in enumerate(broken.asked)
        ], garbage
        assert not Delivery.objects.filter(clarification=broken, kind=DeliveryKind.QUESTION)
        [esc] = Delivery.objects.filter(clarification=broken, kind=DeliveryKind.ESCALATION)
        assert esc.redacted and esc.person_id == sam.pk
        assert "delivered" not in event_types(broken)

    # Across everything sent: A's span text only ever reached alice.
    assert [a for a, c in channel.cards if SPAN_TEXT in repr(c)] == [f"fake:{alice.pk}"]
    assert not [e for _, e in channel.escalations if SPAN_TEXT in repr(e)]
    assert channel.digests == []


def test_clarify_rbac_gate_on_the_slack_stub(slack_settings, slack_stub, submit, people, globex):
    """The same gate, asserted on the Slack Web API stub's delivery log: workspace A's span
    text reaches only alice's Slack DM, never a workspace-B person, and the redacted
    steward escalation goes to the steward's DM with the reason codes and no span text."""
    gina, gus = globex.people["gina"], globex.people["gus"]
    alice, olga, sam = people["alice"], people["olga"], people["sam"]
    for person, slack_id in ((gina, "U0GINA"), (gus, "U0GUS"), (sam, "U0SAM")):
        PersonAlias.objects.create(
            tenant=person.tenant, person=person, kind=AliasKind.SLACK_USER_ID, value=slack_id
        )

    def posts_to(user: str) -> list[str]:
        return [
            json.dumps(c.body, ensure_ascii=False)
            for c in slack_stub.of("chat.postMessage")
            if c.body.get("channel") == user
        ]

    own = submit_with(
        globex.ingest_client,
        external_id="globex/own.docx",
        text="Globex own text, dated soon.",
        span={"start": 0, "end": 16},
        links=[("AUTHORED_BY", "gina")],
        email_domain="globex.test",
    )
    clar = submit(links=[("AUTHORED_BY", "alice"), ("MENTIONS", "olga")])
    tamper_ranking(clar, [gina.pk, gus.pk, olga.pk, alice.pk])
    assert run_worker() == 2

    [to_alice] = posts_to("U0ALICE")
    assert SPAN_TEXT in to_alice and str(clar.pk) in to_alice
    [to_gina] = posts_to("U0GINA")  # the control: B's own question reached B's editor
    assert str(own.pk) in to_gina
    for body in posts_to("U0GINA") + posts_to("U0GUS"):
        assert SPAN_TEXT not in body and str(clar.pk) not in body
    assert posts_to("U0GUS") == []

    # Nobody passes: the redacted escalation reaches the steward's DM at once.
    secret = submit(
        external_id="contracts/finance.docx",
        acl=["group:finance"],
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")],
    )
    assert run_worker() == 1
    [to_sam] = posts_to("U0SAM")
    assert str(secret.pk) in to_sam and "NO_READ_PERMISSION" in to_sam
    assert "Master services agreement" in to_sam
    assert SPAN_TEXT not in to_sam and "ACME-CONFIDENTIAL" not in to_sam

    # Across the whole delivery log, A's span text only ever went to alice.
    carrying = [
        c.body.get("channel")
        for c in slack_stub.calls
        if SPAN_TEXT in json.dumps(c.body, ensure_ascii=False)
    ]
    assert carrying == ["U0ALICE"]


def test_clarify_escalation(submit, channel, with_passwords, clarify_settings):
    clarify_settings(MAX_CANDIDATES=4)
    alice, olga, vera, bob, sam = (
        with_passwords[n] for n in ("alice", "olga", "vera", "bob", "sam")
    )
    channel.unreachable.add(str(vera.pk))  # vera has no address on any channel
    clar = submit(
        links=[
            ("AUTHORED_BY", "alice"),
            ("MENTIONS", "olga"),
            ("MENTIONS", "vera"),
            ("OWNED_BY", "bob"),
        ]
    )
    ranking = [str(p.pk) for p in (alice, olga, vera, bob)]
    assert clar.asked == ranking
    job = job_of(clar)
    assert job.max_attempts == 5

    # Attempt 0 asks ranking[0].
    assert run_worker() == 1
    assert [(d.attempt, d.person_id) for d in deliveries(clar)] == [(0, alice.pk)]
    assert delivered_to(clar) == [str(alice.pk)]
    assert run_worker() == 0  # still inside alice's window: nobody else is asked

    # Alice's lease lapses without an answer: the job is re-pended for the next attempt
    # after the backoff, which is the escalation window; the window is still running.
    job = lapse_lease(clar)
    assert (job.status, job.attempts) == (JobStatus.PENDING, 1)
    assert job.run_after > timezone.now() + timedelta(hours=48 * 0.9, minutes=-1)  # jitter
    clar.refresh_from_db()
    assert clar.state == State.OPEN
    assert run_worker() == 0  # the window has not passed yet
    assert len(channel.cards) == 1

    # The window passes: `expired` until the next attempt starts.
    window_passes(clar)
    clar.refresh_from_db()
    assert clar.state == State.EXPIRED
    [expired] = events(clar, "window_expired")
    assert expired.detail == {"attempt": 0, "candidate": str(alice.pk)}
    assert Clarification.objects.filter(needs_steward_attention_q(), pk=clar.pk).exists()

    # The next attempt re-opens it; olga (no read permission) and vera (no delivery alias)
    # are skipped in the same lease, bob (ranking[3]) is asked.
    assert run_worker() == 1
    clar.refresh_from_db()
    assert clar.state == State.OPEN
    state_changes = [(e.detail["from"], e.detail["to"]) for e in events(clar, "state_changed")]
    assert state_changes == [("open", "expired"), ("expired", "open")]
    assert skipped(clar) == [
        (1, str(olga.pk), "NO_READ_PERMISSION"),
        (2, str(vera.pk), "NO_DELIVERY_ALIAS"),
    ]
    assert [(d.attempt, d.person_id) for d in deliveries(clar)] == [(0, alice.pk), (3, bob.pk)]
    assert delivered_to(clar) == [str(alice.pk), str(bob.pk)]
    assert [a for a, _ in channel.cards] == [f"fake:{alice.pk}", f"fake:{bob.pk}"]
    assert job_of(clar).attempts == 3

    # Bob's window passes too: the attempt after the last candidate is the redacted
    # steward escalation with the skip reasons.
    expire_window(clar)
    assert run_worker() == 1
    [esc] = deliveries(clar, kind=DeliveryKind.ESCALATION)
    assert (esc.attempt, esc.person_id, esc.redacted) == (4, sam.pk, True)
    [(addr, escalation)] = channel.escalations
    assert addr == f"fake:{sam.pk}"
    expected = [(1, str(olga.pk), "NO_READ_PERMISSION"), (2, str(vera.pk), "NO_DELIVERY_ALIAS")]
    assert reasons(escalation.skip_reasons) == expected
    assert SPAN_TEXT not in repr(escalation)
    [escalated] = events(clar, "escalated")
    assert reasons(escalated.detail["skipReasons"]) == expected
    assert not Clarification.objects.filter(needs_steward_attention_q(), pk=clar.pk).exists()

    # The steward's window passes: the ranking is exhausted → dead-lettered, into the
    # steward digest with the per-candidate reason codes.
    lapse_lease(clar)
    job = job_of(clar)
    assert (job.status, job.attempts) == (JobStatus.DEAD, 5)
    clar.refresh_from_db()
    assert clar.state == State.DEAD_LETTERED
    [dead] = events(clar, "dead_lettered")
    assert reasons(dead.detail["skipReasons"]) == expected
    assert [
        (e.detail["attempt"], e.detail["candidate"]) for e in events(clar, "window_expired")
    ] == [
        (0, str(alice.pk)),
        (3, str(bob.pk)),
    ]
    attention = Clarification.objects.filter(needs_steward_attention_q())
    assert list(attention.values_list("pk", flat=True)) == [clar.pk]
    # Nobody is asked again.
    window_passes(clar)
    assert run_worker() == 0
    assert Delivery.objects.filter(clarification=clar).count() == 3
    assert len(channel.cards) == 2 and len(channel.escalations) == 1


def test_clarify_caps(submit, channel, people, clarify_settings):
    alice, bob, olga = people["alice"], people["bob"], people["olga"]

    # Per-person daily cap: alice's second question today is skipped, bob is asked.
    clarify_settings(PER_PERSON_DAILY_CAP=1, DIGEST_THRESHOLD=100)
    first = submit(external_id="caps/one.docx")
    run_worker()
    assert [(d.attempt, d.person_id) for d in deliveries(first)] == [(0, alice.pk)]
    second = submit(external_id="caps/two.docx")
    assert second.asked == [str(alice.pk), str(bob.pk)]
    run_worker()
    assert skipped(second) == [(0, str(alice.pk), "DAILY_CAP_EXCEEDED")]
    assert [(d.attempt, d.person_id) for d in deliveries(second)] == [(1, bob.pk)]
    assert delivered_to(second) == [str(bob.pk)]
    assert job_of(second).attempts == 1  # the skip burnt no window
    # The cap is per day: once alice's earlier card is more than a day old she is asked.
    Delivery.objects.filter(clarification=first).update(
        created_at=timezone.now() - timedelta(days=1, minutes=1)
    )
    third = submit(external_id="caps/three.docx")
    run_worker()
    assert [(d.attempt, d.person_id) for d in deliveries(third)] == [(0, alice.pk)]
    assert skipped(third) == []

    # Digest batching: beyond the threshold inside the window, normal questions to olga
    # are queued; high and critical ones always go directly.
    clarify_settings(PER_PERSON_DAILY_CAP=100, DIGEST_THRESHOLD=1)
    only_olga = {"acl": ["group:finance"], "links": [("AUTHORED_BY", "olga")]}
    direct = submit(external_id="digest/0.docx", **only_olga)
    run_worker()
    queued = [submit(external_id=f"digest/{i}.docx", **only_olga) for i in (1, 2)]
    run_worker()
    high = submit(external_id="digest/high.docx", severity_hint="high", **only_olga)
    critical = submit(external_id="digest/critical.docx", severity_hint="critical", **only_olga)
    low = submit(external_id="digest/low.docx", severity_hint="low", **only_olga)
    run_worker()

    olga_cards = [c.clarification_id for a, c in channel.cards if a == f"fake:{olga.pk}"]
    # (critical jobs are leased before high ones: priority 0 before 1)
    assert olga_cards == [str(direct.pk), str(critical.pk), str(high.pk)]
    for clar in queued:
        [d] = deliveries(clar)
        assert (d.person_id, d.status, d.sent_at) == (olga.pk, DeliveryStatus.QUEUED_DIGEST, None)
        [digested] = events(clar, "digested")
        assert digested.detail["reason"] == "DIGESTED"
        assert digested.detail["candidate"] == str(olga.pk)
        assert "delivered" not in event_types(clar)
    for clar in (direct, high, critical):
        [d] = deliveries(clar, kind="question")
        assert d.status == DeliveryStatus.SENT
        assert "digested" not in event_types(clar)
    assert not Delivery.objects.filter(clarification=low).exists()
    assert not Job.objects.filter(subject=str(low.pk)).exists()

    # Nothing is due inside the window; after it, ONE digest message lists both.
    assert digests_flush(now=timezone.now()) == 0
    assert channel.digests == []
    assert digests_flush(now=timezone.now() + timedelta(minutes=31)) == 1
    [(addr, cards)] = channel.digests
    assert addr == f"fake:{olga.pk}"
    assert [c.clarification_id for c in cards] == [str(q.pk) for q in queued]
    assert [c.nonce for c in cards] == [deliveries(q)[0].nonce for q in queued]
    for clar in queued:
        [d] = deliveries(clar)
        assert d.status == DeliveryStatus.SENT and d.sent_at is not None
        [delivered] = events(clar, "delivered")
        assert delivered.detail["digest"] == 2
    # Flushing again sends nothing more.
    assert digests_flush(now=timezone.now() + timedelta(minutes=62)) == 0
    assert len(channel.digests) == 1
