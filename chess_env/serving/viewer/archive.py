"""The service's archive as the viewer reads it: ``ARCHIVE_DIR/games.sqlite3``, through its indexes.

- ``GameArchive(directory)``: ``latest(limit, status=, player=)``, the newest archived games
  first as ``ArchivedGame`` summaries (read from the listing's columns, no record parsed);
  ``find(game_id)``, one archived game's ``Game`` by its key, or None
- ``MAX_LISTED`` (500): the most games a listing shows

The state manager writes the database while the viewer reads it; each read is one snapshot on a
read-only connection of its own (``chess_env.serving.archive_db``), so a game being archived is
either there whole or not yet. An archive from before the database (``games.jsonl`` alone) is
imported into it when a state manager starts on the directory.

Example:
    >>> import tempfile
    >>> from chess_env.core.game import AgentConfig
    >>> from chess_env.serving.game_store import StateManager
    >>> agent = dict(personality="p", model_name="greedy", system_prompt="")
    >>> folder = tempfile.mkdtemp()
    >>> with StateManager(archive_dir=folder) as games:  # closing archives the game
    ...     game = games.create_game(AgentConfig(agent_id="white", name="W", **agent),
    ...                              AgentConfig(agent_id="black", name="B", **agent))
    ...     game = games.apply_move(game.game_id, "e4")
    >>> archive = GameArchive(folder)
    >>> [(g.white, g.plies, g.status) for g in archive.latest()]
    [('W', 1, 'in_progress')]
    >>> archive.find(game.game_id) == game, archive.find("nobody")
    (True, None)
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pydantic import ValidationError

from chess_env.core.game import Game, GameStatus
from chess_env.serving.archive_db import DATABASE_FILE, archived_game, latest_rows, open_reader
from chess_env.serving.viewer.bodies import ArchivedGame

__all__ = ["MAX_LISTED", "GameArchive"]

MAX_LISTED = 500


class GameArchive:
    """The games a ``StateManager`` archived in ``directory`` (None: no archive, no games).

    Args:
        directory: the state manager's ``archive_dir``.
    """

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.path = None if directory is None else Path(directory) / DATABASE_FILE

    def latest(
        self,
        limit: int = MAX_LISTED,
        *,
        status: GameStatus | None = None,
        player: str | None = None,
    ) -> list[ArchivedGame]:
        """The last ``limit`` games archived (at most ``MAX_LISTED``), newest first, each once
        as its last record says; only those with ``status``, or with ``player`` (a model or
        player spec) on either side, when given."""
        limit = max(0, min(limit, MAX_LISTED))
        if self.path is None or limit == 0:
            return []
        connection = open_reader(self.path)
        if connection is None:
            return []
        with contextlib.closing(connection):
            rows = latest_rows(connection, limit, status=status, player=player)
        return [ArchivedGame.model_validate(row._asdict()) for row in rows]

    def find(self, game_id: str) -> Game | None:
        """The archived record of ``game_id`` (its last one), or None."""
        if self.path is None:
            return None
        connection = open_reader(self.path)
        if connection is None:
            return None
        with contextlib.closing(connection):
            text = archived_game(connection, game_id)
        if text is None:
            return None
        try:
            return Game.model_validate_json(text)
        except ValidationError:  # a record of another schema version: not one this viewer shows
            return None
