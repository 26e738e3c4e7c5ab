"""The chess server's HTTP routes: OpenEnv's info routes, and games played through sessions."""

from __future__ import annotations

import uuid
from typing import Any

import chess
import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from chess_env.core.encoding import encode_move
from chess_env.serving.app import create_chess_app

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # white plays a1a8#


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_chess_app())


def open_session(client: TestClient, **options: Any) -> str:
    reply = client.post("/reset", json=options)
    assert reply.status_code == 200, reply.text
    return reply.json()["session_id"]


def test_health_metadata_and_openapi_version(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "healthy"}
    metadata = client.get("/metadata").json()
    assert metadata["name"] == "chess" and metadata["version"] == "0.1.0"
    assert "opponent" in metadata["description"]
    assert client.get("/openapi.json").json()["info"]["version"] == "1.0.0"


def test_schema_gives_valid_json_schemas_that_match_real_data(client: TestClient) -> None:
    schemas = client.get("/schema").json()
    assert set(schemas) == {"action", "observation", "state"}
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    action = Draft202012Validator(schemas["action"])
    assert action.is_valid({"move": "e2e4"}) and action.is_valid({"action": 2421})
    assert not action.is_valid({"action": 4672}) and not action.is_valid({"move": "e4", "x": 1})
    session = open_session(client, include_tensor=True)
    reply = client.post("/step", json={"action": {"move": "e4"}, "session_id": session}).json()
    Draft202012Validator(schemas["observation"]).validate(reply["observation"])
    state = client.get("/state", params={"session_id": session}).json()
    Draft202012Validator(schemas["state"]).validate(state)


def test_reset_opens_a_session_with_the_first_observation(client: TestClient) -> None:
    reply = client.post("/reset", json={"seed": 0}).json()
    assert uuid.UUID(reply["session_id"]).version == 4
    assert reply["reward"] is None and reply["done"] is False and "metadata" not in reply
    observation = reply["observation"]
    assert observation["fen"] == chess.STARTING_FEN and len(observation["legal_moves"]) == 20
    assert observation["agent_color"] == "white" and observation["result"] == "*"
    assert not observation["is_check"] and "board_tensor" not in observation
    assert observation["ascii"].splitlines()[1] == "8 r n b q k b n r 8"


def test_a_move_by_uci_san_and_index_through_header_and_body(client: TestClient) -> None:
    session = open_session(client, seed=1)
    header = {"X-Session-Id": session}
    first = client.post("/step", json={"action": {"move": "e2e4"}}, headers=header).json()
    assert first["session_id"] == session and first["reward"] == 0.0 and not first["done"]
    assert first["observation"]["ply"] == 2 and first["observation"]["opponent_move"]
    second = client.post("/step", json={"action": {"move": "Nf3"}, "session_id": session}).json()
    assert second["observation"]["ply"] == 4
    board = chess.Board(second["observation"]["fen"])
    index = encode_move(chess.Move.from_uci("b1c3"), board.turn)
    third = client.post("/step", json={"action": {"action": index}}, headers=header).json()
    assert third["observation"]["ply"] == 6
    assert chess.Board(third["observation"]["fen"]).piece_at(chess.C3) == chess.Piece(
        chess.KNIGHT, chess.WHITE
    )
    state = client.get("/state", headers=header).json()
    assert state["step_count"] == 3 and state["ply"] == 6
    assert state["fen"] == third["observation"]["fen"]


def test_state_counts_only_steps_that_were_played(client: TestClient) -> None:
    session = open_session(client, episode_id="game-7")
    header = {"X-Session-Id": session}
    assert (
        client.post("/step", json={"action": {"move": "e2e5"}}, headers=header).status_code == 422
    )
    client.post("/step", json={"action": {"move": "d4"}}, headers=header)
    state = client.get("/state", headers=header).json()
    assert state["episode_id"] == "game-7" and state["step_count"] == 1
    assert state["opponent"] == "random" and state["done"] is False


def test_a_short_game_to_the_end(client: TestClient) -> None:
    session = open_session(client, fen=MATE_IN_ONE, opponent="greedy")
    header = {"X-Session-Id": session}
    final = client.post("/step", json={"action": {"move": "Ra8#"}}, headers=header).json()
    assert final["done"] is True and final["reward"] == 1.0
    observation = final["observation"]
    assert observation["result"] == "1-0" and observation["outcome"] == "checkmate"
    assert observation["is_check"] and observation["legal_moves"] == []
    after = client.post("/step", json={"action": {"move": "Kh2"}}, headers=header)
    assert after.status_code == 409
    assert after.json()["code"] == "EXECUTION_ERROR" and after.json()["reason"] == "episode_over"
    assert client.get("/state", headers=header).json()["done"] is True
    again = client.post("/reset", json={"session_id": session}).json()
    assert again["session_id"] == session and again["observation"]["ply"] == 0


