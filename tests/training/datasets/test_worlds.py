"""training.datasets.worlds: world rows fit and replay in the flattened env and follow the seed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from training.datasets import (
    BCDataset,
    DatasetError,
    episode_seed,
    flat_action,
    generate_world_dataset,
)
from training.envs import env_factory
from training.experts import world_expert

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from bc_datasets import assert_same

# -- worlds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("world", "learner"), [("forage", None), ("forage", "Forager_2")])
def test_world_rows_fit_the_flattened_spaces(world: str, learner: str | None) -> None:
    data = generate_world_dataset(world, 25, seed=0, learner=learner, progress_bar=False)
    env = env_factory(f"world:{world}", learner=learner)()
    assert data.manifest.learner == (learner or "Forager_1")
    assert data.manifest.expert == "scripted" and not data.manifest.masked
    assert data.masks is None and data.fens is None
    assert set(data.observations) == set(env.observation_space.spaces)
    for index in range(len(data)):
        row = {key: value[index] for key, value in data.observations.items()}
        assert env.observation_space.contains(row), index
        assert env.action_space.contains(int(data.actions[index]))
    with pytest.raises(DatasetError, match="no action masks"):
        data.unpacked_masks(np.arange(3))


def test_trade_rows_replay_in_the_flattened_env(trade_data: BCDataset) -> None:
    """The stored actions are the ones played: stepping the env with them from the episode's
    seed gives back every stored observation."""
    env = env_factory("world:trade")()
    assert trade_data.manifest.action_nvec == tuple(env.action_space.nvec)
    assert trade_data.actions.shape == (12, 4)
    observation, _ = env.reset(seed=episode_seed(0, 0, 0))
    for index in range(len(trade_data)):
        for key, value in observation.items():
            np.testing.assert_array_equal(trade_data.observations[key][index], value, key)
        assert env.action_space.contains(trade_data.actions[index])
        observation, *_ = env.step(trade_data.actions[index])


def test_flat_action_inverts_the_wrappers_conversion() -> None:
    env = env_factory("world:trade")()
    single, expert = env.unwrapped, world_expert("trade")
    observation, _ = single.reset(seed=0)
    for _ in range(6):
        action = expert(observation)
        back = env.action(flat_action(env, action))
        assert {k: back[k] for k in ("verb", "good", "target_town")} == {
            k: int(action[k]) for k in ("verb", "good", "target_town")
        }
        np.testing.assert_allclose(back["amount"], action["amount"])
        observation, *_ = single.step(back)
    forage = env_factory("world:forage")()
    assert flat_action(forage, {"move": 3}) == 3


def test_world_datasets_follow_the_seed() -> None:
    first = generate_world_dataset("forage", 30, seed=7, progress_bar=False)
    again = generate_world_dataset("forage", 30, seed=7, progress_bar=False)
    other = generate_world_dataset("forage", 30, seed=8, progress_bar=False)
    assert_same(first, again)
    assert other.manifest.sha256 != first.manifest.sha256


@pytest.mark.parametrize(
    ("world", "learner", "match"),
    [("chess", None, "unknown world"), ("forage", "Nobody", "unknown learner")],
)
def test_a_bad_world_or_learner_is_refused(world: str, learner: str | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        generate_world_dataset(world, 5, seed=0, learner=learner, progress_bar=False)
