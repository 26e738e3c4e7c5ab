"""``POST /reset``, ``POST /step`` and ``GET /state``: OpenEnv's HTTP routes, with sessions.

``/reset`` opens a session (or resets the one named) and returns its ``session_id``; ``/step``
and ``/state`` take it in the body (``/state``: the query) or the ``X-Session-Id`` header.
Without one they act on a fresh env, as OpenEnv's stateless HTTP does. With the owner check on
(``create_app(session_owner_check=True)``) the reply that opens a session also carries its
``session_token``, which every later call naming the session sends as ``X-Session-Token``
(403 SESSION_ERROR without it).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query
from starlette.concurrency import run_in_threadpool

from envkit.server.adapter import EpisodeState
from envkit.server.bodies import (
    MAX_SESSION_ID,
    ErrorResponse,
    ResetRequest,
    ResetResponse,
    StepRequest,
    StepResponse,
)
from envkit.server.errors import InvalidInputError
from envkit.server.service import EnvService, Service

__all__ = ["router"]

router = APIRouter(
    tags=["Environment Control"],
    responses={
        status: {"model": ErrorResponse, "description": description}
        for status, description in (
            (404, "Unknown session (SESSION_ERROR)"),
            (409, "The episode cannot take this call now (EXECUTION_ERROR)"),
            (503, "Every session slot is taken (CAPACITY_REACHED)"),
        )
    },
)

SessionHeader = Annotated[
    str | None,
    Header(max_length=MAX_SESSION_ID, description="The session to use (or session_id)"),
]


@router.post(
    "/reset",
    response_model=ResetResponse,
    response_model_exclude_unset=True,
    summary="Start an episode in a new session, or in the one named",
)
def reset(
    service: Service,
    request: Annotated[ResetRequest, Body(default_factory=ResetRequest)],
    x_session_id: SessionHeader = None,
) -> dict[str, Any]:
    session_id = _session_id(request.session_id, x_session_id)
    if session_id is not None:
        with service.store.use(session_id) as session:
            return {**service.reset(session, request), "session_id": session_id}
    opened, payload = service.open(request)
    if opened.token is not None:  # the owner check is on: the one reply that tells it
        payload = {**payload, "session_token": opened.token}
    return {**payload, "session_id": opened.id}


@router.post(
    "/step",
    response_model=StepResponse,
    response_model_exclude_unset=True,
    summary="Play one action",
)
async def step(
    request: StepRequest, service: Service, x_session_id: SessionHeader = None
) -> dict[str, Any]:
    session_id = _session_id(request.session_id, x_session_id)
    played = None if session_id is None else service.play_if_free(session_id, request.action)
    if played is not None:
        payload = played.to_wire()
    else:
        payload = await run_in_threadpool(_step, service, session_id, request.action)
    return payload if session_id is None else {**payload, "session_id": session_id}


def _step(service: EnvService, session_id: str | None, action: Any) -> dict[str, Any]:
    with service.session(session_id) as session:
        return service.step(session, action)


@router.get("/state", response_model=EpisodeState, summary="The episode's state")
def state(
    service: Service,
    session_id: Annotated[
        str | None, Query(max_length=MAX_SESSION_ID, description="The session to read")
    ] = None,
    x_session_id: SessionHeader = None,
) -> dict[str, Any]:
    with service.session(_session_id(session_id, x_session_id)) as session:
        return service.state(session)


def _session_id(*given: str | None) -> str | None:
    """The one session the request names (in the body, query or header), if any."""
    ids = {session_id for session_id in given if session_id is not None}
    if len(ids) > 1:
        raise InvalidInputError(
            "the request names two different sessions (session_id and X-Session-Id)",
            reason="conflicting_session_ids",
        )
    return ids.pop() if ids else None
