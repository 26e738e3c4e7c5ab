"""Episode logs of the worlds: every turn's ground truth, what each agent saw of it, did and said.

- ``EpisodeLog`` and its parts (``multiagent.recording.log``); ``load_episode_log(path)``,
  ``save_episode_log(log, path)``, ``EpisodeLogError`` (a file that cannot load, with its field).
- ``EpisodeRecorder`` (``multiagent.recording.recorder``): what ``WorldEnv(record=...)`` and the
  ``multiagent.wrappers.RecordEpisode`` wrapper use; ``observability_cells(plan)``, the matrix
  with each variable marked hidden, exact or noisy.

The viewer's world page (``/viewer/world.html`` of the chess server) opens these files.
"""

from multiagent.recording.log import (
    EPISODE_LOG_MIGRATIONS,
    EpisodeLog,
    EpisodeLogError,
    Level,
    Mark,
    ObserverView,
    TurnRecord,
    TurnState,
    ViewCell,
    load_episode_log,
    save_episode_log,
)
from multiagent.recording.recorder import EpisodeRecorder, Record, observability_cells

__all__ = [
    "EPISODE_LOG_MIGRATIONS",
    "EpisodeLog",
    "EpisodeLogError",
    "EpisodeRecorder",
    "Level",
    "Mark",
    "ObserverView",
    "Record",
    "TurnRecord",
    "TurnState",
    "ViewCell",
    "load_episode_log",
    "observability_cells",
    "save_episode_log",
]
