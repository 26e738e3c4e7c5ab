"""World evaluations: scenarios played by the players under test, scored against ground truth.

- ``evaluate(world, focal=[...], out=DIR, ...)`` -> ``EvalResult`` (``runner``); the same as
  ``python -m multiagent eval`` (``command``).
- ``OUT/``: ``eval.json`` (the ``EvalConfig``), ``episodes.jsonl`` (``EpisodeRecord`` per line,
  fsynced as each ends; a rerun resumes), ``logs/`` (episode logs with messages and LLM
  decisions), ``result.json``, ``leaderboard.md`` and ``leaderboard.html``.
- Conditions (``conditions``): the observability the players get: ``configured``, ``full``,
  ``none``, and the configured noise scaled.
- Seeds (``schedule``): an episode's seed depends on the run's seed, the scenario and the
  episode's index only, so every player and condition meets the same worlds.
- Scores (``result``): per-capita returns, welfare, equality, survival, the normalised score,
  value of information, Bradley-Terry ratings, per-player validity and cost, with intervals.
"""

from multiagent.evaluation.records import EpisodeRecord, EvalConfig, SeatRecord
from multiagent.evaluation.result import EvalResult, score
from multiagent.evaluation.runner import EvalRun, evaluate
from multiagent.evaluation.store import EvalConfigChangedError

__all__ = [
    "EpisodeRecord",
    "EvalConfig",
    "EvalConfigChangedError",
    "EvalResult",
    "EvalRun",
    "SeatRecord",
    "evaluate",
    "score",
]
