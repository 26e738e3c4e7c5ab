"""Real ``GRPOTrainer`` steps on the package's TRL environments, on the CPU, offline.

The tiny model of ``tests/support/tiny_lm.py`` is warmed up (once for the module) to call the
tools of a chess puzzle (``ChessToolEnv``, a mate in one) and of a commons fisher
(``WorldToolEnv``), in TRL's dict mode, then trained with GRPO on each of them alone, on both at
once, and on the commons served over WebSocket (``RemoteToolEnv``). What is checked: the exact
tools TRL extracts, that the model's tool calls reach the environment, that the rewards inside a
group differ (else the advantage is zero), that the parameters move, and that the same seed gives
the same run. These runs prove the plumbing, not learning.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
import torch
from trl import GRPOTrainer

from multiagent.server import create_world_app
from training.llm_rl import chess_tool_env, remote_tool_env, world_tool_env

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_server
from tiny_lm import TinyToolLM

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8#
CHESS_MOVES = ("a1a8", "a1a7", "g2g3", "h2h3")  # the mate and three that are not
HARVESTS = (2.0, 5.0, 9.0, 14.0)
TIMING = frozenset({"step_time", "train_runtime", "train_samples_per_second",
                    "train_steps_per_second"})  # fmt: skip
FACTORIES = {
    "chess": chess_tool_env(),
    "world": world_tool_env("commons", "Fisher_1", others="noop"),
}


def chess_row() -> dict[str, Any]:
    prompt = [{"role": "user", "content": "Solve the puzzle with the move tool:\n"}]
    return {"environment": "chess", "prompt": prompt, "fen": MATE_IN_ONE, "answers": ["a1a8"]}


def world_row() -> dict[str, Any]:
    prompt = [{"role": "user", "content": "Fish with the act tool:\n"}]
    return {"environment": "world", "prompt": prompt, "seed": 0}


def alone(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "environment"}


def demonstrated(row: dict[str, Any], k: int) -> tuple[str, dict[str, Any]]:
    if row["environment"] == "chess":
        return "move", {"move": CHESS_MOVES[k % len(CHESS_MOVES)]}
    return "act", {"harvest": HARVESTS[k % len(HARVESTS)]}


TINY_LM_WARM_UP = {
    "env_factory": FACTORIES,
    "rows": [chess_row(), world_row()],
    "choose_call": demonstrated,
    "repeats": 8,
}


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


@pytest.fixture(scope="module")
def commons_server() -> Iterator[str]:
    app = create_world_app("commons", client_seeds=True, max_sessions=64)
    with live_server(app) as (_, address):
        yield f"http://{address}"


def test_a_served_world_trains_over_websocket(
    tiny_tool_lm: TinyToolLM, commons_server: str
) -> None:
    factory = remote_tool_env(commons_server, reset_options={"agent": "Fisher_1",
                                                             "include_text": True})  # fmt: skip
    trainer = tiny_tool_lm.grpo(factory, [alone(world_row())], seed=3)
    assert [tool.__name__ for tool in trainer.tools] == ["act"]
    (step,) = steps(trainer)
    assert step["tools/call_frequency"] > 0
    assert step["rewards/RemoteToolEnvWithTool/std"] > 0
