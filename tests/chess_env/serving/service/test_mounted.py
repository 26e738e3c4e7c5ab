"""The chess service mounted in the chess server: one app, the archive flushed at shutdown."""

from __future__ import annotations

import sys
from pathlib import Path

import chess.pgn
from fastapi.testclient import TestClient

from chess_env.serving.app import SERVICE_PATH, create_chess_app
from chess_env.serving.service import ChessService

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from service_seats import create, move


def test_service_routes_sit_next_to_the_openenv_routes(tmp_path: Path) -> None:
    app = create_chess_app(archive_dir=tmp_path)
    with TestClient(app) as client:
        assert client.get("/health").json() == {"status": "healthy"}
        ann, bot = {"player": "remote", "name": "Ann"}, {"player": "random", "name": "Bot"}
        game_id = create(client, ann, bot, prefix=SERVICE_PATH)["game_id"]
        moved = move(client, game_id, "e4", color="white", prefix=SERVICE_PATH)
        assert moved.status_code == 200, moved.text
        assert len(moved.json()["move_history"]) == 2  # the random player replied
        session = client.post("/reset", json={"seed": 1}).json()["session_id"]
        assert client.post(
            "/step", json={"action": {"move": "e2e4"}}, headers={"X-Session-Id": session}
        ).is_success
    # Shutdown closed the service: the unfinished game was archived, as JSONL and PGN.
    lines = (tmp_path / "games.jsonl").read_text().splitlines()
    assert len(lines) == 1 and game_id in lines[0]
    with (tmp_path / "games.pgn").open() as pgn:
        archived = chess.pgn.read_game(pgn)
    assert archived is not None and len(list(archived.mainline_moves())) == 2


def test_the_mounted_service_sweeps_idle_games_until_shutdown(tmp_path: Path) -> None:
    app = create_chess_app(archive_dir=tmp_path)
    (mount,) = [route for route in app.routes if getattr(route, "path", None) == SERVICE_PATH]
    service: ChessService = mount.app.state.chess_service  # type: ignore[attr-defined]
    with TestClient(app) as client:
        remote = {"player": "remote", "name": "R"}
        create(client, remote, remote, prefix=SERVICE_PATH)
        sweeper = service._sweeper  # started by the first game: a mounted lifespan never runs
        assert sweeper is not None and not sweeper.done()
    assert sweeper.cancelled()  # the parent's shutdown closed the service


def test_without_service_the_games_routes_are_absent() -> None:
    with TestClient(create_chess_app()) as client:
        assert client.get("/service/games").status_code in (401, 404)
