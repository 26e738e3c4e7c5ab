"""The RLlib integration's ray-free parts: env wrappers, config, DTO, callback, CLI errors.

These run in the main venv too (no ray there), so a broken wrapper or a CLI that imports ray
eagerly fails ``make test``, not only ``make test-distributed``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pydantic import ValidationError

from chess_env import ChessEnv, aec_env
from training.__main__ import main
from training.config import TrainingConfigError
from training.rllib.config import RLlibConfig, load_rllib_config
from training.rllib.dto import RLlibIteration, RLlibPolicyStats, RLlibTrainingResult
from training.rllib.envs import (
    ENV_NAMES,
    FlatWorld,
    RLlibChessAEC,
    RLlibChessObservation,
    agent_ids,
    check_env_config,
    make_raw_env,
)
from training.rllib.run import ILLEGAL_ACTIONS_METRIC, count_illegal_actions

# -- env wrappers -----------------------------------------------------------------------------


def test_single_agent_chess_observations_stay_in_their_space_and_info_stays_light() -> None:
    env = make_raw_env("chess_env/Chess-v0", {"max_plies": 40})
    assert isinstance(env, RLlibChessObservation)
    rng = np.random.default_rng(0)
    observation, info = env.reset(seed=0)
    done = False
    while not done:
        assert env.observation_space.contains(observation)
        assert "action_mask" not in info and "legal_moves" not in info
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert info["illegal_actions"] == 0 and info["outcome"] is not None


def test_single_agent_chess_counts_an_action_outside_the_mask_and_ends_the_game() -> None:
    env = RLlibChessObservation(ChessEnv(obs_mode="dict", illegal_action="terminate"))
    observation, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    _, reward, terminated, _, info = env.step(illegal)
    assert (reward, terminated, info["illegal_actions"]) == (-1.0, True, 1)
    assert env.reset(seed=1)[1]["illegal_actions"] == 0


def test_single_agent_wrapper_refuses_the_board_only_observation() -> None:
    with pytest.raises(ValueError, match=r"obs_mode='dict'"):
        RLlibChessObservation(ChessEnv())


@pytest.mark.filterwarnings("ignore::UserWarning")  # api_test's hints for Dict observations
def test_aec_chess_wrapper_passes_pettingzoo_api_test() -> None:
    api_test(RLlibChessAEC(aec_env(max_plies=30)), num_cycles=40)


def test_aec_chess_wrapper_counts_an_illegal_move_before_the_game_ends() -> None:
    env = RLlibChessAEC(aec_env())
    env.reset(seed=0)
    observation, *_ = env.last()
    env.step(int(np.flatnonzero(observation["action_mask"] == 0)[0]))
    *_, terminated, _, info = env.last()
    assert terminated and info["illegal_actions"] == 1
    assert env.rewards["player_0"] == -1.0


def test_world_wrapper_passes_parallel_api_test_with_one_space_for_all_agents() -> None:
    from multiagent import parallel_env

    for world in ("forage", "trade"):
        env = FlatWorld(parallel_env(world, observability=True))
        first, *others = (env.observation_space(agent) for agent in env.possible_agents)
        assert all(space is first for space in others)  # trade's agents see different variables
        parallel_api_test(env, num_cycles=30)


def test_agent_ids_name_each_seat() -> None:
    assert agent_ids("chess:selfplay") == ("player_0", "player_1")
    assert agent_ids("world:forage") == ("Forager_1", "Forager_2", "Forager_3")
    with pytest.raises(ValueError, match="single-agent"):
        agent_ids("chess_env/Chess-v0")


def test_a_bad_env_config_names_the_env() -> None:
    with pytest.raises(ValueError, match=r"does not fit chess_env/Chess-v0: .*turbo"):
        check_env_config("chess_env/Chess-v0", {"turbo": True})
    with pytest.raises(ValueError, match=r"does not fit chess:selfplay: .*opponent"):
        check_env_config("chess:selfplay", {"max_plies": 10, "opponent": "random"})


# -- config -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env=CartPole-v1"], "env: Value error, unknown env 'CartPole-v1' for RLlib"),
        (["iterations=0"], "iterations: Input should be greater than or equal to 1"),
        (["num_env_runners=-1"], "num_env_runners: Input should be greater than or equal to 0"),
        (["minibatch_size=512", "train_batch_size=256"], "must not exceed train_batch_size"),
        (["policies=per_agent"], "needs a multi-agent env"),
        (["fcnet_hiddens=[64, 0]"], "layer sizes must be positive"),
        (["turbo=true"], "turbo: Extra inputs are not permitted"),
    ],
)
def test_bad_configs_are_refused_naming_the_field(overrides: list[str], message: str) -> None:
    with pytest.raises(TrainingConfigError, match="rllib config: ") as caught:
        load_rllib_config(None, overrides)
    assert message in str(caught.value)


def test_config_reads_yaml_then_flags_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "rllib.yaml"
    path.write_text("env: world:forage\niterations: 5\nnum_env_runners: 3\n")
    config = load_rllib_config(path, ["num_env_runners=2"], iterations=4)
    assert (config.env, config.iterations, config.num_env_runners) == ("world:forage", 4, 2)


def test_every_env_name_is_a_valid_config() -> None:
    assert [RLlibConfig(env=name).env for name in ENV_NAMES] == list(ENV_NAMES)


# -- DTO --------------------------------------------------------------------------------------


def _result(**changes: Any) -> RLlibTrainingResult:
    stats = RLlibPolicyStats(policy_loss=0.1, vf_loss=float("nan"), entropy=3.1)
    fields: dict[str, Any] = {
        "env_id": "chess:selfplay",
        "masked": True,
        "multi_agent": True,
        "seed": 0,
        "ray_version": "2.0.0",
        "cluster": "local",
        "num_env_runners": 1,
        "cluster_cpus": 2.0,
        "iterations": 1,
        "total_timesteps": 128,
        "agent_timesteps": 128,
        "episodes": 3,
        "mean_episode_reward": float("nan"),
        "agent_episode_rewards": {"player_1": 0.0, "player_0": float("inf")},
        "illegal_actions": 0,
        "loss_policy": 0.1,
        "policies": {"shared": stats},
        "history": (RLlibIteration(iteration=1, timesteps=128, episodes=3, duration_sec=1.5),),
        "duration_sec": 1.5,
        "setup_sec": 4.0,
        "steps_per_sec": 128 / 1.5,
        "config": RLlibConfig(env="chess:selfplay"),
    }
    return RLlibTrainingResult(**{**fields, **changes})


def test_result_dto_round_trips_through_json_without_nan() -> None:
    result = _result()
    payload = result.model_dump(mode="json")
    json.dumps(payload, allow_nan=False)
    assert RLlibTrainingResult.model_validate(payload) == result
    assert result.mean_episode_reward is None and result.policies["shared"].vf_loss is None
    assert result.agent_episode_rewards == {"player_1": 0.0}  # infinite returns dropped


def test_result_dto_is_frozen_and_versioned() -> None:
    result = _result()
    with pytest.raises(ValidationError):
        result.episodes = 4  # type: ignore[misc]
    with pytest.raises(ValidationError, match="schema version 1, got 2"):
        RLlibTrainingResult.model_validate({**result.model_dump(), "schema_version": 2})


# -- the illegal-action callback --------------------------------------------------------------


class _Logger:
    def __init__(self) -> None:
        self.logged: list[tuple[str, int, str]] = []

    def log_value(self, key: str, value: int, *, reduce: str) -> None:
        self.logged.append((key, value, reduce))


def test_callback_logs_the_episode_count_once_for_both_chess_players() -> None:
    logger = _Logger()
    multi = SimpleNamespace(
        agent_episodes={},
        get_infos=lambda index: {
            "player_0": {"illegal_actions": 1},
            "player_1": {ILLEGAL_ACTIONS_METRIC: 1},
        },
    )
    single = SimpleNamespace(get_infos=lambda index: {ILLEGAL_ACTIONS_METRIC: 2})
    count_illegal_actions(episode=multi, metrics_logger=logger)
    count_illegal_actions(episode=single, metrics_logger=logger)
    count_illegal_actions(episode=single, metrics_logger=None)
    assert logger.logged == [
        (ILLEGAL_ACTIONS_METRIC, 1, "lifetime_sum"),
        (ILLEGAL_ACTIONS_METRIC, 2, "lifetime_sum"),
    ]


# -- the CLI without Ray ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--env", "nope"], "unknown env 'nope' for RLlib; expected one of chess_env/Chess-v0"),
        (["--iterations", "0"], "iterations: Input should be greater than or equal to 1"),
        (["--num-env-runners", "-2"], "num_env_runners: Input should be greater than or equal"),
    ],
)
def test_cli_refuses_bad_input_before_starting_ray(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["rllib", *flags, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "result.json").exists()


def test_rllib_flags_are_refused_by_the_other_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["eval", "--iterations", "3"])
    assert caught.value.code == 2
    assert "are for rllib only" in capsys.readouterr().err


def test_without_ray_the_cli_says_which_extra_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    assert main(["rllib", "--env", "chess_env/Chess-v0", "--out", str(tmp_path)]) == 2
    assert "Ray RLlib is not installed" in (err := capsys.readouterr().err)
    assert 'pip install -e ".[distributed]"' in err
