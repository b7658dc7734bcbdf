"""A validated submission, between `services` (which validates it) and `batch` (which
applies it): its own module, so both import it and neither imports the other back."""

from dataclasses import dataclass, field
from typing import Any

from clarify.planning import PlannedAmbiguity


@dataclass
class SubmissionPlan:
    """A validated submission: nothing about it can fail for input reasons any more."""

    data: dict[str, Any]
    content_hash: str
    node_index: dict[int, dict[str, Any]]
    ambiguities: dict[int, PlannedAmbiguity] = field(default_factory=dict)
