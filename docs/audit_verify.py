#!/usr/bin/env python3
"""Check a Telha audit export (`telha audit export --tenant SLUG > trail.jsonl`) without
the product: Python 3 and its standard library only.

    python3 audit_verify.py trail.jsonl [EXPECTED_HEAD_HASH]

Every line but the last is an event; the last is the chain head the product published.
For each event: its place follows the previous one, it names the previous event's hash,
its detail still matches its salted commitment (unless an erasure forgot the salt), and
its hash is the hash of its content. Exit 0 and "OK …" when every link holds; exit 1 and
the first event that breaks the chain otherwise."""

import hashlib
import json
import sys


def canonical(value):
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def check(lines, expected_head=None):
    *events, last = [json.loads(line) for line in lines if line.strip()]
    head = last["chainHead"]
    prev = events[0]["prevHash"] if events else head["hash"]
    seq = events[0]["seq"] - 1 if events else head["seq"]
    erased = 0
    for e in events:
        seq += 1
        if e["seq"] != seq:
            return f"event {e['id']}: SEQ_GAP (expected place {seq}, found {e['seq']})"
        if e["prevHash"] != prev:
            return f"event {e['id']}: PREV_HASH_MISMATCH"
        if e["salt"]:
            digest = hashlib.sha256(bytes.fromhex(e["salt"]) + canonical(e["detail"]))
            if digest.hexdigest() != e["commitment"]:
                return f"event {e['id']}: DETAIL_MISMATCH"
        else:
            erased += 1
        content = {
            "seq": e["seq"],
            "prevHash": e["prevHash"],
            "at": e["at"],
            "type": e["type"],
            "clarification": e["clarification"],
            "commitment": e["commitment"],
        }
        if hashlib.sha256(canonical(content)).hexdigest() != e["hash"]:
            return f"event {e['id']}: HASH_MISMATCH"
        prev = e["hash"]
    if (head["seq"], head["hash"]) != (seq, prev):
        return f"event {events[-1]['id'] if events else None}: HEAD_MISMATCH"
    if expected_head is not None and expected_head != head["hash"]:
        return "the export's head is not the head published earlier: HEAD_MISMATCH"
    return f"OK {len(events)} events, head #{seq} {prev} ({erased} details erased)"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as export:
        verdict = check(export.readlines(), sys.argv[2] if len(sys.argv) > 2 else None)
    print(verdict)
    sys.exit(0 if verdict.startswith("OK") else 1)
