"""The ``serve`` commands as users start them, with their defaults: a client stepping in a tight
loop plays whole games, without the server ever refusing it (``rate_limit_wait=0``: a refusal
over a rate limit would raise at once rather than be waited out)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from envkit.client import EnvClient, WSEnvClient

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from live_server import live_command

REST = {"verb": "rest", "good": "food", "target_town": "Capital", "amount": 0}


def test_python_m_chess_env_serve_holds_whole_games_over_both_transports() -> None:
    rng = random.Random(0)
    with live_command("chess_env") as address:
        with WSEnvClient(f"http://{address}", rate_limit_wait=0) as ws:
            step = ws.reset(seed=0, opponent="random")
            while not step.done:
                step = ws.step({"move": rng.choice(step.observation["legal_moves"])})
            state = ws.state()
        assert state["done"] and state["step_count"] > 100  # past the old default's budget
        with EnvClient(f"http://{address}", rate_limit_wait=0) as http:
            step = http.reset(seed=1, opponent="random")
            while not step.done:
                step = http.step({"move": rng.choice(step.observation["legal_moves"])})
            assert http.state()["done"]


def test_python_m_multiagent_serve_holds_a_whole_episode() -> None:
    with (
        live_command("multiagent") as address,
        WSEnvClient(f"http://{address}", rate_limit_wait=0) as ws,
    ):
        step, steps = ws.reset(), 0
        while not step.done:
            step, steps = ws.step(REST), steps + 1
        assert ws.state()["step_count"] == steps >= 100  # the old default's budget: 100 a minute
