"""``DELETE /sessions/{session_id}``: free a session's slot before it expires."""

from __future__ import annotations

from fastapi import APIRouter, Response

from envkit.server.bodies import ErrorResponse
from envkit.server.errors import UnknownSessionError
from envkit.server.service import Service

__all__ = ["router"]

router = APIRouter(tags=["Sessions"])


@router.delete(
    "/sessions/{session_id}",
    status_code=204,
    response_class=Response,
    responses={404: {"model": ErrorResponse, "description": "Unknown session (SESSION_ERROR)"}},
    summary="Close a session",
)
def close_session(session_id: str, service: Service) -> None:
    if not service.store.close(session_id):
        raise UnknownSessionError(f"no session {session_id} to close")
