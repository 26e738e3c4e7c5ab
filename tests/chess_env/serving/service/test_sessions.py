"""Each game's GameSession in the service (spectator counts, activity, the end), and the periodic
sweep for idle games, driven by a fake clock."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from chess_env.core.game import Game
from chess_env.core.opponents import RandomOpponent
from chess_env.serving.game_store import StateManager
from chess_env.serving.service import ChessService, create_chess_service_app
from chess_env.serving.service.frames import HISTORY_PAGE

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from archive_faults import faulty_archive
from registered_player import registered
from service_seats import create as create_game
from service_seats import move, resign

REMOTE = {"player": "remote", "name": "Client"}
RANDOM = {"player": "recorded", "name": "Randy", "seed": 7}  # a random player, see recorded()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Recorded(RandomOpponent):
    """A random agent that remembers being closed."""

    closed: list[Recorded] = []

    def close(self) -> None:
        Recorded.closed.append(self)


@pytest.fixture(autouse=True)
def recorded() -> Iterator[None]:
    Recorded.closed = []
    with registered("recorded", lambda spec: Recorded()):
        yield


def create(client: TestClient, white: dict[str, Any], black: dict[str, Any]) -> str:
    return str(create_game(client, white, black)["game_id"])


def session(client: TestClient, game_id: str) -> Any:
    response = client.get(f"/games/{game_id}/session")
    assert response.status_code == 200, response.text
    return response.json()


def eventually(condition: Callable[[], bool], what: str, seconds: float = 10) -> None:
    """Wait for what the server does after a client hung up (it learns of it asynchronously)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def watch(ws: WebSocketTestSession) -> None:
    """Read the snapshot (and history) frames: the server counts a spectator before sending."""
    snapshot = ws.receive_json()
    assert snapshot["type"] == "snapshot"
    for _ in range(0, snapshot["data"]["ply"], HISTORY_PAGE):
        assert ws.receive_json()["type"] == "history"


# -- sessions ------------------------------------------------------------------------------------


def test_a_game_has_its_session_from_creation() -> None:
    with TestClient(create_chess_service_app()) as client:
        game = create_game(client, REMOTE, REMOTE)
        recorded = session(client, game["game_id"])
    assert uuid.UUID(recorded["session_id"]).version == 4
    assert recorded["game_id"] == game["game_id"]
    assert recorded["created_at"] == recorded["last_activity"] == game["started_at"]
    assert (recorded["spectators"], recorded["is_active"]) == (0, True)


def test_spectators_are_counted_as_they_come_and_go() -> None:
    with TestClient(create_chess_service_app(listing="all")) as client:
        game_id = create(client, REMOTE, REMOTE)
        other = create(client, REMOTE, REMOTE)
        with (
            client.websocket_connect(f"/games/{game_id}/events") as first,
            client.websocket_connect(f"/games/{game_id}/events") as second,
        ):
            watch(first)
            watch(second)
            assert session(client, game_id)["spectators"] == 2
            listed = {g["game_id"]: g["spectators"] for g in client.get("/games").json()}
            assert listed == {game_id: 2, other: 0}
            first.close()
            eventually(lambda: session(client, game_id)["spectators"] == 1, "one spectator left")
        eventually(lambda: session(client, game_id)["spectators"] == 0, "both left")
        assert session(client, other)["spectators"] == 0


def test_moves_are_activity_and_the_end_makes_the_session_inactive() -> None:
    clock = FakeClock()
    app = create_chess_service_app(StateManager(clock=clock))
    with TestClient(app) as client:
        game_id = create(client, REMOTE, RANDOM)
        created = session(client, game_id)
        with client.websocket_connect(f"/games/{game_id}/events") as ws:
            watch(ws)
            clock.advance(5)
            game = move(client, game_id, "e4", color="white").json()
            moved = session(client, game_id)
            assert moved["last_activity"] == game["last_updated"] != created["last_activity"]
            assert moved["is_active"] and moved["spectators"] == 1
            resign(client, game_id, "white")
            ended = session(client, game_id)
            assert (ended["is_active"], ended["session_id"]) == (False, created["session_id"])
            frames = [ws.receive_json() for _ in range(3)]
            assert [f["type"] for f in frames] == ["move_made", "move_made", "game_ended"]
            with pytest.raises(WebSocketDisconnect):
                ws.receive_json()  # the server closes the stream after game_ended
        eventually(lambda: session(client, game_id)["spectators"] == 0, "the spectator left")
        assert session(client, game_id)["is_active"] is False


