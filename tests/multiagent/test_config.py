"""``load_config``: every rejection is a ``WorldConfigError`` that names the field path.

Covers the load-time limits (nesting depth), defaults that must conform to their definition,
unknown keys with a "did you mean", values outside a fixed set (named with the allowed ones), YAML
errors, schema cycles through anchors, agents, the engine section (its dynamics imported at load,
from the YAML's folder too; a world without dynamics warns), observability and its noise range,
and old configs that must keep loading unchanged.

Most worlds here have no dynamics on purpose: the module ignores ``WorldConfigWarning`` except
where a test catches it (``pytest.warns`` records whatever the filters say).
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import re
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from multiagent import parallel_env
from multiagent.config import ObservabilityLevel, SimulationConfig, load_config
from multiagent.errors import CircularSchemaError, WorldConfigError, WorldConfigWarning
from multiagent.variables import VariableDefinition

pytestmark = pytest.mark.filterwarnings("ignore::multiagent.errors.WorldConfigWarning")

DATA = Path(__file__).resolve().parent.parent / "data"
WORLDS = DATA / "worlds"


def world(**sections: Any) -> dict[str, Any]:
    """A minimal valid world (two agents) with ``sections`` added or replaced."""
    return {
        "simulation": {"name": "test", "max_turns": 5},
        "agents": [{"name": "A"}, {"name": "B"}],
        **sections,
    }


def with_agent_vars(**variables: Any) -> dict[str, Any]:
    return world(state_variables={"agent_vars": variables})


def config_error(source: Any) -> str:
    """The message of the ``WorldConfigError`` that loading ``source`` must raise."""
    with pytest.raises(WorldConfigError) as caught:
        load_config(source)
    return str(caught.value)


def nest(kinds: list[str], leaf: Any = "int") -> dict[str, Any] | str:
    """A definition nesting ``kinds`` outermost first, e.g. ``["dict", "list"]``."""
    defn: Any = leaf
    for kind in reversed(kinds):
        if kind == "dict":
            defn = {"type": "dict", "key_type": "str", "value_type": defn}
        elif kind == "schema_dict":
            defn = {"type": "dict", "schema": {"f": defn}}
        elif kind == "list":
            defn = {"type": "list", "item_type": defn}
        elif kind == "tuple":
            defn = {"type": "tuple", "item_types": [defn]}
        elif kind == "object":
            defn = {"type": "object", "schema": {"f": defn}}
        else:
            raise AssertionError(kind)
    return defn


# -- depth limits at the boundary ---------------------------------------------------------------

DEPTHS_OK = [
    pytest.param(["dict"] * 4, id="dict-4"),
    pytest.param(["schema_dict"] * 4, id="schema-dict-4"),
    pytest.param(["list"] * 3, id="list-3"),
    pytest.param(["object"] * 10, id="object-10"),
    pytest.param(["dict"] * 4 + ["list"] * 3 + ["tuple"] * 3, id="mixed-10"),
    pytest.param(["dict", "list"] * 3 + ["dict"], id="alternating-dict-4-list-3"),
]
DEPTHS_TOO_DEEP = [
    pytest.param(["dict"] * 5, "dict nesting depth 5 exceeds the limit of 4", id="dict-5"),
    pytest.param(["schema_dict"] * 5, "dict nesting depth 5 exceeds the limit of 4", id="sdict-5"),
    pytest.param(["list"] * 4, "list nesting depth 4 exceeds the limit of 3", id="list-4"),
    pytest.param(["object"] * 11, "overall nesting depth 11 exceeds the limit of 10", id="obj-11"),
    pytest.param(["tuple"] * 11, "overall nesting depth 11 exceeds the limit of 10", id="tup-11"),
    pytest.param(
        ["dict"] * 4 + ["list"] * 3 + ["tuple"] * 3 + ["object"],
        "overall nesting depth 11 exceeds the limit of 10",
        id="mixed-11",
    ),
    pytest.param(
        ["dict", "list"] * 4,
        "list nesting depth 4 exceeds the limit of 3",
        id="alternating-list-4",
    ),
]


@pytest.mark.parametrize("kinds", DEPTHS_OK)
def test_nesting_at_the_limit_loads(kinds: list[str]) -> None:
    config = load_config(with_agent_vars(deep=nest(kinds)))
    assert config.state_variables.agent_vars["deep"].type == nest(kinds)["type"]  # type: ignore[index]


@pytest.mark.parametrize(("kinds", "message"), DEPTHS_TOO_DEEP)
def test_nesting_past_the_limit_is_rejected(kinds: list[str], message: str) -> None:
    """One level past a limit fails at load, naming the variable and the limit."""
    assert f"state_variables.agent_vars.deep: {message}" in config_error(
        with_agent_vars(deep=nest(kinds))
    )


def test_depth_limits_apply_to_global_vars_and_actions() -> None:
    too_deep = nest(["dict"] * 5)
    assert "state_variables.global_vars.g: dict nesting depth 5" in config_error(
        world(state_variables={"global_vars": {"g": too_deep}})
    )
    assert "actions.move: dict nesting depth 5" in config_error(world(actions={"move": too_deep}))


def test_shape_error_in_a_nested_definition_names_its_path() -> None:
    """The design's own example: the path reaches into value_type."""
    source = with_agent_vars(
        inventory={"type": "dict", "key_type": "str", "value_type": {"type": "list"}}
    )
    assert "state_variables.agent_vars.inventory.value_type: list needs item_type" in config_error(
        source
    )


