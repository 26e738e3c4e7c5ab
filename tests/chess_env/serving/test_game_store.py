"""StateManager: capacity and eviction order, idle cleanup, sessions, the archive, threads."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import random
import sqlite3
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import chess.pgn
import pytest
from pydantic import ValidationError

from chess_env.core.game import AgentConfig, Game, validate_game_state
from chess_env.errors import GameOverError, IllegalActionError
from chess_env.serving import game_store
from chess_env.serving.game_store import (
    MAX_RETRY_AFTER,
    ArchiveError,
    GamesFullError,
    SessionNotFoundError,
    StateManager,
    UnknownGameError,
    UnwritableArchiveError,
)
from chess_env.serving.viewer.archive import GameArchive

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from archive_faults import DISK_FULL, Faults, faulty_archive

AGENT = {"personality": "balanced", "model_name": "m", "system_prompt": "Play well."}
WHITE = AgentConfig(agent_id="white", name="White", **AGENT)
BLACK = AgentConfig(agent_id="black", name="Black", **AGENT)


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def create(manager: StateManager, clock: FakeClock) -> str:
    """A new game's id, one second after the previous change."""
    clock.advance(1)
    return manager.create_game(WHITE, BLACK).game_id


def ids(manager: StateManager) -> list[str]:
    return [game.game_id for game in manager.list_games()]


def archived(directory: Path) -> tuple[list[Game], list[chess.pgn.Game]]:
    """The games in ``games.jsonl`` and in ``games.pgn``, in order."""
    lines = (directory / "games.jsonl").read_text().splitlines()
    games = [Game.model_validate_json(line) for line in lines]
    stream, pgns = io.StringIO((directory / "games.pgn").read_text()), []
    while (pgn := chess.pgn.read_game(stream)) is not None:
        pgns.append(pgn)
    return games, pgns


# -- capacity ------------------------------------------------------------------------------------


def test_a_flood_of_new_games_never_evicts_a_live_game(clock: FakeClock, tmp_path: Path) -> None:
    """One client creates games as fast as it can while another plays: when every place holds
    a live game the newcomer is refused, and the player's game stays, unarchived."""
    manager = StateManager(max_games=3, idle_timeout=60, archive_dir=tmp_path, clock=clock)
    victim = create(manager, clock)
    manager.apply_move(victim, "e4")
    flood = [create(manager, clock), create(manager, clock)]
    with pytest.raises(GamesFullError) as refused:
        create(manager, clock)
    assert ids(manager) == [victim, *flood]
    assert manager.apply_move(victim, "e5").move_history[-1].uci_notation == "e7e5"
    assert not (tmp_path / "games.jsonl").exists()  # nothing left memory unfinished
    # The victim, updated at 10:00:01, goes idle after 10:01:01; the refusal came at 10:00:04.
    assert refused.value.retry_after == 58
    assert str(refused.value) == (
        "all 3 games in memory are live (unfinished, not aborted, not idle): none leaves to "
        "make room for a new game; try again in 58 s"
    )


def test_finished_and_aborted_games_make_room_least_recently_updated_first(
    clock: FakeClock, tmp_path: Path
) -> None:
    manager = StateManager(max_games=3, archive_dir=tmp_path, clock=clock)
    first, second, third = (create(manager, clock) for _ in range(3))
    clock.advance(1)
    manager.resign(third, "white")  # archived as it ends
    clock.advance(1)
    manager.mark_aborted(first)  # nobody moves in it again: it may leave, archived unfinished
    clock.advance(1)
    manager.resign(second, "black")
    fourth = create(manager, clock)  # first, the least recently updated that may leave
    assert ids(manager) == [second, third, fourth]
    fifth = create(manager, clock)
    assert ids(manager) == [second, fourth, fifth]  # third, updated before second
    sixth = create(manager, clock)
    assert ids(manager) == [fourth, fifth, sixth]
    with pytest.raises(GamesFullError):
        create(manager, clock)  # three live games
    games, pgns = archived(tmp_path)
    assert [game.game_id for game in games] == [third, second, first]  # as each was archived
    assert [pgn.headers["GameId"] for pgn in pgns] == [third, second, first]
    assert [game.status for game in games] == ["resigned", "resigned", "in_progress"]


