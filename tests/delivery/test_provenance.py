"""The provenance contract and the deterministic delivery gate (story
`chat-turn-restriction-provenance`, "Provenance contract + enforcement branches"): every
parse branch, fail-closed; channel-origin normalisation; the gate's block reasons, its
case- and whitespace-insensitive verbatim match, and the paraphrase that passes."""

from typing import Any

import pytest

from delivery import provenance
from delivery.provenance import (
    CHANNEL_ORIGINS,
    DEFAULT_ORIGIN,
    MIN_EXCERPT_CHARS,
    RESTRICTED_TEASER,
    ProvenanceError,
    RestrictedSourceRef,
    gate_outbound,
    normalize_channel_origin,
    parse_restriction_provenance,
    verbatim_match,
)

EXCERPT = "settlement of USD 4.2M with Initech (PRIV-HOLD-5521)"
SOURCE_ID = "9b0f6c1e-1d2b-4c55-9a3e-0f3f8f1c2d3e"


# --- channel origin -------------------------------------------------------------------------


@pytest.mark.parametrize("absent", [None, "", "   ", "\t\n"])
def test_an_absent_origin_normalises_to_the_default(absent: Any) -> None:
    assert normalize_channel_origin(absent) == DEFAULT_ORIGIN == "inbox"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("inbox", "inbox"),
        ("slack", "slack"),
        ("teams", "teams"),
        ("Slack", "slack"),
        (" TEAMS ", "teams"),
        ("\tInbox\n", "inbox"),
    ],
)
def test_known_channel_names_are_case_and_space_insensitive(given: str, expected: str) -> None:
    assert normalize_channel_origin(given) == expected
    assert expected in CHANNEL_ORIGINS


@pytest.mark.parametrize(
    "garbage",
    [
        "app",
        "whatsapp",
        "slack2",
        "sl ack",
        "slack;teams",
        "x" * 500,
        5,
        0,
        True,
        b"slack",
        ["slack"],
        {"channel": "slack"},
        3.5,
    ],
)
def test_a_garbage_origin_raises(garbage: Any) -> None:
    with pytest.raises(ProvenanceError):
        normalize_channel_origin(garbage)


# --- restriction provenance: the parse --------------------------------------------------------


@pytest.mark.parametrize("none", [None, []])
def test_none_and_the_empty_list_mean_no_restricted_source(none: Any) -> None:
    assert parse_restriction_provenance(none) == []


@pytest.mark.parametrize("kind", ["source", "document", "matter"])
def test_a_valid_item_without_restriction(kind: str) -> None:
    [ref] = parse_restriction_provenance([{"kind": kind, "sourceId": SOURCE_ID}])
    assert ref == RestrictedSourceRef(kind, SOURCE_ID, None)
    assert ref.as_json() == {"kind": kind, "sourceId": SOURCE_ID}


def test_valid_items_with_restriction_round_trip() -> None:
    raw = [
        {"kind": "source", "sourceId": SOURCE_ID, "restriction": "privileged"},
        {"kind": "matter", "sourceId": "matter-42"},
    ]
    refs = parse_restriction_provenance(raw)
    assert refs == [
        RestrictedSourceRef("source", SOURCE_ID, "privileged"),
        RestrictedSourceRef("matter", "matter-42", None),
    ]
    assert [r.as_json() for r in refs] == raw
    assert parse_restriction_provenance([r.as_json() for r in refs]) == refs


@pytest.mark.parametrize(
    "malformed",
    [
        pytest.param("source", id="a string"),
        pytest.param({"kind": "source", "sourceId": SOURCE_ID}, id="an object, not a list"),
        pytest.param(({"kind": "source", "sourceId": SOURCE_ID},), id="a tuple"),
        pytest.param(0, id="a number"),
        pytest.param(True, id="a boolean"),
        pytest.param([None], id="a null item"),
        pytest.param(["source"], id="a string item"),
        pytest.param([[{"kind": "source", "sourceId": SOURCE_ID}]], id="a nested list"),
        pytest.param([{}], id="an empty item"),
        pytest.param([{"sourceId": SOURCE_ID}], id="no kind"),
        pytest.param([{"kind": "folder", "sourceId": SOURCE_ID}], id="an unknown kind"),
        pytest.param([{"kind": "Source", "sourceId": SOURCE_ID}], id="a kind in the wrong case"),
        pytest.param([{"kind": None, "sourceId": SOURCE_ID}], id="a null kind"),
        pytest.param([{"kind": ["source"], "sourceId": SOURCE_ID}], id="an unhashable kind"),
        pytest.param([{"kind": {"k": 1}, "sourceId": SOURCE_ID}], id="an object kind"),
        pytest.param([{"kind": "source"}], id="no sourceId"),
        pytest.param([{"kind": "source", "sourceId": ""}], id="an empty sourceId"),
        pytest.param([{"kind": "source", "sourceId": "   "}], id="a blank sourceId"),
        pytest.param([{"kind": "source", "sourceId": 42}], id="a numeric sourceId"),
        pytest.param([{"kind": "source", "source_id": SOURCE_ID}], id="snake_case key"),
        pytest.param(
            [{"kind": "source", "sourceId": SOURCE_ID, "restriction": 1}], id="numeric restriction"
        ),
        pytest.param(
            [{"kind": "source", "sourceId": SOURCE_ID, "restriction": ["privileged"]}],
            id="a list restriction",
        ),
        pytest.param([{"kind": "source", "sourceId": SOURCE_ID, "note": "x"}], id="an unknown key"),
        pytest.param(
            [{"kind": "source", "sourceId": SOURCE_ID}, {"kind": "source"}],
            id="one good item and one bad",
        ),
    ],
)
def test_every_malformed_shape_raises(malformed: Any) -> None:
    with pytest.raises(ProvenanceError):
        parse_restriction_provenance(malformed)