def test_bad_regex_is_a_config_error_naming_the_field() -> None:
    message = config_error(with_agent_vars(code={"type": "str", "pattern": "[a-"}))
    assert "state_variables.agent_vars.code.pattern: pattern '[a-' is not a valid regex" in message


def test_int_bound_past_int64_is_a_config_error_or_loads() -> None:
    """Whatever the verdict on huge bounds, load_config must not crash with a foreign error."""
    with contextlib.suppress(WorldConfigError):
        load_config(with_agent_vars(big={"type": "int", "min": 1e20}))


# -- defaults must conform ----------------------------------------------------------------------

BAD_DEFAULTS = [
    pytest.param(
        {
            "type": "tuple",
            "item_types": [{"type": "int", "min": 0, "max": 255}] * 3,
            "default": [255, 500, 0],
        },
        "state_variables.agent_vars.x.default[1]: Input should be less than or equal to 255",
        id="tuple-element-out-of-range",
    ),
    pytest.param(
        {
            "type": "list",
            "item_type": {"type": "categorical", "values": ["spawn", "move"]},
            "default": ["spawn", "fly"],
        },
        "state_variables.agent_vars.x.default[1]: 'fly' is not one of spawn, move",
        id="categorical-in-list",
    ),
    pytest.param(
        {
            "type": "object",
            "schema": {"population": {"type": "int", "min": 0}},
            "default": {"population": -1},
        },
        "state_variables.agent_vars.x.default.population: Input should be greater than or equal "
        "to 0",
        id="bound-in-object",
    ),
    pytest.param(
        {
            "type": "dict",
            "key_type": "str",
            "value_type": {"type": "float", "max": 1},
            "default": {"food": 2},
        },
        "state_variables.agent_vars.x.default[food]: Input should be less than or equal to 1",
        id="dict-value-bound",
    ),
    pytest.param(
        {"type": "categorical", "values": ["calm", "angry"], "default": "sad"},
        "state_variables.agent_vars.x.default: 'sad' is not one of calm, angry",
        id="categorical-default-not-a-value",
    ),
    pytest.param(
        {"type": "float", "min": 0, "max": 1, "default": 5},
        "state_variables.agent_vars.x.default: Input should be less than or equal to 1",
        id="float-above-max",
    ),
    pytest.param(
        {"type": "tuple", "item_types": ["float", "float"], "default": [1.0, 2.0, 3.0]},
        "state_variables.agent_vars.x.default: Tuple exceeds maximum size of 2 items",
        id="tuple-wrong-length",
    ),
    pytest.param(
        {"type": "list", "item_type": "int", "max_length": 2, "default": [1, 2, 3]},
        "List exceeds maximum size of 2 items (got 3 items)",
        id="list-past-max-length",
    ),
    pytest.param(
        {"type": "str", "pattern": "[A-Z][a-z]+", "default": "lower"},
        "state_variables.agent_vars.x.default: Value error, String should match pattern",
        id="str-pattern",
    ),
    pytest.param(
        {"type": "str", "max_length": 3, "default": "four"},
        "String exceeds maximum length of 3 characters (got 4 characters)",
        id="str-max-length",
    ),
]


@pytest.mark.parametrize(("definition", "expected"), BAD_DEFAULTS)
def test_nonconforming_default_is_rejected_with_its_path(
    definition: dict[str, Any], expected: str
) -> None:
    assert expected in config_error(with_agent_vars(x=definition))


def test_nonconforming_default_in_global_vars_and_actions() -> None:
    bad = {"type": "int", "min": 0, "default": -3}
    assert "state_variables.global_vars.g.default: Input should be greater" in config_error(
        world(state_variables={"global_vars": {"g": bad}})
    )
    assert "actions.amount.default: Input should be greater" in config_error(
        world(actions={"amount": bad})
    )


def test_defaults_are_checked_with_lax_coercion() -> None:
    """A JSON array is a valid tuple default and "3" a valid int default, as at run time."""
    config = load_config(
        with_agent_vars(
            loc={"type": "tuple", "item_types": ["float", "float"], "default": [1, 2]},
            count={"type": "int", "min": 0, "default": "3"},
        )
    )
    assert config.state_variables.agent_vars["loc"].default == [1, 2]


def test_object_default_may_omit_fields_whose_default_is_null() -> None:
    stats = {
        "type": "object",
        "schema": {"hp": {"type": "float", "default": 7}, "nick": {"type": "str"}},
        "default": {"hp": 1},
    }
    load_config(with_agent_vars(stats=stats))


@pytest.mark.parametrize("value", [math.nan, math.inf], ids=["nan", "inf"])
def test_non_finite_float_default_is_rejected(value: float) -> None:
    assert "state_variables.agent_vars.x.default" in config_error(
        with_agent_vars(x={"type": "float", "default": value})
    )


# -- unknown keys -------------------------------------------------------------------------------

