"""FlattenForSB3 on actions with bool fields (a ``Discrete(2)`` part of the flat action that the
world reads as a Python bool), and refusals that name the action field they cannot flatten.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env

from multiagent import WorldEnv, load_config, parallel_env
from multiagent.wrappers import FlattenForSB3, SingleAgentEnv

# The Gymnasium checker's advice for wrapped envs without a spec; not a failure of ours.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:gymnasium.utils.env_checker")

SIGNAL_ACTIONS: dict[str, Any] = {
    "move": {"type": "categorical", "values": ["stay", "left", "right"]},
    "shout": {"type": "bool"},
    "effort": {"type": "float", "min": 0, "max": 2},
    "deal": {"type": "object", "schema": {"accept": {"type": "bool"}}},
}


def signal_env(actions: dict[str, Any] | None = None) -> FlattenForSB3:
    """A static two-agent world whose action mixes a categorical, bools and a float."""
    config = load_config(
        {
            "simulation": {"name": "signal", "max_turns": 20},
            "agents": [{"name": "A"}, {"name": "B"}],
            "actions": SIGNAL_ACTIONS if actions is None else actions,
            "engine": {"dynamics": None},  # the world stands still: only the action space matters
        }
    )
    return FlattenForSB3(SingleAgentEnv(parallel_env(config), "A"))


def world_of(env: FlattenForSB3) -> WorldEnv:
    """The world env under FlattenForSB3(SingleAgentEnv(world))."""
    world = env.env.env  # type: ignore[attr-defined]
    assert isinstance(world, WorldEnv)
    return world


def test_bool_fields_are_discrete_two_parts_of_the_flat_action() -> None:
    env = signal_env()
    assert env.action_space == spaces.MultiDiscrete([3, 2, 11, 2])
    decoded = world_of(env).decode_action("A", env.action(np.array([2, 1, 10, 0])))
    assert decoded == {"move": "right", "shout": True, "effort": 2.0, "deal": {"accept": False}}
    assert type(decoded["shout"]) is bool and type(decoded["deal"]["accept"]) is bool


def test_random_flat_actions_round_trip_to_world_actions_with_bools() -> None:
    env = signal_env()
    inner = env.env.action_space
    env.action_space.seed(0)
    seen = set()
    for _ in range(50):
        flat = env.action_space.sample()
        assert env.action_space.contains(flat)
        action = env.action(flat)
        assert inner.contains(action)
        decoded = world_of(env).decode_action("A", action)
        assert decoded["shout"] is bool(flat[1]) and decoded["deal"]["accept"] is bool(flat[3])
        seen.add(decoded["shout"])
    assert seen == {False, True}


def test_only_bool_fields_are_one_multibinary() -> None:
    env = signal_env({"shout": {"type": "bool"}, "wave": {"type": "bool"}})
    assert env.action_space == spaces.MultiBinary(2)
    assert world_of(env).decode_action("A", env.action(np.array([0, 1]))) == {
        "shout": False,
        "wave": True,
    }
    gym_check_env(env)


def test_bool_action_env_passes_the_gymnasium_and_sb3_checkers() -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    gym_check_env(signal_env())
    sb3_check_env(signal_env(), warn=False)


def test_ppo_runs_on_a_bool_action_env() -> None:
    torch = pytest.importorskip("torch")
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    env = signal_env()
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(256)
    assert model.num_timesteps == 256
    observation, _ = env.reset(seed=0)
    action, _ = model.predict(observation, deterministic=True)
    assert env.action_space.contains(action)
    assert isinstance(world_of(env).decode_action("A", env.action(action))["shout"], bool)


@pytest.mark.parametrize(
    ("field", "definition", "message"),
    [
        ("note", {"type": "str"}, "action field 'note': a str (Text)"),
        ("path", {"type": "list", "item_type": "int", "max_length": 3}, "'path': a list"),
        (
            "trade",
            {"type": "object", "schema": {"note": {"type": "str"}}},
            "action field 'trade.note': a str (Text) cannot be flattened for SB3",
        ),
    ],
)
def test_an_unsupported_action_field_is_refused_by_path_and_type(
    field: str, definition: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        signal_env({"shout": {"type": "bool"}, field: definition})