def test_max_games_is_configurable(clock: FakeClock) -> None:
    manager = StateManager(max_games=1, clock=clock)
    first = create(manager, clock)
    with pytest.raises(GamesFullError):
        create(manager, clock)
    manager.resign(first, "white")
    second = create(manager, clock)
    assert ids(manager) == [second]
    with pytest.raises(UnknownGameError):
        manager.get_game(first)
    manager = StateManager(clock=clock)
    for _ in range(100):
        create(manager, clock)
    with pytest.raises(GamesFullError):
        create(manager, clock)
    oldest = manager.list_games()[0].game_id
    manager.resign(oldest, "black")
    create(manager, clock)
    assert len(manager.list_games()) == 100 and oldest not in ids(manager)
    with pytest.raises(ValueError, match="max_games must be at least 1, got 0"):
        StateManager(max_games=0)


def test_retry_after_counts_down_to_the_oldest_live_game_going_idle(clock: FakeClock) -> None:
    manager = StateManager(max_games=2, idle_timeout=timedelta(minutes=10), clock=clock)
    oldest, newest = create(manager, clock), create(manager, clock)  # at 1 s and 2 s

    def retry_after(at: float) -> int:
        """The refusal's retry_after ``at`` seconds after oldest was created."""
        clock.now = manager.get_game(oldest).started_at + timedelta(seconds=at)
        with pytest.raises(GamesFullError) as refused:
            manager.create_game(WHITE, BLACK)
        return refused.value.retry_after

    assert retry_after(1) == MAX_RETRY_AFTER  # 599 s away: a game may end sooner
    assert retry_after(569.5) == 31  # whole seconds, past the moment it goes idle
    assert retry_after(600) == 1  # idle exactly as long as the timeout: not longer
    clock.advance(0.5)
    third = manager.create_game(WHITE, BLACK).game_id  # oldest is idle: cleaned up
    assert ids(manager) == [newest, third]


def test_a_bad_fen_evicts_nothing(clock: FakeClock) -> None:
    manager = StateManager(max_games=1, clock=clock)
    game_id = create(manager, clock)
    with pytest.raises(ValueError, match="black has no king"):
        manager.create_game(WHITE, BLACK, "8/8/8/8/8/8/8/K7 w - - 0 1")
    assert ids(manager) == [game_id]


# -- idle cleanup --------------------------------------------------------------------------------


def test_idle_games_and_sessions_are_cleaned_up(clock: FakeClock, tmp_path: Path) -> None:
    manager = StateManager(idle_timeout=60, archive_dir=tmp_path, clock=clock)
    idle, busy = create(manager, clock), create(manager, clock)
    idle_session, busy_session = manager.create_session(idle), manager.create_session(busy)
    clock.advance(59)
    manager.apply_move(busy, "d4")
    assert manager.cleanup_idle() == []  # idle has waited exactly 60 s: not longer
    clock.advance(1)
    assert manager.cleanup_idle() == [idle]
    assert ids(manager) == [busy]
    with pytest.raises(SessionNotFoundError):
        manager.get_session(idle_session.session_id)  # gone with its game
    assert manager.get_session(busy_session.session_id)  # active 60 s ago: not longer
    clock.advance(1)
    assert manager.cleanup_idle() == []
    with pytest.raises(SessionNotFoundError):
        manager.get_session(busy_session.session_id)  # idle itself, though its game is not
    games, _ = archived(tmp_path)
    assert [game.game_id for game in games] == [idle]


def test_create_game_cleans_up_idle_games_before_evicting(clock: FakeClock) -> None:
    manager = StateManager(max_games=2, idle_timeout=timedelta(minutes=5), clock=clock)
    idle = create(manager, clock)
    clock.advance(600)
    finished = create(manager, clock)
    manager.resign(finished, "white")
    newest = create(manager, clock)
    assert ids(manager) == [finished, newest]  # not the finished game: the idle one
    assert idle not in ids(manager)
    with pytest.raises(ValueError, match="idle_timeout must be positive"):
        StateManager(idle_timeout=0)


# -- games and sessions --------------------------------------------------------------------------


