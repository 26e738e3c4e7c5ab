"""What can go wrong in a request: OpenEnv's error codes, and one payload for HTTP and WebSocket.

- ``ErrorCode``: the codes of OpenEnv's WebSocket error frames.
- ``ServiceError`` and its kinds, each with its code and HTTP status: ``InvalidInputError`` (an
  action or option the env refuses, 422), ``EpisodeStateError`` (not now: no episode yet, or it is
  over, 409), ``CapacityError`` (503) and ``UnknownSessionError`` (404).
- ``error_payload(error) -> (status, body)``: any exception as ``{"code", "message", ...}``, the
  ``data`` of a WebSocket error frame; HTTP sends the same with ``detail`` for ``message``.

Replies never carry raw input: validation errors leave the input out (it may be NaN), and
messages that quote it have lone surrogates escaped, which UTF-8 could not encode.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, ClassVar

import pydantic
from fastapi.exceptions import RequestValidationError

__all__ = [
    "CapacityError",
    "EpisodeStateError",
    "ErrorCode",
    "InvalidInputError",
    "ServiceError",
    "UnknownSessionError",
    "describe_errors",
    "error_payload",
]

logger = logging.getLogger(__name__)


class ErrorCode(str, Enum):
    """The ``code`` of an error frame (OpenEnv's ``WSErrorCode``, less FACTORY_ERROR), plus the
    refusals of ``envkit.server.access``: RATE_LIMITED (429) and UNAUTHORIZED (401)."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    SESSION_ERROR = "SESSION_ERROR"
    RATE_LIMITED = "RATE_LIMITED"
    UNAUTHORIZED = "UNAUTHORIZED"


class ServiceError(Exception):
    """An error the client caused or can act on; ``reason`` is a finer machine-readable code."""

    code: ClassVar[ErrorCode] = ErrorCode.EXECUTION_ERROR
    status: ClassVar[int] = 500

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class InvalidInputError(ServiceError):
    """An action or reset option the env refuses, such as an illegal move."""

    code = ErrorCode.VALIDATION_ERROR
    status = 422


class EpisodeStateError(ServiceError):
    """A well-formed call the episode cannot take now: no reset yet, or the episode is over."""

    code = ErrorCode.EXECUTION_ERROR
    status = 409


class CapacityError(ServiceError):
    """Every session slot is taken."""

    code = ErrorCode.CAPACITY_REACHED
    status = 503


class UnknownSessionError(ServiceError):
    """No session has this id: never opened, closed, or expired after idling."""

    code = ErrorCode.SESSION_ERROR
    status = 404


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's errors as one line: ``action.move: String should have at most 1024 characters``.

    Example:
        >>> describe_errors([{"loc": ("body", "seed"), "msg": "Input should be a valid integer"}])
        'body.seed: Input should be a valid integer'
    """
    parts = []
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ())) or "(root)"
        detail = error.get("ctx", {}).get("error") if error.get("type") == "json_invalid" else None
        parts.append(f"{where}: {error['msg']}" + (f" ({detail})" if detail else ""))
    return _printable("; ".join(parts))


def error_payload(error: Exception) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the ``{"code", "message", ...}`` body for ``error``.

    Validation errors keep their list (``loc``, ``msg``, ``type``: never the input, which may be
    NaN or unencodable); a body that is not JSON is INVALID_JSON (400). Anything unexpected is
    logged and reported as EXECUTION_ERROR (500).
    """
    if isinstance(error, RequestValidationError) and error.errors()[0]["type"] == "json_invalid":
        return 400, {
            "code": ErrorCode.INVALID_JSON.value,
            "message": describe_errors(error.errors()),
        }
    if isinstance(error, (pydantic.ValidationError, RequestValidationError)):
        errors = [
            {
                "loc": [_printable(part) if isinstance(part, str) else part for part in e["loc"]],
                "msg": _printable(e["msg"]),
                "type": e["type"],
            }
            for e in error.errors()
        ]
        body = {
            "code": ErrorCode.VALIDATION_ERROR.value,
            "message": describe_errors(error.errors()),
        }
        return 422, {**body, "errors": errors}
    if isinstance(error, ServiceError):
        body = {"code": error.code.value, "message": _printable(str(error))}
        return error.status, {**body, "reason": error.reason} if error.reason else body
    logger.exception("unexpected error while serving a request", exc_info=error)
    message = _printable(f"{type(error).__name__}: {error}")
    return 500, {"code": ErrorCode.EXECUTION_ERROR.value, "message": message}


def _printable(text: str) -> str:
    """``text`` with lone surrogates escaped, so that it always encodes as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
