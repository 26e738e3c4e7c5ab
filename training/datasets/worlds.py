"""A built-in world's scripted expert in the learner's seat, as ``FlattenForSB3`` rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from multiagent.wrappers import FlattenForSB3, SingleAgentEnv
from training.datasets.dataset import (
    BCDataset,
    Rows,
    assemble,
    manifest_template,
    observation_shape,
)
from training.datasets.parallel import episode_seed
from training.envs import world_factory
from training.experts import ScriptedWorld, world_expert

WORLD_SOURCES = ("vs_random",)  # the other agents act at random (SingleAgentEnv's default)


def flat_action(wrapper: FlattenForSB3, action: dict[str, Any]) -> Any:
    """The ``FlattenForSB3`` action that ``wrapper.action`` turns back into ``action``.

    The inverse of the wrapper's own conversion: a discrete field's index minus its space's
    ``start``, a float field of a MultiDiscrete action to its nearest of ``float_bins`` even
    steps of its bounds, an all-float action concatenated.

    Example:
        >>> from training.envs import world_factory
        >>> env = world_factory("trade")()
        >>> action = {"verb": 3, "good": 2, "target_town": 0, "amount": np.array([10.0])}
        >>> flat_action(env, action)
        array([ 3,  2,  0, 10])
        >>> env.action(flat_action(env, action))["amount"]
        array([10.], dtype=float32)
    """
    inner = wrapper.env.action_space
    flat = wrapper.action_space
    if not isinstance(inner, spaces.Dict):
        return action
    fields = list(inner.spaces.items())
    if isinstance(flat, spaces.Discrete):
        ((name, space),) = fields
        assert isinstance(space, spaces.Discrete)  # a Discrete flat action has one such field
        return int(action[name]) - int(space.start)
    if isinstance(flat, spaces.Box):
        parts = [np.asarray(action[name], dtype=np.float32).ravel() for name, _ in fields]
        return np.concatenate(parts)
    values = []
    for name, space in fields:
        if isinstance(space, spaces.Discrete):
            values.append(int(action[name]) - int(space.start))
        else:
            assert isinstance(space, spaces.Box)  # FlattenForSB3 takes Discrete and Box fields
            bins = wrapper.float_bins
            low, high = float(space.low.ravel()[0]), float(space.high.ravel()[0])
            value = float(np.asarray(action[name]).ravel()[0])
            fraction = (value - low) / (high - low) if high > low else 0.0
            values.append(int(np.clip(round(fraction * (bins - 1)), 0, bins - 1)))
    return np.asarray(values, dtype=np.int64)


def _world_episode(
    env: FlattenForSB3,
    expert: Callable[[Any], dict[str, Any]],
    rows: Rows,
    episode: int,
    seed: int,
    positions: int,
    progress: tqdm,
) -> None:
    """One episode of the expert in the learner's seat, until it ends or ``positions`` rows."""
    single = env.unwrapped  # the SingleAgentEnv: its observations are what the expert reads
    observation, _ = single.reset(seed=episode_seed(seed, 0, episode))
    done = False
    while not done and len(rows.actions) < positions:
        action = flat_action(env, expert(observation))
        rows.observations.append(env.observation(observation))
        rows.actions.append(action)
        rows.episodes.append(episode)
        rows.source.append(0)
        progress.update(1)
        # What FlattenForSB3.step does, with the unflattened observation kept for the expert.
        observation, _, terminated, truncated, _ = single.step(env.action(action))
        done = terminated or truncated


def generate_world_dataset(
    world: ScriptedWorld,
    positions: int,
    seed: int,
    learner: str | None = None,
    progress_bar: bool = True,
) -> BCDataset:
    """``positions`` steps of ``world``'s scripted expert (``training.experts.world_expert``) in
    ``learner``'s seat (default: the first agent), the other agents acting at random.

    The env is ``training.envs.env_factory(f"world:{world}")``'s: the expert reads the
    observation the learner gets under the world's observability, and each row stores that
    observation as ``FlattenForSB3`` flattens it (one array per key) with the expert's action in
    the flattened action space (``flat_action``); the env is stepped with exactly that flat
    action, so a discretised amount is what was played. No masks: every flat action is legal.
    Episode ``i`` resets the env with ``episode_seed(seed, 0, i)``.
    """
    if positions < 1:
        raise ValueError(f"positions must be at least 1, got {positions}")
    env = world_factory(world, learner=learner)()
    seat = env.unwrapped
    assert isinstance(seat, SingleAgentEnv)  # what world_factory wraps
    expert = world_expert(world)
    rows = Rows()
    try:
        with tqdm(
            total=positions, desc=f"{world} expert", unit="pos", disable=not progress_bar
        ) as bar:
            episode = 0
            while len(rows.actions) < positions:
                _world_episode(env, expert, rows, episode, seed, positions, bar)
                episode += 1
    finally:
        env.close()
    observed = env.observation_space
    assert isinstance(observed, spaces.Dict)  # FlattenForSB3 observes a Dict of leaves
    observations = {
        key: np.stack([np.asarray(row[key], dtype=space.dtype) for row in rows.observations])
        for key, space in observed.spaces.items()
    }
    return assemble(
        observations=observations,
        actions=np.asarray(rows.actions, dtype=np.int64),
        masks=None,
        episodes=np.asarray(rows.episodes, dtype=np.int32),
        source=np.asarray(rows.source, dtype=np.uint8),
        fens=None,
        template=manifest_template(
            world,
            "scripted",
            seed,
            observation_shape(observations),
            env.action_space,
            WORLD_SOURCES,
            learner=seat.agent,
        ),
    )
