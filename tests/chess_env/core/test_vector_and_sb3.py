"""ChessEnv in vectorised settings: Gymnasium's AsyncVectorEnv, SB3's VecEnvs and MaskablePPO."""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest

from chess_env import ChessEnv
from chess_env.core.encoding import board_to_tensor

try:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv
except ImportError:  # the "train" extra is not installed: only the Gymnasium test runs
    torch = None
else:
    # Small nets on a 2-core CI box: more threads only add contention (and fork hazards).
    torch.set_num_threads(1)

needs_sb3 = pytest.mark.skipif(
    torch is None, reason="needs the train extra (torch, stable-baselines3, sb3-contrib)"
)

# "fork" starts workers without re-importing torch (fast); elsewhere the platform default.
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
START_OBS = board_to_tensor(chess.Board())


def masked_actions(masks: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """One random legal action per sub-env; 0 for a finished sub-env (its mask is all False)."""
    return np.array(
        [int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0 for mask in masks],
        dtype=np.int64,
    )


def short_env(max_plies: int = 40) -> ChessEnv:
    """A ChessEnv whose games are truncated quickly, so a short run spans several episodes."""
    return ChessEnv(max_plies=max_plies)


# -- Gymnasium AsyncVectorEnv -----------------------------------------------------------------


def run_async(steps: int, seed: int) -> tuple[list[list[str]], int]:
    """Drive ``make_vec(..., "async")`` with legal actions; the fen trajectory and episode count."""
    envs = gym.make_vec(
        "chess_env/Chess-v0",
        num_envs=2,
        vectorization_mode="async",
        vector_kwargs={"context": START_METHOD},
        max_plies=16,
    )
    try:
        assert isinstance(envs, gym.vector.AsyncVectorEnv)
        obs, infos = envs.reset(seed=seed)
        rng = np.random.default_rng(seed)
        fens = [list(infos["fen"])]
        ended = np.zeros(2, dtype=bool)
        episodes = 0
        for _ in range(steps):
            masks = envs.call("action_masks")
            # A sub-env that ended last step shows an all-False mask; its next step is a reset.
            assert [not mask.any() for mask in masks] == list(ended)
            obs, rewards, terminated, truncated, infos = envs.step(masked_actions(masks, rng))
            assert obs.dtype == np.uint8
            assert obs in envs.observation_space
            for index in np.flatnonzero(ended):
                np.testing.assert_array_equal(obs[index], START_OBS)
                assert rewards[index] == 0.0
                assert infos["fen"][index] == chess.STARTING_FEN
            ended = terminated | truncated
            episodes += int(ended.sum())
            fens.append(list(infos["fen"]))
        return fens, episodes
    finally:
        envs.close()


def test_async_vector_env_with_masks_and_autoreset() -> None:
    fens, episodes = run_async(steps=100, seed=0)
    assert episodes >= 2 * 5, "16-ply games: each sub-env finishes several in 100 steps"
    assert [fen[0] for fen in fens] != [fen[1] for fen in fens], "sub-envs get distinct seeds"
    assert run_async(steps=100, seed=0)[0] == fens, "seeded sub-envs replay exactly"


# -- SB3 SubprocVecEnv ------------------------------------------------------------------------


@needs_sb3
def test_sb3_subproc_vec_env_with_masks() -> None:
    venv = SubprocVecEnv([lambda: short_env(max_plies=16)] * 2, start_method=START_METHOD)
    try:
        venv.seed(0)
        obs = venv.reset()
        assert obs.shape == (2, 8, 8, 12) and obs.dtype == np.uint8
        rng = np.random.default_rng(0)
        episodes = 0
        for _ in range(60):
            masks = np.stack(venv.env_method("action_masks"))
            assert masks.shape == (2, 4672) and masks.dtype == bool
            assert masks.any(axis=1).all(), "SB3 resets finished envs at once"
            obs, rewards, dones, infos = venv.step(masked_actions(masks, rng))
            assert set(rewards.tolist()) <= {-1.0, 0.0, 1.0}
            assert obs.dtype == np.uint8 and venv.observation_space.contains(obs[0])
            for index in np.flatnonzero(dones):
                episodes += 1
                assert infos[index]["terminal_observation"].shape == (8, 8, 12)
                np.testing.assert_array_equal(obs[index], START_OBS)
                assert int(venv.env_method("action_masks", indices=[index])[0].sum()) == 20
        assert episodes >= 2 * 3
    finally:
        venv.close()


# -- MaskablePPO ------------------------------------------------------------------------------


def maskable_ppo(env: Any) -> Any:
    """The smallest MaskablePPO that still runs full rollouts and an update."""
    return MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu"
    )


@needs_sb3
def test_maskable_ppo_learns_without_illegal_moves() -> None:
    """illegal_action="raise": a single illegal action would abort ``learn``."""
    venv = make_vec_env(lambda: ChessEnv(illegal_action="raise"), n_envs=2, seed=0)
    model = maskable_ppo(venv)
    model.learn(256)
    assert model.num_timesteps == 256
    venv.close()


@needs_sb3
def test_maskable_ppo_learns_on_subproc_vec_env() -> None:
    """The masks come back from worker processes through ``env_method("action_masks")``."""
    venv = make_vec_env(
        short_env,
        n_envs=2,
        seed=0,
        vec_env_cls=SubprocVecEnv,
        vec_env_kwargs={"start_method": START_METHOD},
    )
    try:
        model = maskable_ppo(venv)
        model.learn(256)
        assert model.num_timesteps == 256
    finally:
        venv.close()


@needs_sb3
@pytest.mark.parametrize("deterministic", [True, False])
def test_maskable_ppo_predict_plays_a_whole_legal_game(deterministic: bool) -> None:
    env = short_env(max_plies=40)
    model = maskable_ppo(env)
    obs, _ = env.reset(seed=0)
    steps, done = 0, False
    while not done:
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=deterministic)
        assert mask[int(action)], f"masked-out action {action} in {env.board.fen()}"
        obs, _, terminated, truncated, info = env.step(int(action))
        steps += 1
        done = terminated or truncated
    assert info["outcome"] is not None
    assert steps <= 20
    env.close()
