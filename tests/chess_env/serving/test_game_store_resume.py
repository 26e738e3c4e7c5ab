"""StateManager across restarts: each change is in the database at once, a killed server loses no
move it answered, and the next manager resumes the unfinished games with the service's data."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from chess_env.core.game import AgentConfig, Game
from chess_env.serving.archive_db import DATABASE_FILE, ArchiveDatabase
from chess_env.serving.game_store import StateManager, UnknownGameError
from chess_env.serving.viewer.archive import GameArchive

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from archive_faults import faulty_archive

AGENT = {"personality": "balanced", "model_name": "m", "system_prompt": "Play well."}
WHITE = AgentConfig(agent_id="white", name="White", **AGENT)
BLACK = AgentConfig(agent_id="black", name="Black", **AGENT)
FOOLS_MATE = ("f3", "e5", "g4", "Qh4#")
ROOT = Path(__file__).parents[3]

# Holds games as a server would, prints them as its clients were last answered, then waits to be
# killed: four unfinished games with service data, a finished one and an aborted one.
SERVER = """
import json, sys
from chess_env.core.game import AgentConfig
from chess_env.serving.game_store import StateManager

agent = {"personality": "balanced", "model_name": "m", "system_prompt": "Play well."}
white = AgentConfig(agent_id="white", name="White", **agent)
black = AgentConfig(agent_id="black", name="Black", **agent)
manager = StateManager(archive_dir=sys.argv[1])
answered = []
for index, moves in enumerate(json.loads(sys.argv[2])):
    game = manager.create_game(white, black)
    manager.attach_service_data(game.game_id, {"seat": index})
    for move in moves:
        game = manager.apply_move(game.game_id, move)
    answered.append(game)