def test_moves_and_endings(clock: FakeClock) -> None:
    manager = StateManager(clock=clock)
    game_id = create(manager, clock)
    for move in ("f3", "e5", "g4"):
        clock.advance(2)
        manager.apply_move(game_id, move, thinking_time=1.5)
    before = manager.get_game(game_id)
    with pytest.raises(IllegalActionError, match="the queen on d8 cannot move to d5"):
        manager.apply_move(game_id, "Qd5")
    assert manager.get_game(game_id) is before  # an illegal move changes nothing
    clock.advance(2)
    game = manager.apply_move(game_id, "Qh4#")
    assert (game.status, game.result, game.ended_at) == ("checkmate", "black_wins", clock.now)
    assert [m.timestamp for m in game.move_history][-1] == clock.now
    assert manager.list_games("checkmate") == [game] and manager.list_games("in_progress") == []
    with pytest.raises(GameOverError):
        manager.apply_move(game_id, "a3")
    other = create(manager, clock)
    assert manager.timeout(other, "white").result == "black_wins"


def test_missing_ids_are_named(clock: FakeClock) -> None:
    manager = StateManager(clock=clock)
    with pytest.raises(UnknownGameError, match="no game 'nope' in memory") as caught:
        manager.get_game("nope")
    assert isinstance(caught.value, KeyError) and caught.value.game_id == "nope"
    for call in (lambda: manager.apply_move("nope", "e4"), lambda: manager.create_session("x")):
        with pytest.raises(UnknownGameError):
            call()
    with pytest.raises(SessionNotFoundError, match="no session 's1'"):
        manager.touch("s1")


def test_sessions(clock: FakeClock) -> None:
    manager = StateManager(clock=clock)
    game_id = create(manager, clock)
    session = manager.create_session(game_id)
    assert (session.game_id, session.created_at, session.spectators) == (game_id, clock.now, 0)
    clock.advance(5)
    touched = manager.touch(session.session_id, spectators=3)
    assert (touched.last_activity, touched.spectators) == (clock.now, 3)
    assert manager.touch(session.session_id).spectators == 3
    assert manager.get_session(session.session_id) == manager.touch(session.session_id)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        manager.touch(session.session_id, spectators=-1)


def test_each_game_has_its_own_session_from_creation_to_eviction(clock: FakeClock) -> None:
    manager = StateManager(max_games=1, idle_timeout=60, clock=clock)
    game_id = create(manager, clock)
    own = manager.session_of(game_id)
    assert (own.game_id, own.created_at, own.spectators, own.is_active) == (
        game_id, clock.now, 0, True,
    )  # fmt: skip
    assert manager.get_session(own.session_id) == own
    extra = manager.create_session(game_id)
    clock.advance(50)
    game = manager.apply_move(game_id, "e4")  # activity on the game is activity on its session
    assert manager.session_of(game_id).last_activity == game.last_updated == clock.now
    assert manager.get_session(extra.session_id).last_activity == extra.created_at
    clock.advance(20)
    assert manager.cleanup_idle() == []  # the game moved 20 s ago; the extra session idled 70 s
    assert manager.session_of(game_id).session_id == own.session_id
    with pytest.raises(SessionNotFoundError):
        manager.get_session(extra.session_id)
    manager.touch(own.session_id, spectators=2)
    clock.advance(1)
    ended = manager.resign(game_id, "black", "agent_error")
    assert (ended.status, ended.termination) == ("resigned", "agent_error")
    session = manager.session_of(game_id)
    assert (session.is_active, session.spectators, session.last_activity) == (False, 2, clock.now)
    assert not manager.touch(own.session_id, spectators=0).is_active  # stays inactive
    create(manager, clock)  # evicts the game, and its session with it
    with pytest.raises(UnknownGameError):
        manager.session_of(game_id)
    with pytest.raises(SessionNotFoundError):
        manager.get_session(own.session_id)


def test_every_session_of_a_game_turns_inactive_when_it_ends(clock: FakeClock) -> None:
    manager = StateManager(clock=clock)
    game_id, other = create(manager, clock), create(manager, clock)
    watching = manager.create_session(game_id)
    for move in ("f3", "e5", "g4", "Qh4#"):
        manager.apply_move(game_id, move)
    assert not manager.get_session(watching.session_id).is_active
    assert not manager.session_of(game_id).is_active
    assert manager.session_of(other).is_active