def test_the_session_leaves_memory_with_its_game() -> None:
    with TestClient(create_chess_service_app(max_games=1)) as client:
        first = create(client, REMOTE, REMOTE)
        resign(client, first, "white")  # finished: the next game takes its place
        create(client, REMOTE, REMOTE)
        response = client.get(f"/games/{first}/session")
        assert response.status_code == 404 and response.json()["reason"] == "unknown_game"


# -- the periodic sweep --------------------------------------------------------------------------


def archived_ids(directory: Path) -> list[str]:
    lines = (directory / "games.jsonl").read_text().splitlines()
    return [json.loads(line)["game_id"] for line in lines]


def test_idle_games_are_swept_without_any_request(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = StateManager(idle_timeout=60, archive_dir=tmp_path, clock=clock)
    app = create_chess_service_app(manager, cleanup_interval=0.01)
    service: ChessService = app.state.chess_service
    with TestClient(app) as client:
        idle = create(client, REMOTE, RANDOM)
        busy = create(client, REMOTE, REMOTE)
        with client.websocket_connect(f"/games/{idle}/events") as ws:
            watch(ws)
            clock.advance(30)
            move(client, busy, "e4", color="white")
            clock.advance(31)  # idle: 61 s without a move; busy: 31 s
            # No request from here on: only the periodic sweep can end this stream.
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_json()
            assert closed.value.code == 1001
        assert client.get(f"/games/{idle}").status_code == 404
        assert client.get(f"/games/{busy}").status_code == 200
        assert archived_ids(tmp_path) == [idle]
        assert len(Recorded.closed) == 1  # the swept game's random agent
        assert idle not in service._seats and idle not in service._spectators
        sweeper = service._sweeper
        assert sweeper is not None and not sweeper.done()
    assert sweeper.cancelled()  # stopped at shutdown
    assert archived_ids(tmp_path) == [idle, busy]


def test_sweep_drops_exactly_the_idle_games(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = StateManager(idle_timeout=60, clock=clock)
    app = create_chess_service_app(manager, cleanup_interval=3600, listing="all")  # direct sweeps
    service: ChessService = app.state.chess_service
    with TestClient(app) as client:
        first = create(client, REMOTE, RANDOM)
        clock.advance(60)
        second = create(client, REMOTE, REMOTE)
        assert client.portal.call(service.sweep) == []  # first has waited 60 s: not longer
        clock.advance(1)
        assert client.portal.call(service.sweep) == [first]
        assert [g["game_id"] for g in client.get("/games").json()] == [second]
        assert len(Recorded.closed) == 1
        clock.advance(60)
        assert client.portal.call(service.sweep) == [second]


def test_cleanup_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="cleanup_interval must be positive, got 0"):
        create_chess_service_app(cleanup_interval=0)


def test_a_failing_sweep_is_logged_and_the_next_one_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    manager = StateManager(idle_timeout=60, archive_dir=tmp_path, clock=clock)
    app = create_chess_service_app(manager, cleanup_interval=0.01)
    faults = faulty_archive(monkeypatch)
    with TestClient(app) as client:
        game_id = create(client, REMOTE, REMOTE)
        move(client, game_id, "e4", color="white")
        faults.failing = {"games.sqlite3"}  # archiving fails: the game cannot leave memory
        clock.advance(61)
        eventually(lambda: "cleaning up idle games failed" in caplog.text, "a logged failure")
        assert client.get(f"/games/{game_id}").status_code == 200
        faults.failing = set()
        eventually(lambda: client.get(f"/games/{game_id}").status_code == 404, "a later sweep")
    archived = Game.model_validate_json((tmp_path / "games.jsonl").read_text())
    assert archived.game_id == game_id and len(archived.move_history) == 1
