"""ChessEnv: Gymnasium and SB3 checkers, resets, rewards, bad input, rendering, determinism."""

from __future__ import annotations

import warnings
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import chess_env
from chess_env import (
    ChessEnv,
    GameOverError,
    IllegalActionError,
    InvalidPositionError,
    encode_move,
    legal_action_mask,
)
from chess_env.core.env import MATERIAL_REWARD_SCALE, PENALTY_REWARD
from chess_env.core.opponents import RandomOpponent


def action(env: ChessEnv, uci: str) -> int:
    return encode_move(chess.Move.from_uci(uci), env.board.turn)


def fixed_replies(*ucis: str) -> Any:
    """An opponent that plays the given moves in order: for hand-made reward scenarios."""
    replies = iter(ucis)
    return lambda board: chess.Move.from_uci(next(replies))


# check_env samples actions uniformly from Discrete(4672), so these configs must not raise on them.
CHECKER_CONFIGS = [
    {"illegal_action": "penalize"},
    {"illegal_action": "terminate", "obs_mode": "dict", "agent_color": "black"},
    {"illegal_action": "penalize", "agent_color": "random", "perspective": "white"},
    {"illegal_action": "terminate", "opponent": "greedy", "reward_shaping": "material"},
    {"illegal_action": "penalize", "render_mode": "rgb_array"},
]


@pytest.mark.parametrize("kwargs", CHECKER_CONFIGS)
def test_gymnasium_and_sb3_checkers_pass(kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Gymnasium's checker reports problems as warnings
        check_env(gym.make("chess_env/Chess-v0", **kwargs).unwrapped)
    with warnings.catch_warnings():
        # SB3 guesses any 3-D uint8 Box is an image; ours is 0/1 planes for an MLP or small CNN.
        warnings.filterwarnings("ignore", message=".*image.*")
        sb3_check_env(ChessEnv(**kwargs))


def test_registered_id_and_module_syntax_make_the_env() -> None:
    assert isinstance(gym.make("chess_env/Chess-v0").unwrapped, ChessEnv)
    assert isinstance(gym.make("chess_env:chess_env/Chess-v0").unwrapped, ChessEnv)


def test_reset_gives_the_board_the_mask_and_the_info() -> None:
    env = ChessEnv()
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    np.testing.assert_array_equal(obs, chess_env.board_to_tensor(chess.Board()))
    assert sorted(info["legal_moves"]) == sorted(m.uci() for m in chess.Board().legal_moves)
    np.testing.assert_array_equal(info["action_mask"], env.action_masks())
    np.testing.assert_array_equal(env.action_masks(), legal_action_mask(chess.Board()))
    assert info["fen"] == chess.STARTING_FEN and info["ply"] == 0
    assert info["outcome"] is None and info["result"] == "*" and info["opponent_move"] is None


def test_agent_as_black_sees_the_opponents_first_move_from_its_own_side() -> None:
    env = ChessEnv(agent_color="black", opponent=fixed_replies("e2e4"))
    obs, info = env.reset(seed=0)
    assert info["opponent_move"] == "e2e4" and info["agent_color"] == "black"
    assert env.board.turn == chess.BLACK
    assert obs[6, 4, 0] == 1 and obs[3, 4, 6] == 1  # own e7 pawn low, white's e4 pawn above
    white_view = ChessEnv(agent_color="black", perspective="white", opponent=fixed_replies("e2e4"))
    obs_white, _ = white_view.reset(seed=0)
    assert obs_white[4, 4, 0] == 1 and obs_white[1, 4, 6] == 1  # absolute: white first, rank 8 top


def test_every_observation_is_from_the_agents_side_even_at_the_end() -> None:
    # The agent (black) mates: the final observation is still black's view, as for value targets.
    env = ChessEnv(agent_color="black", opponent=fixed_replies("f2f3", "g2g4"))
    env.reset(seed=0)
    env.step(action(env, "e7e5"))
    obs, reward, terminated, _, info = env.step(action(env, "d8h4"))
    assert terminated and reward == 1.0 and info["outcome"] == "checkmate"
    np.testing.assert_array_equal(obs, chess_env.board_to_tensor(env.board, "black"))


def test_agent_color_random_is_drawn_from_the_seed() -> None:
    colors = {ChessEnv(agent_color="random").reset(seed=s)[1]["agent_color"] for s in range(12)}
    assert colors == {"white", "black"}
    again = [ChessEnv(agent_color="random").reset(seed=5)[1]["agent_color"] for _ in range(3)]
    assert len(set(again)) == 1


def test_win_loss_and_draw_rewards_are_from_the_agents_side() -> None:
    win = ChessEnv(opponent=fixed_replies())
    win.reset(options={"fen": "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"})
    _, reward, terminated, truncated, info = win.step(action(win, "a1a8"))
    assert (reward, terminated, truncated, info["result"]) == (1.0, True, False, "1-0")
    assert info["legal_moves"] == [] and not info["action_mask"].any()

    loss = ChessEnv(opponent="greedy")  # greedy always takes a mate in one
    loss.reset(seed=0, options={"moves": ["f2f3", "e7e5"]})
    _, reward, terminated, _, info = loss.step(action(loss, "g2g4"))
    assert (reward, terminated, info["opponent_move"], info["result"]) == (
        -1.0,
        True,
        "d8h4",
        "0-1",
    )

    draw = ChessEnv(opponent=fixed_replies())
    draw.reset(options={"fen": "k7/8/1Q6/8/8/8/8/7K w - - 0 1"})
    _, reward, terminated, _, info = draw.step(action(draw, "b6c7"))
    assert (reward, terminated, info["outcome"], info["result"]) == (
        0.0,
        True,
        "stalemate",
        "1/2-1/2",
    )


def test_material_shaping_counts_the_swing_of_the_whole_step() -> None:
    env = ChessEnv(reward_shaping="material", opponent=fixed_replies("a7a6", "b8c6"))
    env.reset(options={"fen": "rn2k3/p7/8/3q4/8/8/8/3RK3 w - - 0 1"})
    _, reward, *_ = env.step(action(env, "d1d5"))  # wins a queen, the reply is quiet
    assert reward == pytest.approx(9 * MATERIAL_REWARD_SCALE)
    _, reward, *_ = env.step(action(env, "d5d6"))
    assert reward == 0.0
    unshaped = ChessEnv(opponent=fixed_replies("a7a6"))
    unshaped.reset(options={"fen": "rn2k3/p7/8/3q4/8/8/8/3RK3 w - - 0 1"})
    assert unshaped.step(action(unshaped, "d1d5"))[1] == 0.0


def test_illegal_action_raise_names_the_move_and_changes_nothing() -> None:
    env = ChessEnv()
    env.reset(seed=0)
    before = (env.board.fen(), env.action_masks().tolist())
    with pytest.raises(IllegalActionError, match=r"\(e2e5\) is illegal"):
        env.step(action(env, "e2e5"))
    assert (env.board.fen(), env.action_masks().tolist()) == before
    env.step(action(env, "e2e4"))  # still usable


def test_illegal_action_penalize_lets_the_agent_move_again() -> None:
    env = ChessEnv(illegal_action="penalize")
    env.reset(seed=0)
    fen = env.board.fen()
    _, reward, terminated, truncated, info = env.step(action(env, "e2e5"))
    assert (reward, terminated, truncated) == (PENALTY_REWARD, False, False)
    assert "e2e5" in info["illegal_action"] and env.board.fen() == fen
    assert info["action_mask"].sum() == 20
    env.step(action(env, "e2e4"))
    assert env.board.ply() == 2


def test_illegal_action_terminate_ends_with_minus_one() -> None:
    env = ChessEnv(illegal_action="terminate")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(action(env, "e2e5"))
    assert (reward, terminated, truncated, info["outcome"]) == (-1.0, True, False, "illegal_action")
    assert not env.action_masks().any()
    with pytest.raises(GameOverError, match=r"episode is over \(illegal_action\); call reset"):
        env.step(action(env, "e2e4"))


@pytest.mark.parametrize("illegal_action", ["raise", "penalize", "terminate"])
@pytest.mark.parametrize("bad", [4672, -1, 3.0, "e2e4", None])
def test_indices_outside_the_space_always_raise(illegal_action: str, bad: object) -> None:
    env = ChessEnv(illegal_action=illegal_action)
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"out of range|not an integer"):
        env.step(bad)
    assert env.board.fen() == chess.STARTING_FEN