def test_a_game_by_index_ends_the_same_way(client: TestClient) -> None:
    session = open_session(client, fen=MATE_IN_ONE)
    index = encode_move(chess.Move.from_uci("a1a8"), chess.WHITE)
    final = client.post("/step", json={"action": {"action": index}, "session_id": session})
    assert final.json()["done"] and final.json()["reward"] == 1.0


def test_reset_options_colour_opening_and_tensor(client: TestClient) -> None:
    black = client.post("/reset", json={"agent_color": "black", "seed": 3}).json()["observation"]
    assert black["agent_color"] == "black" and black["ply"] == 1 and black["opponent_move"]
    assert black["ascii"].splitlines()[1].startswith("1 ")  # the board from black's side
    opened = client.post("/reset", json={"moves": ["e2e4", "e7e5"], "include_tensor": True})
    observation = opened.json()["observation"]
    assert observation["ply"] == 2
    tensor = observation["board_tensor"]
    assert [len(tensor), len(tensor[0]), len(tensor[0][0])] == [8, 8, 12]
    assert sum(value for row in tensor for square in row for value in square) == 32


def test_a_bad_reset_of_a_session_leaves_its_game(client: TestClient) -> None:
    session = open_session(client, seed=2)
    client.post("/step", json={"action": {"move": "e4"}, "session_id": session})
    bad = client.post("/reset", json={"session_id": session, "fen": "8/8/8/8/8/8/8/K7 w - - 0 1"})
    assert bad.status_code == 422 and bad.json()["reason"] == "invalid_position"
    assert "black has no king" in bad.json()["detail"]
    state = client.get("/state", params={"session_id": session}).json()
    assert state["ply"] == 2 and state["step_count"] == 1


def test_stateless_calls_use_a_fresh_env(client: TestClient) -> None:
    reply = client.post("/step", json={"action": {"move": "e4"}})
    assert reply.status_code == 200 and "session_id" not in reply.json()
    assert reply.json()["observation"]["ply"] == 2
    assert client.post("/step", json={"action": {"move": "e4"}}).json()["observation"]["ply"] == 2
    state = client.get("/state").json()
    assert state["step_count"] == 0 and state["fen"] == chess.STARTING_FEN
    assert len(client.app.state.env_service.store) == 0


def test_unknown_malformed_and_conflicting_session_ids(client: TestClient) -> None:
    unknown = client.post("/step", json={"action": {"move": "e4"}, "session_id": str(uuid.uuid4())})
    assert unknown.status_code == 404 and unknown.json()["code"] == "SESSION_ERROR"
    assert "POST /reset opens a new one" in unknown.json()["detail"]
    malformed = client.get("/state", headers={"X-Session-Id": "not-a-uuid"})
    assert malformed.status_code == 404 and "no session not-a-uuid" in malformed.json()["detail"]
    too_long = client.post("/step", json={"action": {"move": "e4"}, "session_id": "x" * 101})
    assert too_long.status_code == 422 and "at most 100 characters" in too_long.json()["detail"]
    session = open_session(client)
    both = client.post(
        "/step",
        json={"action": {"move": "e4"}, "session_id": session},
        headers={"X-Session-Id": str(uuid.uuid4())},
    )
    assert both.status_code == 422 and both.json()["reason"] == "conflicting_session_ids"


def test_closing_a_session_frees_its_slot() -> None:
    client = TestClient(create_chess_app(max_sessions=1))
    session = open_session(client)
    full = client.post("/reset", json={})
    assert full.status_code == 503 and full.json()["code"] == "CAPACITY_REACHED"
    assert client.delete(f"/sessions/{session}").status_code == 204
    assert client.delete(f"/sessions/{session}").status_code == 404
    assert client.get("/state", headers={"X-Session-Id": session}).status_code == 404
    open_session(client)


def test_a_failed_reset_does_not_hold_a_slot() -> None:
    client = TestClient(create_chess_app(max_sessions=1))
    assert client.post("/reset", json={"fen": "nonsense"}).status_code == 422
    assert len(client.app.state.env_service.store) == 0
    open_session(client)


def test_idle_sessions_expire() -> None:
    now = [0.0]
    client = TestClient(create_chess_app(idle_timeout=60, clock=lambda: now[0]))
    session = open_session(client)
    now[0] = 59.0
    assert client.get("/state", headers={"X-Session-Id": session}).status_code == 200
    now[0] = 110.0  # 51 s after the last use
    assert client.get("/state", headers={"X-Session-Id": session}).status_code == 200
    now[0] = 171.0  # 61 s after it
    expired = client.get("/state", headers={"X-Session-Id": session})
    assert expired.status_code == 404 and "expired" in expired.json()["detail"]
