"""The audit hash chain's arithmetic, pure (no database): what `events.chain` computes
when an event is appended, what `telha audit verify` recomputes, and what the standalone
auditor's script in docs/operations.md repeats line for line.

An event's detail enters the chain only through a salted commitment,
`sha256(salt || canonical(detail))`: the chain hashes the commitment, never the detail.
Erasing a person rewrites the details that named them and forgets those events' salts;
every link still checks, and a forgotten salt leaves nothing to test a guess against
(docs/design-decisions.md "The audit chain's commitments")."""

import hashlib
import json
import secrets
from typing import Any

GENESIS = "0" * 64
SALT_BYTES = 16


def canonical(value: Any) -> bytes:
    """The one byte form of a JSON value: keys sorted, no spaces, UTF-8."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def new_salt() -> str:
    return secrets.token_hex(SALT_BYTES)


def commitment(salt: str, detail: Any) -> str:
    """The detail's salted commitment (hex)."""
    return hashlib.sha256(bytes.fromhex(salt) + canonical(detail)).hexdigest()


def link_hash(
    *, seq: int, prev_hash: str, at: int, type: str, clarification: Any, commitment: str
) -> str:
    """An event's hash: its place in the chain (`seq`, the predecessor's hash) and its
    canonical content (time, type, clarification — its id as text, or null — the
    detail's commitment)."""
    content = {
        "seq": seq,
        "prevHash": prev_hash,
        "at": at,
        "type": type,
        "clarification": str(clarification) if clarification else None,
        "commitment": commitment,
    }
    return hashlib.sha256(canonical(content)).hexdigest()