def test_step_before_reset_and_after_the_end_are_clear_errors() -> None:
    with pytest.raises(ResetNeeded, match="reset"):
        ChessEnv().step(0)
    env = ChessEnv(opponent=fixed_replies())
    env.reset(options={"fen": "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"})
    env.step(action(env, "a1a8"))
    with pytest.raises(GameOverError, match=r"over \(checkmate\)"):
        env.step(0)


def test_truncation_at_max_plies_counts_both_sides() -> None:
    env = ChessEnv(max_plies=4)
    env.reset(seed=1)
    legal = lambda: int(np.flatnonzero(env.action_masks())[0])  # noqa: E731
    assert env.step(legal())[3] is False
    _, reward, terminated, truncated, info = env.step(legal())
    assert (reward, terminated, truncated, info["outcome"]) == (0.0, False, True, "max_plies")
    with pytest.raises(GameOverError, match="max_plies"):
        env.step(0)


def test_reset_from_fen_and_opening() -> None:
    env = ChessEnv(agent_color="black", opponent=fixed_replies("g1f3"))
    _, info = env.reset(options={"fen": chess.STARTING_FEN, "moves": ["e2e4", "c7c5"]})
    assert info["opponent_move"] == "g1f3" and info["ply"] == 3
    assert env.board.fen() == "rnbqkbnr/pp1ppppp/8/2p5/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"fen": "not a fen"}, "does not parse"),
        ({"fen": "8/8/8/8/8/8/8/K7 w - - 0 1"}, "black has no king"),
        ({"fen": "P3k3/8/8/8/8/8/8/4K3 w - - 0 1"}, "pawns on the first or eighth rank"),
        ({"fen": "4k2R/8/8/8/8/8/8/4K3 w - - 0 1"}, "the side not to move is in check"),
        ({"fen": 42}, "FEN must be a string"),
        ({"fen": "7k/6Q1/5K2/8/8/8/8/8 b - - 0 1"}, r"already over \(checkmate\)"),
        ({"moves": ["e2e4", "e2e4"]}, r"options\['moves'\]\[1\]: move e2e4 is illegal"),
        ({"moves": ["e2e4", "zz"]}, r"options\['moves'\]\[1\]: move 'zz' is not UCI"),
        ({"moves": "e2e4"}, "must be a list of UCI moves"),
        ({"moves": ["f2f3", "e7e5", "g2g4", "d8h4", "a2a3"]}, r"\[4\] = 'a2a3': the game already"),
    ],
)
def test_bad_reset_options_are_named_and_the_old_episode_survives(
    options: dict[str, Any], match: str
) -> None:
    env = ChessEnv()
    env.reset(seed=0)
    env.step(action(env, "e2e4"))
    fen = env.board.fen()
    with pytest.raises(InvalidPositionError, match=match):
        env.reset(options=options)
    assert env.board.fen() == fen
    env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_unknown_reset_options_warn() -> None:
    with pytest.warns(UserWarning, match=r"ignoring unknown reset option\(s\) \['depth'\]"):
        ChessEnv().reset(options={"depth": 3})