UNKNOWN_KEYS = [
    pytest.param(
        world(observabilty={}),
        "observabilty: unknown key; did you mean 'observability'?",
        id="top-level",
    ),
    pytest.param(
        world(simulation={"name": "t", "max_turns": 5, "chekpoint_interval": 3}),
        "simulation.chekpoint_interval: unknown key; did you mean 'checkpoint_interval'?",
        id="simulation",
    ),
    pytest.param(
        world(state_variables={"agent_var": {}}),
        "state_variables.agent_var: unknown key; did you mean 'agent_vars'?",
        id="state-variables",
    ),
    pytest.param(
        with_agent_vars(inv={"type": "dict", "key_type": "str", "value_tpye": "int"}),
        "state_variables.agent_vars.inv.value_tpye: unknown key; did you mean 'value_type'?",
        id="definition",
    ),
    pytest.param(
        with_agent_vars(
            inv={"type": "dict", "key_type": "str", "value_type": {"type": "int", "mn": 0}}
        ),
        "state_variables.agent_vars.inv.value_type.mn: unknown key; did you mean 'min'?",
        id="nested-definition",
    ),
    pytest.param(
        with_agent_vars(t={"type": "tuple", "item_types": ["int", {"type": "int", "mx": 3}]}),
        "state_variables.agent_vars.t.item_types[1].mx: unknown key; did you mean 'max'?",
        id="tuple-element",
    ),
    pytest.param(
        world(
            state_variables={
                "global_vars": {
                    "o": {"type": "object", "schema": {"f": {"type": "int", "defualt": 3}}}
                }
            }
        ),
        "state_variables.global_vars.o.schema.f.defualt: unknown key; did you mean 'default'?",
        id="object-field",
    ),
    pytest.param(
        world(actions={"move": {"type": "categorical", "vals": ["a"]}}),
        "actions.move.vals: unknown key; did you mean 'values'?",
        id="action",
    ),
    pytest.param(
        world(observability={"variable_visiblity": {}}),
        "observability.variable_visiblity: unknown key; did you mean 'variable_visibility'?",
        id="observability",
    ),
    pytest.param(
        world(observability={"variable_visibility": {"externl": []}}),
        "observability.variable_visibility.externl: unknown key; did you mean 'external'?",
        id="visibility",
    ),
    pytest.param(
        world(observability={"default": {"levle": "external"}}),
        "observability.default.levle: unknown key; did you mean 'level'?",
        id="observability-default",
    ),
    pytest.param(
        world(
            observability={
                "matrix": [{"observer": "A", "target": "B", "level": "external", "nosie": 0.1}]
            }
        ),
        "observability.matrix[0].nosie: unknown key; did you mean 'noise'?",
        id="matrix-row-mapping",
    ),
    pytest.param(
        world(engine={"dynamic": "pkg.mod:step"}),
        "engine.dynamic: unknown key; did you mean 'dynamics'?",
        id="engine-dynamics",
    ),
]


@pytest.mark.parametrize(("source", "expected"), UNKNOWN_KEYS)
def test_unknown_key_is_named_with_nearest_valid_key(source: dict[str, Any], expected: str) -> None:
    assert expected in config_error(source)


def test_unknown_key_far_from_any_valid_key_has_no_suggestion() -> None:
    message = config_error(world(zzzzzz={}))
    assert "zzzzzz: unknown key" in message
    assert "did you mean" not in message


def test_engine_parameters_are_kept() -> None:
    """The engine's other keys are parameters for the dynamics, not typos."""
    dynamics = "multiagent.worlds.forage:dynamics"
    config = load_config(world(engine={"dynamics": dynamics, "interest_rate": 0.05}))
    assert config.engine.dynamics == dynamics
    assert config.engine.params == {"interest_rate": 0.05}


def test_engine_dynamics_must_name_module_and_function() -> None:
    assert "engine.dynamics: String should match pattern" in config_error(
        world(engine={"dynamics": "no_colon_here"})
    )


# -- engine.dynamics is imported at load ---------------------------------------------------------


