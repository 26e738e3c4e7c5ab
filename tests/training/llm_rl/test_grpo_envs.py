"""Real ``GRPOTrainer`` steps on the package's TRL environments, on the CPU, offline.

The tiny model of ``tests/support/tiny_lm.py`` is warmed up (once for the module) to call the
tools of a chess puzzle (``ChessToolEnv`` on a mate in one of the shipped task set, the row as
``seed_dataset`` makes it), of a commons fisher (``WorldToolEnv``) and of the commons served over
WebSocket (``RemoteToolEnv``), then trained with GRPO on each of them alone and on the first two
at once (TRL's dict mode). What is checked: the exact
tools TRL extracts, that the model's tool calls reach the environment, that the rewards inside a
group differ (else the advantage is zero), that the parameters move, and that the same seed gives
the same run. These runs prove the plumbing, not learning.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import pytest

pytest.importorskip("trl")
import torch
from trl import GRPOTrainer

from multiagent.server import create_world_app
from training.llm_rl import chess_tool_env, remote_tool_env, world_tool_env
from training.llm_rl.datasets import seed_dataset

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_server
from tiny_lm import TinyToolLM, tool_calling_lm

PUZZLE: dict[str, Any] = seed_dataset(1, kinds="mate_in_1", seed=0)[0]
_OTHERS = sorted(move.uci() for move in chess.Board(PUZZLE["fen"]).legal_moves
                 if move.uci() not in PUZZLE["answers"])  # fmt: skip
# Its two mates and two moves that are not: a group of four rewards is rarely all the same.
CHESS_MOVES = (PUZZLE["answers"][0], _OTHERS[0], PUZZLE["answers"][1], _OTHERS[1])
HARVESTS = (2.0, 5.0, 9.0, 14.0)
TIMING = frozenset({"step_time", "train_runtime", "train_samples_per_second",
                    "train_steps_per_second"})  # fmt: skip
FACTORIES = {
    "chess": chess_tool_env(prompt="game_arena"),  # the FEN: a short prompt for a tiny model
    "world": world_tool_env("commons", "Fisher_1", others="noop"),
}


def chess_row() -> dict[str, Any]:
    return {"environment": "chess", **PUZZLE}


def world_row() -> dict[str, Any]:
    prompt = [{"role": "user", "content": "Fish with the act tool:\n"}]
    return {"environment": "world", "prompt": prompt, "seed": 0}


def alone(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "environment"}


def demonstrated(row: dict[str, Any], k: int) -> tuple[str, dict[str, Any]]:
    if row["environment"] == "chess":
        return "move", {"move": CHESS_MOVES[k % len(CHESS_MOVES)]}
    return "act", {"harvest": HARVESTS[k % len(HARVESTS)]}


@pytest.fixture(scope="module")
def commons_server() -> Iterator[str]:
    app = create_world_app("commons", client_seeds=True, max_sessions=64)
    with live_server(app) as (_, address):
        yield f"http://{address}"


def remote_factory(base_url: str) -> Any:
    return remote_tool_env(base_url, reset_options={"agent": "Fisher_1", "include_text": True})


@pytest.fixture(scope="module")
def tiny_tool_lm(commons_server: str) -> TinyToolLM:
    """Warmed up on the three envs: the served commons' tool is generated from the server's
    JSON Schema, so its text differs from the local commons tool's."""
    factories = {**FACTORIES, "remote": remote_factory(commons_server)}
    rows = [chess_row(), world_row(), {**world_row(), "environment": "remote"}]
    return tool_calling_lm(factories, rows, demonstrated, repeats=8)


def steps(trainer: GRPOTrainer) -> list[dict[str, Any]]:
    return [{k: v for k, v in entry.items() if k not in TIMING}
            for entry in trainer.state.log_history[:-1]]  # fmt: skip


def changed(before: torch.nn.Module, after: torch.nn.Module) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before.parameters(), after.parameters(),
                                                     strict=True))  # fmt: skip


def test_a_chess_puzzle_trains_with_differing_rewards(tiny_tool_lm: TinyToolLM) -> None:
    trainer = tiny_tool_lm.grpo(FACTORIES["chess"], [alone(chess_row())], seed=0)
    assert [tool.__name__ for tool in trainer.tools] == ["move"]
    (step,) = steps(trainer)
    assert step["tools/call_frequency"] > 0
    assert step["rewards/ChessToolEnv/std"] > 0 and step["frac_reward_zero_std"] == 0.0
    assert changed(tiny_tool_lm.model, trainer.model)
    again = tiny_tool_lm.grpo(FACTORIES["chess"], [alone(chess_row())], seed=0)
    assert steps(again) == steps(trainer)


def test_a_world_seat_trains_with_its_returns_as_rewards(tiny_tool_lm: TinyToolLM) -> None:
    trainer = tiny_tool_lm.grpo(FACTORIES["world"], [alone(world_row())], seed=1)
    assert [tool.__name__ for tool in trainer.tools] == ["act"]
    (step,) = steps(trainer)
    assert step["tools/call_frequency"] > 0
    assert step["rewards/CommonsToolEnv/std"] > 0
    assert changed(tiny_tool_lm.model, trainer.model)


def test_both_at_once_in_dict_mode(tiny_tool_lm: TinyToolLM) -> None:
    trainer = tiny_tool_lm.grpo(FACTORIES, [chess_row(), world_row()], max_steps=2, seed=2)
    assert sorted(tool.__name__ for tool in trainer.tools) == ["act", "move"]
    logged = steps(trainer)
    assert "rewards/ChessToolEnv/mean" in logged[0] and "rewards/CommonsToolEnv/mean" in logged[1]
    assert all(entry["tools/call_frequency"] > 0 for entry in logged)


def test_a_served_world_trains_over_websocket(
    tiny_tool_lm: TinyToolLM, commons_server: str
) -> None:
    trainer = tiny_tool_lm.grpo(remote_factory(commons_server), [alone(world_row())], seed=3)
    assert [tool.__name__ for tool in trainer.tools] == ["act"]
    (step,) = steps(trainer)
    assert step["tools/call_frequency"] > 0
    assert step["rewards/RemoteToolEnvWithTool/std"] > 0