# --- the verbatim match -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        f"The memo says: {EXCERPT}.",
        f"the memo says: {EXCERPT.upper()}",
        f"the memo says: {EXCERPT.lower()}",
        "…" + EXCERPT.replace(" ", "   ") + "…",
        "…" + EXCERPT.replace(" ", "\n") + "…",
        "…" + EXCERPT.replace(" ", "\t \u00a0") + "…",
        EXCERPT,
    ],
)
def test_a_verbatim_excerpt_matches_whatever_its_case_and_whitespace(body: str) -> None:
    assert verbatim_match(body, [EXCERPT])
    assert verbatim_match(body, ["  " + EXCERPT.upper().replace(" ", "\n") + "  "])


@pytest.mark.parametrize(
    "body",
    [
        "The memo concerns a settlement payment with Initech due next quarter.",
        "settlement of USD 4.2M with Initech",  # a part of the excerpt is not the excerpt
        EXCERPT.replace("4.2M", "4.3M"),
        "",
    ],
)
def test_a_paraphrase_or_a_fragment_does_not_match(body: str) -> None:
    assert not verbatim_match(body, [EXCERPT])


def test_excerpts_shorter_than_the_minimum_never_match() -> None:
    short = "x" * (MIN_EXCERPT_CHARS - 1)
    assert not verbatim_match(f"a body with {short} in it", [short, "", "   "])
    exact = "y" * MIN_EXCERPT_CHARS
    assert verbatim_match(f"a body with {exact} in it", [exact])


# --- the gate -----------------------------------------------------------------------------------


def test_no_provenance_and_no_excerpt_passes_the_body_unchanged() -> None:
    body = "“MSA term” is valid from 1 October 2026."
    for none in (None, []):
        result = gate_outbound(body, none, [EXCERPT])
        assert result.allowed and result.body == body and result.reason == ""


def test_a_paraphrase_passes() -> None:
    body = "The settlement with Initech is payable next quarter (see your inbox)."
    result = gate_outbound(body, [], [EXCERPT])
    assert result.allowed and result.body == body


@pytest.mark.parametrize(
    "refs",
    [
        [{"kind": "source", "sourceId": SOURCE_ID, "restriction": "privileged"}],
        [{"kind": "document", "sourceId": SOURCE_ID}],
        [{"kind": "matter", "sourceId": "m-1"}, {"kind": "source", "sourceId": SOURCE_ID}],
    ],
)
def test_restricted_provenance_blocks_even_a_harmless_body(refs: list[dict[str, Any]]) -> None:
    result = gate_outbound("Nothing to see here.", refs, [])
    assert not result.allowed
    assert result.body == RESTRICTED_TEASER
    assert result.reason == "RESTRICTED_PROVENANCE"


@pytest.mark.parametrize(
    "unparseable",
    [
        "privileged",
        {"kind": "source"},
        [{"kind": "source"}],
        [None],
        7,
        [{"kind": ["source"], "sourceId": SOURCE_ID}],
    ],
)
def test_unparseable_provenance_blocks(unparseable: Any) -> None:
    result = gate_outbound("Nothing to see here.", unparseable, [])
    assert not result.allowed
    assert result.body == RESTRICTED_TEASER
    assert result.reason == "UNPARSEABLE_PROVENANCE"


def test_a_verbatim_excerpt_blocks_without_provenance() -> None:
    body = f"It says “{EXCERPT.upper()}”,\n  so there."
    result = gate_outbound(body, None, ["unrelated excerpt text", EXCERPT])
    assert not result.allowed
    assert result.body == RESTRICTED_TEASER
    assert result.reason == "VERBATIM_RESTRICTED_EXCERPT"
    assert EXCERPT.lower() not in result.body.lower()


def test_the_teaser_is_static_and_names_nothing() -> None:
    assert "{" not in RESTRICTED_TEASER and "%" not in RESTRICTED_TEASER
    for blocked in (
        gate_outbound("a", [{"kind": "source", "sourceId": SOURCE_ID}], []),
        gate_outbound(EXCERPT, [], [EXCERPT]),
        gate_outbound("b", "garbage", []),
    ):
        assert blocked.body is RESTRICTED_TEASER
        assert SOURCE_ID not in blocked.body and "Initech" not in blocked.body


def test_the_gate_is_deterministic() -> None:
    refs = [{"kind": "source", "sourceId": SOURCE_ID}]
    assert {gate_outbound(EXCERPT, refs, [EXCERPT]) for _ in range(5)} == {
        gate_outbound(EXCERPT, refs, [EXCERPT])
    }


def test_the_module_calls_no_model() -> None:
    """Policy lives in functions: the module imports nothing beyond the standard library
    (its gate reasons' enum, `common.codes`, is itself standard library only)."""
    import ast
    import inspect
    from types import ModuleType

    from common import codes

    def imports(module: ModuleType) -> set[str]:
        tree = ast.parse(inspect.getsource(module))
        return {
            (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }

    assert imports(provenance) - {"common.codes"} <= {"re", "dataclasses", "typing"}
    assert imports(codes) <= {"enum"}
