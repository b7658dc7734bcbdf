"""The machine-readable reason codes, one `StrEnum` per family, each member's value its
name. The values are contract — they are stored in audit events, job errors and digests,
and read by outside workers (spec §6 "Skip and escalation reason codes") — so a value
never changes; a member is compared and serialised as the plain string it is."""

from enum import StrEnum


class SkipReason(StrEnum):
    """Why a candidate was not asked, or not asked on their own (spec §6): the `reason` of
    `skipped`, `delivery_failed` and `digested` events, of the escalation's and the steward
    digest's lists, and of an outside worker's `fail` over the jobs protocol. The answer's
    read refusal (`answer_refused`) carries NO_READ_PERMISSION too: the same rule."""

    NO_READ_PERMISSION = "NO_READ_PERMISSION"
    NO_DELIVERY_ALIAS = "NO_DELIVERY_ALIAS"
    ALIAS_AMBIGUOUS = "ALIAS_AMBIGUOUS"
    DELIVERY_FAILED = "DELIVERY_FAILED"
    DAILY_CAP_EXCEEDED = "DAILY_CAP_EXCEEDED"
    DIGESTED = "DIGESTED"
    TENANT_SCOPE_MISMATCH = "TENANT_SCOPE_MISMATCH"
    # Deprovisioned by the identity provider (CONTRACT §3.7): never asked again.
    RESPONDER_NOT_AUTHORISED = "RESPONDER_NOT_AUTHORISED"
    # Away (CONTRACT §3.10, additive to the spec's list): not asked while away; their
    # delegate, if any, is asked in their place. An away delegate is never used (no chains).
    PERSON_AWAY = "PERSON_AWAY"


# The codes that end a routing job's attempt and start the next one at once (a skipped
# candidate burns no escalation window): every skip reason but DIGESTED, which queues
# the card for the candidate's digest instead of passing them over. DELIVERY_FAILED is
# one (spec §6 failure behaviour: "retry within lease, then fail(retryable) to advance
# the ranking"): the worker has already retried inside its lease.
ATTEMPT_SKIPS = frozenset(SkipReason) - {SkipReason.DIGESTED}


class JobReason(StrEnum):
    """Why a job's attempt ended otherwise than by a skip: the first word of its
    `last_error`."""

    LEASE_EXPIRED = "LEASE_EXPIRED"  # reaped: waiting out its backoff (an escalation window)
    WORKER_ERROR = "WORKER_ERROR"  # its handler raised; retried
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"  # skipped past its last attempt
    CLARIFICATION_MISSING = "CLARIFICATION_MISSING"  # a routing job naming no clarification
    DOCUMENT_MISSING = "DOCUMENT_MISSING"  # an ingest job naming no document of its tenant
    INGEST_FAILED = "INGEST_FAILED"  # the document was read but could not be ingested
    ESCALATION_RETRY = "ESCALATION_RETRY"  # the escalation reached no steward; tried again


class TapRefusal(StrEnum):
    """Why a card tap answered nothing: the reason of its `card_action_dropped` event and
    of the channel's reply (INVALID_CUSTOM_ANSWER: a "Something else…" form refused
    before anything was read)."""

    UNKNOWN_NONCE = "UNKNOWN_NONCE"
    NONCE_CLARIFICATION_MISMATCH = "NONCE_CLARIFICATION_MISMATCH"
    NOT_RECIPIENT = "NOT_RECIPIENT"
    RESPONDER_NOT_AUTHORISED = "RESPONDER_NOT_AUTHORISED"
    STALE_NONCE = "STALE_NONCE"
    REPLAYED_ACTION = "REPLAYED_ACTION"
    UNMAPPED_IDENTITY = "UNMAPPED_IDENTITY"
    INVALID_CUSTOM_ANSWER = "INVALID_CUSTOM_ANSWER"
    # A tap whose action payload could not be read (Slack: no value, an unknown action).
    MALFORMED_ACTION = "MALFORMED_ACTION"


class HookError(StrEnum):
    """The codes of a chat hook's refusals (`delivery.hooks.errors.hook_error`), the same
    on every channel. A request whose signature or token fails is UNAUTHENTICATED — the
    contract's 401 code (CONTRACT §3) — on Slack and Teams alike."""

    UNAUTHENTICATED = "UNAUTHENTICATED"
    MALFORMED_REQUEST = "MALFORMED_REQUEST"
    NOT_CONFIGURED = "NOT_CONFIGURED"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    RATE_LIMITED = "RATE_LIMITED"


