"""The request and response bodies of the HTTP routes, as OpenEnv defines them.

Additions to OpenEnv's shapes: ``session_id`` in ``ResetRequest``, ``StepRequest`` and the
responses (HTTP sessions, see ``envkit.server.sessions``), and ``code`` / ``reason`` / ``errors``
in ``ErrorResponse`` (the same data as a WebSocket error frame).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envkit.server.errors import MAX_ERRORS, ErrorCode, ErrorDetail

__all__ = [
    "MAX_SESSION_ID",
    "ErrorResponse",
    "HealthResponse",
    "MetadataResponse",
    "ResetRequest",
    "ResetResponse",
    "SchemaResponse",
    "StepRequest",
    "StepResponse",
]

MAX_SESSION_ID = 100  # a UUID has 36 characters; longer ids cannot name a session
_SESSION_ID = "The session to use (or the X-Session-Id header); without one, a fresh env"


class ResetRequest(BaseModel):
    """Start an episode; extra fields are the env's own reset options.

    Example:
        >>> request = ResetRequest.model_validate({"seed": 1, "opponent": "greedy"})
        >>> request.seed, request.model_extra
        (1, {'opponent': 'greedy'})
        >>> ResetRequest.model_validate({"seed": "1"})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ResetRequest
        seed
          Input should be a valid integer ...
    """

    model_config = ConfigDict(
        extra="allow",
        allow_inf_nan=False,
        json_schema_extra={"examples": [{"seed": 42}, {"opponent": "greedy", "seed": 1}]},
    )

    seed: int | None = Field(
        default=None,
        ge=0,
        lt=2**64,
        strict=True,
        description="Random seed for a reproducible episode",
    )
    episode_id: str | None = Field(
        default=None, max_length=255, description="Id for the episode (default: a new UUID4)"
    )
    session_id: str | None = Field(
        default=None,
        max_length=MAX_SESSION_ID,
        description="Reset this session (or the X-Session-Id header's); default: a new one",
    )


class StepRequest(BaseModel):
    """One action, in the shape of the env's action schema (``GET /schema``).

    Example:
        >>> StepRequest.model_validate({"action": {"move": "e4"}, "session_id": "s-1"}).action
        {'move': 'e4'}
        >>> StepRequest.model_validate({"action": {}, "move": "e4"})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for StepRequest
        move
          Extra inputs are not permitted ...
    """

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={"examples": [{"action": {"move": "e2e4"}}]},
    )

    action: dict[str, Any] = Field(description="The action, as the env's action schema says")
    timeout_s: float | None = Field(
        default=None, gt=0, description="Accepted for OpenEnv clients; steps are not cut short"
    )
    request_id: str | None = Field(
        default=None, max_length=255, description="Accepted for OpenEnv clients' tracking; not used"
    )
    session_id: str | None = Field(default=None, max_length=MAX_SESSION_ID, description=_SESSION_ID)


class StepResponse(BaseModel):
    """What an action led to.

    Example:
        >>> response = StepResponse(observation={"ply": 2}, reward=0.0, session_id="s-1")
        >>> response.model_dump(exclude_unset=True)  # as the route sends it: no metadata
        {'observation': {'ply': 2}, 'reward': 0.0, 'session_id': 's-1'}
    """

    observation: dict[str, Any] = Field(description="The env's observation")
    reward: float | None = Field(
        default=None, description="Reward of the last action (None at reset)"
    )
    done: bool = Field(default=False, description="Whether the episode has ended")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Extra information (absent when there is none)"
    )
    session_id: str | None = Field(default=None, description="The session played in (absent: none)")


class ResetResponse(StepResponse):
    """The first observation of an episode, and the session to play it in.

    Example:
        >>> ResetResponse(observation={"ply": 0}, session_id="s-1").reward is None
        True
        >>> ResetResponse(observation={"ply": 0})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ResetResponse
        session_id
          Field required ...
    """

    session_id: str = Field(description="Pass it to /step and /state (body or X-Session-Id)")
    session_token: str | None = Field(
        default=None,
        description="With the server's owner check on, the secret every later call naming this "
        "session sends in the X-Session-Token header (absent when it is off); told only here",
    )


class HealthResponse(BaseModel):
    """The server answers.

    Example:
        >>> HealthResponse().model_dump()
        {'status': 'healthy'}
    """

    status: Literal["healthy"] = Field(
        default="healthy", description="Always 'healthy' when it answers"
    )


class MetadataResponse(BaseModel):
    """What env this server runs.

    Example:
        >>> MetadataResponse(name="chess", description="Chess", version="0.1.0").model_dump()
        {'name': 'chess', 'description': 'Chess', 'version': '0.1.0'}
    """

    name: str = Field(description="Name of the environment")
    description: str = Field(description="What the environment is")
    version: str = Field(description="Version of the environment")


class SchemaResponse(BaseModel):
    """JSON Schemas of the env's action, observation and state.

    Example:
        >>> from envkit.server.adapter import EpisodeState
        >>> state = EpisodeState.model_json_schema()
        >>> schema = SchemaResponse(action={"type": "object"}, observation={}, state=state)
        >>> sorted(schema.state["properties"])
        ['episode_id', 'step_count']
    """

    action: dict[str, Any] = Field(description="JSON Schema of an action (StepRequest.action)")
    observation: dict[str, Any] = Field(description="JSON Schema of an observation")
    state: dict[str, Any] = Field(description="JSON Schema of GET /state")


class ErrorResponse(BaseModel):
    """A refused request: the data of a WebSocket error frame, ``message`` as ``detail``.

    Example:
        >>> from envkit.server.errors import InvalidInputError, error_payload
        >>> status, body = error_payload(InvalidInputError("no piece on e5", reason="no_piece"))
        >>> response = ErrorResponse(detail=body.pop("message"), **body)
        >>> status, response.model_dump(mode="json", exclude_none=True)
        (422, {'detail': 'no piece on e5', 'code': 'VALIDATION_ERROR', 'reason': 'no_piece'})
    """

    detail: str = Field(description="What went wrong")
    code: ErrorCode = Field(description="OpenEnv's error code")
    reason: str | None = Field(default=None, description="A finer code, e.g. why a move is illegal")
    errors: list[ErrorDetail] | None = Field(
        default=None,
        description="The failing places in the input (request or action): loc, msg, type; "
        f"the first {MAX_ERRORS}",
    )
    errors_truncated: int | None = Field(
        default=None,
        ge=1,
        description="How many more failing places there are, beyond those listed",
    )