def test_a_naive_clock_is_refused() -> None:
    manager = StateManager(clock=lambda: datetime(2025, 10, 25))
    with pytest.raises(ValueError, match="timezone-aware"):
        manager.create_game(WHITE, BLACK)


# -- the archive ---------------------------------------------------------------------------------


def test_the_archive_holds_exactly_the_finished_and_evicted_games(
    clock: FakeClock, tmp_path: Path
) -> None:
    directory = tmp_path / "archive"
    with StateManager(max_games=2, archive_dir=directory, clock=clock) as manager:
        mate, playing = create(manager, clock), create(manager, clock)
        for move in ("f3", "e5", "g4", "Qh4#"):
            manager.apply_move(mate, move)
        manager.apply_move(playing, "e4")
        assert [game.game_id for game in archived(directory)[0]] == [mate]  # at once
        evicted_later = create(manager, clock)  # evicts mate: already archived, not again
        assert [game.game_id for game in archived(directory)[0]] == [mate]
        manager.mark_aborted(playing)
        untouched = create(manager, clock)  # evicts playing, aborted unfinished
    with pytest.raises(RuntimeError, match="closed"):
        manager.get_game(untouched)
    games, pgns = archived(directory)
    # close() archives what is left, in memory order
    assert [game.game_id for game in games] == [mate, playing, evicted_later, untouched]
    assert len(pgns) == len(games)
    for game, pgn in zip(games, pgns, strict=True):
        assert validate_game_state(game) == []
        assert pgn.headers["GameId"] == game.game_id
        assert pgn.end().board().fen() == game.board_state.fen
    assert games[0].status == "checkmate" and pgns[0].headers["Result"] == "0-1"
    assert len(games[1].move_history) == 1 and pgns[1].headers["Result"] == "*"
    lines = (directory / "games.jsonl").read_text().splitlines()
    assert all(json.loads(line)["game_id"] for line in lines)


