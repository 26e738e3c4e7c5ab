"""``OUT/`` of an evaluation: its configuration, its episodes and their logs, kept to resume.

- ``OUT/eval.json``: the ``EvalConfig`` the episodes were played under; a rerun with another one
  is refused (``EvalConfigChangedError`` names what changed) unless it asks to start fresh, which
  removes the old episodes and logs.
- ``OUT/episodes.jsonl``: one ``EpisodeRecord`` per line, appended and fsynced as each episode
  ends (``envkit.append_log``), so a killed run loses only the episodes in progress.
- ``OUT/logs/``: each episode's log, gzipped JSON.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from envkit.append_log import AppendLog, ConfigChangedError, check_same_config
from multiagent.evaluation.records import EpisodeRecord, EvalConfig

__all__ = ["CONFIG_FILE", "EPISODES_FILE", "LOGS_DIR", "EpisodeStore", "EvalConfigChangedError"]

CONFIG_FILE = "eval.json"
EPISODES_FILE = "episodes.jsonl"
LOGS_DIR = "logs"


class EvalConfigChangedError(ConfigChangedError):
    """``OUT`` holds an evaluation with another configuration."""


class EpisodeStore:
    """The episodes of one evaluation in ``out_dir``, loaded on open, appended as they end.

    Example:
        >>> import tempfile
        >>> config = EvalConfig(world="forage", world_hash="x", scenarios=["all_focal"],
        ...     focal=["random"], episodes=2, seed=0, observability=["configured"],
        ...     noise_scales=[1.0], error_allowance=3)
        >>> store = EpisodeStore(tempfile.mkdtemp(), config)
        >>> store.done
        set()
    """

    def __init__(
        self, out_dir: str | os.PathLike[str], config: EvalConfig, *, fresh: bool = False
    ) -> None:
        self.out_dir, self.config = Path(out_dir), config
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / EPISODES_FILE
        self.logs = self.out_dir / LOGS_DIR
        config_path = self.out_dir / CONFIG_FILE
        if fresh:
            self.path.unlink(missing_ok=True)
            shutil.rmtree(self.logs, ignore_errors=True)
        elif config_path.exists():
            try:
                check_same_config(config_path, config, "an evaluation")
            except ConfigChangedError as error:
                raise EvalConfigChangedError(str(error)) from None
        config_path.write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")
        self.logs.mkdir(exist_ok=True)
        self._log = AppendLog(self.path, EpisodeRecord, "episode record")

    @property
    def records(self) -> list[EpisodeRecord]:
        """Every episode played, in the order they ended (one record per key)."""
        return self._log.records

    @property
    def done(self) -> set[str]:
        """The keys of the episodes played."""
        return {record.key for record in self.records}

    def append(self, record: EpisodeRecord) -> None:
        """Write ``record`` at once, all or nothing (safe from several threads)."""
        self._log.append(record)
