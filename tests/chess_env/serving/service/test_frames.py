"""Spectator frames stay under 64 KB however long the game: the snapshot comes in pages from
which a spectator rebuilds the whole ``Game``."""

from __future__ import annotations

import io
import json
import random
import sys
from itertools import count
from pathlib import Path
from typing import Any

import chess.pgn
import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession

from chess_env.core.game import Game, validate_game_state
from chess_env.core.rules import ChessGame
from chess_env.serving.game_store import StateManager
from chess_env.serving.service import create_chess_service_app
from chess_env.serving.service import frames as service_frames

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from service_seats import create, move, resign

FRAME_LIMIT = 64 * 1024
LONG = 320  # plies: four history frames
AGENT = {"personality": "balanced", "model_name": "m", "system_prompt": "Play well."}


def long_random_line(plies: int) -> list[str]:
    """The moves of the first seeded random game still going after ``plies`` plies."""
    for seed in count():
        rng, game, moves = random.Random(seed), ChessGame(claim_draws=True, max_plies=None), []
        while len(moves) < plies and not game.is_over:
            moves.append(game.play_uci(rng.choice(sorted(game.legal_uci))).uci())
        if not game.is_over:
            return moves
    raise AssertionError("unreachable")


def receive(ws: WebSocketTestSession, frames: list[str]) -> dict[str, Any]:
    frames.append(ws.receive_text())
    return dict(json.loads(frames[-1]))


def rebuild(ws: WebSocketTestSession, frames: list[str]) -> Game:
    """The game from its snapshot and history frames, as a spectator rebuilds it."""
    snapshot = receive(ws, frames)
    assert snapshot["type"] == "snapshot" and "move_history" not in snapshot["data"]["game"]
    moves: list[Any] = []
    while len(moves) < snapshot["data"]["ply"]:
        page = receive(ws, frames)
        assert page["type"] == "history" and page["data"]["from_ply"] == len(moves) + 1
        moves += page["data"]["moves"]
    return Game.model_validate({**snapshot["data"]["game"], "move_history": moves})


def test_a_long_game_comes_in_pages_under_64_kb_and_rebuilds_exactly() -> None:
    manager, frames = StateManager(), list[str]()
    with TestClient(create_chess_service_app(manager)) as client:
        players = [{"player": "remote", "name": name, **AGENT} for name in ("White", "Black")]
        game_id = create(client, *players)["game_id"]
        for uci in long_random_line(LONG):  # straight into the store: quicker than HTTP
            manager.apply_move(game_id, uci, thinking_time=0.25)
        game = manager.get_game(game_id)
        assert len(game.move_history) == LONG and not game.is_over
        assert len(game.model_dump_json()) > FRAME_LIMIT  # one frame could not hold it
        with client.websocket_connect(f"/games/{game_id}/events") as ws:
            rebuilt = rebuild(ws, frames)
            assert rebuilt == game and validate_game_state(rebuilt) == []
            assert len(frames) == 1 + 4  # the snapshot and ceil(320 / 100) pages
            after = move(client, game_id, game.board_state.legal_moves[0])
            assert after.status_code == 200, after.text
            moved = receive(ws, frames)
            assert moved["type"] == "move_made" and moved["data"]["ply"] == LONG + 1
            resign(client, game_id, "white")
            ended = receive(ws, frames)
    assert ended["type"] == "game_ended"
    pgn = chess.pgn.read_game(io.StringIO(ended["data"]["pgn"]))
    assert pgn is not None
    assert [m.uci() for m in pgn.mainline_moves()] == [
        *(m.uci_notation for m in game.move_history),
        moved["data"]["move"],
    ]
    assert all(len(frame.encode()) < FRAME_LIMIT for frame in frames)


def test_the_largest_agent_texts_still_fit_one_snapshot_frame() -> None:
    widest = "\U0001d11e"  # four bytes in UTF-8
    spec = {
        "player": "remote",
        "name": widest * 50,
        "personality": widest * 100,
        "model_name": widest * 200,
        "system_prompt": widest * 4000,
    }
    with TestClient(create_chess_service_app()) as client:
        game_id = create(client, spec, spec)["game_id"]
        with client.websocket_connect(f"/games/{game_id}/events") as ws:
            frame = ws.receive_text()
        assert len(frame.encode()) < FRAME_LIMIT
        assert json.loads(frame)["data"]["game"]["white"]["system_prompt"] == widest * 4000
        too_long = {**spec, "system_prompt": "x" * 4001}
        refused = client.post("/games", json={"white": too_long, "black": spec})
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["loc"] == ["body", "white", "system_prompt"]


def test_a_pgn_too_large_for_a_frame_is_left_to_the_pgn_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(service_frames, "MAX_FRAME_PGN", 10)
    remote = {"player": "remote", "name": "R"}
    with TestClient(create_chess_service_app()) as client:
        game_id = create(client, remote, remote)["game_id"]
        with client.websocket_connect(f"/games/{game_id}/events") as ws:
            assert ws.receive_json()["type"] == "snapshot"
            resign(client, game_id, "black")
            ended = ws.receive_json()
        assert ended["type"] == "game_ended" and ended["data"]["pgn"] is None
        assert ended["data"]["result"] == "white_wins"
        assert f'[GameId "{game_id}"]' in client.get(f"/games/{game_id}/pgn").text
