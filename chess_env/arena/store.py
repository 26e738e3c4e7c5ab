"""``OUT/`` of a tournament: its configuration and its games, kept so that a rerun resumes.

- ``OUT/arena.json``: the ``ArenaConfig`` the games were played under. A rerun with another
  configuration is refused (``ArenaConfigChangedError``, naming what changed) unless it asks to
  start fresh, which removes the old games.
- ``OUT/games.jsonl``: one ``ArenaGame`` per line, appended and fsynced as soon as a game ends, so
  a killed run loses only the games in progress. A torn last line (the kill came mid-write) is cut
  off when the log is opened; a damaged line before it is an error naming the line.

A game is done when its latest record has a chess result. A game stopped by an endpoint outage
keeps its record (it is counted) and is played again by the next run, whose record supersedes it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from pydantic import ValidationError

from chess_env.arena.results import ArenaConfig, ArenaGame

__all__ = ["CONFIG_FILE", "GAMES_FILE", "ArenaConfigChangedError", "GameLog"]

CONFIG_FILE = "arena.json"
GAMES_FILE = "games.jsonl"


class ArenaConfigChangedError(ValueError):
    """``OUT`` holds a tournament with another configuration."""


class GameLog:
    """The games of one tournament in ``out_dir``, loaded on open and appended as they end.

    Example:
        >>> import tempfile
        >>> config = ArenaConfig(players=["random"], anchors=["greedy"], games_per_pair=2,
        ...     openings="startpos", openings_digest="x", opening_ids=["startpos"], max_plies=10)
        >>> log = GameLog(tempfile.mkdtemp(), config)
        >>> len(log.latest), log.failures
        (0, 0)
    """

    def __init__(
        self, out_dir: str | os.PathLike[str], config: ArenaConfig, *, fresh: bool = False
    ):
        self.out_dir, self.config = Path(out_dir), config
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / GAMES_FILE
        self._lock = threading.Lock()
        config_path = self.out_dir / CONFIG_FILE
        if fresh:
            self.path.unlink(missing_ok=True)
        elif config_path.exists():
            _check_same(config_path, config)
        config_path.write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")
        self.records: list[ArenaGame] = self._load()

    @property
    def latest(self) -> dict[str, ArenaGame]:
        """Each game's latest record, by game id."""
        return {record.game_id: record for record in self.records}

    @property
    def done(self) -> set[str]:
        """Ids of the games that have a chess result."""
        return {game_id for game_id, record in self.latest.items() if record.rated}

    @property
    def failures(self) -> int:
        """Records of games stopped by an endpoint outage, replayed or not."""
        return sum(not record.rated for record in self.records)

    def append(self, game: ArenaGame) -> None:
        """Write ``game`` at once, all or nothing (safe from several threads)."""
        line = (game.model_dump_json() + "\n").encode()
        with self._lock:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, line)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            self.records.append(game)

    def _load(self) -> list[ArenaGame]:
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):  # a line torn by a kill mid-write: it never finished
            with open(self.path, "r+b") as file:
                file.truncate(complete)
        records = []
        for number, line in enumerate(data[:complete].decode().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(ArenaGame.model_validate_json(line))
            except ValidationError as error:
                problem = error.errors()[0]["msg"]
                raise ValueError(f"{self.path}:{number}: not a game record ({problem})") from None
        return records


def _check_same(path: Path, config: ArenaConfig) -> None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: unreadable ({error}); pass --fresh to start over") from None
    current = config.model_dump(mode="json")
    changed = sorted(
        key for key in current.keys() | stored.keys() if current.get(key) != stored.get(key)
    )
    if changed:
        raise ArenaConfigChangedError(
            f"{path.parent} holds a tournament with another configuration (changed: "
            f"{', '.join(changed)}); rerun it as it was to resume, or pass --fresh "
            "(fresh=True) to start over and discard its games"
        )
