"""StateManager's archive: its size limit (a clear refusal, no game lost), and an archive from
before the database (games.jsonl alone) imported at start."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from chess_env.core.game import AgentConfig, Game
from chess_env.serving.game_store import ArchiveError, ArchiveFullError, StateManager
from chess_env.serving.viewer.archive import GameArchive

# The longest prompt the service takes: a game's record is about 10 KB.
AGENT = {"personality": "balanced", "model_name": "m", "system_prompt": "x" * 4000}
WHITE = AgentConfig(agent_id="white", name="White", **AGENT)
BLACK = AgentConfig(agent_id="black", name="Black", **AGENT)
FOOLS_MATE = ("f3", "e5", "g4", "Qh4#")
LIMIT = 200_000


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def archived_ids(directory: Path) -> list[str]:
    lines = (directory / "games.jsonl").read_text().splitlines()
    return [Game.model_validate_json(line).game_id for line in lines]


def test_a_full_archive_refuses_new_records_and_loses_no_game(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Games end and are archived one after another until the next would pass the limit: that
    one waits in memory, new games are refused (no room can be made), and a restart with a
    higher limit archives it."""
    clock = FakeClock()
    manager = StateManager(max_games=2, archive_dir=tmp_path, clock=clock, max_archive_bytes=LIMIT)
    played: list[str] = []
    logged = caplog.at_level(logging.WARNING, "chess_env.serving.game_store")
    with logged, pytest.raises(ArchiveFullError) as full:
        for _ in range(LIMIT // 10_000):  # far more than fit
            game_id = manager.create_game(WHITE, BLACK).game_id
            for move in FOOLS_MATE:
                manager.apply_move(game_id, move)
            played.append(game_id)
    waiting = manager.unarchived
    assert waiting == tuple(game.game_id for game in manager.list_games())
    assert archived_ids(tmp_path) + list(waiting) == played  # each archived or waiting
    assert (full.value.limit, full.value.reason) == (
        LIMIT,
        f"the archive is full (max_archive_bytes = {LIMIT})",
    )
    assert str(full.value).startswith(f"cannot archive in {tmp_path}: it holds ")
    assert isinstance(full.value, ArchiveError)  # the service's 503 archive_unavailable
    assert f"could not archive finished game {waiting[0]} (the archive is full" in caplog.text
    # Within one record of the limit; past it only by the rows of the games in memory.
    record = len(manager.get_game(waiting[0]).model_dump_json())
    assert LIMIT - 3 * record < manager.archive_size <= LIMIT + 2 * 2 * record
    with pytest.raises(ArchiveFullError):
        manager.create_game(WHITE, BLACK)  # still full: refused again, nothing changed
    assert manager.unarchived == waiting
    with pytest.raises(ArchiveError, match=r"could not archive these games .* at close"):
        manager.close()
    with StateManager(archive_dir=tmp_path, max_archive_bytes=2 * LIMIT) as restarted:
        assert restarted.list_games() == []  # finished: archived at start, not resumed
        assert restarted.unarchived == ()
    assert archived_ids(tmp_path) == played
    archive = GameArchive(tmp_path)
    assert [game.game_id for game in archive.latest()] == played[::-1]
    assert all(archive.find(game_id).status == "checkmate" for game_id in played)  # type: ignore[union-attr]


def test_max_archive_bytes_must_be_positive_or_none(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_archive_bytes must be positive or None, got 0"):
        StateManager(max_archive_bytes=0)
    with StateManager(archive_dir=tmp_path, max_archive_bytes=None) as unlimited:
        game_id = unlimited.create_game(WHITE, BLACK).game_id
        unlimited.resign(game_id, "white")
        assert unlimited.unarchived == () and unlimited.archive_size > 0


def test_an_archive_from_before_the_database_is_imported_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An older server wrote games.jsonl alone: its games, the last record of each, are read
    through the database from the next start on; the file stays as it was."""
    first = Game.new(WHITE, BLACK).with_move("e4")
    second = Game.new(WHITE, BLACK).with_move("d4")
    first_later = first.with_move("e5").resign("white")
    lines = [first.model_dump_json(), second.model_dump_json(), "{half a line", ""]
    lines.append(first_later.model_dump_json())
    old = "\n".join(lines) + "\n"
    (tmp_path / "games.jsonl").write_text(old)
    with caplog.at_level(logging.INFO, "chess_env.serving.game_store"):
        StateManager(archive_dir=tmp_path).close()
    assert "imported 3 games of" in caplog.text and "(1 lines were no game)" in caplog.text
    archive = GameArchive(tmp_path)
    assert [game.game_id for game in archive.latest()] == [first.game_id, second.game_id]
    assert archive.find(first.game_id) == first_later and archive.find(second.game_id) == second
    assert (tmp_path / "games.jsonl").read_text() == old
    StateManager(archive_dir=tmp_path).close()  # imported once: the database has games now
    assert len(archive.latest()) == 2


def test_a_really_full_database_fails_each_write_cleanly_and_the_next_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite's own SQLITE_FULL, from a page limit on the store's connection (root writes past
    any disk quota here): each failed write is rolled back, so later ones can begin."""
    manager = StateManager(archive_dir=tmp_path, clock=FakeClock())
    connection = manager._database._connection  # type: ignore[union-attr]
    (pages,) = connection.execute("PRAGMA page_count").fetchone()
    connection.execute(f"PRAGMA max_page_count = {pages}")
    with caplog.at_level(logging.WARNING, "chess_env.serving.game_store"):
        game_id = manager.create_game(WHITE, BLACK).game_id  # its rows do not fit
        for move in FOOLS_MATE:
            manager.apply_move(game_id, move)  # played all the same; the last one ends it
    assert "(database or disk is full)" in caplog.text
    assert manager.unarchived == (game_id,)
    connection.execute(f"PRAGMA max_page_count = {pages * 100}")
    other = manager.create_game(WHITE, BLACK).game_id  # the finished game's record first
    assert manager.unarchived == ()
    manager.apply_move(other, "e4")
    manager.close()
    archive = GameArchive(tmp_path)
    assert [game.game_id for game in archive.latest()] == [other, game_id]
    assert archive.find(game_id).status == "checkmate"  # type: ignore[union-attr]