def test_opponent_ending_the_game_at_reset_is_an_error() -> None:
    env = ChessEnv(agent_color="black", opponent="greedy")
    with pytest.raises(InvalidPositionError, match="opponent's first move g6g7 ended the episode"):
        env.reset(seed=0, options={"fen": "7k/8/5KQ1/8/8/8/8/8 w - - 0 1"})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"agent_color": "green"}, "agent_color must be one of"),
        ({"perspective": "black"}, "perspective must be one of"),
        ({"obs_mode": "pixels"}, "obs_mode must be one of"),
        ({"reward_shaping": "mobility"}, "reward_shaping must be one of"),
        ({"illegal_action": "ignore"}, "illegal_action must be one of"),
        ({"render_mode": "window"}, "render_mode must be one of"),
        ({"max_plies": 0}, "max_plies must be a positive integer or None"),
        ({"opponent": "kasparov"}, "unknown player 'kasparov'; a player is one of"),
    ],
)
def test_bad_constructor_arguments_name_the_parameter(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ChessEnv(**kwargs)


def test_dict_observations_carry_the_int8_mask() -> None:
    env = ChessEnv(obs_mode="dict")
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["action_mask"].dtype == np.int8
    np.testing.assert_array_equal(obs["action_mask"], info["action_mask"])


def test_render_modes() -> None:
    env = ChessEnv(render_mode="ansi", agent_color="black", opponent=fixed_replies("e2e4"))
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text.splitlines()[0].strip() == "h g f e d c b a"
    svg = ChessEnv(render_mode="svg")
    svg.reset(seed=0)
    assert str(svg.render()).startswith("<svg")
    rgb = ChessEnv(render_mode="rgb_array")
    rgb.reset(seed=0)
    image = rgb.render()
    assert isinstance(image, np.ndarray) and image.shape == (400, 400, 3)
    assert image.dtype == np.uint8 and len(np.unique(image.reshape(-1, 3), axis=0)) > 10


def test_render_without_mode_returns_none() -> None:
    env = ChessEnv()
    env.reset(seed=0)
    assert env.render() is None


def trajectory(env: ChessEnv, seed: int, steps: int = 60) -> list[tuple]:
    """Play with agent actions drawn from a seeded generator; record what the env returned."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    record = [(info["fen"], info["agent_color"])]
    for _ in range(steps):
        legal = np.flatnonzero(env.action_masks())
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(legal)))
        record.append((info["fen"], reward, terminated, truncated, obs.tobytes()))
        if terminated or truncated:
            obs, info = env.reset()
            record.append((info["fen"], info["agent_color"]))
    return record


@pytest.mark.parametrize("opponent", ["random", "greedy"])
def test_same_seed_same_trajectory(opponent: str) -> None:
    make = lambda: ChessEnv(opponent=opponent, agent_color="random", max_plies=30)  # noqa: E731
    assert trajectory(make(), 7) == trajectory(make(), 7)
    assert trajectory(make(), 7) != trajectory(make(), 8)


def test_reseeding_the_same_env_replays_the_same_game() -> None:
    env = ChessEnv(opponent=RandomOpponent(), max_plies=40)
    assert trajectory(env, 11) == trajectory(env, 11)
