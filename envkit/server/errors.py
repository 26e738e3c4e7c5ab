"""What can go wrong in a request: OpenEnv's error codes, and one payload for HTTP and WebSocket.

- ``ErrorCode``: the codes of OpenEnv's WebSocket error frames.
- ``ServiceError`` and its kinds, each with its code and HTTP status: ``InvalidInputError`` (an
  action or option the env refuses, 422, optionally with an ``ErrorDetail`` per failing place;
  ``InvalidJsonError``: a number JSON cannot hold, 400 INVALID_JSON),
  ``EpisodeStateError`` (not now: no episode yet, or it is over, 409), ``CapacityError`` (503)
  and ``UnknownSessionError`` (404).
- ``ErrorDetail``: one failing place, ``{"loc", "msg", "type"}`` as pydantic reports it;
  ``issue_details(issues)`` makes them from Malli-lite's ``Issue`` list (``type`` is the issue's
  kind: missing, unexpected, duplicate, enum, type, bound, size, pattern or invalid).
- ``error_payload(error) -> (status, body)``: any exception as ``{"code", "message", ...}``, the
  ``data`` of a WebSocket error frame; HTTP sends the same with ``detail`` for ``message``. A
  validation error adds ``errors``, the failing places, so a client fixes them all in one go.
- ``code_for_status(status)``: the code of a refusal that only has an HTTP status (routing's
  404 and 405, a body FastAPI could not parse, a mounted app's own errors).
- ``describe_issues(issues)``: Malli-lite's issues as one line, capped as below.

Replies never carry raw input: validation errors leave the input out (it may be NaN), and
messages that quote it have lone surrogates escaped, which UTF-8 could not encode. Nor are they
much larger than the request: ``errors`` holds the first ``MAX_ERRORS`` places, with the count
of the rest in ``errors_truncated``, and a message is cut at ``MAX_MESSAGE_CHARS``.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from enum import Enum
from typing import Any, ClassVar

import pydantic
from fastapi.exceptions import RequestValidationError
from pydantic import Field

from envkit.schema.issues import Issue, show

__all__ = [
    "MAX_ERRORS",
    "MAX_MESSAGE_CHARS",
    "CapacityError",
    "EpisodeStateError",
    "ErrorCode",
    "ErrorDetail",
    "InvalidInputError",
    "InvalidJsonError",
    "ServiceError",
    "UnknownSessionError",
    "code_for_status",
    "describe_errors",
    "describe_issues",
    "error_headers",
    "error_payload",
    "issue_details",
]

logger = logging.getLogger(__name__)

MAX_ERRORS = 20  # failing places listed in one reply; the count of the rest follows
MAX_MESSAGE_CHARS = 2000  # a longer message is cut, with a note of how much was left out


class ErrorCode(str, Enum):
    """The ``code`` of an error frame (OpenEnv's ``WSErrorCode``, less FACTORY_ERROR), plus the
    refusals of ``envkit.server.access``: RATE_LIMITED (429) and UNAUTHORIZED (401), of
    ``envkit.server.origins``: FORBIDDEN_ORIGIN (403) and UNSUPPORTED_MEDIA_TYPE (415), and of
    routing: NOT_FOUND (404) and METHOD_NOT_ALLOWED (405).

    Example:
        >>> code = ErrorCode("SESSION_ERROR")
        >>> code is ErrorCode.SESSION_ERROR, code == "SESSION_ERROR"
        (True, True)
        >>> error_payload(EpisodeStateError("no episode yet: reset first"))
        (409, {'code': 'EXECUTION_ERROR', 'message': 'no episode yet: reset first'})
    """

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    SESSION_ERROR = "SESSION_ERROR"
    RATE_LIMITED = "RATE_LIMITED"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN_ORIGIN = "FORBIDDEN_ORIGIN"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"


class ServiceError(Exception):
    """An error the client caused or can act on; ``reason`` is a finer machine-readable code."""

    code: ClassVar[ErrorCode] = ErrorCode.EXECUTION_ERROR
    status: ClassVar[int] = 500

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class ErrorDetail(pydantic.BaseModel):
    """One failing place in the input, shaped like pydantic's validation errors so that a client
    reads every refusal the same way. Lone surrogates in its text are escaped on the way in.

    Example:
        >>> detail = ErrorDetail(loc=("action", "move"), msg="Field required", type="missing")
        >>> detail.model_dump(mode="json")
        {'loc': ['action', 'move'], 'msg': 'Field required', 'type': 'missing'}
    """

    model_config = pydantic.ConfigDict(frozen=True)

    loc: tuple[str | int, ...] = Field(
        description="Where: the keys and indices from the input's root, e.g. ['amount']"
    )
    msg: str = Field(description="What is wrong there")
    type: str = Field(description="The kind of error, e.g. missing, enum, int_parsing")

    @pydantic.field_validator("loc", mode="after")
    @classmethod
    def _printable_loc(cls, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
        return tuple(_printable(part) if isinstance(part, str) else part for part in loc)

    @pydantic.field_validator("msg", "type", mode="after")
    @classmethod
    def _printable_text(cls, text: str) -> str:
        return _printable(text)


class InvalidInputError(ServiceError):
    """An action or reset option the env refuses, such as an illegal move.

    Args:
        message: the whole refusal as one line.
        reason: a finer machine-readable code, e.g. "invalid_action".
        errors: every failing place, when the input was checked against a schema.
    """

    code = ErrorCode.VALIDATION_ERROR
    status = 422

    def __init__(
        self, message: str, *, reason: str | None = None, errors: Sequence[ErrorDetail] = ()
    ) -> None:
        super().__init__(message, reason=reason)
        self.errors = tuple(errors)


class InvalidJsonError(InvalidInputError):
    """A body that is JSON but for a number JSON cannot hold (NaN, Infinity, 1e309): 400
    INVALID_JSON, as for any body that is not JSON, with the place in ``errors``."""

    code = ErrorCode.INVALID_JSON
    status = 400


class EpisodeStateError(ServiceError):
    """A well-formed call the episode cannot take now: no reset yet, or the episode is over."""

    code = ErrorCode.EXECUTION_ERROR
    status = 409


class CapacityError(ServiceError):
    """A slot the request needs is taken (a session, a game, an engine); ``retry_after``, when
    known, is the whole seconds after which one may be free (sent as ``Retry-After``)."""

    code = ErrorCode.CAPACITY_REACHED
    status = 503

    def __init__(
        self, message: str, *, reason: str | None = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message, reason=reason)
        self.retry_after = retry_after


def error_headers(error: Exception) -> dict[str, str]:
    """The headers a refusal carries besides its body: ``Retry-After`` for a capacity error
    that knows when to come back.

    Example:
        >>> error_headers(CapacityError("all 3 engines are busy", retry_after=5))
        {'Retry-After': '5'}
        >>> error_headers(CapacityError("all sessions are in use"))
        {}
    """
    if isinstance(error, CapacityError) and error.retry_after is not None:
        return {"Retry-After": str(max(1, error.retry_after))}
    return {}


class UnknownSessionError(ServiceError):
    """No session has this id: never opened, closed, or expired after idling."""

    code = ErrorCode.SESSION_ERROR
    status = 404


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's errors as one line: ``action.move: String should have at most 1024 characters``;
    the first ``MAX_ERRORS`` of them, then how many more.

    Example:
        >>> describe_errors([{"loc": ("body", "seed"), "msg": "Input should be a valid integer"}])
        'body.seed: Input should be a valid integer'
    """
    parts = []
    for error in errors[:MAX_ERRORS]:
        where = ".".join(str(part) for part in error.get("loc", ())) or "(root)"
        detail = error.get("ctx", {}).get("error") if error.get("type") == "json_invalid" else None
        parts.append(f"{where}: {error['msg']}" + (f" ({detail})" if detail else ""))
    return _printable(_joined(parts, len(errors)))


def describe_issues(issues: Sequence[Issue]) -> str:
    """Malli-lite's issues as one line, the first ``MAX_ERRORS`` of them, then how many more.

    Example:
        >>> issues = [Issue.at((f"k{n}",), "unexpected key", "unexpected") for n in range(22)]
        >>> describe_issues(issues)[-56:]
        'k18: unexpected key; k19: unexpected key; ... and 2 more'
    """
    return _printable(_joined([str(issue) for issue in issues[:MAX_ERRORS]], len(issues)))


def _joined(parts: Sequence[str], total: int) -> str:
    more = total - len(parts)
    return "; ".join(parts) + (f"; ... and {more} more" if more > 0 else "")


def code_for_status(status: int) -> ErrorCode:
    """The code of a refusal known only by its HTTP status (a 400 is a body FastAPI could not
    parse: the only 400 these apps make); any other 4xx is VALIDATION_ERROR, a 5xx
    EXECUTION_ERROR.

    Example:
        >>> code_for_status(405).value, code_for_status(418).value, code_for_status(502).value
        ('METHOD_NOT_ALLOWED', 'VALIDATION_ERROR', 'EXECUTION_ERROR')
    """
    known = _STATUS_CODES.get(status)
    if known is not None:
        return known
    return ErrorCode.EXECUTION_ERROR if status >= 500 else ErrorCode.VALIDATION_ERROR


_STATUS_CODES = {
    400: ErrorCode.INVALID_JSON,
    401: ErrorCode.UNAUTHORIZED,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    429: ErrorCode.RATE_LIMITED,
    503: ErrorCode.CAPACITY_REACHED,
}


def error_payload(error: Exception) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the ``{"code", "message", ...}`` body for ``error``.

    Validation errors keep their list (``loc``, ``msg``, ``type``: never the input, which may be
    NaN or unencodable), capped at ``MAX_ERRORS``; a body that is not JSON is INVALID_JSON (400).
    Anything unexpected is logged and reported as EXECUTION_ERROR (500).
    """
    if isinstance(error, RequestValidationError) and error.errors()[0]["type"] == "json_invalid":
        return 400, {
            "code": ErrorCode.INVALID_JSON.value,
            "message": _short(describe_errors(error.errors())),
        }
    if isinstance(error, (pydantic.ValidationError, RequestValidationError)):
        errors = error.errors()
        details = [ErrorDetail(loc=e["loc"], msg=e["msg"], type=e["type"]) for e in errors]
        body = {
            "code": ErrorCode.VALIDATION_ERROR.value,
            "message": _short(describe_errors(errors)),
        }
        return 422, {**body, **_listed(details)}
    if isinstance(error, ServiceError):
        body = {"code": error.code.value, "message": _short(_printable(str(error)))}
        if error.reason:
            body["reason"] = error.reason
        if isinstance(error, InvalidInputError) and error.errors:
            body.update(_listed(error.errors))
        return error.status, body
    logger.exception("unexpected error while serving a request", exc_info=error)
    message = _short(_printable(f"{type(error).__name__}: {error}"))
    return 500, {"code": ErrorCode.EXECUTION_ERROR.value, "message": message}


def issue_details(issues: Sequence[Issue]) -> list[ErrorDetail]:
    """Malli-lite's issues as ``ErrorDetail``: each issue's ``loc``, message and kind as it is.

    Example:
        >>> issue = Issue.at(("meta", "first name", 0), "missing required key", "missing")
        >>> [detail] = issue_details([issue])
        >>> detail.loc, detail.type
        (('meta', 'first name', 0), 'missing')
    """
    return [
        ErrorDetail(loc=tuple(map(_loc_part, issue.loc)), msg=issue.message, type=issue.kind)
        for issue in issues
    ]


def _loc_part(step: Hashable) -> str | int:
    """A key or index as ``loc`` holds it. A key that is neither str nor int (only Python data
    has one: ``1.5``, ``True``, ``None``) becomes its JSON, as the issue's path writes it."""
    if isinstance(step, str) or (isinstance(step, int) and not isinstance(step, bool)):
        return step
    return show(step, limit=None)


def _listed(details: Sequence[ErrorDetail]) -> dict[str, Any]:
    """``errors``: the first ``MAX_ERRORS`` details; ``errors_truncated``: how many more."""
    listed: dict[str, Any] = {
        "errors": [detail.model_dump(mode="json") for detail in details[:MAX_ERRORS]]
    }
    if len(details) > MAX_ERRORS:
        listed["errors_truncated"] = len(details) - MAX_ERRORS
    return listed


def _short(message: str) -> str:
    """``message`` cut at ``MAX_MESSAGE_CHARS``, saying how much was left out."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    cut = len(message) - MAX_MESSAGE_CHARS
    return f"{message[:MAX_MESSAGE_CHARS]}... ({cut} more characters)"


def _printable(text: str) -> str:
    """``text`` with lone surrogates escaped, so that it always encodes as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
