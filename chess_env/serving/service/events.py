"""The events router: ``WS /games/{id}/events``, a spectator's stream of one game.

The game as it is (``chess_env.serving.service.frames.snapshot_frames``), then ``move_made`` and
``game_ended`` (or ``game_aborted``) frames. The socket is read-only: client messages are
ignored, whatever they say. The server closes it after ``game_ended`` or ``game_aborted``
(1000), when the game leaves memory (1001), or at once for an unknown game (an ``error`` frame,
then 1008) and past the spectator limits of the game or the client (an ``error`` frame with
reason "spectator_limit", then 1013).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect

from chess_env.serving.service.dependencies import Service
from chess_env.serving.service.frames import aborted_frame, ended_frame, snapshot_frames
from envkit.server.errors import CapacityError, ServiceError, error_payload

__all__ = ["events_router"]

CLOSE_GOING_AWAY = 1001
CLOSE_POLICY_VIOLATION = 1008
CLOSE_TRY_AGAIN_LATER = 1013
FINAL_FRAMES = ("game_ended", "game_aborted")  # nothing follows them: the socket closes

events_router = APIRouter(tags=["Events"])


@events_router.websocket("/games/{game_id}/events")
async def game_events(websocket: WebSocket, game_id: str, service: Service) -> None:
    """The game in pages, then each move and the ending; client messages are ignored."""
    await websocket.accept()
    try:
        game, queue = service.subscribe(game_id)
    except CapacityError as error:
        await _send(websocket, {"type": "error", "data": error_payload(error)[1]})
        await websocket.close(CLOSE_TRY_AGAIN_LATER, "too many spectators")
        return
    except ServiceError as error:
        await _send(websocket, {"type": "error", "data": error_payload(error)[1]})
        await websocket.close(CLOSE_POLICY_VIOLATION, "unknown game")
        return
    left = asyncio.ensure_future(_until_disconnect(websocket))
    try:
        for frame in snapshot_frames(game):
            await _send(websocket, frame)
        if game.is_over or service.is_aborted(game_id):
            final = ended_frame(game) if game.is_over else aborted_frame(game)
            await _send(websocket, final)
            await websocket.close()
            return
        await _forward(websocket, queue, left, len(game.move_history))
    except WebSocketDisconnect:
        pass
    finally:
        left.cancel()
        service.unsubscribe(game_id, queue)


async def _forward(
    websocket: WebSocket,
    queue: asyncio.Queue[dict[str, Any] | None],
    left: asyncio.Future[None],
    seen: int,
) -> None:
    """Send the events after ply ``seen`` until the game ends or leaves memory, or the
    spectator leaves (``left``)."""
    while True:
        getting = asyncio.ensure_future(queue.get())
        either: set[asyncio.Future[Any]] = {getting, left}  # futures of two result types
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not getting.done():
            getting.cancel()
            return
        event = getting.result()
        if event is None:
            await websocket.close(CLOSE_GOING_AWAY, "the game left memory")
            return
        if event["type"] == "move_made":
            if event["data"]["ply"] <= seen:  # already in the snapshot
                continue
            seen = event["data"]["ply"]
        await _send(websocket, event)
        if event["type"] in FINAL_FRAMES:
            await websocket.close()
            return


async def _send(websocket: WebSocket, frame: dict[str, Any]) -> None:
    # UTF-8 rather than \u escapes: at most 4 bytes a character instead of 12.
    await websocket.send_text(json.dumps(frame, ensure_ascii=False))


async def _until_disconnect(websocket: WebSocket) -> None:
    while (await websocket.receive())["type"] != "websocket.disconnect":
        pass
