"""The error responses of the OpenAPI schema (CONTRACT §3: `{"code", "detail", ...}`).

A drf-spectacular postprocessing hook adds an `Error` component and documents, on every
`/v1` operation, the error statuses it can answer with:

- 400 and 401 on every operation (a malformed request, e.g. U+0000 in the URL; no,
  unknown or revoked key);
- 413, 415 and 422 on operations with a request body (too large / not the declared media
  type / invalid; 400 also covers a body that is not JSON);
- 404 on operations with path parameters (no such object, or another tenant's);
- 422 on operations with query parameters (an invalid filter or time);
- the 403s and 409s listed in `EXTRA` (audience fences, responder rules, lease tokens).
"""

from typing import Any

from .codes import ErrorCode

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error: a contract error code and a human-readable detail.",
    "required": ["code", "detail"],
    "properties": {
        "code": {
            "type": "string",
            "pattern": "^[A-Z][A-Z0-9_]*$",
            "example": ErrorCode.NOT_FOUND.value,
        },
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "description": "Validation errors, one per invalid field (422).",
            "items": {
                "type": "object",
                "required": ["path", "message"],
                "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
    "additionalProperties": True,
}

DESCRIPTIONS = {
    400: "`MALFORMED_REQUEST`: the body is not valid JSON (not UTF-8, nested too deeply, "
    "U+0000 in a string), or the URL contains U+0000; `INVALID_INPUT`: a `cursor` this "
    "API did not issue (malformed, tampered, empty, repeated or over 256 characters).",
    401: "`UNAUTHENTICATED`: no, unknown or revoked key.",
    403: "The key may not perform this operation (e.g. `PERMISSION_DENIED`, "
    "`JOB_KIND_FORBIDDEN`, `RESPONDER_ASSERTION_FORBIDDEN`, `RESPONDER_NOT_AUTHORISED`, "
    "`STEWARD_OVERRIDE_FORBIDDEN`).",
    404: "`NOT_FOUND`: no such object in the caller's tenant (or not readable by the caller).",
    409: "A conflict (`CLARIFY_ALREADY_ANSWERED`, `LEASE_LOST`); nothing was changed.",
    413: "`PAYLOAD_TOO_LARGE`: the body is over the size limit.",
    415: "`UNSUPPORTED_MEDIA_TYPE`: the body is not of the declared media type.",
    422: "The request is invalid (`INVALID_INPUT`, `SUBMISSION_INVALID`, "
    "`CLARIFY_UNPARSEABLE_ANSWER`); nothing was written.",
}

EXTRA: dict[tuple[str, str], set[int]] = {
    ("POST", "/v1/submissions"): {403},
    ("POST", "/v1/documents"): {403},
    ("POST", "/v1/clarifications/{clarification_id}/answer"): {403, 409},
    ("POST", "/v1/jobs/lease"): {403},
    ("POST", "/v1/jobs/{job_id}/heartbeat"): {403, 409},
    ("POST", "/v1/jobs/{job_id}/complete"): {403, 409},
    ("POST", "/v1/jobs/{job_id}/fail"): {403, 409},
}

_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def error_statuses(method: str, path: str, operation: dict[str, Any]) -> set[int]:
    statuses = {400, 401}
    if "requestBody" in operation:
        statuses |= {413, 415, 422}
    locations = {p.get("in") for p in operation.get("parameters", [])}
    if "path" in locations:
        statuses.add(404)
    if "query" in locations:
        statuses.add(422)
    return statuses | EXTRA.get((method.upper(), path), set())


def postprocess_error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry: document the error responses."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for status in sorted(error_statuses(method, path, operation)):
                responses.setdefault(
                    str(status), {"description": DESCRIPTIONS[status], "content": error}
                )
    return result
