"""World actions as tool signatures: the schema accepts what the env accepts, and no more."""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest

from envkit.schema import to_json_schema, validate
from multiagent import VariableDefinition, parallel_env
from multiagent.signatures import action_signature, schema_data
from multiagent.worlds import WORLDS


@pytest.mark.parametrize("world", WORLDS)
def test_every_sampled_action_validates_and_decodes_the_same(world: str) -> None:
    env = parallel_env(world)
    env.reset(seed=0)
    signature = action_signature(env.config.actions)
    agent = env.possible_agents[0]
    space = env.action_space(agent)
    space.seed(0)
    for _ in range(50):
        plain = env.decode_action(agent, space.sample())
        result = validate(signature, plain, mode="strict")
        assert result.ok and not result.errors, result.errors
        assert env.decode_action(agent, result.value) == plain


@pytest.mark.parametrize("world", WORLDS)
def test_tool_schemas_are_valid_json_schema_and_agree_with_the_env(world: str) -> None:
    env = parallel_env(world)
    signature = action_signature(env.config.actions)
    for flavor in ("plain", "anthropic", "openai-strict"):
        jsonschema.Draft202012Validator.check_schema(to_json_schema(signature, flavor=flavor))
    checker = jsonschema.Draft202012Validator(to_json_schema(signature, flavor="plain"))
    env.reset(seed=1)
    agent = env.possible_agents[0]
    sample = env.decode_action(agent, env.action_space(agent).sample())
    assert checker.is_valid(sample)
    first_field = next(iter(env.config.actions))
    assert not checker.is_valid({**sample, first_field: "no-such-value"})


def test_bounds_and_enums_are_enforced_with_paths() -> None:
    env = parallel_env("trade")
    signature = action_signature(env.config.actions)
    bad = {"verb": "fly", "good": "food", "target_town": "Farmstead", "amount": 50.0}
    result = validate(signature, bad)
    messages = sorted(str(issue) for issue in result.errors)
    assert not result.ok
    assert any(m.startswith("verb: expected one of") for m in messages), messages
    assert any(m.startswith("amount:") for m in messages), messages
    with pytest.raises(ValueError, match="verb"):
        env.decode_action("Trader_1", bad)


@pytest.mark.parametrize(
    ("definition", "good", "bad"),
    [
        ({"type": "float", "min": 0, "max": 1}, 0.5, 1.5),
        ({"type": "int", "min": -2}, -2, -3),
        ({"type": "bool"}, True, "maybe"),
        ({"type": "categorical", "values": ["a", "b"]}, "b", "c"),
        ({"type": "str", "pattern": "^[a-z]+$", "default": "x"}, "abc", "ABC"),
        ({"type": "str"}, None, 5),
        ({"type": "list", "item_type": "int"}, [1, 2], [1, "x"]),
        ({"type": "tuple", "item_types": ["int", "str"], "default": [0, ""]}, [1, "a"], [1, 2]),
        (
            {"type": "object", "schema": {"hp": {"type": "float", "min": 0}, "nick": "str"}},
            {"hp": 1.0},
            {"hp": -1.0},
        ),
        ({"type": "dict", "key_type": "str", "value_type": "float"}, {"a": 1.0}, {"a": "x"}),
        (
            {"type": "dict", "key_type": "str", "value_type": "int", "keys": ["a"]},
            {"a": 1},
            {"b": 1},
        ),
    ],
)
def test_every_variable_type_converts(definition: dict, good: object, bad: object) -> None:
    schema = schema_data(VariableDefinition.model_validate(definition))
    assert validate(schema, good, direction="output").ok
    assert not validate(schema, bad, direction="output").ok


def test_sampled_world_actions_are_json_compatible() -> None:
    """Actions decoded from the space are plain JSON values an LLM could have written."""
    env = parallel_env("trade")
    env.reset(seed=2)
    plain = env.decode_action("Trader_1", env.action_space("Trader_1").sample())
    assert all(not isinstance(v, np.generic | np.ndarray) for v in plain.values())
