"""``RecordEpisode``: a world env's episodes as episode logs (``multiagent.recording``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pettingzoo import ParallelEnv
from pettingzoo.utils import BaseParallelWrapper

from multiagent.env import WorldEnv
from multiagent.observability import ObservabilityPlan
from multiagent.recording import EpisodeLog, EpisodeRecorder, Record
from multiagent.wrappers.world_view import WorldViewWrapper

__all__ = ["RecordEpisode"]


class RecordEpisode(BaseParallelWrapper):
    """Records every turn's ground truth, each agent's observation and action, as a log.

    Put it directly on the env whose observations should be recorded: ``parallel_env(...)``
    (everyone sees the ground truth), ``ObservabilityWrapper`` or ``TextObservationWrapper``
    (the config's filter and noise); wrappers that reshape observations (``FlattenForSB3``,
    ``SingleAgentEnv``) go on top of it. ``parallel_env(config, observability=True,
    record=...)`` builds that stack.

    Args:
        env: a ``WorldEnv`` or a wrapper that builds observations from its ground truth with an
            ``ObservabilityPlan`` (``plan``); anything else is a ``TypeError``.
        record: ``True`` (default) keeps the episode in memory (``episode_log``); a path ending
            in ``.json`` or ``.gz`` (gzipped) is the file each episode is written to (replacing
            the previous one); any other path is a folder where episode n goes to
            ``<world>-episode-<n>.json``. An episode is written when its last agent is done, or
            unfinished on ``reset`` or ``close``.

    Example:
        >>> from multiagent import parallel_env
        >>> from multiagent.wrappers import ObservabilityWrapper
        >>> env = RecordEpisode(ObservabilityWrapper(parallel_env("trade")))
        >>> _ = env.reset(seed=3)
        >>> turn = env.episode_log.turns[0]
        >>> sorted(turn.observations["Trader_1"].agents)  # Trader_4 is unaware to Trader_1
        ['Trader_1', 'Trader_2', 'Trader_3']
        >>> env.episode_log.cell("Trader_1", "Trader_4").level
        'unaware'
    """

    def __init__(self, env: ParallelEnv, record: Record = True) -> None:
        super().__init__(env)
        world_env, plan = env.unwrapped, getattr(env, "plan", None)
        if not (
            isinstance(world_env, WorldEnv)
            and isinstance(plan, ObservabilityPlan)
            and (env is world_env or isinstance(env, WorldViewWrapper))
        ):
            raise TypeError(
                "RecordEpisode goes directly on a world env (parallel_env(...)) or on a wrapper "
                "that builds its observations from the ground truth (ObservabilityWrapper, "
                f"TextObservationWrapper); got {type(env).__name__}"
            )
        self.recorder = EpisodeRecorder(world_env, plan, record)

    @property
    def episode_log(self) -> EpisodeLog | None:
        """The episode since the last reset (in progress or ended); None before any reset."""
        return self.recorder.episode_log

    @property
    def paths(self) -> list[Path]:
        """The files written so far, oldest first."""
        return self.recorder.paths

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self.recorder.start(list(self.env.agents))
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        acting = list(self.env.agents)
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        self.recorder.step(actions, acting, rewards, terminations, truncations, infos)
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        self.recorder.close()
        self.env.close()
