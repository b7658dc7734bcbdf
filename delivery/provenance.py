"""Channel origin and restriction provenance of chat turns, and the deterministic gate
that keeps restricted content from crossing to a chat channel verbatim
(`chat-turn-restriction-provenance`). Policy lives in these functions, never in a model.

* `normalize_channel_origin` — absent → "inbox"; a known channel name; garbage raises.
* `parse_restriction_provenance` — `[{kind: source|document|matter, sourceId,
  restriction?}]`, parsed fail-closed: anything malformed raises.
* `gate_outbound` — non-empty or unparseable provenance, or a case/whitespace-insensitive
  verbatim match of a restricted excerpt: the body never crosses; a static teaser that
  names nothing restricted goes in its place.
"""

import re
from dataclasses import dataclass
from typing import Any

from common.codes import GateReason

DEFAULT_ORIGIN = "inbox"
CHANNEL_ORIGINS = frozenset({"inbox", "slack", "teams"})
PROVENANCE_KINDS = frozenset({"source", "document", "matter"})
MIN_EXCERPT_CHARS = 12
RESTRICTED_TEASER = (
    "I found something relevant, but it draws on restricted material that can't be shown "
    "in chat. Open your Telha inbox to see what you have access to."
)
_WS = re.compile(r"\s+")


class ProvenanceError(ValueError):
    """A channel origin or restriction provenance that cannot be trusted."""


def normalize_channel_origin(value: Any) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_ORIGIN
    if not isinstance(value, str):
        raise ProvenanceError("channel_origin must be a string")
    token = value.strip().lower()
    if token not in CHANNEL_ORIGINS:
        raise ProvenanceError(f"unknown channel_origin {value[:40]!r}")
    return token


@dataclass(frozen=True)
class RestrictedSourceRef:
    kind: str
    source_id: str
    restriction: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "sourceId": self.source_id}
        if self.restriction is not None:
            out["restriction"] = self.restriction
        return out


def parse_restriction_provenance(raw: Any) -> list[RestrictedSourceRef]:
    """The canonical provenance list; `None` means none. Anything else malformed raises."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ProvenanceError("restriction_provenance must be a list")
    refs = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ProvenanceError(f"restriction_provenance[{i}] must be an object")
        unknown = set(item) - {"kind", "sourceId", "restriction"}
        if unknown:
            raise ProvenanceError(f"restriction_provenance[{i}] has unknown keys")
        kind, source_id = item.get("kind"), item.get("sourceId")
        restriction = item.get("restriction")
        # isinstance first: an unhashable kind (a list, a dict) must fail closed too.
        if not isinstance(kind, str) or kind not in PROVENANCE_KINDS:
            raise ProvenanceError(f"restriction_provenance[{i}].kind is not a known kind")
        if not isinstance(source_id, str) or not source_id.strip():
            raise ProvenanceError(f"restriction_provenance[{i}].sourceId is required")
        if restriction is not None and not isinstance(restriction, str):
            raise ProvenanceError(f"restriction_provenance[{i}].restriction must be a string")
        refs.append(RestrictedSourceRef(kind, source_id, restriction))
    return refs


def _normalise(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def verbatim_match(body: str, excerpts: list[str]) -> bool:
    haystack = _normalise(body)
    for excerpt in excerpts:
        needle = _normalise(excerpt)
        if len(needle) >= MIN_EXCERPT_CHARS and needle in haystack:
            return True
    return False


@dataclass(frozen=True)
class GateResult:
    allowed: bool
    body: str
    reason: str = ""


def gate_outbound(body: str, provenance: Any, restricted_excerpts: list[str]) -> GateResult:
    """What may cross to a chat channel: the body, or the static teaser."""
    try:
        refs = parse_restriction_provenance(provenance)
    except ProvenanceError:
        return GateResult(False, RESTRICTED_TEASER, GateReason.UNPARSEABLE_PROVENANCE)
    if refs:
        return GateResult(False, RESTRICTED_TEASER, GateReason.RESTRICTED_PROVENANCE)
    if verbatim_match(body, restricted_excerpts):
        return GateResult(False, RESTRICTED_TEASER, GateReason.VERBATIM_RESTRICTED_EXCERPT)
    return GateResult(True, body)
