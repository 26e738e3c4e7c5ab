"""Gymnasium and PettingZoo conventions a new user relies on: masked sampling, "human" rendering,
PettingZoo's and Gymnasium's own checkers on the bare envs."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import chess
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo import AECEnv
from pettingzoo.test import api_test, render_test

import chess_env  # noqa: F401 -- registers chess_env/Chess-v0
from chess_env import ChessAECEnv, ChessEnv, aec_env, decode_action, encode_move
from chess_env.core.aec import raw_env
from chess_env.core.render import render_ansi


def e2e4() -> int:
    return encode_move(chess.Move.from_uci("e2e4"), chess.WHITE)


def replies(*ucis: str) -> object:
    moves = iter(ucis)
    return lambda board: chess.Move.from_uci(next(moves))


# -- the legal-action mask in info: int8, for Gymnasium's masked sample -----------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masked_sample_plays_seeded_games_to_the_end_with_legal_moves_only(seed: int) -> None:
    env = gym.make("chess_env/Chess-v0", agent_color="random")
    env.action_space.seed(seed)
    _, info = env.reset(seed=seed)
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated):
        action = env.action_space.sample(mask=info["action_mask"])
        board = env.unwrapped.board  # type: ignore[attr-defined]
        assert decode_action(action, board) in board.legal_moves
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
    assert steps > 10 and info["outcome"] not in (None, "illegal_action")
    assert info["result"] in ("1-0", "0-1", "1/2-1/2", "*")


def test_info_mask_is_int8_and_equals_action_masks_every_step_and_at_the_end() -> None:
    env = ChessEnv(max_plies=40)
    env.action_space.seed(3)
    _, info = env.reset(seed=3)
    done = False
    while not done:
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (4672,) and set(np.unique(mask)) <= {0, 1}
        assert env.action_masks().dtype == bool
        np.testing.assert_array_equal(mask.astype(bool), env.action_masks())
        assert int(mask.sum()) == len(info["legal_moves"])
        _, _, terminated, truncated, info = env.step(env.action_space.sample(mask=mask))
        done = terminated or truncated
    assert info["action_mask"].dtype == np.int8 and not info["action_mask"].any()
    assert not env.action_masks().any()


def test_dict_observation_mask_is_int8_inside_its_space_and_equals_the_info_mask() -> None:
    env = ChessEnv(obs_mode="dict", max_plies=20)
    env.action_space.seed(5)
    obs, info = env.reset(seed=5)
    done = False
    while True:
        assert env.observation_space.contains(obs)
        assert obs["action_mask"].dtype == info["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(obs["action_mask"], info["action_mask"])
        assert obs["action_mask"] is not info["action_mask"]  # each caller gets its own array
        if done:
            break
        obs, _, terminated, truncated, info = env.step(
            env.action_space.sample(mask=obs["action_mask"])
        )
        done = terminated or truncated
    assert not obs["action_mask"].any()


# -- render_mode="human": printed inside reset and step, render() returns None ------------------


def test_chess_env_human_prints_the_board_on_reset_and_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = ChessEnv(render_mode="human", agent_color="black", opponent=replies("e2e4", "g1f3"))
    env.reset(seed=0)
    out = capsys.readouterr().out
    assert render_ansi(env.board, chess.BLACK) in out and "last move e2e4" in out
    assert out.splitlines()[0].strip() == "h g f e d c b a"  # the agent's side at the bottom
    env.step(encode_move(chess.Move.from_uci("e7e5"), chess.BLACK))
    out = capsys.readouterr().out
    assert render_ansi(env.board, chess.BLACK) in out and "last move g1f3" in out
    assert env.render() is None
    assert render_ansi(env.board, chess.BLACK) in capsys.readouterr().out
    for mode in (None, "ansi"):  # only "human" prints
        quiet = ChessEnv(render_mode=mode)
        quiet.reset(seed=0)
        quiet.step(e2e4())
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("make", [raw_env, aec_env])
def test_aec_human_prints_the_board_on_reset_and_step(
    make: Callable[..., AECEnv], capsys: pytest.CaptureFixture[str]
) -> None:
    env = make(render_mode="human")
    env.reset(seed=0)
    assert render_ansi(chess.Board()) in capsys.readouterr().out
    env.step(e2e4())
    out = capsys.readouterr().out
    assert render_ansi(env.unwrapped.board) in out and "last move e2e4" in out
    assert env.render() is None
    assert render_ansi(env.unwrapped.board) in capsys.readouterr().out
    env.close()


def test_human_is_a_declared_render_mode_of_both_envs() -> None:
    assert "human" in ChessEnv.metadata["render_modes"]
    assert "human" in ChessAECEnv.metadata["render_modes"]


# -- the checkers of PettingZoo and Gymnasium ---------------------------------------------------


def test_pettingzoo_api_test_passes_on_the_bare_env() -> None:
    with pytest.warns(UserWarning):  # api_test passes reset options of its own; we warn on them
        api_test(raw_env(), num_cycles=300)


@pytest.mark.parametrize("make", [raw_env, aec_env])
def test_pettingzoo_render_test_passes_with_every_mode(make: Callable[..., AECEnv]) -> None:
    render_test(make)


def test_gymnasium_check_env_passes_with_human_rendering() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Gymnasium's checker reports problems as warnings
        env = gym.make("chess_env/Chess-v0", render_mode="human", illegal_action="penalize")
        check_env(env.unwrapped)


def test_text_env_human_prints_each_observation(capsys: pytest.CaptureFixture[str]) -> None:
    env = gym.make("chess_env/ChessText-v0", render_mode="human")
    observation, _ = env.reset(seed=0)
    assert capsys.readouterr().out == observation + "\n\n"
    observation, *_ = env.step("Ke3")  # refused: the reason is shown too
    assert "rejected (cannot_move_there)" in capsys.readouterr().out
    assert env.render() is None and capsys.readouterr().out == observation + "\n\n"
    check_env(
        gym.make("chess_env/ChessText-v0", render_mode="human").unwrapped, skip_render_check=False
    )
