"""One short PPO iteration per env on a local Ray, sampling in the driver and in an env runner."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from training.rllib import RLlibTrainingResult, train_rllib
from training.rllib.envs import RLlibChessAEC, RLlibChessObservation

pytest.importorskip("ray", reason="needs ray[rllib]: make test-distributed")

# One short iteration: a few seconds per run on 2 cores, still a full sample-learn-sync cycle.
TINY: dict[str, Any] = {
    "iterations": 1,
    "train_batch_size": 128,
    "minibatch_size": 64,
    "num_epochs": 1,
    "fcnet_hiddens": (32,),
}

pytestmark = pytest.mark.usefixtures("ray_session")
RUNNERS = pytest.mark.parametrize("num_env_runners", [0, 1])


def _check_result(result: RLlibTrainingResult, policies: set[str]) -> None:
    """What every run must report: the budget sampled, learner numbers, a lossless round trip."""
    assert result.iterations == len(result.history) == result.config.iterations
    assert result.total_timesteps >= result.config.train_batch_size
    assert result.episodes >= 1 and result.mean_episode_length is not None
    assert set(result.policies) == policies
    for stats in result.policies.values():
        assert stats.policy_loss is not None and stats.entropy is not None
        assert stats.module_steps_trained > 0 and stats.trainable_parameters > 0
    assert result.duration_sec > 0 and result.steps_per_sec > 0
    payload = result.model_dump(mode="json")
    json.dumps(payload, allow_nan=False)
    assert RLlibTrainingResult.model_validate(payload) == result


@RUNNERS
def test_single_agent_chess_is_masked(num_env_runners: int) -> None:
    result = train_rllib(
        env="chess_env/Chess-v0",
        env_config={"max_plies": 16},
        num_env_runners=num_env_runners,
        **TINY,
    )
    _check_result(result, {"default_policy"})
    assert result.masked and not result.multi_agent and result.cluster == "local"
    assert result.illegal_actions == 0  # an action outside the mask would end a game at -1
    assert 1 <= result.mean_episode_length <= 8  # the agent's moves, 16 plies at most
    assert result.loss_policy == result.policies["default_policy"].policy_loss
    assert result.num_env_runners == num_env_runners and result.ray_version


@RUNNERS
def test_aec_chess_self_play_maps_both_players_to_one_policy(num_env_runners: int) -> None:
    result = train_rllib(
        env="chess:selfplay",
        env_config={"max_plies": 16},
        num_env_runners=num_env_runners,
        **TINY,
    )
    _check_result(result, {"shared"})
    assert result.multi_agent and result.illegal_actions == 0
    assert set(result.agent_episode_rewards) == {"player_0", "player_1"}
    assert 1 <= result.mean_episode_length <= 16  # env steps: both players' moves


@RUNNERS
def test_world_shares_one_policy_between_its_agents(num_env_runners: int) -> None:
    # forage episodes last 200 turns: a 256-step batch finishes one
    budget = {**TINY, "train_batch_size": 256}
    result = train_rllib(env="world:forage", num_env_runners=num_env_runners, **budget)
    _check_result(result, {"shared"})
    assert not result.masked and result.illegal_actions is None
    assert set(result.agent_episode_rewards) == {"Forager_1", "Forager_2", "Forager_3"}
    assert result.agent_timesteps == 3 * result.total_timesteps


def test_world_with_one_policy_per_agent() -> None:
    budget = {**TINY, "train_batch_size": 200}  # trade episodes last 100 turns
    result = train_rllib(env="world:trade", policies="per_agent", num_env_runners=0, **budget)
    agents = {"Trader_1", "Trader_2", "Trader_3", "Trader_4"}
    _check_result(result, agents)
    assert result.loss_policy is None  # no single policy to report at the top level


@pytest.mark.parametrize(
    ("env", "wrapper", "method"),
    [
        ("chess_env/Chess-v0", RLlibChessObservation, "observation"),
        ("chess:selfplay", RLlibChessAEC, "observe"),
    ],
)
def test_actions_outside_the_mask_would_be_counted(
    monkeypatch: pytest.MonkeyPatch, env: str, wrapper: type, method: str
) -> None:
    """The counter is live: a module shown an all-ones mask plays illegal moves, and the run
    reports them (the driver samples, so the patched wrapper is the one that runs)."""
    original = getattr(wrapper, method)

    def everything_allowed(self: Any, *args: Any) -> Any:
        observation = original(self, *args)
        if observation is None:
            return None
        return {**observation, "action_mask": np.ones_like(observation["action_mask"])}

    monkeypatch.setattr(wrapper, method, everything_allowed)
    result = train_rllib(env=env, env_config={"max_plies": 16}, num_env_runners=0, **TINY)
    assert result.illegal_actions is not None and result.illegal_actions > 0


def test_a_bad_env_config_fails_before_training() -> None:
    with pytest.raises(ValueError, match="does not fit chess_env/Chess-v0"):
        train_rllib(env="chess_env/Chess-v0", env_config={"turbo": 1}, **TINY)


def test_two_iterations_make_a_curve_and_a_checkpoint(tmp_path: Any) -> None:
    result = train_rllib(
        env="chess_env/Chess-v0",
        env_config={"max_plies": 16},
        num_env_runners=0,
        checkpoint_dir=str(tmp_path / "ckpt"),
        **{**TINY, "iterations": 2},
    )
    assert [item.iteration for item in result.history] == [1, 2]
    assert result.history[0].timesteps < result.history[1].timesteps == result.total_timesteps
    # RLlib reports the parameter count in the first iteration only (NaN after it)
    assert result.policies["default_policy"].trainable_parameters > 0
    assert result.checkpoint == str(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / "rllib_checkpoint.json").exists()