@pytest.fixture
def dynamics_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``tests/data/env_test_dynamics.py`` importable by the name configs give it."""
    monkeypatch.syspath_prepend(str(DATA))


BAD_DYNAMICS = [
    pytest.param(
        "no_such_module_q7:step",
        "engine.dynamics: 'no_such_module_q7:step' cannot be imported: "
        "no module named 'no_such_module_q7'",
        id="module-missing",
    ),
    pytest.param(
        "multiagent.worlds.atlantis:dynamics",
        "engine.dynamics: 'multiagent.worlds.atlantis:dynamics' cannot be imported: "
        "no module named 'multiagent.worlds.atlantis'",
        id="submodule-missing",
    ),
    pytest.param(
        "env_test_dynamics:add_delt",
        "engine.dynamics: 'env_test_dynamics:add_delt' cannot be imported: "
        "module 'env_test_dynamics' has no attribute 'add_delt'; did you mean 'add_delta'?",
        id="function-missing",
    ),
    pytest.param(
        "env_test_dynamics:DELTA_FIELD",
        "engine.dynamics: 'env_test_dynamics:DELTA_FIELD' is not callable: "
        "DELTA_FIELD is of type str",
        id="not-callable",
    ),
]


@pytest.mark.parametrize(("dynamics", "expected"), BAD_DYNAMICS)
def test_dynamics_that_cannot_run_are_refused_at_load(
    dynamics_on_path: None, dynamics: str, expected: str
) -> None:
    assert config_error(world(engine={"dynamics": dynamics})) == expected


@pytest.mark.parametrize(
    ("code", "raised"),
    [
        (
            "import no_such_dependency_q7\n",
            "ModuleNotFoundError: No module named 'no_such_dependency_q7'",
        ),
        ("1 / 0\n", "ZeroDivisionError: division by zero"),
    ],
    ids=["missing-dependency", "bug"],
)
def test_dynamics_module_that_fails_to_import_is_named_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, raised: str
) -> None:
    """A module that exists but whose own code fails is not reported as missing."""
    (tmp_path / "broken_dynamics_q7.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert config_error(world(engine={"dynamics": "broken_dynamics_q7:step"})) == (
        "engine.dynamics: 'broken_dynamics_q7:step' cannot be imported: "
        f"importing 'broken_dynamics_q7' raised {raised}"
    )
    assert "broken_dynamics_q7" not in sys.modules


def test_importable_dynamics_load(dynamics_on_path: None) -> None:
    config = load_config(world(engine={"dynamics": "env_test_dynamics:add_delta"}))
    assert config.engine.dynamics == "env_test_dynamics:add_delta"


def test_bad_dynamics_are_reported_with_the_other_problems() -> None:
    message = config_error(
        world(agents=[{"name": "A"}, {"name": "A"}], engine={"dynamics": "no_such_module_q7:f"})
    )
    assert message.splitlines() == [
        "agents: agent name 'A' is used more than once",
        "engine.dynamics: 'no_such_module_q7:f' cannot be imported: "
        "no module named 'no_such_module_q7'",
    ]


def test_a_refused_config_changes_nothing(dynamics_on_path: None) -> None:
    """The dict given is left as it was, no module stays behind, and the next load is unharmed."""
    source = world(engine={"dynamics": "no_such_module_q7:step", "rate": 0.5})
    before = copy.deepcopy(source)
    config_error(source)
    assert source == before
    assert "no_such_module_q7" not in sys.modules
    source["engine"]["dynamics"] = "env_test_dynamics:add_delta"
    assert load_config(source).engine.params == {"rate": 0.5}


def test_env_resolves_dynamics_as_load_config_checks_them() -> None:
    """One resolver: a config validated without ``load_config`` fails the same way in the env."""
    source = world(engine={"dynamics": "no_such_module_q7:step"})
    config = SimulationConfig.model_validate(source)
    with pytest.raises(WorldConfigError) as caught:
        parallel_env(config)
    assert str(caught.value) == config_error(source)


# -- a world without dynamics warns ------------------------------------------------------------


def test_a_world_without_dynamics_warns_what_that_means_and_how_to_add_one() -> None:
    with pytest.warns(WorldConfigWarning) as caught:
        config = load_config(world())
    assert config.engine.dynamics is None
    [warning] = caught.list
    message = str(warning.message)
    assert message.startswith("engine.dynamics: world 'test' names no dynamics")
    assert "state never changes" in message and "every reward is 0" in message
    assert "engine: {dynamics: 'my_module:my_function'}" in message
    assert "'dynamics: null'" in message
    assert warning.filename == __file__  # it points at the caller's load_config line


@pytest.mark.parametrize(
    "engine", [{"dynamics": None}, {"dynamics": "multiagent.worlds.forage:dynamics"}]
)
def test_a_world_with_dynamics_or_static_on_purpose_does_not_warn(engine: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_config(world(engine=engine))


def test_a_refused_world_does_not_warn_as_well() -> None:
    """The error says what is wrong; a warning about the same section would be noise."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorldConfigWarning)
        config_error(world(engine={"dynamic": "a:b"}))


# -- engine.dynamics from the YAML's folder ------------------------------------------------------

FOLDER_RULES = "q7_folder_rules"  # a name no other test imports: the module stays in sys.modules


@pytest.fixture
def world_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A YAML world and its dynamics module in one folder, the current directory elsewhere."""
    folder = tmp_path / "my_world"
    folder.mkdir()
    (folder / f"{FOLDER_RULES}.py").write_text(
        textwrap.dedent(
            """
            from multiagent.world_state import Transition, WorldState

            def step(state, actions, rng, params):
                agents = {n: {**a, "gold": a["gold"] + params["income"]}
                          for n, a in state.agents.items()}
                return Transition(WorldState(state.turn + 1, agents, state.global_state),
                                  rewards=dict.fromkeys(agents, 1.0))
            """
        ),
        encoding="utf-8",
    )
    (folder / "world.yaml").write_text(
        textwrap.dedent(
            f"""
            simulation: {{name: folder, max_turns: 3}}
            agents: [{{name: A}}, {{name: B}}]
            state_variables: {{agent_vars: {{gold: {{type: int, min: 0, default: 0}}}}}}
            actions: {{wait: {{type: bool}}}}
            engine: {{dynamics: "{FOLDER_RULES}:step", income: 2}}
            """
        ),
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the folder a load adds goes with the test
    yield folder
    sys.modules.pop(FOLDER_RULES, None)


def test_dynamics_are_imported_from_the_yaml_folder(world_folder: Path) -> None:
    path_before = list(sys.path)
    config = load_config(world_folder / "world.yaml")
    # The folder stays on sys.path, last: worker processes inherit it; it shadows nothing.
    assert sys.path == [*path_before, str(world_folder.resolve())]
    env = parallel_env(config)  # the env finds the module load_config imported
    env.reset(seed=0)
    _, rewards, _, _, _ = env.step({"A": {"wait": True}, "B": {"wait": False}})
    assert env.world.agents["A"]["gold"] == 2 and rewards == {"A": 1.0, "B": 1.0}


def test_a_relative_yaml_path_finds_its_folder(world_folder: Path) -> None:
    relative = os.path.relpath(world_folder / "world.yaml")
    assert load_config(relative).engine.params == {"income": 2}


def test_dynamics_not_found_name_the_folders_searched(world_folder: Path) -> None:
    (world_folder / f"{FOLDER_RULES}.py").unlink()
    message = config_error(world_folder / "world.yaml")
    assert message.startswith(
        f"engine.dynamics: '{FOLDER_RULES}:step' cannot be imported: "
        f"no module named '{FOLDER_RULES}' (looked in the config's folder '{world_folder}', "
        "then sys.path: "
    )
    assert repr(sys.path[-1]) in message


def test_a_dict_config_looks_only_on_sys_path(world_folder: Path) -> None:
    """No file, no folder: the message is the one it always was."""
    source = world(engine={"dynamics": f"{FOLDER_RULES}:step"})
    assert config_error(source) == (
        f"engine.dynamics: '{FOLDER_RULES}:step' cannot be imported: "
        f"no module named '{FOLDER_RULES}'"
    )


def test_unknown_agent_key_is_named_with_nearest_valid_key() -> None:
    message = config_error(world(agents=[{"name": "A", "tpye": "nation"}]))
    assert "agents[0].tpye: unknown key; did you mean 'type'?" in message


# -- non-mapping sections -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(world(state_variables={"agent_vars": ["gold"]}), id="agent-vars-list"),
        pytest.param(world(actions=["move"]), id="actions-list"),
        pytest.param(world(actions="move"), id="actions-str"),
    ],
)
def test_non_mapping_definitions_section_is_a_config_error(source: dict[str, Any]) -> None:
    config_error(source)


def test_non_mapping_config_is_a_config_error() -> None:
    assert "a config must be a mapping of sections, got list" in config_error([1, 2])


# -- files: YAML syntax, missing file -----------------------------------------------------------


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        "simulation:\n  name: t\n  max_turns: 5\nagents:\n  - name: A\n    type: [unclosed\n"
        "state_variables: {}\n",
        encoding="utf-8",
    )
    message = config_error(path)
    assert "YAML syntax error" in message
    assert "broken.yaml" in message
    assert "line 7" in message


def test_yaml_indentation_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "indent.yaml"
    path.write_text("simulation:\n  name: t\n   max_turns: 5\n", encoding="utf-8")
    assert re.search(r"YAML syntax error .* at line 3\b", config_error(str(path)))


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    message = config_error(path)
    assert "cannot read config" in message
    assert "nowhere.yaml" in message


def test_empty_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("", encoding="utf-8")
    assert "a config must be a mapping of sections" in config_error(path)


# -- circular schemas through YAML anchors ------------------------------------------------------

HEADER = "simulation: {name: t, max_turns: 5}\nagents: [{name: A}]\n"


def test_anchor_cycle_is_a_circular_schema_error(tmp_path: Path) -> None:
    """a -> b -> c -> a through an alias: reported with the cycle, the field path and fixes."""
    path = tmp_path / "cycle.yaml"
    path.write_text(
        HEADER
        + """\
