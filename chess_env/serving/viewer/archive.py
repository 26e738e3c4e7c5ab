"""The service's archive as the viewer reads it: ``ARCHIVE_DIR/games.jsonl``, one ``Game`` a line.

- ``GameArchive(directory)``: ``latest(limit)``, the newest games first as ``ArchivedGame``
  summaries, read from the end of the file (its last ``limit`` lines, however long the file) and
  kept until the file changes; ``find(game_id)``, one game's ``Game``, or None
- ``MAX_LISTED`` (500): the most games a listing shows

The state manager appends to the file while the viewer reads it (each record whole and fsynced),
so a line that does not read back, such as a record still being written, is passed over.

Example:
    >>> import tempfile
    >>> from chess_env.core.game import AgentConfig, Game
    >>> agent = dict(personality="p", model_name="greedy", system_prompt="")
    >>> game = Game.new(AgentConfig(agent_id="white", name="W", **agent),
    ...                 AgentConfig(agent_id="black", name="B", **agent)).with_move("e4")
    >>> folder = tempfile.mkdtemp()
    >>> _ = (Path(folder) / "games.jsonl").write_text(game.model_dump_json() + "\\n")
    >>> archive = GameArchive(folder)
    >>> [(g.white, g.plies, g.status) for g in archive.latest()]
    [('W', 1, 'in_progress')]
    >>> archive.find(game.game_id) == game, archive.find("nobody")
    (True, None)
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from pydantic import ValidationError

from chess_env.core.game import Game
from chess_env.serving.viewer.bodies import ArchivedGame

__all__ = ["ARCHIVE_FILE", "MAX_LISTED", "GameArchive"]

ARCHIVE_FILE = "games.jsonl"  # chess_env.serving.game_store.ARCHIVE_FILES[0]
MAX_LISTED = 500
_CHUNK = 64 * 1024  # bytes read at a time from the end of the file


class GameArchive:
    """The games a ``StateManager`` archived in ``directory`` (None: no archive, no games).

    Args:
        directory: the state manager's ``archive_dir``.
    """

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.path = None if directory is None else Path(directory) / ARCHIVE_FILE
        self._lock = threading.Lock()
        self._cached: tuple[tuple[int, int], int, list[ArchivedGame]] | None = None

    def latest(self, limit: int = MAX_LISTED) -> list[ArchivedGame]:
        """The last ``limit`` games archived (at most ``MAX_LISTED``), newest first; a game
        archived twice is listed once, as its last record says."""
        limit = max(0, min(limit, MAX_LISTED))
        stamp = self._stamp()
        if stamp is None or limit == 0:
            return []
        with self._lock:
            if self._cached is not None and self._cached[:2] == (stamp, limit):
                return self._cached[2]
        assert self.path is not None
        listed, seen = [], set()
        for line in reversed(_last_lines(self.path, limit)):
            summary = _summary(line)
            if summary is not None and summary.game_id not in seen:
                seen.add(summary.game_id)
                listed.append(summary)
        with self._lock:
            self._cached = (stamp, limit, listed)
        return listed

    def find(self, game_id: str) -> Game | None:
        """The archived record of ``game_id`` (its last one), or None."""
        if self._stamp() is None:
            return None
        assert self.path is not None
        needle = f'"game_id":{json.dumps(game_id)}'.encode()  # as model_dump_json writes it
        found = None
        with self.path.open("rb") as handle:
            for line in handle:
                if needle in line:
                    found = line
        if found is None:
            return None
        try:
            return Game.model_validate_json(found)
        except ValidationError:
            return None

    def _stamp(self) -> tuple[int, int] | None:
        """The file's size and modification time (None: no file), to know when it changed."""
        if self.path is None:
            return None
        try:
            status = self.path.stat()
        except OSError:
            return None
        return status.st_size, status.st_mtime_ns


def _last_lines(path: Path, count: int) -> list[bytes]:
    """The last ``count`` non-blank lines of ``path``, read backwards from its end."""
    with path.open("rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        data = b""
        while position > 0 and data.count(b"\n") <= count:
            step = min(_CHUNK, position)
            position -= step
            handle.seek(position)
            data = handle.read(step) + data
    lines = data.split(b"\n")
    if position > 0:
        lines = lines[1:]  # begun mid-line
    return [line for line in lines if line.strip()][-count:]


def _summary(line: bytes) -> ArchivedGame | None:
    """A listing's line for an archived ``Game`` record, read without replaying its moves (a
    record that does not read, e.g. one being written, is None)."""
    try:
        record = json.loads(line)
        return ArchivedGame(
            game_id=record["game_id"],
            white=record["white"]["name"],
            black=record["black"]["name"],
            white_player=record["white"]["model_name"],
            black_player=record["black"]["model_name"],
            status=record["status"],
            result=record.get("result"),
            termination=record.get("termination"),
            plies=len(record["move_history"]),
            started_at=record["started_at"],
            ended_at=record.get("ended_at"),
        )
    except (ValueError, KeyError, TypeError):  # ValidationError is a ValueError
        return None