manager.mark_aborted(answered[-1].game_id)
print(json.dumps([game.model_dump(mode="json") for game in answered]), flush=True)
sys.stdin.read()
"""


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def test_a_killed_server_loses_no_answered_move(tmp_path: Path) -> None:
    """0 of 4 unfinished games survived a SIGKILL: now each is resumed at its last move."""
    games = [["e4"], ["d4", "d5"], ["c4", "e5", "Nc3"], [], list(FOOLS_MATE), ["a3"]]
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(tmp_path), json.dumps(games)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,  # the same package as this test's
    )
    watchdog = threading.Timer(60, server.kill)  # a server that never answers fails the test
    watchdog.start()
    try:
        assert server.stdout is not None
        answered = [Game.model_validate(game) for game in json.loads(server.stdout.readline())]
    finally:
        server.kill()  # SIGKILL: no close, no archive, no flush
        server.wait()
        watchdog.cancel()
    assert server.returncode == -signal.SIGKILL
    *unfinished, finished, aborted = answered
    with StateManager(archive_dir=tmp_path) as manager:
        assert manager.list_games() == unfinished  # same ids, at the last move answered
        resumed = manager.resumed_games()
        assert [game.game for game in resumed] == unfinished
        assert [game.service_data for game in resumed] == [{"seat": n} for n in range(4)]
        _, second, *_ = unfinished
        assert manager.session_of(second.game_id).is_active
        assert len(manager.apply_move(second.game_id, "Nf3").move_history) == 3  # plays on
        archive = GameArchive(tmp_path)
        assert archive.find(finished.game_id) == finished  # archived as it ended
        assert archive.find(aborted.game_id) == aborted  # archived now, the kill prevented it
        assert [game.game_id for game in archive.latest()] == [aborted.game_id, finished.game_id]


def test_each_change_is_in_the_database_as_soon_as_it_is_answered(tmp_path: Path) -> None:
    manager = StateManager(archive_dir=tmp_path)
    reader = ArchiveDatabase(tmp_path / DATABASE_FILE)  # another connection, as after a crash
    game = manager.create_game(WHITE, BLACK)
    assert reader.load(game.game_id) == (game, None)
    for move in FOOLS_MATE[:3]:
        game = manager.apply_move(game.game_id, move)
        assert reader.load(game.game_id) == (game, None)
    manager.attach_service_data(game.game_id, {"tokens": ["hash"]})
    assert reader.load(game.game_id) == (game, {"tokens": ["hash"]})
    game = manager.resign(game.game_id, "white")
    assert reader.load(game.game_id) == (game, {"tokens": ["hash"]})
    reader.close()
    manager.close()


def test_a_closed_managers_unfinished_games_resume_and_are_archived_again_when_they_end(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    with StateManager(archive_dir=tmp_path, clock=clock) as first:
        playing = first.create_game(WHITE, BLACK).game_id
        first.apply_move(playing, "e4")
        ended = first.create_game(WHITE, BLACK).game_id
        first.resign(ended, "white")
    archive = GameArchive(tmp_path)
    assert [game.game_id for game in archive.latest()] == [playing, ended]  # closing archived it
    second = StateManager(archive_dir=tmp_path, clock=clock)
    assert [game.game_id for game in second.list_games()] == [playing]  # the finished one stays
    assert [game.game_id for game in archive.latest()] == [ended]  # in play again
    assert archive.find(playing) is None
    second.apply_move(playing, "e5")
    last = second.resign(playing, "black")
    assert [game.game_id for game in archive.latest()] == [playing, ended]
    assert archive.find(playing) == last
    second.close()
    exported = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert [(game["game_id"], game["status"]) for game in exported] == [
        (ended, "resigned"),
        (playing, "in_progress"),
        (playing, "resigned"),  # an export keeps each record; the last is the game's
    ]
    with StateManager(archive_dir=tmp_path, clock=clock) as third:
        assert third.list_games() == [] and third.resumed_games() == []


def test_resume_takes_the_most_recent_games_that_fit_and_archives_the_rest(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    first = StateManager(archive_dir=tmp_path, clock=clock)
    created = []
    for _ in range(3):
        clock.now += timedelta(seconds=1)
        created.append(first.create_game(WHITE, BLACK).game_id)
    first.close()
    with StateManager(max_games=2, archive_dir=tmp_path, clock=clock) as second:
        assert [game.game_id for game in second.list_games()] == created[1:]
    archive = GameArchive(tmp_path)
    assert archive.find(created[0]) is not None  # archived at close, and not resumed
    with StateManager(archive_dir=tmp_path, clock=clock, resume=False) as third:
        assert third.list_games() == []
    assert {game.game_id for game in archive.latest()} == set(created)
    with StateManager(archive_dir=tmp_path, clock=clock) as fourth:
        assert fourth.list_games() == []  # resume=False let them go


def test_a_crashed_managers_games_are_archived_when_the_next_does_not_resume(
    tmp_path: Path,
) -> None:
    crashed = StateManager(archive_dir=tmp_path)
    game = crashed.apply_move(crashed.create_game(WHITE, BLACK).game_id, "e4")
    # No close: as after a kill, the game is in the database, live, and not archived.
    with StateManager(archive_dir=tmp_path, resume=False) as manager:
        assert manager.list_games() == []
    assert GameArchive(tmp_path).find(game.game_id) == game
    lines = (tmp_path / "games.jsonl").read_text().splitlines()
    assert [Game.model_validate_json(line) for line in lines] == [game]


def test_service_data_must_be_a_json_object_and_is_kept_as_given(tmp_path: Path) -> None:
    manager = StateManager(archive_dir=tmp_path)
    game_id = manager.create_game(WHITE, BLACK).game_id
    data: dict[str, object] = {"seats": {"white": {"player": "remote"}}}
    manager.attach_service_data(game_id, data)
    data["seats"] = "changed afterwards"  # the manager keeps its own copy
    with pytest.raises(TypeError, match=f"the service data of game {game_id} is not JSON: "):
        manager.attach_service_data(game_id, {"when": datetime.now(timezone.utc)})
    with pytest.raises(TypeError, match="must be a JSON object, got list"):
        manager.attach_service_data(game_id, ["seat"])  # type: ignore[arg-type]
    with pytest.raises(UnknownGameError):
        manager.attach_service_data("nope", {})
    manager.close()
    with StateManager(archive_dir=tmp_path) as resumed:
        (game,) = resumed.resumed_games()
        assert game.service_data == {"seats": {"white": {"player": "remote"}}}


def test_service_data_the_database_missed_is_written_with_the_next_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    faults = faulty_archive(monkeypatch)
    manager = StateManager(archive_dir=tmp_path)
    game_id = manager.create_game(WHITE, BLACK).game_id
    faults.failing = {DATABASE_FILE}
    with caplog.at_level(logging.WARNING, "chess_env.serving.game_store"):
        manager.attach_service_data(game_id, {"seat": 1})
    assert f"could not write game {game_id}" in caplog.text
    faults.failing = set()
    manager.apply_move(game_id, "e4")
    crashed_at = manager.get_game(game_id)  # no close: as after a kill
    with StateManager(archive_dir=tmp_path) as resumed:
        (game,) = resumed.resumed_games()
        assert (game.game, game.service_data) == (crashed_at, {"seat": 1})
