"""The served chess observation (built from the rules core) says what the Gym ``ChessEnv`` says."""

from __future__ import annotations

import random
from typing import Any

import chess
import numpy as np
import pytest

from chess_env.core.encoding import encode_move
from chess_env.core.env import ChessEnv
from chess_env.serving.app import ChessAction, ChessAdapter


def expected_fields(env: ChessEnv, info: dict[str, Any], tensor: np.ndarray) -> dict[str, Any]:
    return {
        "fen": info["fen"],
        "legal_moves": info["legal_moves"],
        "is_check": env.board.is_check(),
        "result": info["result"],
        "outcome": info["outcome"],
        "agent_color": info["agent_color"],
        "opponent_move": info["opponent_move"],
        "ply": info["ply"],
        "board_tensor": tensor.tolist(),
    }


@pytest.mark.parametrize("agent_color", ["white", "black", "random"])
def test_served_games_match_the_gym_env_step_by_step(agent_color: str) -> None:
    endings: set[str] = set()
    for seed in range(6):
        adapter, env = ChessAdapter(), ChessEnv(opponent="random", agent_color=agent_color)
        served = adapter.reset(seed=seed, agent_color=agent_color, include_tensor=True)
        tensor, info = env.reset(seed=seed)
        chooser, done = random.Random(seed), False
        while True:
            observation = served.observation.model_dump(exclude={"ascii"})
            assert observation == expected_fields(env, info, tensor), info["fen"]
            if done:
                break
            move = chess.Move.from_uci(chooser.choice(info["legal_moves"]))
            index = encode_move(move, env.board.turn)
            # Half the moves as text (UCI or SAN), half as the index the Gym env takes.
            action = chooser.choice(
                [ChessAction(move=move.uci()), ChessAction(move=env.board.san(move)),
                 ChessAction(action=index)]
            )  # fmt: skip
            served = adapter.step(action)
            tensor, reward, terminated, truncated, info = env.step(index)
            done = terminated or truncated
            assert (served.reward, served.done) == (reward, done)
            assert served.metadata == ({"truncated": True} if truncated else {})
        endings.add(info["outcome"])
        adapter.close()
        env.close()
    assert len(endings) > 1  # the games ended in more than one way


def test_the_tensor_is_left_out_unless_asked_for() -> None:
    adapter = ChessAdapter()
    first = adapter.reset(seed=0)
    assert "board_tensor" not in first.to_wire()["observation"]
    after = adapter.step(ChessAction(move=first.observation.legal_moves[0]))
    assert "board_tensor" not in after.to_wire()["observation"]
