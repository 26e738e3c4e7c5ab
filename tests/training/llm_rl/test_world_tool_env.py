"""``WorldToolEnv``: one seat of any world as a TRL environment, its ``act`` tool generated from
the world's action definitions, the other seats played by world players."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import pytest

from multiagent.play import play_episode
from multiagent.players import ScriptedPlayer, make_world_player
from multiagent.worlds import load_world
from training.llm_rl.world_env import WorldToolEnv, world_tool_env

transformers_utils = pytest.importorskip("transformers.utils")
SUSTAINABLE = "scripted:multiagent.worlds.commons:sustainable"


def public_methods(env: WorldToolEnv) -> set[str]:
    return {name for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if not name.startswith("_")}  # fmt: skip


def test_the_tool_schema_comes_from_the_worlds_action_definitions() -> None:
    env = world_tool_env("commons", "Fisher_1", others=SUSTAINABLE)()
    assert public_methods(env) == {"reset", "act", "get_reward"}
    schema = transformers_utils.get_json_schema(env.act)["function"]
    assert schema["name"] == "act"
    properties = schema["parameters"]["properties"]
    assert properties["harvest"] == {"type": "number", "description": "a number from 0 to 20"}
    assert (properties["talk"]["type"], properties["talk"]["nullable"]) == ("string", True)
    assert properties["whisper"]["type"] == "object"
    assert schema["parameters"]["required"] == ["harvest"]
    forage = transformers_utils.get_json_schema(world_tool_env("forage", "Forager_2")().act)
    move = forage["function"]["parameters"]["properties"]["move"]
    assert move["enum"] == ["stay", "up", "down", "left", "right"]


def test_a_refused_action_raises_the_worlds_reason_and_plays_nothing() -> None:
    env = world_tool_env("commons", "Fisher_1", others=SUSTAINABLE)()
    env.reset(seed=3)
    with pytest.raises(ValueError, match=r"actions\[Fisher_1\]\.harvest"):
        env.act(harvest=50.0)
    with pytest.raises(ValueError, match="talk"):
        env.act(harvest=5.0, talk="x" * 281)
    assert env.get_reward() == 0.0
    assert env.act(harvest=5.0).startswith("Reward this turn: 5")
    env.act(harvest=1.0, whisper={"to": "Fisher_2", "text": "five each?"}, talk="hello")
    with pytest.raises(ValueError, match="whisper"):
        env.act(harvest=1.0, whisper={"to": "Fisher_9", "text": "psst"})


def test_an_episode_equals_play_episode_with_the_same_players_and_seed() -> None:
    world = load_world("commons")
    factory = world_tool_env(world, "Fisher_2", others=SUSTAINABLE)
    env = pickle.loads(pickle.dumps(factory))()
    text = env.reset(seed=11)
    harvests = [4.0, 9.0, 2.5]
    for turn in range(200):
        if "The episode is over" in text:
            break
        text = env.act(harvest=harvests[turn % 3])

    def mine(seat_turn: Any) -> dict[str, Any]:
        return {"harvest": harvests[seat_turn.turn % 3]}

    players = {name: make_world_player(SUSTAINABLE, world) for name in world.agent_names}
    players["Fisher_2"] = ScriptedPlayer(mine)
    outcome = play_episode(world, players, seed=11)
    assert env.get_reward() == pytest.approx(outcome.returns["Fisher_2"])
    with pytest.raises(ValueError, match="the episode is over"):
        env.act(harvest=1.0)


def test_pooled_instances_share_one_class_and_restart_from_the_seed() -> None:
    factory = world_tool_env("forage", "Forager_1")
    first, second = factory(), factory()
    assert type(first) is type(second)  # TRL scores get_reward by exact type
    opening = first.reset(seed=5)
    first.act(move="down")
    assert first.reset(seed=5) == opening == second.reset(seed=5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"seat": "Wolf"}, "seat 'Wolf' is not an agent"),
     ({"seat": "Forager_1", "others": {"Wolf": "random"}}, "are not seats"),
     ({"seat": "Forager_1", "others": "rnadom"}, "unknown player 'rnadom'")],
)  # fmt: skip
def test_bad_seats_and_players_are_refused_before_any_rollout(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        world_tool_env("forage", **kwargs)
