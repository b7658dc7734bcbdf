"""The one builder of submission payloads (CONTRACT §3.1) for tests and benchmarks.

A `Submission` starts from its source and is built up: spans, fact nodes, PERSON nodes
each linked from facts by an edge, ambiguities; `payload()` is the dict POSTed to
`/v1/submissions` (or handed to `submission_plan`). Every key the contract makes optional
can be left out with `OMIT`, so a test states exactly the payload it sends::

    sub = Submission("contracts/msa.docx", TEXT, title="MSA")
    fact = sub.fact("msa-term", name="MSA term", span=sub.span_of("next quarter"))
    sub.person("alice@acme.test", edge="AUTHORED_BY", of=[fact])
    sub.ambiguity(fact, candidates=[...])
    body = sub.payload()

The fixtures' own helpers (`build_submission` in the clarify, delivery and steward tests,
`submission_payload` and `fact_payload` in tests/factories.py, the jobs tests'
`submission`, the production test's, `bench._support.submission_data`) are this builder
with their defaults."""

from collections.abc import Iterable, Sequence
from typing import Any

OMIT: Any = type("Omit", (), {"__repr__": lambda self: "OMIT"})()  # a key left out


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not OMIT}


class Submission:
    """A submission payload being built (see the module docstring)."""

    def __init__(
        self,
        external_id: str,
        text: str,
        *,
        system: str = "sharepoint",
        title: Any = OMIT,
        uri: Any = OMIT,
        acl: Iterable[str] = ("group:legal",),
        restriction: Any = OMIT,
    ) -> None:
        self.source = _present(
            {
                "system": system,
                "externalId": external_id,
                "title": title,
                "uri": uri,
                "text": text,
                "acl": list(acl),
                "restriction": restriction,
            }
        )
        self.spans: list[dict[str, int]] = []
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.ambiguities: list[dict[str, Any]] = []

    def span(self, start: int, end: int) -> int:
        """A span of the source text; its index (`spanRef`)."""
        self.spans.append({"start": start, "end": end})
        return len(self.spans) - 1

    def span_of(self, excerpt: str, through: str | None = None) -> int:
        """The span of `excerpt` in the text (to the end of `through` when given)."""
        text = self.source["text"]
        start = text.index(excerpt)
        end = text.index(through) + len(through) if through else start + len(excerpt)
        return self.span(start, end)

    def fact(
        self,
        key: str,
        *,
        name: str | None = None,
        properties: dict[str, Any] | None = None,
        labels: Sequence[str] = ("CONTRACT_TERM",),
        valid_from: Any = None,
        valid_to: Any = None,
        confidence: Any = 0.92,
        span: Any = 0,
    ) -> int:
        """A fact node (`properties`, or just its `name`); its ref."""
        ref = len(self.nodes)
        self.nodes.append(
            _present(
                {
                    "ref": ref,
                    "key": key,
                    "labels": list(labels),
                    "properties": {"name": name} if properties is None else properties,
                    "validFrom": valid_from,
                    "validTo": valid_to,
                    "confidence": confidence,
                    "spanRef": span,
                }
            )
        )
        return ref

    def person(
        self, email: str, *, edge: str = "AUTHORED_BY", of: Iterable[int] = (0,), **node: Any
    ) -> int:
        """A PERSON node by email (`node`: more of its keys) with an `edge` from each fact
        in `of`; its ref."""
        ref = len(self.nodes)
        self.nodes.append(
            {"ref": ref, "labels": ["PERSON"], "properties": {"email": email}, **node}
        )
        self.edges += [{"type": edge, "from": fact, "to": ref} for fact in of]
        return ref

    def edge(self, edge: str, source: int, target: int) -> None:
        """An edge `edge` from node `source` to node `target` (e.g. a PERSON → a fact)."""
        self.edges.append({"type": edge, "from": source, "to": target})

    def ambiguity(
        self,
        node: int = 0,
        *,
        candidates: Iterable[dict[str, Any]],
        kind: str = "relative_date",
        severity_hint: Any = None,
        detector_confidence: float = 0.81,
        applied_confidence: float = 0.45,
    ) -> None:
        """An ambiguity on the fact `node`, its candidates copied."""
        self.ambiguities.append(
            _present(
                {
                    "nodeRef": node,
                    "kind": kind,
                    "severityHint": severity_hint,
                    "candidates": [dict(c) for c in candidates],
                    "detectorConfidence": detector_confidence,
                    "appliedCandidateConfidence": applied_confidence,
                }
            )
        )

    def payload(self, *, omit_empty: bool = False) -> dict[str, Any]:
        """The submission; `omit_empty`: the spans, edges and ambiguities left out when
        there are none."""
        sections = {
            "spans": self.spans,
            "nodes": self.nodes,
            "edges": self.edges,
            "ambiguities": self.ambiguities,
        }
        return {
            "source": dict(self.source),
            **{
                name: [dict(item) for item in items]
                for name, items in sections.items()
                if items or not omit_empty or name == "nodes"
            },
        }


def contract_term(
    *,
    external_id: str,
    title: str,
    name: str,
    text: str,
    span: tuple[int, int],
    links: Iterable[tuple[str, str]],
    candidates: Iterable[dict[str, Any]],
    acl: Iterable[str] = ("group:legal",),
    restriction: Any = OMIT,
    severity_hint: Any = None,
    kind: str = "relative_date",
    email_domain: str = "acme.test",
) -> dict[str, Any]:
    """A document with one contract term (ref 0) and one ambiguity on it, and the PERSON
    node and edge of each `(EDGE_TYPE, name)` link: `name@email_domain` (or `name` when it
    is an address); the edge type fixes the rank (AUTHORED_BY < MENTIONS < OWNED_BY)."""
    sub = Submission(
        external_id,
        text,
        title=title,
        uri=f"https://example.test/{external_id}",
        acl=acl,
        restriction=restriction,
    )
    fact = sub.fact(external_id.replace("/", "-"), name=name, span=sub.span(*span))
    for edge, who in links:
        sub.person(who if "@" in who else f"{who}@{email_domain}", edge=edge, of=[fact])
    sub.ambiguity(fact, candidates=candidates, kind=kind, severity_hint=severity_hint)
    return sub.payload()
