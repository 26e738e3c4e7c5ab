"""The request and response bodies of the HTTP routes, as OpenEnv defines them.

Additions to OpenEnv's shapes: ``session_id`` in ``ResetRequest``, ``StepRequest`` and the
responses (HTTP sessions, see ``envkit.server.sessions``), and ``code`` / ``reason`` / ``errors``
in ``ErrorResponse`` (the same data as a WebSocket error frame).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envkit.server.errors import ErrorCode, ErrorDetail

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
    """Start an episode; extra fields are the env's own reset options."""

    model_config = ConfigDict(
        extra="allow",
        allow_inf_nan=False,
        json_schema_extra={"examples": [{"seed": 42}, {"opponent": "greedy", "seed": 1}]},
    )

    seed: int | None = Field(
        None, ge=0, lt=2**64, strict=True, description="Random seed for a reproducible episode"
    )
    episode_id: str | None = Field(
        None, max_length=255, description="Id for the episode (default: a new UUID4)"
    )
    session_id: str | None = Field(
        None,
        max_length=MAX_SESSION_ID,
        description="Reset this session (or the X-Session-Id header's); default: a new one",
    )


class StepRequest(BaseModel):
    """One action, in the shape of the env's action schema (``GET /schema``)."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={"examples": [{"action": {"move": "e2e4"}}]},
    )

    action: dict[str, Any] = Field(description="The action, as the env's action schema says")
    timeout_s: float | None = Field(
        None, gt=0, description="Accepted for OpenEnv clients; steps are not cut short"
    )
    request_id: str | None = Field(
        None, max_length=255, description="Accepted for OpenEnv clients' tracking; not used"
    )
    session_id: str | None = Field(None, max_length=MAX_SESSION_ID, description=_SESSION_ID)


class StepResponse(BaseModel):
    """What an action led to."""

    observation: dict[str, Any] = Field(description="The env's observation")
    reward: float | None = Field(None, description="Reward of the last action (None at reset)")
    done: bool = Field(False, description="Whether the episode has ended")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Extra information (absent when there is none)"
    )
    session_id: str | None = Field(None, description="The session played in (absent: none)")


class ResetResponse(StepResponse):
    """The first observation of an episode, and the session to play it in."""

    session_id: str = Field(description="Pass it to /step and /state (body or X-Session-Id)")


class HealthResponse(BaseModel):
    """The server answers."""

    status: Literal["healthy"] = Field("healthy", description="Always 'healthy' when it answers")


class MetadataResponse(BaseModel):
    """What env this server runs."""

    name: str = Field(description="Name of the environment")
    description: str = Field(description="What the environment is")
    version: str = Field(description="Version of the environment")


class SchemaResponse(BaseModel):
    """JSON Schemas of the env's action, observation and state."""

    action: dict[str, Any] = Field(description="JSON Schema of an action (StepRequest.action)")
    observation: dict[str, Any] = Field(description="JSON Schema of an observation")
    state: dict[str, Any] = Field(description="JSON Schema of GET /state")


class ErrorResponse(BaseModel):
    """A refused request: the data of a WebSocket error frame, ``message`` as ``detail``."""

    detail: str = Field(description="What went wrong")
    code: ErrorCode = Field(description="OpenEnv's error code")
    reason: str | None = Field(None, description="A finer code, e.g. why a move is illegal")
    errors: list[ErrorDetail] | None = Field(
        None, description="Every failing place in the input (request or action): loc, msg, type"
    )
