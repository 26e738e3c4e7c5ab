"""OpenEnv's WebSocket: messages, every error code, and the connection's limits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from chess_env.serving.app import create_chess_app
from envkit.server import MAX_MESSAGE_BYTES

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_chess_app(max_sessions=2))


def ask(ws: WebSocketTestSession, message: dict[str, Any] | str) -> dict[str, Any]:
    ws.send_text(message if isinstance(message, str) else json.dumps(message))
    return ws.receive_json()


def error_of(reply: dict[str, Any]) -> tuple[str, str]:
    assert reply["type"] == "error", reply
    return reply["data"]["code"], reply["data"]["message"]


def test_reset_step_state_and_close(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        first = ask(ws, {"type": "reset", "data": {"seed": 4, "episode_id": "ws-1"}})
        assert first["type"] == "observation"
        assert first["data"]["reward"] is None and first["data"]["done"] is False
        assert len(first["data"]["observation"]["legal_moves"]) == 20
        moved = ask(ws, {"type": "step", "data": {"move": "d2d4"}})
        assert moved["type"] == "observation" and moved["data"]["observation"]["ply"] == 2
        assert moved["data"]["reward"] == 0.0 and "metadata" not in moved["data"]
        state = ask(ws, {"type": "state"})
        assert state["type"] == "state"
        assert state["data"]["episode_id"] == "ws-1" and state["data"]["step_count"] == 1
        assert state["data"]["fen"] == moved["data"]["observation"]["fen"]
        assert len(client.app.state.env_service.store) == 1
        ws.send_text(json.dumps({"type": "close"}))
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1000
    assert len(client.app.state.env_service.store) == 0


def test_a_game_to_the_end_then_reset_again(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ask(ws, {"type": "reset", "data": {"fen": MATE_IN_ONE}})
        final = ask(ws, {"type": "step", "data": {"move": "a1a8"}})["data"]
        assert final["done"] is True and final["reward"] == 1.0
        assert final["observation"]["outcome"] == "checkmate"
        code, message = error_of(ask(ws, {"type": "step", "data": {"move": "Kf1"}}))
        assert code == "EXECUTION_ERROR" and "the episode is over (checkmate)" in message
        again = ask(ws, {"type": "reset", "data": {}})
        assert again["data"]["observation"]["ply"] == 0
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 0


@pytest.mark.parametrize(
    ("message", "code", "said"),
    [
        ("{not json", "INVALID_JSON", "Expecting property name"),
        ("", "INVALID_JSON", "Expecting value"),
        ('{"type": "step", "data": {"action": NaN}}', "INVALID_JSON", "NaN is not valid JSON"),
        ('{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}", "INVALID_JSON", "digits"),
        ("[" * 20_000, "INVALID_JSON", "nested too deeply"),
        ('{"type": "dance"}', "UNKNOWN_TYPE", 'unknown message type "dance"'),
        ('{"data": {}}', "UNKNOWN_TYPE", "unknown message type null"),
        ('{"type": 7}', "UNKNOWN_TYPE", "expected one of reset, step, state, mcp, close"),
        ("[1, 2]", "VALIDATION_ERROR", "a message is a JSON object"),
        ('{"type": "step", "data": "e4"}', "VALIDATION_ERROR", "data must be a JSON object"),
        ('{"type": "step"}', "VALIDATION_ERROR", "exactly one of"),
        ('{"type": "step", "data": {"move": 4}}', "VALIDATION_ERROR", "valid string"),
        ('{"type": "step", "data": {"action": 4672}}', "VALIDATION_ERROR", "less than 4672"),
        ('{"type": "step", "data": {"move": "Nc4"}}', "VALIDATION_ERROR", "none of your knights"),
        ('{"type": "step", "data": {"move": "\\ud800"}}', "VALIDATION_ERROR", "valid string"),
        ('{"type": "reset", "data": {"seed": -3}}', "VALIDATION_ERROR", "seed: Input should"),
        ('{"type": "reset", "data": {"fen": "x"}}', "VALIDATION_ERROR", "does not parse"),
    ],
)
def test_every_error_leaves_the_connection_and_game_as_they_were(
    client: TestClient, message: str, code: str, said: str
) -> None:
    with client.websocket_connect("/ws") as ws:
        before = ask(ws, {"type": "reset", "data": {"seed": 9}})["data"]["observation"]["fen"]
        got_code, got_message = error_of(ask(ws, message))
        assert (got_code, said in got_message) == (code, True), got_message
        assert ask(ws, {"type": "state"})["data"]["fen"] == before
        assert ask(ws, {"type": "step", "data": {"move": "e4"}})["type"] == "observation"


def test_an_illegal_move_says_why(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ask(ws, {"type": "reset", "data": {}})
        reply = ask(ws, {"type": "step", "data": {"move": "g1g3"}})
        assert reply["data"] == {
            "code": "VALIDATION_ERROR",
            "message": "the knight on g1 cannot move to g3",
            "reason": "cannot_move_there",
        }
        index = ask(ws, {"type": "step", "data": {"action": 0}})["data"]
        assert index["code"] == "VALIDATION_ERROR" and index["reason"] == "illegal_action"


def test_stepping_before_reset_is_an_execution_error(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        code, message = error_of(ask(ws, {"type": "step", "data": {"move": "e4"}}))
        assert code == "EXECUTION_ERROR" and "reset first" in message
        assert ask(ws, {"type": "state"})["data"] == {"episode_id": None, "step_count": 0}
        assert ask(ws, {"type": "reset"})["type"] == "observation"


def test_binary_frames_are_read_as_utf8_json(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.send_bytes(json.dumps({"type": "reset", "data": {}}).encode())
        assert ws.receive_json()["type"] == "observation"
        ws.send_bytes(b"\xff\xfe")
        assert error_of(ws.receive_json())[0] == "INVALID_JSON"


def test_a_message_over_64_kb_closes_with_1009(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ask(ws, {"type": "reset", "data": {}})
        padded = json.dumps({"type": "state"}).ljust(MAX_MESSAGE_BYTES)
        assert ask(ws, padded)["type"] == "state"  # exactly at the limit: still read
        ws.send_text(padded + " ")
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1009
    assert len(client.app.state.env_service.store) == 0


def test_capacity_reached(client: TestClient) -> None:
    with client.websocket_connect("/ws") as first, client.websocket_connect("/ws") as second:
        for ws in (first, second):
            ask(ws, {"type": "reset", "data": {}})
        with client.websocket_connect("/ws") as third:
            code, message = error_of(third.receive_json())
            assert code == "CAPACITY_REACHED" and "all 2 sessions are in use" in message
            with pytest.raises(WebSocketDisconnect) as closed:
                third.receive_json()
            assert closed.value.code == 1013
        assert client.post("/reset", json={}).json()["code"] == "CAPACITY_REACHED"
        assert ask(first, {"type": "step", "data": {"move": "e4"}})["type"] == "observation"
    with client.websocket_connect("/ws") as again:
        assert ask(again, {"type": "reset", "data": {}})["type"] == "observation"


def test_mcp_messages_use_the_connection_session(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ask(ws, {"type": "reset", "data": {"seed": 2}})
        call = {"name": "move", "arguments": {"move": "c4"}}
        request = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}
        reply = ask(ws, {"type": "mcp", "data": request})
        assert reply["type"] == "mcp" and reply["data"]["id"] == 5
        assert reply["data"]["result"]["isError"] is False
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 1
        bad = ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 6, "method": "nope"}})
        assert bad["data"]["error"]["code"] == -32601
