"""A digest is checked again when it is sent: the ACL floor (an item whose recipient lost
read access is dropped with its reason code) and the delivery gate (a restricted entry
becomes the teaser, and the block is audited like a card's)."""

from datetime import timedelta

from django.utils import timezone

from clarify.routing import skip_reasons
from delivery.digests import digests_flush
from delivery.models import DeliveryStatus, NonceState
from delivery.restriction import RESTRICTED_CARD_TEXT

from .conftest import SPAN_TEXT, acl_set_unheard, deliveries, event_types, events, run_worker

LATER = timedelta(minutes=31)


def queue_two(submit, clarify_settings, **second):
    """alice gets one card directly, then two questions queued for her digest."""
    clarify_settings(DIGEST_THRESHOLD=1)
    submit(external_id="dg/0.docx")
    run_worker()
    a = submit(external_id="dg/1.docx", title="First queued")
    b = submit(external_id="dg/2.docx", **{"title": "Second queued", **second})
    run_worker()
    assert [deliveries(q)[0].status for q in (a, b)] == [DeliveryStatus.QUEUED_DIGEST] * 2
    return a, b


def test_a_digest_item_the_recipient_can_no_longer_read_is_dropped(
    submit, channel, people, clarify_settings
):
    alice = people["alice"]
    a, b = queue_two(submit, clarify_settings)
    # While b waited, its source became finance-only: alice may no longer read it.
    source = b.source_version.source
    acl_set_unheard(source, ["group:finance"])

    assert digests_flush(now=timezone.now() + LATER) == 1
    [(addr, cards)] = channel.digests
    assert addr == f"fake:{alice.pk}"
    assert [c.clarification_id for c in cards] == [str(a.pk)]
    assert "Second queued" not in repr(cards)
    [dropped] = deliveries(b)
    assert (dropped.status, dropped.nonce_state) == (DeliveryStatus.FAILED, NonceState.REVOKED)
    [skipped] = events(b, "skipped")
    assert skipped.detail == {
        "attempt": 0,
        "candidate": str(alice.pk),
        "reason": "NO_READ_PERMISSION",
        "digest": True,
    }
    assert "delivered" not in event_types(b)
    assert ("NO_READ_PERMISSION" in {r["reason"] for r in skip_reasons(b)}) is True
    assert deliveries(a)[0].status == DeliveryStatus.SENT


def test_a_digest_whose_every_item_is_unreadable_sends_nothing(
    submit, channel, people, clarify_settings
):
    a, b = queue_two(submit, clarify_settings)
    for q in (a, b):
        acl_set_unheard(q.source_version.source, ["group:finance"])
    assert digests_flush(now=timezone.now() + LATER) == 0
    assert channel.digests == []
    assert [deliveries(q)[0].nonce_state for q in (a, b)] == [NonceState.REVOKED] * 2


def test_a_restricted_digest_entry_is_gated_and_the_block_audited(
    submit, channel, people, clarify_settings
):
    # b's own text (a's span text is not among the restricted excerpts).
    private = "MERGER TERMS effective upon closing of the Heron deal"
    a, b = queue_two(
        submit,
        clarify_settings,
        restriction="privileged",
        text=private,
        span={"start": 0, "end": len(private)},
    )
    assert digests_flush(now=timezone.now() + LATER) == 1
    [(_, cards)] = channel.digests
    by_id = {c.clarification_id: c for c in cards}
    assert by_id[str(b.pk)].question == RESTRICTED_CARD_TEXT
    assert by_id[str(b.pk)].buttons == []
    assert "Second queued" not in repr(cards) and "Heron" not in repr(cards)
    assert SPAN_TEXT in by_id[str(a.pk)].excerpt  # the unrestricted entry is untouched
    [blocked] = events(b, "restricted_content_blocked")
    assert blocked.detail == {
        "message": "digest",
        "channel": "fake",
        "reason": "RESTRICTED_PROVENANCE",
        "attempt": 0,
    }
    assert events(a, "restricted_content_blocked") == []


def test_a_digest_entry_quoting_a_restricted_excerpt_verbatim_is_gated(
    submit, channel, people, clarify_settings
):
    secret = "the Falcon earn-out is 40 million"
    text = f"Side letter: {secret}."
    start = text.index(secret)
    submit(
        external_id="restricted/side-letter.docx",
        text=text,
        span={"start": start, "end": start + len(secret)},
        restriction="privileged",
        acl=["group:finance"],
        links=[("AUTHORED_BY", "olga")],
    )
    _, b = queue_two(submit, clarify_settings, name="THE FALCON  earn-out is 40 million")
    assert digests_flush(now=timezone.now() + LATER) == 1
    [(_, cards)] = channel.digests
    assert "falcon" not in repr(cards).lower()
    [blocked] = events(b, "restricted_content_blocked")
    assert (blocked.detail["message"], blocked.detail["reason"]) == (
        "digest",
        "VERBATIM_RESTRICTED_EXCERPT",
    )
