"""Which episodes an evaluation plays, each with a key, a seed and a length fixed in advance.

An episode's seed derives from the run's seed, the scenario and the episode's index (numpy's
``SeedSequence``, never Python's salted ``hash``), not from the focal player or the condition:
every focal player and every condition meets the same worlds, episode by episode, which is what
pairs them. A resumed run plays exactly the episodes the first run would have, whatever it
played before the kill. The episode's length is drawn from the same seed in the scenario's
range, so a player cannot count back from a known end.

Example:
    >>> from multiagent.worlds import load_world
    >>> from multiagent.evaluation.records import EvalConfig
    >>> config = EvalConfig(world="forage", world_hash="x", scenarios=["visitor"],
    ...     focal=["random", "noop"], episodes=2, seed=7, observability=["configured"],
    ...     noise_scales=[1.0], error_allowance=3)
    >>> tasks = episode_tasks(config, load_world("forage"))
    >>> [task.key for task in tasks][:2]
    ['configured/visitor/default/random/0', 'configured/visitor/default/random/1']
    >>> tasks[0].seed == tasks[2].seed and tasks[0].length == tasks[2].length
    True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from multiagent.config import SimulationConfig
from multiagent.evaluation.conditions import condition_label
from multiagent.evaluation.records import EvalConfig

__all__ = ["EpisodeTask", "episode_seed", "episode_tasks"]

DEFAULT_SET = "default"


@dataclass(frozen=True)
class EpisodeTask:
    """One episode to play: what fills the seats, under which condition, with which seed."""

    key: str
    observability: str
    noise_scale: float
    condition: str
    scenario: str
    background_set: str
    focal: str
    episode: int
    seed: int
    length: int


def episode_seed(run_seed: int, scenario: str, episode: int) -> tuple[int, int]:
    """The world's seed and a second draw (for the episode's length) of one episode.

    Example:
        >>> episode_seed(0, "visitor", 3) == episode_seed(0, "visitor", 3)
        True
        >>> episode_seed(0, "visitor", 3) != episode_seed(0, "resident", 3)
        True
    """
    name = int.from_bytes(hashlib.sha256(scenario.encode()).digest()[:8], "big")
    words = np.random.SeedSequence([run_seed, name, episode]).generate_state(2, np.uint64)
    return int(words[0] >> np.uint64(1)), int(words[1])


def episode_tasks(config: EvalConfig, world: SimulationConfig) -> list[EpisodeTask]:
    """Every episode of the run, in the order they are played (a scenario's groups together)."""
    tasks = []
    background_set = config.background_set or DEFAULT_SET
    players = [*config.focal, *(b for b in config.baselines if b not in config.focal)]
    for scenario_name in config.scenarios:
        low, high = world.scenarios[scenario_name].length_range(world.simulation.max_turns)
        for observability in config.observability:
            for noise_scale in config.noise_scales:
                if observability != "configured" and noise_scale != config.noise_scales[0]:
                    continue  # full and none have no noise to scale
                condition = condition_label(observability, noise_scale)
                for focal in players:
                    for episode in range(config.episodes):
                        seed, draw = episode_seed(config.seed, scenario_name, episode)
                        length = low + draw % (high - low + 1)
                        key = f"{condition}/{scenario_name}/{background_set}/{focal}/{episode}"
                        tasks.append(
                            EpisodeTask(key, observability, noise_scale, condition,
                                        scenario_name, background_set, focal, episode, seed,
                                        length)
                        )  # fmt: skip
    return tasks
