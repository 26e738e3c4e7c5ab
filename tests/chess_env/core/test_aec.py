"""The PettingZoo AEC env: PettingZoo's own tests, lockstep with chess_v6, rewards, errors."""

from __future__ import annotations

import chess
import numpy as np
import pytest
from pettingzoo.classic import chess_v6
from pettingzoo.test import api_test, seed_test

from chess_env import ChessAECEnv, IllegalActionError, aec_env, board_to_tensor, encode_move


def play(env: object, *ucis: str) -> None:
    for uci in ucis:
        board: chess.Board = env.unwrapped.board  # type: ignore[attr-defined]
        env.step(encode_move(chess.Move.from_uci(uci), board.turn))  # type: ignore[attr-defined]


def test_pettingzoo_api_test_passes() -> None:
    with pytest.warns(UserWarning):  # api_test passes reset options of its own; we warn on them
        api_test(aec_env(), num_cycles=300)


def test_pettingzoo_seed_test_passes() -> None:
    seed_test(aec_env, num_cycles=200)


def test_lockstep_with_pettingzoo_chess_v6_same_masks_and_results() -> None:
    """Same random moves in both envs: same masks every ply and the same result at the end.

    chess_v6 claims draws with python-chess's look-ahead (one ply early); chess_env.core.rules
    documents that we wait for the move, so that one case may end chess_v6 first.
    """
    rng = np.random.default_rng(0)
    endings = set()
    for _ in range(4):
        ours, theirs = aec_env(max_plies=None), chess_v6.env()
        ours.reset(seed=0)
        theirs.reset(seed=0)
        for agent in theirs.agent_iter():
            assert ours.agent_selection == agent
            obs, reward, termination, _, _ = theirs.last()
            our_obs, our_reward, our_termination, _, _ = ours.last()
            board = ours.unwrapped.board
            if termination and not our_termination:
                assert board.can_claim_draw() and not board.is_repetition(3)
                endings.add("look-ahead claim")
                break
            assert (our_reward, our_termination) == (reward, termination)
            if termination:  # chess_v6 leaves the last mask set; ours is all zeros once over
                endings.add(ours.unwrapped.infos[agent]["outcome"])
                break
            np.testing.assert_array_equal(our_obs["action_mask"], obs["action_mask"])
            move = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            theirs.step(move)
            ours.step(move)
    assert endings - {"look-ahead claim"}


def test_observations_are_from_each_agents_side_and_only_the_mover_has_a_mask() -> None:
    env = aec_env()
    env.reset(seed=0)
    play(env, "e2e4")
    board = env.unwrapped.board
    white, black = env.observe("player_0"), env.observe("player_1")
    np.testing.assert_array_equal(white["observation"], board_to_tensor(board, "white"))
    np.testing.assert_array_equal(black["observation"], board_to_tensor(board, "black"))
    assert white["observation"].dtype == np.uint8 and white["action_mask"].dtype == np.int8
    assert not white["action_mask"].any() and black["action_mask"].sum() == 20
    assert env.agent_selection == "player_1"


def test_fools_mate_rewards_black_and_every_agent_sees_the_end() -> None:
    env = aec_env()
    env.reset(seed=0)
    play(env, "f2f3", "e7e5", "g2g4", "d8h4")
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}
    assert env.terminations == {"player_0": True, "player_1": True}
    assert env.infos["player_0"] == {"outcome": "checkmate", "result": "0-1"}
    seen = {}
    for agent in env.agent_iter():
        _, reward, termination, _, _ = env.last()
        seen[agent] = (reward, termination)
        env.step(None)
    assert seen == {"player_0": (-1.0, True), "player_1": (1.0, True)}


def test_illegal_action_through_the_wrappers_costs_the_offender_the_game(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = aec_env()
    env.reset(seed=0)
    env.step(encode_move(chess.Move.from_uci("e2e5"), chess.WHITE))
    assert "Illegal move made" in caplog.text
    assert env.rewards["player_0"] == -1
    assert all(env.terminations.values())


def test_the_bare_env_raises_a_named_error_and_keeps_its_state() -> None:
    env = ChessAECEnv()
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"\(e2e5\) is illegal"):
        env.step(encode_move(chess.Move.from_uci("e2e5"), chess.WHITE))
    assert env.board.fen() == chess.STARTING_FEN and env.agent_selection == "player_0"


def test_truncation_at_max_plies() -> None:
    env = aec_env(max_plies=2)
    env.reset(seed=0)
    play(env, "e2e4", "e7e5")
    assert env.truncations == {"player_0": True, "player_1": True}
    assert not any(env.terminations.values())
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_1"]["outcome"] == "max_plies"


def test_reset_from_a_fen_with_black_to_move() -> None:
    env = aec_env()
    env.reset(options={"fen": "4k3/8/8/8/8/8/4P3/4K3 b - - 0 1"})
    assert env.agent_selection == "player_1"
    assert env.observe("player_1")["action_mask"].sum() == 5


def test_render_ansi_and_spaces_are_the_same_objects_every_call() -> None:
    env = aec_env(render_mode="ansi")
    env.reset(seed=0)
    assert "a b c d e f g h" in env.render()
    assert env.observation_space("player_0") is env.observation_space("player_0")
    assert env.action_space("player_1").n == 4672
    with pytest.raises(ValueError, match="render_mode must be one of"):
        ChessAECEnv(render_mode="window")
