"""``/ws``: OpenEnv's WebSocket, one session per connection.

The session is the connection's own, closed when it ends; or, with ``/ws?session_id=ID`` (as
OpenEnv's MCP client connects), an open HTTP session, which outlives the connection and takes
one WebSocket at a time (an unknown or taken one, or one whose owner token the handshake's
``X-Session-Token`` header does not present when the owner check is on: a SESSION_ERROR frame,
then 1008).

Client -> server: ``{"type": "reset", "data": {seed?, episode_id?, ...options}}``, ``{"type":
"step", "data": {...action}}``, ``{"type": "state"}``, ``{"type": "close"}`` and ``{"type": "mcp",
"data": <JSON-RPC request>}``. Server -> client: ``{"type": "observation", "data": {observation,
reward, done, metadata?}}``, ``{"type": "state", "data": {...}}``, ``{"type": "mcp", "data":
<JSON-RPC reply>}`` or ``{"type": "error", "data": {message, code, reason?, errors?}}``.

An error frame never closes the connection, and the env stays as it was. The connection closes
on "close" (1000), on a message over the size limit (1009, "message too big") and when no
session slot is free (a CAPACITY_REACHED frame, then 1013, "try again later").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from starlette.concurrency import run_in_threadpool

from envkit.server import mcp
from envkit.server.bodies import ResetRequest
from envkit.server.errors import CapacityError, ErrorCode, UnknownSessionError, error_payload
from envkit.server.jsontext import dumps, loads
from envkit.server.service import EnvService, Service
from envkit.server.sessions import SessionTokenError, current_token

__all__ = ["CLOSE_POLICY", "CLOSE_TOO_BIG", "CLOSE_TRY_AGAIN_LATER", "answer", "router"]

CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
CLOSE_TRY_AGAIN_LATER = 1013

router = APIRouter()


@router.websocket("/ws")
async def env_socket(websocket: WebSocket, service: Service) -> None:
    await websocket.accept()
    attach_to = websocket.query_params.get("session_id")
    try:  # on a worker: either may sweep idle sessions, and closing their envs may take a while
        if attach_to is None:
            session = await run_in_threadpool(service.store.create, pinned=True)
            current_token.set(session.token)  # this connection's calls present its own token
        else:
            session = await run_in_threadpool(service.store.attach, attach_to)
    except (CapacityError, UnknownSessionError, SessionTokenError) as error:
        await websocket.send_text(dumps(_frame("error", error_payload(error)[1])))
        if isinstance(error, CapacityError):
            await websocket.close(CLOSE_TRY_AGAIN_LATER, "no session slot is free")
        else:
            await websocket.close(CLOSE_POLICY, "no such session to attach to, or not for you")
        return
    limit = websocket.app.state.limits.max_message_bytes
    try:
        while True:
            event = await websocket.receive()
            if event["type"] == "websocket.disconnect":
                return
            raw: str | bytes = event.get("text") or event.get("bytes") or b""
            if len(raw.encode() if isinstance(raw, str) else raw) > limit:
                await websocket.close(CLOSE_TOO_BIG, f"message over {limit} bytes")
                return
            reply: str | None
            try:
                message = loads(raw)
            except ValueError as error:
                reply = dumps(_refusal(ErrorCode.INVALID_JSON, str(error)))
            else:
                if isinstance(message, dict) and message.get("type") == "close":
                    await websocket.close()
                    return
                reply = _answer_on_loop(service, session.id, message)
                if reply is None:
                    frame = await run_in_threadpool(answer, service, session.id, message)
                    reply = None if frame is None else dumps(frame)
            if reply is not None:
                await websocket.send_text(reply)
    except WebSocketDisconnect:  # the client left while a reply was on its way
        pass
    finally:
        if attach_to is None:
            await run_in_threadpool(service.store.close, session.id, token=session.token)
        else:
            service.store.detach(session)


def _answer_on_loop(service: EnvService, session_id: str, message: Any) -> str | None:
    """The answer, as JSON text, to a step played here, with no thread-pool hop, when
    ``play_if_free`` can (an attached session may be in an HTTP call); None for the rest
    (resets may start engines).
    """
    if not isinstance(message, dict) or message.get("type") != "step":
        return None
    data = message.get("data", {})
    if not isinstance(data, dict):
        return None  # answer() words the refusal
    try:
        played = service.play_if_free(session_id, data)
    except Exception as error:
        return dumps(_frame("error", error_payload(error)[1]))
    return None if played is None else f'{{"type":"observation","data":{played.to_wire_json()}}}'


def answer(service: EnvService, session_id: str, message: Any) -> dict[str, Any] | None:
    """The frame that answers one parsed message (None: nothing to send); never raises."""
    if not isinstance(message, dict):
        shape = 'a message is a JSON object: {"type": ..., "data": {...}}'
        return _refusal(ErrorCode.VALIDATION_ERROR, shape)
    kind, data = message.get("type"), message.get("data", {})
    handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        expected = ", ".join([*_HANDLERS, "close"])
        unknown = f"unknown message type {json.dumps(kind)}; expected one of {expected}"
        return _refusal(ErrorCode.UNKNOWN_TYPE, unknown)
    if not isinstance(data, dict):
        return _refusal(ErrorCode.VALIDATION_ERROR, f"{kind}: data must be a JSON object")
    try:
        return handler(service, session_id, data)
    except Exception as error:
        return _frame("error", error_payload(error)[1])


def _reset(service: EnvService, session_id: str, data: dict[str, Any]) -> dict[str, Any]:
    request = ResetRequest.model_validate(data)
    with service.store.use(session_id) as session:
        return _frame("observation", service.reset(session, request))


def _step(service: EnvService, session_id: str, data: dict[str, Any]) -> dict[str, Any]:
    with service.store.use(session_id) as session:
        return _frame("observation", service.step(session, data))


def _state(service: EnvService, session_id: str, data: dict[str, Any]) -> dict[str, Any]:
    with service.store.use(session_id) as session:
        return _frame("state", service.state(session))


def _mcp(service: EnvService, session_id: str, data: dict[str, Any]) -> dict[str, Any] | None:
    reply = mcp.handle(service, data, session_id=session_id)
    return None if reply is None else _frame("mcp", reply)


_HANDLERS: dict[str, Callable[[EnvService, str, dict[str, Any]], dict[str, Any] | None]] = {
    "reset": _reset,
    "step": _step,
    "state": _state,
    "mcp": _mcp,
}


def _frame(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "data": data}


def _refusal(code: ErrorCode, message: str) -> dict[str, Any]:
    return _frame("error", {"code": code.value, "message": message})