state_variables:
  agent_vars:
    a: &a
      type: object
      schema:
        b:
          type: object
          schema:
            c:
              type: object
              schema:
                a: *a
""",
        encoding="utf-8",
    )
    with pytest.raises(CircularSchemaError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "Cycle: a -> b -> c -> a" in message
    assert "state_variables.agent_vars.a.b.c.a" in message
    assert "Suggested fixes" in message
    assert isinstance(caught.value, WorldConfigError)


def test_self_containing_anchor_is_a_circular_schema_error(tmp_path: Path) -> None:
    path = tmp_path / "self.yaml"
    path.write_text(
        HEADER + "state_variables:\n  agent_vars:\n"
        "    node: &n {type: object, schema: {next: *n}}\n",
        encoding="utf-8",
    )
    with pytest.raises(CircularSchemaError, match="Cycle: node -> node"):
        load_config(path)


def test_cycle_through_list_items_in_actions_is_detected() -> None:
    """Cycles are not only through object fields, and not only in state variables."""
    looping: dict[str, Any] = {"type": "list"}
    looping["item_type"] = looping
    with pytest.raises(CircularSchemaError, match=r"actions\.path"):
        load_config(world(actions={"path": looping}))


def test_shared_anchor_without_cycle_loads(tmp_path: Path) -> None:
    """Reusing one definition in several places is not a cycle."""
    path = tmp_path / "shared.yaml"
    path.write_text(
        HEADER
        + """\
state_variables:
  agent_vars:
    home: &pos {type: tuple, item_types: [float, float]}
    route:
      type: object
      schema:
        start: *pos
        end: *pos
        legs: {type: list, item_type: *pos}
  global_vars:
    depot: *pos
