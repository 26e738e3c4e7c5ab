"""Archive faults through a live chess service: an unusable directory is refused at start, a full
disk answers 503 and loses nothing, and a shutdown during a fault names what it lost.

Tests run as root here, where permissions stop nothing, so run-time faults are simulated
(``archive_faults``) and the unusable directory at start is one under a file.
"""

from __future__ import annotations

import io
import logging
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import chess.pgn
import httpx
import pytest
from starlette.routing import Mount

from chess_env.__main__ import main
from chess_env.core.game import Game
from chess_env.serving.app import SERVICE_PATH, create_chess_app
from chess_env.serving.game_store import ARCHIVE_FILES, StateManager
from chess_env.serving.service import create_chess_service_app
from chess_env.serving.service.app import ARCHIVE_RETRY_AFTER

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from archive_faults import DISK_FULL, Faults, faulty_archive
from live_server import live_server

# White (a server player) to move, and every move ends the game: the fifty-move rule.
ONE_MOVE_LEFT = "7k/8/8/8/8/8/8/K5R1 w - - 99 100"


def one_move_game(seed: int) -> dict[str, object]:
    """A game the server's players finish in one move, with no seat a client plays."""
    white = {"player": "random", "name": "W", "seed": seed}
    return {"white": white, "black": {"player": "random", "name": "B"}, "fen": ONE_MOVE_LEFT}


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Faults:
    return faulty_archive(monkeypatch)


def jsonl_ids(directory: Path) -> list[str]:
    path = directory / "games.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [Game.model_validate_json(line).game_id for line in lines]


def pgn_ids(directory: Path) -> list[str]:
    stream, found = io.StringIO((directory / "games.pgn").read_text()), []
    while (pgn := chess.pgn.read_game(stream)) is not None:
        assert not pgn.errors, pgn.errors
        found.append(pgn.headers["GameId"])
    return found


def wait_until_finished(manager: StateManager) -> None:
    deadline = time.monotonic() + 10
    while manager.list_games("in_progress"):
        assert time.monotonic() < deadline, "a server player never moved"
        time.sleep(0.005)


def in_memory(manager: StateManager) -> set[str]:
    return {game.game_id for game in manager.list_games()}


def check_refusal(reply: httpx.Response, archive: Path) -> None:
    """503 JSON naming the archive (not its path), with Retry-After."""
    body = reply.json()
    assert body == {**body, "code": "CAPACITY_REACHED", "reason": "archive_unavailable"}
    assert sorted(body) == ["code", "detail", "reason"]
    assert any(reason in body["detail"] for reason in ("No space left on device", DISK_FULL))
    assert str(archive) not in reply.text
    assert reply.headers["Retry-After"] == str(ARCHIVE_RETRY_AFTER)


def test_an_unwritable_archive_is_refused_at_start_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    directory = tmp_path / "file" / "archive"
    assert main(["serve", "--archive", str(directory), "--port", "0"]) == 2
    error = capsys.readouterr().err
    assert error == (
        f"python -m chess_env serve: error: archive directory {directory} cannot be written: "
        "Not a directory\n"
    )


def test_200_games_through_a_full_disk_are_archived_once_each(
    tmp_path: Path, faults: Faults
) -> None:
    """The disk fails for the PGN only (records half written), then for both exports, then for
    the database too, then recovers. Meanwhile a new game that needs room is refused, and no
    game leaves memory unarchived."""
    manager = StateManager(max_games=5, archive_dir=tmp_path)
    seen: set[str] = set()  # every game that was in memory

    def create(client: httpx.Client) -> bool:
        """One more game (True), or a refusal, checked (False)."""
        before = in_memory(manager)
        reply = client.post("/games", json=one_move_game(len(seen)))
        if reply.status_code == 503:
            check_refusal(reply, tmp_path)
            assert in_memory(manager) == before
        else:
            assert reply.status_code == 201, reply.text
            wait_until_finished(manager)
            seen.update(in_memory(manager))
        assert seen <= set(jsonl_ids(tmp_path)) | in_memory(manager)  # none lost
        return reply.status_code == 201

    served = live_server(create_chess_service_app(manager))
    with served as (_, address), httpx.Client(base_url=f"http://{address}") as client:
        while len(seen) < 50:
            assert create(client)
        for failing in ({"games.pgn"}, {"games.jsonl", "games.pgn"}, set(ARCHIVE_FILES)):
            faults.failing = failing
            for _ in range(10):
                while create(client):
                    assert len(seen) < 60, "the full disk never refused a game"
        faults.failing = set()
        while len(seen) < 200:
            assert create(client)
    archived = jsonl_ids(tmp_path)
    assert len(seen) == 200 and set(archived) == seen
    assert Counter(archived).most_common(1)[0][1] == 1  # none twice
    assert sorted(pgn_ids(tmp_path)) == sorted(seen)


def served(mounted: bool, archive: Path) -> tuple[Any, StateManager, str]:
    """The service app (on its own, or mounted by the chess server), its store and its path."""
    if not mounted:
        manager = StateManager(max_games=5, archive_dir=archive)
        return create_chess_service_app(manager), manager, ""
    app = create_chess_app(service=True, archive_dir=archive, max_games=5)
    (service,) = [
        route.app
        for route in app.routes
        if isinstance(route, Mount) and route.path == SERVICE_PATH  # the viewer is mounted too
    ]
    return app, service.state.chess_service.games, SERVICE_PATH


@pytest.mark.parametrize("mounted", [False, True], ids=["service app", "mounted"])
def test_shutdown_during_a_fault_names_the_games_it_lost_and_completes(
    tmp_path: Path,
    faults: Faults,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    mounted: bool,
) -> None:
    app, manager, prefix = served(mounted, tmp_path)
    with caplog.at_level(logging.INFO):
        with live_server(app) as (server, address):
            url = f"http://{address}{prefix}/games"
            assert httpx.post(url, json=one_move_game(0)).status_code == 201
            wait_until_finished(manager)
            faults.failing = {"games.pgn"}  # the next game's line is written, its PGN is lost
            assert httpx.post(url, json=one_move_game(1)).status_code == 201
            wait_until_finished(manager)
            faults.failing = {"games.jsonl", "games.pgn"}
            assert httpx.post(url, json=one_move_game(2)).status_code == 201
            wait_until_finished(manager)
            written, *lost = [game.game_id for game in manager.list_games()]
        assert not server.lifespan.shutdown_failed and not server.lifespan.error_occurred
    uvicorn_log = capsys.readouterr().err  # uvicorn's own logger does not propagate
    assert "Application shutdown complete" in uvicorn_log
    assert "Application shutdown failed" not in uvicorn_log
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.name == "chess_env.serving.service"
    assert record.getMessage() == (
        f"could not archive these games in {tmp_path} at close (No space left on device): "
        f"{lost[0]}, {lost[1]}"
    )
    assert jsonl_ids(tmp_path) == [written, lost[0]] and pgn_ids(tmp_path) == [written]