def test_no_archive_dir_writes_nothing(clock: FakeClock, tmp_path: Path) -> None:
    manager = StateManager(max_games=1, clock=clock)
    game_id = create(manager, clock)
    manager.resign(game_id, "white")
    create(manager, clock)
    manager.close()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_archive_is_logged_and_retried_and_the_game_cannot_leave_meanwhile(
    clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = StateManager(max_games=1, archive_dir=tmp_path, clock=clock)
    game_id = create(manager, clock)
    (tmp_path / "games.jsonl").mkdir()  # appending to it fails
    with caplog.at_level(logging.WARNING, "chess_env.serving.game_store"):
        game = manager.resign(game_id, "white")
    assert f"could not archive finished game {game_id} (Is a directory)" in caplog.text
    assert manager.get_game(game_id) == game  # the game itself is kept
    assert manager.unarchived == (game_id,)
    with pytest.raises(ArchiveError, match="Is a directory") as refused:
        create(manager, clock)  # it cannot leave memory unarchived
    assert refused.value.game_ids == (game_id,) and isinstance(refused.value, OSError)
    assert ids(manager) == [game_id]
    (tmp_path / "games.jsonl").rmdir()
    create(manager, clock)
    assert [g.game_id for g in archived(tmp_path)[0]] == [game_id]
    assert manager.unarchived == ()


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Faults:
    return faulty_archive(monkeypatch)


UNUSABLE = {
    "file/sub": "Not a directory",
    "file": "File exists",
    "jsonl_a_dir": "Is a directory",
    "database_a_dir": "unable to open database file",
    "not_a_database": "file is not a database",
    "newer_database": (
        "games.sqlite3 is at schema version 2; this version of polyarena reads version 1"
    ),
}


@pytest.mark.parametrize("unusable", list(UNUSABLE))
def test_an_archive_dir_that_cannot_be_written_is_refused_at_once(
    tmp_path: Path, unusable: str
) -> None:
    """Root may write anywhere, so these directories are unusable whoever asks."""
    (tmp_path / "file").write_text("")
    (tmp_path / "jsonl_a_dir" / "games.jsonl").mkdir(parents=True)
    (tmp_path / "database_a_dir" / "games.sqlite3").mkdir(parents=True)
    (tmp_path / "not_a_database").mkdir()
    (tmp_path / "not_a_database" / "games.sqlite3").write_text("{}\n" * 100)
    (tmp_path / "newer_database").mkdir()
    with sqlite3.connect(tmp_path / "newer_database" / "games.sqlite3") as newer:
        newer.execute("PRAGMA user_version = 2")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    directory = tmp_path / unusable
    with pytest.raises(UnwritableArchiveError) as refused:
        StateManager(archive_dir=directory)
    message = str(refused.value)
    assert message == f"archive directory {directory} cannot be written: {UNUSABLE[unusable]}"
    assert refused.value.reason == UNUSABLE[unusable]
    assert isinstance(refused.value, ValueError) and isinstance(refused.value, ArchiveError)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_the_start_check_leaves_no_probe_behind(tmp_path: Path) -> None:
    StateManager(archive_dir=tmp_path / "new" / "archive").close()
    assert [p.name for p in (tmp_path / "new" / "archive").iterdir()] == ["games.sqlite3"]


def test_a_half_written_record_is_finished_and_never_written_twice(
    clock: FakeClock, tmp_path: Path, faults: Faults
) -> None:
    manager = StateManager(max_games=2, archive_dir=tmp_path, clock=clock)
    finished, playing = create(manager, clock), create(manager, clock)
    manager.apply_move(playing, "e4")
    faults.failing = {"games.pgn"}
    manager.resign(finished, "black")  # its JSON line is written, its PGN waits
    assert len((tmp_path / "games.jsonl").read_text().splitlines()) == 1
    with pytest.raises(ArchiveError, match="No space left on device"):
        create(manager, clock)  # the finished game's PGN waits: it stays, with its record
    assert ids(manager) == [finished, playing] and manager.unarchived == (finished,)
    faults.failing = set()
    third = create(manager, clock)  # the PGN follows; the finished game leaves
    assert ids(manager) == [playing, third] and manager.unarchived == ()
    faults.failing = {"games.pgn"}
    manager.mark_aborted(playing)
    fourth = create(manager, clock)  # playing leaves: its row and line written, its PGN waits
    assert ids(manager) == [third, fourth] and manager.unarchived == (playing,)
    manager.mark_aborted(third)
    with pytest.raises(ArchiveError):
        create(manager, clock)  # third cannot begin its record while playing's PGN waits
    assert ids(manager) == [third, fourth] and manager.unarchived == (playing,)
    faults.failing = set()
    manager.close()
    games, pgns = archived(tmp_path)
    assert [g.game_id for g in games] == [finished, playing, third, fourth]
    assert [p.headers["GameId"] for p in pgns] == [finished, playing, third, fourth]


def test_an_unfinished_game_that_could_not_leave_plays_on_and_leaves_with_its_moves(
    clock: FakeClock, tmp_path: Path, faults: Faults, caplog: pytest.LogCaptureFixture
) -> None:
    manager = StateManager(idle_timeout=60, archive_dir=tmp_path, clock=clock)
    playing = create(manager, clock)
    clock.advance(61)
    faults.failing = {"games.sqlite3"}  # the database takes nothing: the record is not begun
    with pytest.raises(ArchiveError, match=DISK_FULL):
        manager.cleanup_idle()
    assert ids(manager) == [playing] and manager.unarchived == ()  # its record is withdrawn
    with caplog.at_level(logging.WARNING, "chess_env.serving.game_store"):
        manager.apply_move(playing, "e4")  # it plays on; the database misses its moves
        manager.apply_move(playing, "e5")
    (warning,) = caplog.records  # once, not per move
    assert f"could not write game {playing} to " in warning.getMessage()
    faults.failing = set()
    clock.advance(61)
    assert manager.cleanup_idle() == [playing]  # leaves, written whole, with its moves
    manager.close()
    (game,), (pgn,) = archived(tmp_path)
    assert game.game_id == playing and len(game.move_history) == 2
    assert pgn.headers["GameId"] == playing
    assert GameArchive(tmp_path).find(playing) == game


def test_idle_cleanup_retries_the_waiting_records(
    clock: FakeClock, tmp_path: Path, faults: Faults
) -> None:
    manager = StateManager(idle_timeout=60, archive_dir=tmp_path, clock=clock)
    game_id = create(manager, clock)
    faults.failing = {"games.jsonl"}
    manager.resign(game_id, "white")
    assert manager.cleanup_idle() == [] and manager.unarchived == (game_id,)
    faults.failing = set()
    assert manager.cleanup_idle() == [] and manager.unarchived == ()
    assert [g.game_id for g in archived(tmp_path)[0]] == [game_id]


def test_close_during_a_fault_drops_everything_and_names_the_games_it_lost(
    clock: FakeClock, tmp_path: Path, faults: Faults
) -> None:
    manager = StateManager(archive_dir=tmp_path, clock=clock)
    written = create(manager, clock)
    manager.resign(written, "white")
    faults.failing = {"games.pgn"}
    lost = [create(manager, clock), create(manager, clock)]
    with pytest.raises(ArchiveError) as closing:
        manager.close()
    assert closing.value.game_ids == tuple(lost)
    assert str(closing.value) == (
        f"could not archive these games in {tmp_path} at close (No space left on device): "
        f"{lost[0]}, {lost[1]}"
    )
    with pytest.raises(RuntimeError, match="closed"):
        manager.list_games()
    games, pgns = archived(tmp_path)  # the first line made it; nothing is there twice
    assert [g.game_id for g in games] == [written, lost[0]] and len(pgns) == 1


def test_a_write_that_fails_midway_is_cut_off_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text("{}\n")

    def disk_full(handle: int) -> None:  # the data went in, but cannot be made durable
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        game_store._append(path, '{"half": "a record"}\n')
    assert path.read_text() == "{}\n"


# -- threads -------------------------------------------------------------------------------------


def test_threads_racing_on_one_game_each_play_in_turn(tmp_path: Path) -> None:
    manager = StateManager(archive_dir=tmp_path)
    game_id = manager.create_game(WHITE, BLACK).game_id
    start, played, errors = threading.Barrier(4), [], []

    def play(seed: int) -> None:
        """Random moves from whatever position each thread last saw: stale ones are refused."""
        rng = random.Random(seed)
        start.wait()
        for _ in range(30):
            game = manager.get_game(game_id)
            if game.is_over:
                return
            move = rng.choice(game.board_state.legal_moves)
            try:
                after = manager.apply_move(game_id, move)
            except (IllegalActionError, GameOverError):
                continue  # another thread moved first: not legal any more
            except Exception as error:
                errors.append(error)
                return
            played.append((len(after.move_history), move))

    threads = [threading.Thread(target=play, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    game = manager.get_game(game_id)
    assert validate_game_state(game) == []
    # Every accepted move is in the history once, at the ply its caller was told.
    assert sorted(played) == [(i + 1, m.uci_notation) for i, m in enumerate(game.move_history)]


def test_threads_playing_different_games_leave_every_history_valid(tmp_path: Path) -> None:
    manager = StateManager(max_games=8, archive_dir=tmp_path)
    game_ids = [manager.create_game(WHITE, BLACK).game_id for _ in range(8)]
    start, errors = threading.Barrier(len(game_ids) + 1), []

    def play(game_id: str, seed: int) -> None:
        rng = random.Random(seed)
        game = manager.get_game(game_id)
        while not game.is_over and len(game.move_history) < 40:
            move = rng.choice(game.board_state.legal_moves)
            game = manager.apply_move(game_id, move, thinking_time=rng.random())
            manager.list_games()

    def watch() -> None:
        for index in range(200):
            session = manager.create_session(game_ids[index % len(game_ids)])
            manager.touch(session.session_id, spectators=index)

    def run(task: Callable[..., None], *args: object) -> None:
        start.wait()
        try:
            task(*args)
        except Exception as error:  # a thread's exception would otherwise only be printed
            errors.append(error)

    threads = [threading.Thread(target=run, args=(play, g, i)) for i, g in enumerate(game_ids)]
    threads.append(threading.Thread(target=run, args=(watch,)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    games = {game.game_id: game for game in manager.list_games()}
    assert sorted(games) == sorted(game_ids)
    for game in games.values():
        assert validate_game_state(game) == []
        assert len(game.move_history) == 40 or game.is_over
    manager.close()
    assert {game.game_id: game for game in archived(tmp_path)[0]} == games  # each once, as last