""",
        encoding="utf-8",
    )
    config = load_config(path)
    agent_vars = config.state_variables.agent_vars
    position = VariableDefinition(type="tuple", item_types=["float", "float"])
    assert agent_vars["home"] == position
    assert agent_vars["route"].schema_ == {
        "start": position,
        "end": position,
        "legs": VariableDefinition(type="list", item_type=position),
    }
    assert config.state_variables.global_vars["depot"] == position


# -- agents -------------------------------------------------------------------------------------


def test_duplicate_agent_names_are_rejected() -> None:
    source = world(agents=[{"name": "A"}, {"name": "B"}, {"name": "A"}])
    assert "agents: agent name 'A' is used more than once" in config_error(source)


def test_global_is_a_reserved_agent_name() -> None:
    source = world(agents=[{"name": "global"}, {"name": "B"}])
    assert "agents: 'global' is reserved for the global state" in config_error(source)


def test_name_is_a_reserved_agent_variable() -> None:
    assert "state_variables.agent_vars.name: 'name' is reserved" in config_error(
        with_agent_vars(name={"type": "str"})
    )


def test_no_agents_is_rejected() -> None:
    assert "agents: List should have at least 1 item" in config_error(world(agents=[]))


def test_initial_state_is_validated() -> None:
    variables = {"gold": {"type": "int", "min": 0, "max": 10}}
    unknown = world(
        state_variables={"agent_vars": variables},
        agents=[{"name": "A"}, {"name": "B", "initial_state": {"silver": 1}}],
    )
    assert "agents[1].initial_state.silver: no agent variable named 'silver'" in config_error(
        unknown
    )
    out_of_range = world(
        state_variables={"agent_vars": variables},
        agents=[{"name": "A", "initial_state": {"gold": 50}}, {"name": "B"}],
    )
    assert "agents[0].initial_state.gold: Input should be less than or equal to 10" in (
        config_error(out_of_range)
    )


def test_initial_state_values_are_coerced_and_kept() -> None:
    config = load_config(
        world(
            state_variables={"agent_vars": {"gold": {"type": "int", "min": 0}}},
            agents=[{"name": "A", "initial_state": {"gold": 4}}, {"name": "B"}],
        )
    )
    assert config.agents[0].start_values == {"gold": 4}
    assert config.agents[1].start_values == {}


def test_legacy_initial_keys_are_validated() -> None:
    """``initial_<var>`` is the old spelling of initial_state: same checks, named as written."""
    negative = world(agents=[{"name": "A", "initial_economic_strength": -5.0}])
    assert "agents[0].initial_economic_strength: Input should be greater than or equal to 0" in (
        config_error(negative)
    )
    unknown = world(agents=[{"name": "A", "initial_gold": 5}])
    assert "agents[0].initial_gold: no agent variable named 'gold'" in config_error(unknown)


def test_legacy_default_variable_only_without_state_variables() -> None:
    """``economic_strength`` is implied only by configs that predate state_variables."""
    legacy = load_config(world())
    assert list(legacy.state_variables.agent_vars) == ["economic_strength"]
    assert legacy.state_variables.agent_vars["economic_strength"].min == 0
    typed = load_config(world(state_variables={"agent_vars": {"gold": {"type": "int"}}}))
    assert list(typed.state_variables.agent_vars) == ["gold"]
    assert "no agent variable named 'economic_strength'" in config_error(
        world(
            state_variables={"agent_vars": {"gold": {"type": "int"}}},
            agents=[{"name": "A", "initial_economic_strength": 1.0}],
        )
    )


# -- observability ------------------------------------------------------------------------------


def observed(**observability: Any) -> dict[str, Any]:
    """A world with agents A, B, variables wealth (agent) and weather (global), observability."""
    return world(
        state_variables={
            "agent_vars": {"wealth": {"type": "float"}, "secret": {"type": "float"}},
            "global_vars": {"weather": {"type": "categorical", "values": ["sun", "rain"]}},
        },
        observability=observability,
    )


def test_observability_example_of_the_spec_loads() -> None:
    config = load_config(WORLDS / "observability.yaml")
    observability = config.observability
    assert observability is not None and observability.enabled
    assert observability.variable_visibility.external == ["economic_strength"]
    assert observability.variable_visibility.internal == ["secret_reserves"]
    rows = [(e.observer, e.target, e.level, e.noise) for e in observability.matrix]
    assert rows == [
        ("Agent1", "Agent1", ObservabilityLevel.INSIDER, 0.0),
        ("Agent1", "Agent2", ObservabilityLevel.EXTERNAL, 0.2),
        ("Agent1", "global", ObservabilityLevel.EXTERNAL, 0.1),
    ]
    assert observability.default.level is ObservabilityLevel.UNAWARE


OBSERVABILITY_ERRORS = [
    pytest.param(
        {"variable_visibility": {"external": ["wealth", "fame"]}},
        "observability.variable_visibility.external[1]: unknown variable 'fame'",
        id="unknown-external-variable",
    ),
    pytest.param(
        {"variable_visibility": {"internal": ["hidden"]}},
        "observability.variable_visibility.internal[0]: unknown variable 'hidden'",
        id="unknown-internal-variable",
    ),
    pytest.param(
        {"variable_visibility": {"external": ["wealth", "weather"], "internal": ["wealth"]}},
        "variables cannot be both external and internal: ['wealth']",
        id="overlap",
    ),
    pytest.param(
        {"matrix": [["A", "B", "external", 0.1], ["C", "B", "external", 0.1]]},
        "observability.matrix[1]: unknown observer 'C'",
        id="unknown-observer",
    ),
    pytest.param(
        {"matrix": [["A", "Z", "external", 0.1]]},
        "observability.matrix[0]: unknown target 'Z'",
        id="unknown-target",
    ),
    pytest.param(
        {"matrix": [["global", "A", "external", 0.1]]},
        "observability.matrix[0]: unknown observer 'global'",
        id="global-is-not-an-observer",
    ),
    pytest.param(
        {"matrix": [["A", "B", "external", 0.1], ["A", "B", "insider", 0.0]]},
        "observability.matrix[1]: duplicate pair ('A', 'B') (first at matrix[0])",
        id="duplicate-pair",
    ),
    pytest.param(
        {"matrix": [["A", "B", "external", -0.1]]},
        "observability.matrix[0].noise: Input should be greater than or equal to 0",
        id="negative-noise",
    ),
    pytest.param(
        {"default": {"level": "external", "noise": -1}},
        "observability.default.noise: Input should be greater than or equal to 0",
        id="negative-default-noise",
    ),
    pytest.param(
        {"matrix": [["A", "B", "visible", 0.1]]},
        "observability.matrix[0].level: 'visible' is not one of unaware, external, insider",
        id="unknown-level",
    ),
    pytest.param(
        {"matrix": [["A", "B"]]},
        "observability.matrix[0].level: Field required",
        id="short-row",
    ),
]


@pytest.mark.parametrize(("observability", "expected"), OBSERVABILITY_ERRORS)
def test_observability_error_names_its_path(observability: dict[str, Any], expected: str) -> None:
    assert expected in config_error(observed(**observability))


def test_all_observability_errors_are_reported_together() -> None:
    message = config_error(
        observed(
            variable_visibility={"external": ["fame"]},
            matrix=[["C", "B", "external", 0.1], ["A", "Z", "external", 0.1]],
        )
    )
    assert "unknown variable 'fame'" in message
    assert "unknown observer 'C'" in message
    assert "unknown target 'Z'" in message


def test_null_noise_is_zero_and_global_is_a_target() -> None:
    config = load_config(
        observed(
            matrix=[
                ["A", "B", "external", None],
                ["A", "global", "insider"],
                ["B", "A", "unaware", 0.3],
            ]
        )
    )
    assert config.observability is not None
    entries = config.observability.matrix
    assert [(e.target, e.level, e.noise) for e in entries] == [
        ("B", ObservabilityLevel.EXTERNAL, 0.0),
        ("global", ObservabilityLevel.INSIDER, 0.0),
        ("A", ObservabilityLevel.UNAWARE, 0.3),
    ]


def test_default_observability_when_absent_is_unaware_without_noise() -> None:
    config = load_config(observed())
    assert config.observability is not None
    assert config.observability.enabled
    assert config.observability.default.level is ObservabilityLevel.UNAWARE
    assert config.observability.default.noise == 0.0
    assert config.observability.matrix == []


def test_default_observability_is_read() -> None:
    config = load_config(observed(default={"level": "external", "noise": 0.1}))
    assert config.observability is not None
    assert config.observability.default.level is ObservabilityLevel.EXTERNAL
    assert config.observability.default.noise == 0.1


def test_observability_can_be_disabled() -> None:
    config = load_config(observed(enabled=False))
    assert config.observability is not None
    assert config.observability.enabled is False


def test_matrix_row_with_extra_elements_is_rejected() -> None:
    assert "observability.matrix[0]" in config_error(
        observed(matrix=[["A", "B", "external", 0.1, "insider"]])
    )


# -- noise: a relative error and a flip probability, so a finite number in [0, 1] ----------------

NOISE_OUT_OF_RANGE = [
    pytest.param(
        {"matrix": [["A", "B", "external", 1.5]]},
        "observability.matrix[0].noise: Input should be less than or equal to 1",
        id="above-1",
    ),
    pytest.param(
        {"default": {"level": "external", "noise": 2}},
        "observability.default.noise: Input should be less than or equal to 1",
        id="default-above-1",
    ),
    pytest.param(
        {"matrix": [["A", "B", "external", math.inf]]},
        "observability.matrix[0].noise: Input should be a finite number",
        id="infinite",
    ),
    pytest.param(
        {"default": {"noise": math.nan}},
        "observability.default.noise: Input should be a finite number",
        id="nan",
    ),
    pytest.param(
        {"matrix": [["A", "B", "external", True]]},
        "observability.matrix[0].noise: noise must be a number in [0, 1], got True",
        id="bool",
    ),
]


@pytest.mark.parametrize(("observability", "expected"), NOISE_OUT_OF_RANGE)
def test_noise_outside_its_range_is_refused_with_its_path(
    observability: dict[str, Any], expected: str
) -> None:
    assert config_error(observed(**observability)) == expected


def test_noise_at_its_bounds_loads() -> None:
    config = load_config(
        observed(matrix=[["A", "B", "external", 0], ["B", "A", "external", 1]], default={})
    )
    assert config.observability is not None
    assert [entry.noise for entry in config.observability.matrix] == [0.0, 1.0]


def test_null_default_noise_is_zero() -> None:
    config = load_config(observed(default={"level": "external", "noise": None}))
    assert config.observability is not None
    assert config.observability.default.noise == 0.0


# -- values outside a fixed set: named with every allowed value ----------------------------------

LEVELS = [level.value for level in ObservabilityLevel]
TYPES = "float, int, bool, categorical, dict, list, tuple, str, object"
NOT_ONE_OF = [
    pytest.param(
        observed(
            matrix=[
                ["A", "A", "insider"],
                ["A", "B", "external"],
                ["B", "A", "external"],
                ["B", "B", "omniscient"],
            ]
        ),
        "observability.matrix[3].level: 'omniscient' is not one of unaware, external, insider",
        id="matrix-level",
    ),
    pytest.param(
        observed(default={"level": "Insider"}),
        "observability.default.level: 'Insider' is not one of unaware, external, insider; "
        "did you mean 'insider'?",
        id="default-level",
    ),
    pytest.param(
        observed(matrix=[{"observer": "A", "target": "B", "level": 2}]),
        "observability.matrix[0].level: 2 is not one of unaware, external, insider",
        id="level-not-a-string",
    ),
    pytest.param(
        observed(distribution="normal"),
        "observability.distribution: 'normal' is not one of uniform, gaussian",
        id="distribution",
    ),
    pytest.param(
        with_agent_vars(gold={"type": "flaot"}),
        f"state_variables.agent_vars.gold.type: 'flaot' is not one of {TYPES}; "
        "did you mean 'float'?",
        id="variable-type",
    ),
    pytest.param(
        with_agent_vars(inv={"type": "dict", "key_type": "str", "value_type": "Int"}),
        f"state_variables.agent_vars.inv.value_type.type: 'Int' is not one of {TYPES}; "
        "did you mean 'int'?",
        id="value-type-short-form",
    ),
    pytest.param(
        world(actions={"pos": {"type": "tuple", "item_types": ["float", "point"]}}),
        f"actions.pos.item_types[1].type: 'point' is not one of {TYPES}",
        id="tuple-element-type",
    ),
    pytest.param(
        world(
            state_variables={
                "global_vars": {"o": {"type": "object", "schema": {"f": {"type": "enum"}}}}
            }
        ),
        f"state_variables.global_vars.o.schema.f.type: 'enum' is not one of {TYPES}",
        id="object-field-type",
    ),
    pytest.param(
        world(
            state_variables={
                "global_vars": {
                    "prices": {"type": "dict", "key_type": "float", "value_type": "int"}
                }
            }
        ),
        "state_variables.global_vars.prices.key_type: 'float' is not one of str, int",
        id="key-type",
    ),
]


@pytest.mark.parametrize(("source", "expected"), NOT_ONE_OF)
def test_value_outside_a_fixed_set_is_named_with_the_allowed_ones(
    source: dict[str, Any], expected: str
) -> None:
    assert config_error(source) == expected


@given(level=st.text().filter(lambda text: text not in LEVELS))
def test_any_unknown_level_is_refused_with_that_level_in_the_message(level: str) -> None:
    message = config_error(observed(matrix=[["A", "B", level, 0.1]]))
    assert message.startswith(
        f"observability.matrix[0].level: {level!r} is not one of unaware, external, insider"
    )


# -- old configs and the spec's examples --------------------------------------------------------

REFERENCE_CONFIG = """\
simulation:
  name: Economic Simulation
  max_turns: 100
  checkpoint_interval: 10
  termination:
    min_value: 0.0
    max_value: 1000000.0

