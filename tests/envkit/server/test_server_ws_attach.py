"""``/ws?session_id=``: a WebSocket attached to an HTTP session, as OpenEnv's MCP client connects.

Its resets and steps reach the same env as the HTTP and MCP calls naming that session; the session
outlives the connection, never expires while attached, and takes one WebSocket at a time.
"""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import Mock

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from chess_env.serving.app import create_chess_app
from envkit.server import SessionStore, UnknownSessionError


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_chess_app(max_sessions=2))


def ask(ws: WebSocketTestSession, message: dict[str, Any]) -> dict[str, Any]:
    ws.send_text(json.dumps(message))
    return ws.receive_json()


def test_the_websocket_plays_in_the_http_session(client: TestClient) -> None:
    session = client.post("/reset", json={"seed": 1}).json()["session_id"]
    with client.websocket_connect(f"/ws?session_id={session}") as ws:
        reset = ask(ws, {"type": "reset", "data": {"seed": 8, "agent_color": "black"}})
        assert reset["data"]["observation"]["agent_color"] == "black"
        assert ask(ws, {"type": "step", "data": {"move": "e5"}})["type"] == "observation"
        assert len(client.app.state.env_service.store) == 1  # no session of its own
    state = client.get("/state", headers={"X-Session-Id": session}).json()
    assert state["agent_color"] == "black" and state["step_count"] == 1  # it outlived the socket
    call = {"name": "move", "arguments": {"move": "Nc6"}, "session_id": session}
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    assert client.post("/mcp", json=mcp).json()["result"]["isError"] is False


@pytest.mark.parametrize("taken", [False, True])
def test_an_unknown_or_taken_session_is_refused(client: TestClient, taken: bool) -> None:
    session = client.post("/reset", json={}).json()["session_id"]
    target = session if taken else "no-such-session"
    with client.websocket_connect(f"/ws?session_id={session}") as holder:
        with client.websocket_connect(f"/ws?session_id={target}") as ws:
            refusal = ws.receive_json()
            assert refusal["type"] == "error" and refusal["data"]["code"] == "SESSION_ERROR"
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_json()
            assert closed.value.code == 1008
        assert ask(holder, {"type": "state"})["data"]["step_count"] == 0


def test_an_attached_session_does_not_expire_until_it_is_detached() -> None:
    now = [0.0]
    store = SessionStore(Mock, idle_timeout=10, clock=lambda: now[0])
    session = store.create()
    assert store.attach(session.id) is session
    with pytest.raises(UnknownSessionError, match="already has a WebSocket"):
        store.attach(session.id)
    now[0] = 60.0
    assert store.expire_idle() == []
    store.detach(session)
    now[0] = 65.0
    assert store.expire_idle() == []  # idle since the detach, 5 s ago
    now[0] = 71.0
    assert store.expire_idle() == [session.id]
