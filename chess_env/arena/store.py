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

import os
from pathlib import Path

from chess_env.arena.results import ArenaConfig, ArenaGame
from envkit.append_log import AppendLog, ConfigChangedError, check_same_config

__all__ = ["CONFIG_FILE", "GAMES_FILE", "ArenaConfigChangedError", "GameLog"]

CONFIG_FILE = "arena.json"
GAMES_FILE = "games.jsonl"


class ArenaConfigChangedError(ConfigChangedError):
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
        config_path = self.out_dir / CONFIG_FILE
        if fresh:
            self.path.unlink(missing_ok=True)
        elif config_path.exists():
            try:
                check_same_config(config_path, config, "a tournament")
            except ConfigChangedError as error:
                raise ArenaConfigChangedError(str(error)) from None
        config_path.write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")
        self._log = AppendLog(self.path, ArenaGame, "game record")

    @property
    def records(self) -> list[ArenaGame]:
        return self._log.records

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
        self._log.append(game)
