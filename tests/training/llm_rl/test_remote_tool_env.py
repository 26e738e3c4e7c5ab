"""``RemoteToolEnv`` against real servers on 127.0.0.1 (the chess server and the world server),
over WebSocket: its tool comes from the server's ``/schema``, refusals come back as errors."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
transformers_utils = pytest.importorskip("transformers.utils")

from chess_env.serving.app import create_chess_app  # noqa: E402
from multiagent.server import create_world_app  # noqa: E402
from training.llm_rl.remote_env import remote_tool_env  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_server  # noqa: E402


@pytest.fixture(scope="module")
def chess_url() -> Iterator[str]:
    with live_server(create_chess_app(max_sessions=64)) as (_, address):
        yield f"http://{address}"


@pytest.fixture(scope="module")
def world_url() -> Iterator[str]:
    with live_server(create_world_app("commons", client_seeds=True, max_sessions=64)) as (_, a):
        yield f"http://{a}"


def test_a_chess_server_is_played_through_a_move_tool(chess_url: str) -> None:
    factory = remote_tool_env(chess_url, tool_name="move", fields=["move"])
    env = pickle.loads(pickle.dumps(factory))()
    schema = transformers_utils.get_json_schema(env.move)["function"]
    assert schema["name"] == "move" and schema["parameters"]["required"] == ["move"]
    prompt = env.reset(seed=1)
    assert "fen: rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1" in prompt
    assert "fen:" in env.move(move="e4")
    with pytest.raises(ValueError, match="e9"):
        env.move(move="e9")
    assert env.move(move="Nf3").startswith("Reward: 0")
    assert env.reset(seed=1) == prompt  # a reused instance starts over
    assert env.get_reward() == 0.0


def test_a_world_seat_is_played_with_its_text_and_its_rewards(world_url: str) -> None:
    factory = remote_tool_env(world_url, reset_options={"agent": "Fisher_2",
                                                        "include_text": True})  # fmt: skip
    env = factory()
    schema = transformers_utils.get_json_schema(env.act)["function"]
    assert schema["parameters"]["required"] == ["harvest"]
    assert set(schema["parameters"]["properties"]) == {"harvest", "talk", "whisper"}
    assert env.reset(seed=4).startswith("Turn 0, observer Fisher_2")
    assert env.act(harvest=6.0).startswith("Reward: 6")
    with pytest.raises(ValueError, match="harvest"):
        env.act(harvest=99.0)
    assert env.get_reward() == 6.0
    assert type(factory()) is type(env)  # one class per tool: TRL matches get_reward by type


def test_a_field_the_server_lacks_is_refused_at_once(chess_url: str) -> None:
    with pytest.raises(ValueError, match=r"fields \['mvoe'\]"):
        remote_tool_env(chess_url, fields=["mvoe"])
