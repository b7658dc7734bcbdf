"""The clarify loop's refusals, with their contract error codes (CONTRACT §3.2)."""

from typing import Any

from common.codes import ErrorCode, SkipReason
from common.errors import Conflict, DomainError, NotFound, PermissionDeniedError


class ResponderAssertionForbidden(PermissionDeniedError):
    code = ErrorCode.RESPONDER_ASSERTION_FORBIDDEN
    default_detail = "Only the clarify service may assert a responder or rights."


class ResponderNotAuthorised(PermissionDeniedError):
    code = ErrorCode.RESPONDER_NOT_AUTHORISED
    default_detail = "This credential is not bound to a person who may answer."


class NoReadPermission(NotFound):
    """The responder may not read the clarification's source at answer time: answered
    like a missing clarification (`404 NOT_FOUND`, the same body), audited with
    `NO_READ_PERMISSION` (`reason`)."""

    reason = SkipReason.NO_READ_PERMISSION
    default_detail = "No such clarification."
    clarification: Any = None  # the clarification refused, for the audit
    responder: Any = None


class StewardOverrideForbidden(PermissionDeniedError):
    code = ErrorCode.STEWARD_OVERRIDE_FORBIDDEN
    default_detail = "A steward override needs steward rights and a policy that allows it."


class AlreadyAnswered(Conflict):
    code = ErrorCode.CLARIFY_ALREADY_ANSWERED
    default_detail = "This clarification is already answered with that interval."


class UnparseableAnswer(DomainError):
    status_code = 422
    code = ErrorCode.CLARIFY_UNPARSEABLE_ANSWER
    default_detail = "The answer does not normalise to a valid interval."


class StewardViewStale(Conflict):
    """A steward's action on what a page showed, refused because the clarification no
    longer is what it showed (nothing is written; the detail says what to do)."""


class NothingToUphold(StewardViewStale):
    default_detail = "There is no disagreement to resolve: nothing changed."


class DisputesChanged(StewardViewStale):
    default_detail = (
        "A new disagreement arrived after this page was loaded: review it, "
        "then uphold again. Nothing changed."
    )
