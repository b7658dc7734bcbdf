"""A digest re-rendered after a tap lists what `delivery.digests.digest_siblings` gives,
the one rule every chat channel uses (issue 31 item 3): the recipient's own question
cards of that message, in the order they were listed, each clarification once, the
tapped card always among those a digest shows."""

import uuid

import pytest

from delivery.digests import digest_siblings
from delivery.models import Delivery, DeliveryKind, DeliveryStatus

pytestmark = pytest.mark.django_db

MESSAGE = "slack:D0ALICE:1760000000.000100"


def _card(clar, person, *, kind=DeliveryKind.QUESTION, attempt=0, ref=MESSAGE) -> Delivery:
    return Delivery.objects.create(
        tenant=clar.tenant,
        clarification=clar,
        person=person,
        attempt=attempt,
        kind=kind,
        channel="slack",
        status=DeliveryStatus.SENT,
        nonce=uuid.uuid4().hex,
        message_ref=ref,
    )


@pytest.fixture
def digest(submit, people):
    """Three of alice's questions in one message, a re-send of the first in it again,
    and rows of that reference that are not alice's questions (bob's card, a steward
    notice)."""
    clars = [submit(external_id=f"contracts/digest-{n}.docx", name=f"Term {n}") for n in range(3)]
    alice = people["alice"]
    first, second, third = (_card(c, alice) for c in clars)
    resent = _card(clars[0], alice, attempt=1)
    _card(clars[1], people["bob"])
    _card(clars[2], alice, kind=DeliveryKind.ESCALATION)
    return first, second, third, resent


def test_a_digest_lists_the_recipients_own_questions_once_each_in_sent_order(digest):
    first, second, third, resent = digest
    assert digest_siblings(second, 8) == [first, second, third]
    # The tapped delivery stands for its clarification (a re-send of it in the message).
    assert digest_siblings(resent, 8) == [resent, second, third]


def test_the_tapped_card_is_always_among_the_cards_a_digest_shows(digest):
    first, second, third, _ = digest
    assert digest_siblings(third, 2) == [first, third]
    # Listed within them: the message as it was (the rendering points past the limit).
    assert digest_siblings(first, 2) == [first, second, third]


def test_a_single_card_or_one_without_a_message_is_its_own_digest(submit, people):
    clar = submit(external_id="contracts/alone.docx", name="Alone")
    alone = _card(clar, people["alice"], ref="slack:D0ALICE:1760000000.000200")
    unsent = _card(clar, people["bob"], ref="")
    assert digest_siblings(alone, 8) == [alone]
    assert digest_siblings(unsent, 8) == [unsent]