class ChainBreak(StrEnum):
    """Why `telha audit verify` stops at an event (`firstBreak.reason`, CONTRACT §2)."""

    UNCHAINED = "UNCHAINED"  # an event with no place in the chain
    SEQ_GAP = "SEQ_GAP"  # its place is not the next one: an event before it is missing
    PREV_HASH_MISMATCH = "PREV_HASH_MISMATCH"  # it does not follow its predecessor
    DETAIL_MISMATCH = "DETAIL_MISMATCH"  # its detail no longer matches its commitment
    HASH_MISMATCH = "HASH_MISMATCH"  # its content no longer matches its hash
    HEAD_MISMATCH = "HEAD_MISMATCH"  # the chain ends elsewhere than its published head


class WebhookReason(StrEnum):
    """Why a webhook delivery attempt failed or waited (its job's `last_error`)."""

    WEBHOOK_UNREACHABLE = "WEBHOOK_UNREACHABLE"  # no answer (refused, timed out)
    WEBHOOK_REJECTED = "WEBHOOK_REJECTED"  # answered, but not 2xx
    WAITING_FOR_EARLIER = "WAITING_FOR_EARLIER"  # an earlier message of its stream is unsent
    ENDPOINT_REMOVED = "ENDPOINT_REMOVED"  # the endpoint was removed: nothing to send


class GateReason(StrEnum):
    """Why the outbound gate (`delivery.provenance.gate_outbound`) held a body back and sent
    the static teaser instead."""

    UNPARSEABLE_PROVENANCE = "UNPARSEABLE_PROVENANCE"
    RESTRICTED_PROVENANCE = "RESTRICTED_PROVENANCE"
    VERBATIM_RESTRICTED_EXCERPT = "VERBATIM_RESTRICTED_EXCERPT"


class AwayError(StrEnum):
    """Why a person may not be marked away (`tenancy.services.away_errors`, CONTRACT §3.10)."""

    AWAY_UNTIL_INVALID = "AWAY_UNTIL_INVALID"  # not a date, or a day already past
    DELEGATE_INVALID = "DELEGATE_INVALID"  # themselves, another tenant's, erased or gone


class ErrorCode(StrEnum):
    """The `code` of an error body (`{"code": …, "detail": …}`, CONTRACT §3): each
    `common.errors.DomainError` subclass's, the DRF exceptions' and the error views'."""

    BAD_REQUEST = "BAD_REQUEST"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    MALFORMED_REQUEST = "MALFORMED_REQUEST"
    NOT_FOUND = "NOT_FOUND"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    CONFLICT = "CONFLICT"
    INVALID_INPUT = "INVALID_INPUT"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    NOT_ACCEPTABLE = "NOT_ACCEPTABLE"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    RATE_LIMITED = "RATE_LIMITED"
    SUBMISSION_INVALID = "SUBMISSION_INVALID"
    DOCUMENT_UNREADABLE = "DOCUMENT_UNREADABLE"
    WORKSPACE_INVALID = "WORKSPACE_INVALID"
    IDENTITY_CLASH = "IDENTITY_CLASH"
    JOB_KIND_FORBIDDEN = "JOB_KIND_FORBIDDEN"
    LEASE_LOST = "LEASE_LOST"
    RESPONDER_ASSERTION_FORBIDDEN = "RESPONDER_ASSERTION_FORBIDDEN"
    RESPONDER_NOT_AUTHORISED = "RESPONDER_NOT_AUTHORISED"
    STEWARD_OVERRIDE_FORBIDDEN = "STEWARD_OVERRIDE_FORBIDDEN"
    CLARIFY_ALREADY_ANSWERED = "CLARIFY_ALREADY_ANSWERED"
    CLARIFY_UNPARSEABLE_ANSWER = "CLARIFY_UNPARSEABLE_ANSWER"
    PROVISIONING_INVALID = "PROVISIONING_INVALID"
    PROVISIONING_CONFLICT = "PROVISIONING_CONFLICT"
    SSO_INVALID = "SSO_INVALID"
    INTEGRITY_VIOLATION = "INTEGRITY_VIOLATION"  # `telha check_integrity` found a break
