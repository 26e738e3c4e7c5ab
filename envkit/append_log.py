"""A crash-safe, resumable run folder: its configuration and one JSON record per line.

Long runs (the chess arena, world evaluations) keep their results as they come, so a killed run
loses only what was in progress and a rerun of the same command resumes:

- ``AppendLog(path, model)``: DTOs appended one per line, each written whole and fsynced before
  ``append`` returns. On open, a torn last line (the kill came mid-write) is cut off; a damaged
  line before it is an error naming the file and the line.
- ``check_same_config(path, config, what)``: the folder's stored configuration must equal the
  run's; otherwise a ``ConfigChangedError`` names the fields that changed.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["AppendLog", "ConfigChangedError", "check_same_config"]

Record = TypeVar("Record", bound=BaseModel)


class ConfigChangedError(ValueError):
    """The run folder holds a run with another configuration."""


class AppendLog(Generic[Record]):
    """The records of ``path`` (loaded on open), appended as they come; safe from threads.

    Example:
        >>> import tempfile
        >>> from pydantic import BaseModel
        >>> class Point(BaseModel):
        ...     x: int
        >>> log = AppendLog(Path(tempfile.mkdtemp()) / "points.jsonl", Point, "point")
        >>> log.append(Point(x=1))
        >>> AppendLog(log.path, Point, "point").records
        [Point(x=1)]
    """

    def __init__(self, path: str | os.PathLike[str], model: type[Record], what: str) -> None:
        self.path, self.model, self.what = Path(path), model, what
        self._lock = threading.Lock()
        self.records: list[Record] = self._load()

    def append(self, record: Record) -> None:
        """Write ``record`` at once, all or nothing."""
        line = (record.model_dump_json() + "\n").encode()
        with self._lock:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, line)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            self.records.append(record)

    def _load(self) -> list[Record]:
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
                records.append(self.model.model_validate_json(line))
            except ValidationError as error:
                problem = error.errors()[0]["msg"]
                raise ValueError(f"{self.path}:{number}: not a {self.what} ({problem})") from None
        return records


def check_same_config(path: Path, config: BaseModel, what: str) -> None:
    """Refuse a stored configuration at ``path`` that differs from ``config`` (``what``: "a
    tournament", "an evaluation"), naming the fields that changed."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: unreadable ({error}); pass --fresh to start over") from None
    current = config.model_dump(mode="json")
    changed = sorted(
        key for key in current.keys() | stored.keys() if current.get(key) != stored.get(key)
    )
    if changed:
        raise ConfigChangedError(
            f"{path.parent} holds {what} with another configuration (changed: "
            f"{', '.join(changed)}); rerun it as it was to resume, or pass --fresh "
            "(fresh=True) to start over and discard its records"
        )
