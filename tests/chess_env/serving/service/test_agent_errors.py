"""A server agent that fails (raises, crashes, answers an illegal move) resigns for its side.

The game ends "resigned" with termination "agent_error", spectators get ``game_ended``, the error
is logged, the agent is closed, and the request that set the agent thinking gets the ended game
(never a 500).
"""

from __future__ import annotations

import io
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from chess_env.core import opponents
from chess_env.core.game import Game, validate_game_state
from chess_env.core.opponents import RandomOpponent
from chess_env.serving.service import create_chess_service_app

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from registered_player import registered
from service_seats import create, move

REMOTE = {"player": "remote", "name": "Client"}
BAD = {"player": "faulty", "name": "Faulty"}  # the player registered by the client fixture


class Faulty(RandomOpponent):
    """An agent that fails in the way the test asks, and remembers being closed."""

    failure: str = "raise"
    closed: list[Faulty] = []

    def choose_move(self, board: chess.Board, legal_moves: Any) -> Any:
        if self.failure == "raise":
            raise RuntimeError("the engine crashed")
        if self.failure == "illegal":
            return chess.Move.from_uci("e2e4") if board.turn == chess.BLACK else chess.Move.null()
        if self.failure == "push":  # plays on the board it was given, then answers from there
            board.push(legal_moves[0])
            return next(iter(board.legal_moves))
        return None  # not a move at all

    def close(self) -> None:
        Faulty.closed.append(self)


@pytest.fixture
def client() -> Iterator[TestClient]:
    Faulty.closed = []
    with (
        registered("faulty", lambda spec: Faulty()),
        TestClient(create_chess_service_app()) as client,
    ):
        yield client


def frames_until_end(ws: WebSocketTestSession) -> list[dict[str, Any]]:
    frames = [ws.receive_json()]
    while frames[-1]["type"] != "game_ended":
        frames.append(ws.receive_json())
    with pytest.raises(WebSocketDisconnect):
        ws.receive_json()
    return frames


def assert_resigned_by_error(game: dict[str, Any], loser: str) -> None:
    winner = "black" if loser == "white" else "white"
    assert (game["status"], game["termination"], game["result"]) == (
        "resigned",
        "agent_error",
        f"{winner}_wins",
    )
    assert validate_game_state(Game.model_validate(game)) == []


@pytest.mark.parametrize("failure", ["raise", "illegal", "push", "nothing"])
def test_a_failing_reply_ends_the_game_and_the_move_gets_the_ended_game(
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    monkeypatch.setattr(Faulty, "failure", failure)
    game_id = create(client, REMOTE, BAD)["game_id"]
    with client.websocket_connect(f"/games/{game_id}/events") as ws:
        assert ws.receive_json()["type"] == "snapshot"
        with caplog.at_level(logging.ERROR, logger="chess_env.serving.service"):
            response = move(client, game_id, "e4", color="white")
        assert response.status_code == 200, response.text
        game = response.json()
        assert_resigned_by_error(game, loser="black")
        assert [m["uci_notation"] for m in game["move_history"]] == ["e2e4"]
        frames = frames_until_end(ws)
    assert [f["type"] for f in frames] == ["move_made", "game_ended"]
    assert frames[0]["data"]["move"] == "e2e4"
    assert frames[1]["data"]["termination"] == "agent_error"
    pgn = chess.pgn.read_game(io.StringIO(frames[1]["data"]["pgn"]))
    assert pgn is not None and pgn.headers["Termination"] == "abandoned"
    logged = [r for r in caplog.records if r.name == "chess_env.serving.service"]
    assert len(logged) == 1 and game_id in logged[0].getMessage()
    if failure == "raise":
        assert logged[0].exc_info is not None and "the engine crashed" in caplog.text
    assert client.get(f"/games/{game_id}").json() == game
    assert client.get(f"/games/{game_id}/session").json()["is_active"] is False
    assert len(Faulty.closed) == 1  # released as the game ended, not when it leaves memory
    again = move(client, game_id, "d4", color="white")
    assert again.status_code == 409 and again.json()["reason"] == "game_over"


def test_a_failing_first_move_gives_201_with_the_ended_game(client: TestClient) -> None:
    game = create(client, BAD, REMOTE)
    assert_resigned_by_error(game, loser="white")
    assert game["move_history"] == []


def test_a_failing_agent_in_a_server_only_game_ends_it_in_the_background(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0

    def fails_on_its_third_move(self: Faulty, board: chess.Board, legal_moves: Any) -> Any:
        nonlocal calls
        calls += 1  # both agents are Faulty here: white's 2nd move is the 3rd call
        if calls == 3:
            raise RuntimeError("the engine crashed")
        return legal_moves[0]

    monkeypatch.setattr(Faulty, "choose_move", fails_on_its_third_move)
    game_id = create(client, {**BAD, "name": "W"}, BAD)["game_id"]
    deadline = time.monotonic() + 10
    while (game := client.get(f"/games/{game_id}").json())["status"] == "in_progress":
        assert time.monotonic() < deadline, "the background game did not end"
        time.sleep(0.01)
    assert_resigned_by_error(game, loser="white")
    assert len(game["move_history"]) == 2
    assert len(Faulty.closed) == 2


FAKE_ENGINE = """\
import sys
for line in sys.stdin:
    command = line.split()[0] if line.split() else ""
    if command == "uci":
        print("id name Crashfish\\noption name Threads type spin default 1 min 1 max 8\\nuciok")
    elif command == "isready":
        print("readyok")
    elif command == "go":
        sys.exit(3)  # dies mid-game, as a crashing engine does
    sys.stdout.flush()
"""


def test_an_engine_process_that_dies_resigns_for_its_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    engine = tmp_path / "crashfish"
    engine.write_text(f"#!{sys.executable}\n{FAKE_ENGINE}")
    engine.chmod(0o755)
    monkeypatch.setattr(opponents, "find_stockfish", lambda path=None: str(engine))
    with TestClient(create_chess_service_app()) as client:
        game_id = create(client, REMOTE, {"player": "stockfish:1", "name": "SF"})["game_id"]
        with caplog.at_level(logging.ERROR, logger="chess_env.serving.service"):
            response = move(client, game_id, "e4", color="white")
        assert response.status_code == 200, response.text
        assert_resigned_by_error(response.json(), loser="black")
    assert "EngineTerminatedError" in caplog.text
