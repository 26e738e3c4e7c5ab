"""Stopping a live server (what `python -m chess_env serve --service --archive DIR` runs) while a
move is in flight: the move gets its full reply, then every game in memory reaches the archive."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from chess_env.core.game import Game, validate_game_state
from chess_env.core.opponents import RandomOpponent
from chess_env.serving.app import create_chess_app

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from live_server import live_server
from registered_player import registered
from service_seats import create, move

REMOTE = {"player": "remote", "name": "Client"}
SLOW = {"player": "slow", "name": "Slow", "seed": 3}  # registered by the test


def test_shutdown_finishes_the_move_in_flight_then_flushes_the_archive(tmp_path: Path) -> None:
    thinking, release = threading.Event(), threading.Event()

    class Slow(RandomOpponent):
        """Thinks until the test says so: the server is stopped meanwhile."""

        def choose_move(self, board: chess.Board, legal_moves: Any) -> chess.Move:
            thinking.set()
            assert release.wait(30), "the test never released the agent"
            return super().choose_move(board, legal_moves)

    replies: list[httpx.Response] = []
    app = create_chess_app(service=True, archive_dir=tmp_path)
    with registered("slow", lambda spec: Slow()), live_server(app) as (server, address):
        base = f"http://{address}/service"
        waiting = create(httpx, REMOTE, REMOTE, prefix=base)
        move(httpx, waiting["game_id"], "d4", color="white", prefix=base)
        slow = create(httpx, REMOTE, SLOW, prefix=base)
        mover = threading.Thread(
            target=lambda: replies.append(
                move(httpx, slow["game_id"], "e4", color="white", prefix=base, timeout=30)
            )
        )
        with connect(f"ws://{address}/service/games/{slow['game_id']}/events") as spectator:
            assert spectator.recv(timeout=10)  # the snapshot
            mover.start()
            assert thinking.wait(10), "the agent never started thinking"
            server.should_exit = True
            deadline = time.monotonic() + 10
            while any(listening.is_serving() for listening in server.servers):
                assert time.monotonic() < deadline, "the server never began to shut down"
                time.sleep(0.01)
            with pytest.raises(httpx.ConnectError):  # shutting down: no new requests
                httpx.get(f"{base}/games/{waiting['game_id']}")
            release.set()
            mover.join(30)
            with pytest.raises(ConnectionClosed) as closed:  # let go, not left hanging
                while True:
                    spectator.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012
    assert len(replies) == 1 and replies[0].status_code == 200, replies
    reply = Game.model_validate(replies[0].json())
    assert reply.move_history[0].uci_notation == "e2e4"
    assert len(reply.move_history) == 2 and reply.current_turn == "white"

    lines = (tmp_path / "games.jsonl").read_text().splitlines()
    archived = {game.game_id: game for game in map(Game.model_validate_json, lines)}
    assert len(lines) == 2 and set(archived) == {waiting["game_id"], reply.game_id}
    assert archived[reply.game_id] == reply  # the reply's state, move and all, nothing lost
    assert len(archived[waiting["game_id"]].move_history) == 1
    pgn_text = io.StringIO((tmp_path / "games.pgn").read_text())
    pgns = []
    while (pgn := chess.pgn.read_game(pgn_text)) is not None:
        pgns.append(pgn)
    for game in archived.values():
        assert game.status == "in_progress" and validate_game_state(game) == []
        (pgn,) = [p for p in pgns if p.headers["GameId"] == game.game_id]
        assert [m.uci() for m in pgn.mainline_moves()] == [
            m.uci_notation for m in game.move_history
        ]