engine:
  type: economic
  interest_rate: 0.05

agents:
  - name: Nation_A
    type: nation
    initial_economic_strength: 1000.0
  - name: Nation_B
    type: nation
    initial_economic_strength: 1500.0

validator:
  type: always_valid

logging:
  level: INFO
  format: json
"""


def test_reference_example_config_loads_unchanged(tmp_path: Path) -> None:
    """A config written before typed variables and observability keeps its meaning."""
    path = tmp_path / "reference.yaml"
    path.write_text(REFERENCE_CONFIG, encoding="utf-8")
    config = load_config(path)
    assert config.simulation.name == "Economic Simulation"
    assert config.simulation.max_turns == 100
    assert config.simulation.checkpoint_interval == 10
    assert config.simulation.termination == {"min_value": 0.0, "max_value": 1_000_000.0}
    assert config.engine.type == "economic"
    assert config.engine.dynamics is None
    assert config.engine.params == {"interest_rate": 0.05}
    assert config.agent_names == ["Nation_A", "Nation_B"]
    assert [a.type for a in config.agents] == ["nation", "nation"]
    assert [a.start_values for a in config.agents] == [
        {"economic_strength": 1000.0},
        {"economic_strength": 1500.0},
    ]
    assert list(config.state_variables.agent_vars) == ["economic_strength"]
    assert config.state_variables.global_vars == {}
    assert config.observability is None
    assert config.validator == {"type": "always_valid"}
    assert config.logging == {"level": "INFO", "format": "json"}


def test_spec_examples_all_load() -> None:
    """Every YAML example of the variable-types spec, combined in one world, loads as written."""
    config = load_config(WORLDS / "examples.yaml")
    agent_vars = config.state_variables.agent_vars
    assert sorted(agent_vars) == sorted(
        [
            "inventory",
            "stats",
            "action_history",
            "position_history",
            "grid_data",
            "location",
            "color",
            "entity_data",
            "target_destination",
            "agent_name",
            "notes",
        ]
    )
    assert sorted(config.state_variables.global_vars) == ["capital", "towns"]
    assert agent_vars["inventory"].value_type == VariableDefinition(type="float")
    assert agent_vars["color"].item_types == [VariableDefinition(type="int", min=0, max=255)] * 3
    coordinates = agent_vars["entity_data"].item_types[2]  # type: ignore[index]
    assert coordinates.item_types == [VariableDefinition(type="float")] * 2
    assert agent_vars["action_history"].max_length == 10
    towns = config.state_variables.global_vars["towns"]
    assert towns.value_type is not None and set(towns.value_type.schema_ or {}) == {
        "population",
        "resources",
    }


def test_spec_examples_load_the_same_from_a_dict() -> None:
    """A dict and a YAML file are two spellings of one config."""
    import yaml

    data = yaml.safe_load((WORLDS / "examples.yaml").read_text(encoding="utf-8"))
    assert load_config(data) == load_config(WORLDS / "examples.yaml")


# -- config hash --------------------------------------------------------------------------------


def test_config_hash_is_stable_across_loads() -> None:
    first = load_config(WORLDS / "examples.yaml")
    second = load_config(WORLDS / "examples.yaml")
    assert first is not second
    assert first.config_hash == second.config_hash
    assert re.fullmatch(r"[0-9a-f]{16}", first.config_hash)


def test_config_hash_changes_when_a_default_changes() -> None:
    source = with_agent_vars(gold={"type": "int", "min": 0, "default": 5})
    changed = copy.deepcopy(source)
    changed["state_variables"]["agent_vars"]["gold"]["default"] = 6
    assert load_config(source).config_hash == load_config(copy.deepcopy(source)).config_hash
    assert load_config(source).config_hash != load_config(changed).config_hash


def test_loaded_config_is_a_simulation_config() -> None:
    assert isinstance(load_config(world()), SimulationConfig)
