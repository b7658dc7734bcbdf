"""The verbatim check of the delivery gate is complete: the database is asked which of the
tenant's restricted span excerpts occur in the outgoing text — however many restricted
spans there are — case- and whitespace-insensitively, excerpts shorter than
MIN_EXCERPT_CHARS never matching. Runs on SQLite and PostgreSQL alike."""

import itertools

import pytest

from delivery.cards import build_card
from delivery.provenance import MIN_EXCERPT_CHARS
from delivery.restriction import (
    RESTRICTED_CARD_TEXT,
    gated_card,
    restricted_excerpts_in,
)
from graph.models import Source, SourceVersion, Span

OLD = "Osprey indemnity cap is 12 million"
FORMER_CAP = 1000  # the newest-spans list the gate used to consult
_tx = itertools.count(1_700_000_000_000_000, 1_000_000)


def restricted_text(tenant, excerpts: list[str], *, restriction: str | None = "privileged"):
    """A source (restricted unless told) whose one version has a span per excerpt."""
    source = Source.objects.create(
        tenant=tenant,
        system="test",
        external_id=f"restricted/{next(_tx)}",
        title="A restricted source",
        restriction=restriction,
    )
    text = " | ".join(excerpts)
    version = SourceVersion.objects.create(
        source=source, tx=next(_tx), content_hash=str(next(_tx)), text=text
    )
    spans, at = [], 0
    for excerpt in excerpts:
        spans.append(Span(source_version=version, start=at, end=at + len(excerpt)))
        at += len(excerpt) + 3
    Span.objects.bulk_create(spans)
    return source


def test_an_old_excerpt_beyond_the_former_cap_is_still_found(workspace):
    restricted_text(workspace, [OLD])  # the oldest restricted span of the tenant
    restricted_text(
        workspace, [f"Restricted clause {i:05d} of the deal" for i in range(FORMER_CAP + 5)]
    )
    body = f"Please confirm: {OLD.upper()} — by Friday."
    assert restricted_excerpts_in(workspace, body) == [OLD]
    assert restricted_excerpts_in(workspace, "Restricted clause 00003 of the deal") == [
        "Restricted clause 00003 of the deal"
    ]


def test_a_card_quoting_an_old_restricted_excerpt_is_gated(workspace, submit):
    restricted_text(workspace, [OLD])
    restricted_text(workspace, [f"Clause {i:05d} is confidential" for i in range(1005)])
    clar = submit(title=f"Memo: {OLD}")  # an unrestricted source quoting it in its title
    card, reason = gated_card(build_card(clar, "nonce", ""), clar)
    assert reason == "VERBATIM_RESTRICTED_EXCERPT"
    assert card.question == RESTRICTED_CARD_TEXT
    assert "Osprey" not in repr(card)


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ("osprey\n\tINDEMNITY   cap is 12 MILLION, as agreed", True),  # case and whitespace
        ("xxOsprey indemnity cap is 12 millionxx", True),  # inside other text
        ("The indemnity for Osprey is capped at twelve million", False),  # a paraphrase
        ("Osprey indemnity cap is 12 mil", False),  # a part of it
        ("", False),
    ],
)
def test_matching_is_case_and_whitespace_insensitive_and_literal(workspace, body, found):
    restricted_text(workspace, [OLD])
    assert restricted_excerpts_in(workspace, body) == ([OLD] if found else [])


def test_non_ascii_excerpts_fold_case_too(workspace):
    excerpt = "ÜBERGABE DER SCHLÜSSEL am Ende"
    restricted_text(workspace, [excerpt])
    assert restricted_excerpts_in(workspace, "Die übergabe der schlüssel AM ENDE.") == [excerpt]


def test_like_wildcards_in_an_excerpt_are_literal(workspace):
    excerpt = "discount of 50%_net_ applies"
    restricted_text(workspace, [excerpt])
    assert restricted_excerpts_in(workspace, "discount of 50XYnetZ applies") == []
    assert restricted_excerpts_in(workspace, f"a {excerpt}") == [excerpt]


def test_short_excerpts_unrestricted_sources_and_other_tenants_never_match(workspace, globex):
    short = "Osprey deal"
    assert len(short) < MIN_EXCERPT_CHARS
    restricted_text(workspace, [short])
    restricted_text(workspace, ["Unrestricted clause text here"], restriction=None)
    restricted_text(workspace, ["Empty restriction label text"], restriction="")
    restricted_text(globex.tenant, ["Globex restricted clause text"])
    body = "Osprey deal; Unrestricted clause text here; Empty restriction label text; " + (
        "Globex restricted clause text"
    )
    assert restricted_excerpts_in(workspace, body) == []
    assert restricted_excerpts_in(globex.tenant, body) == ["Globex restricted clause text"]
