"""What the clients share: the result type, the errors, and reading a server's replies."""

from __future__ import annotations

import json
import math
from typing import Any, Generic

from pydantic import BaseModel, Field
from typing_extensions import TypeVar

from envkit.dto import FrozenDTO

ObservationT = TypeVar("ObservationT", default=dict[str, Any])

BODY_EXCERPT_CHARS = 300  # of a non-JSON error body: enough to read, short enough for a log line
CONNECTION_CLOSED = "CONNECTION_CLOSED"  # ServerError.code when the server closed the WebSocket
INVALID_REPLY = "INVALID_REPLY"  # ServerError.code of a reply that breaks the contract
RATE_LIMITED = "RATE_LIMITED"  # ServerError.code of a call refused over the server's rate limit


class StepResult(FrozenDTO, Generic[ObservationT]):
    """What ``reset`` and ``step`` return: OpenEnv's payload, without the session id.

    Example:
        >>> from pydantic import BaseModel
        >>> class Board(BaseModel):
        ...     fen: str
        >>> result = StepResult[Board](observation={"fen": "8/8/8/8/8/8/8/K6k w - - 0 1"})
        >>> result.observation, result.reward, result.done
        (Board(fen='8/8/8/8/8/8/8/K6k w - - 0 1'), None, False)
    """

    observation: ObservationT = Field(
        description="The env's observation: a dict, or the client's observation_model"
    )
    reward: float | None = Field(
        default=None, description="Reward of the last action (None at reset)"
    )
    done: bool = Field(default=False, description="Whether the episode has ended")
    metadata: dict[str, Any] = Field(default_factory=dict, description="The env's extra data")


class ServerError(RuntimeError):
    """The server refused a call, or broke the contract.

    ``code`` is OpenEnv's (VALIDATION_ERROR, EXECUTION_ERROR, SESSION_ERROR, ...),
    ``HTTP_<status>`` for an error body without one, ``CONNECTION_CLOSED`` when the server closed
    the WebSocket over the message (too big) or ``INVALID_REPLY``. ``reason`` is the server's finer
    code when it gives one (why a move is illegal); ``status`` the HTTP status, if any;
    ``retry_after`` the seconds a refusal over a rate limit asked to wait, if it said.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        reason: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status, self.reason = code, message, status, reason
        self.retry_after = retry_after

    @property
    def rate_limited(self) -> bool:
        """Refused over the server's rate limit: the same call may succeed after a wait."""
        return self.code == RATE_LIMITED or self.status == 429


class ReplayError(RuntimeError):
    """The WebSocket dropped mid-episode and the episode could not be restored.

    The reset had no seed, or replaying it gave other replies than the first time (the env is not
    deterministic, or the server changed). The client forgets the episode: reset to go on.
    """


class ReconnectError(ConnectionError):
    """No working connection to the server after every try the client's ``Backoff`` allows."""


def result_type(model: type[Any] | None) -> type[StepResult[Any]]:
    """``StepResult``, or ``StepResult[model]``: its validation parses the observation."""
    if model is None:
        return StepResult
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"observation_model must be a pydantic model class, got {model!r}")
    return StepResult[model]  # type: ignore[valid-type]  # parametrized at run time, by a class


def result(
    result_type: type[StepResult[ObservationT]], payload: dict[str, Any]
) -> StepResult[ObservationT]:
    """The ``StepResult`` of a reply (whose other fields, like ``session_id``, are left out)."""
    return result_type.model_validate(
        {
            "observation": payload.get("observation"),
            "reward": payload.get("reward"),
            "done": payload.get("done", False),
            "metadata": payload.get("metadata") or {},
        }
    )


def json_object(text: str | bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ServerError(
            INVALID_REPLY, f"{what}: not a JSON object: {text[:BODY_EXCERPT_CHARS]!r}"
        )
    return value


def http_error(status: int, text: str, retry_after: object = None) -> ServerError:
    """An error reply as ``ServerError``, with the server's code and message when it sent them
    (and its ``Retry-After`` header as ``retry_after``)."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    message = body.get("message", body.get("detail"))
    if message is None:
        message = text[:BODY_EXCERPT_CHARS] or f"HTTP {status}"
    elif not isinstance(message, str):
        message = json.dumps(message)  # FastAPI's own validation errors: a list
    code = body.get("code")
    return ServerError(
        code if isinstance(code, str) else f"HTTP_{status}",
        message,
        status=status,
        reason=body.get("reason"),
        retry_after=retry_seconds(retry_after),
    )


def retry_seconds(value: object) -> float | None:
    """A ``Retry-After`` header (delta-seconds) or a ``retry_after`` field as seconds; None unless
    it is a finite number >= 0 (an HTTP date, too, is None: the caller's default wait applies).

    Example:
        >>> retry_seconds("30"), retry_seconds(1.5), retry_seconds("Mon, 1 Jan 2024 00:00:00 GMT")
        (30.0, 1.5, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if 0 <= number < math.inf else None


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}
