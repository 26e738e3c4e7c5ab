"""The world env: PettingZoo API compliance, action validation, checked dynamics, truncation,
determinism, snapshots that resume an episode exactly (observation noise included) and rendering.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from pettingzoo.utils.conversions import parallel_to_aec

from multiagent import DynamicsError, WorldEnv, aec_env, load_config, parallel_env
from multiagent.world_state import WorldState
from multiagent.worlds import WORLDS, load_world, world_path
from multiagent.wrappers import ObservabilityWrapper

DATA = Path(__file__).resolve().parents[1] / "data"
TRADE_MOVE = {"verb": "move", "good": "food", "target_town": "Capital", "amount": 1.0}
REST = {"verb": "rest", "good": "food", "target_town": "Capital", "amount": 0.0}

Factory = Callable[[str], ParallelEnv]


def ground_truth(world: str) -> ParallelEnv:
    return parallel_env(world)


def observed(world: str) -> ParallelEnv:
    return ObservabilityWrapper(parallel_env(world))


FACTORIES = [pytest.param(ground_truth, id="truth"), pytest.param(observed, id="observability")]


# -- helpers ------------------------------------------------------------------------------------


def assert_element(space: spaces.Space[Any], value: Any, path: str = "obs") -> None:
    """``value`` is in ``space`` with the exact Python / NumPy types Gymnasium would produce.

    ``space.contains`` casts lists and Python floats, so it alone would let wrong dtypes through.
    """
    if isinstance(space, spaces.Dict):
        assert isinstance(value, dict), path
        assert set(value) == set(space.spaces), f"{path}: keys {sorted(value)}"
        for key, child in space.spaces.items():
            assert_element(child, value[key], f"{path}.{key}")
    elif isinstance(space, spaces.Tuple):
        assert isinstance(value, tuple) and len(value) == len(space.spaces), path
        for index, (child, item) in enumerate(zip(space.spaces, value, strict=True)):
            assert_element(child, item, f"{path}[{index}]")
    elif isinstance(space, spaces.Sequence):
        assert isinstance(value, tuple), f"{path}: {type(value).__name__}"
        for index, item in enumerate(value):
            assert_element(space.feature_space, item, f"{path}[{index}]")
    elif isinstance(space, (spaces.Box, spaces.MultiBinary)):
        assert isinstance(value, np.ndarray), f"{path}: {type(value).__name__}"
        assert value.dtype == space.dtype, f"{path}: {value.dtype} != {space.dtype}"
        assert value.shape == space.shape, f"{path}: {value.shape} != {space.shape}"
    elif isinstance(space, spaces.Discrete):
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), path
    elif isinstance(space, spaces.Text):
        assert isinstance(value, str), path
    else:
        raise AssertionError(f"{path}: unexpected space {space}")
    assert space.contains(value), f"{path}: {value!r} not in {space}"


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Exact equality of nested observations (arrays compared by dtype and value)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), path
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{index}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b and type(a) is type(b), f"{path}: {a!r} != {b!r}"


def sampled_actions(env: ParallelEnv) -> dict[str, Any]:
    return {agent: env.action_space(agent).sample() for agent in env.agents}


def rollout(env: ParallelEnv, seed: int, turns: int) -> Iterator[tuple[dict, dict, dict, dict]]:
    """(observations, rewards, terminations, truncations) of ``turns`` sampled-action turns."""
    observations, _ = env.reset(seed=seed)
    yield observations, {}, {}, {}
    for _ in range(turns):
        if not env.agents:
            return
        observations, rewards, terminations, truncations, _ = env.step(sampled_actions(env))
        yield observations, rewards, terminations, truncations


def tiny_config(dynamics: str | None = None, max_turns: int = 5) -> dict[str, Any]:
    """Two agents with a bounded ``gold``; ``dynamics`` is a function of env_test_dynamics."""
    config: dict[str, Any] = {
        "simulation": {"name": "tiny", "max_turns": max_turns},
        "agents": [{"name": "A", "initial_state": {"gold": 1.0}}, {"name": "B"}],
        "state_variables": {
            "agent_vars": {"gold": {"type": "float", "min": 0, "default": 0.0}},
            "global_vars": {"bank": {"type": "int", "min": 0, "default": 50}},
        },
        "actions": {"delta": {"type": "float", "min": -1, "max": 1}},
    }
    if dynamics is not None:
        config["engine"] = {"dynamics": f"env_test_dynamics:{dynamics}"}
    return config


@pytest.fixture
def dynamics_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``tests/data/env_test_dynamics.py`` importable by the name configs give it."""
    monkeypatch.syspath_prepend(str(DATA))


def world_dict(name: str, **simulation: Any) -> dict[str, Any]:
    """A built-in world's YAML as a dict, with ``simulation`` settings replaced."""
    data = yaml.safe_load(world_path(name).read_text(encoding="utf-8"))
    data["simulation"].update(simulation)
    return data


# -- PettingZoo API -----------------------------------------------------------------------------


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("world", WORLDS)
def test_parallel_api(world: str, factory: Factory) -> None:
    parallel_api_test(factory(world), num_cycles=60)


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("world", WORLDS)
def test_parallel_seed(world: str, factory: Factory) -> None:
    parallel_seed_test(lambda: factory(world))


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo.test.api_test")
def test_aec_api(world: str, factory: Factory) -> None:
    env = aec_env(world) if factory is ground_truth else parallel_to_aec(observed(world))
    api_test(env, num_cycles=30)


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("world", WORLDS)
def test_observations_and_state_in_their_spaces_with_exact_dtypes(
    world: str, factory: Factory
) -> None:
    env = factory(world)
    turns, collapsed = 0, False
    for observations, rewards, terminations, truncations in rollout(env, seed=3, turns=40):
        assert set(observations) == set(rewards or observations)
        for agent, observation in observations.items():
            assert_element(env.observation_space(agent), observation, agent)
            assert observation["turn"] == turns
        assert all(isinstance(r, float) for r in rewards.values())
        assert all(isinstance(t, bool) for t in [*terminations.values(), *truncations.values()])
        assert_element(env.unwrapped.state_space, env.unwrapped.state(), "state")
        turns += 1
        collapsed = bool(terminations) and all(terminations.values())
    assert turns == 41 or (world == "commons" and collapsed)  # random fishers empty the lake


def test_observability_filters_what_the_truth_shows() -> None:
    """The wrapper's spaces drop unaware targets and internal variables of external ones."""
    truth, seen = parallel_env("trade"), observed("trade")
    everyone = truth.observation_space("Trader_1")["others"].spaces
    assert set(everyone) == {"Trader_2", "Trader_3", "Trader_4"}
    others = seen.observation_space("Trader_1")["others"].spaces
    assert set(others) == {"Trader_2", "Trader_3"}
    external = others["Trader_2"].spaces
    assert "gold" not in external and "location" in external
    assert "gold" in seen.observation_space("Trader_1")["self"].spaces


# -- configs and options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(lambda: "forage", id="name"),
        pytest.param(lambda: world_dict("forage"), id="dict"),
        pytest.param(lambda: world_path("forage"), id="path"),
        pytest.param(lambda: str(world_path("forage")), id="path-str"),
        pytest.param(lambda: load_world("forage"), id="SimulationConfig"),
    ],
)
def test_config_forms_give_the_same_world(config: Callable[[], Any]) -> None:
    env, reference = parallel_env(config()), parallel_env("forage")
    assert env.possible_agents == ["Forager_1", "Forager_2", "Forager_3"]
    assert env.config.config_hash == reference.config.config_hash
    env.reset(seed=5)
    reference.reset(seed=5)
    assert env.world == reference.world


def test_unknown_world_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown world 'nowhere'"):
        parallel_env("nowhere")


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ({"invalid_action": "ignore"}, "invalid_action must be"),
        ({"render_mode": "human"}, "render_mode must be"),
    ],
)
def test_bad_options_are_rejected(option: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        WorldEnv("forage", **option)


def test_step_before_reset_is_an_error() -> None:
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        parallel_env("forage").step({})


# -- actions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "field"),
    [
        ({**TRADE_MOVE, "verb": "fly"}, "verb"),
        ({**TRADE_MOVE, "amount": 10.5}, "amount"),
        ({**TRADE_MOVE, "amount": -1.0}, "amount"),
        ({**TRADE_MOVE, "target_town": "Atlantis"}, "target_town"),
    ],
)
def test_invalid_action_is_reported_and_dropped(action: dict[str, Any], field: str) -> None:
    env = parallel_env("trade")
    env.reset(seed=0)
    start = env.world.agents["Trader_4"]["location"]
    actions = {agent: REST for agent in env.agents} | {"Trader_4": action}
    _, _, _, _, infos = env.step(actions)
    assert f"actions[Trader_4].{field}" in infos["Trader_4"]["action_error"]
    assert all("action_error" not in infos[a] for a in ("Trader_1", "Trader_2", "Trader_3"))
    assert env.world.agents["Trader_4"]["location"] == start  # a no-op, not a move
    assert env.world.agents["Trader_4"]["action_history"][-1] == "idle"
    assert env.world.agents["Trader_1"]["action_history"][-1] == "rest"


def test_invalid_action_raises_with_raise_and_leaves_the_world() -> None:
    env = parallel_env("trade", invalid_action="raise")
    env.reset(seed=0)
    before = copy.deepcopy(env.world)
    with pytest.raises(ValueError, match=r"actions\[Trader_2\]\.verb"):
        env.step({agent: REST for agent in env.agents} | {"Trader_2": {**REST, "verb": "fly"}})
    assert env.world == before


def test_missing_action_of_a_live_agent() -> None:
    env = parallel_env("trade")
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"Trader_1": REST})
    for agent in ("Trader_2", "Trader_3", "Trader_4"):
        assert infos[agent]["action_error"] == f"actions[{agent}]: no action given"
    assert "action_error" not in infos["Trader_1"]
    strict = parallel_env("trade", invalid_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="no action given"):
        strict.step({"Trader_1": REST})


def test_plain_value_action_moves_a_trader() -> None:
    env = parallel_env("trade")
    env.reset(seed=0)
    (x, y) = env.world.agents["Trader_1"]["location"]  # Farmstead
    actions = {agent: REST for agent in env.agents}
    actions["Trader_1"] = {**TRADE_MOVE, "target_town": "Ironforge"}
    _, _, _, _, infos = env.step(actions)
    assert "action_error" not in infos["Trader_1"]
    (nx, ny) = env.world.agents["Trader_1"]["location"]
    assert np.hypot(nx - x, ny - y) == pytest.approx(10.0)  # speed 10 toward Ironforge (50, 85)
    assert np.hypot(50 - nx, 85 - ny) == pytest.approx(np.hypot(50 - x, 85 - y) - 10.0)


def test_space_element_and_plain_value_are_the_same_action() -> None:
    """Forage's move is Discrete over [stay, up, down, left, right]: index 4 is "right"."""
    by_index, by_value = parallel_env("forage"), parallel_env("forage")
    by_index.reset(seed=1)
    by_value.reset(seed=1)
    by_index.step({agent: {"move": np.int64(4)} for agent in by_index.agents})
    by_value.step({agent: {"move": "right"} for agent in by_value.agents})
    assert by_index.world == by_value.world
    assert by_value.world.agents["Forager_1"]["position"] == (0, 1)


def test_valid_actions_reach_the_dynamics(dynamics_on_path: None) -> None:
    env = parallel_env(tiny_config("add_delta"))
    env.reset(seed=0)
    _, rewards, _, _, infos = env.step({"A": {"delta": 0.5}, "B": {"delta": 2.0}})
    assert env.world.agents["A"]["gold"] == 1.5
    assert env.world.agents["B"]["gold"] == 0.0  # B's invalid action never reached the dynamics
    assert rewards == {"A": 0.5, "B": 0.0}
    assert "actions[B].delta" in infos["B"]["action_error"]


def test_plain_value_actions_do_not_warn() -> None:
    env = parallel_env(tiny_config(None))
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.step({"A": {"delta": 0.5}, "B": {"delta": -0.5}})


# -- dynamics -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dynamics", "match"),
    [
        ("break_bound", r"break_bound produced an invalid state at turn 1:\nagents\[A\]\.gold"),
        ("wrong_turn", "returned turn 2 after turn 0"),
        ("not_a_transition", "returned WorldState, not a Transition"),
        ("drop_agent", r"changed the set of agents to \['A'\]"),
    ],
)
def test_dynamics_errors(dynamics_on_path: None, dynamics: str, match: str) -> None:
    env = parallel_env(tiny_config(dynamics))
    env.reset(seed=0)
    with pytest.raises(DynamicsError, match=match):
        env.step({agent: {"delta": 0.0} for agent in env.agents})


def test_unimportable_dynamics_is_a_config_error(dynamics_on_path: None) -> None:
    with pytest.raises(ValueError, match="cannot be imported"):
        parallel_env(tiny_config("no_such_function"))


def test_no_dynamics_is_a_static_world() -> None:
    env = parallel_env(tiny_config(None, max_turns=4))
    env.reset(seed=0)
    start = copy.deepcopy(env.world)
    for turn in range(1, 5):
        _, rewards, terminations, _, _ = env.step({"A": {"delta": 1.0}, "B": {"delta": -1.0}})
        assert env.world == WorldState(turn, start.agents, start.global_state)
        assert rewards == {"A": 0.0, "B": 0.0}
        assert terminations == {"A": False, "B": False}
    assert env.agents == []


# -- the episode's end --------------------------------------------------------------------------


@pytest.mark.parametrize("factory", FACTORIES)
def test_truncation_at_max_turns(factory: Factory) -> None:
    env = factory(world_dict("forage", max_turns=3))  # type: ignore[arg-type]
    env.reset(seed=0)
    agents = list(env.possible_agents)
    for turn in range(1, 4):
        assert env.agents == agents
        observations, rewards, terminations, truncations, infos = env.step(sampled_actions(env))
        assert set(observations) == set(rewards) == set(truncations) == set(infos) == set(agents)
        assert truncations == dict.fromkeys(agents, turn == 3)
        assert terminations == dict.fromkeys(agents, False)
    assert env.agents == []
    assert observations["Forager_1"]["turn"] == 3


def test_terminated_agent_leaves_and_is_shown_as_gone(dynamics_on_path: None) -> None:
    env = parallel_env(tiny_config("terminate_a", max_turns=3))
    env.reset(seed=0)
    _, _, terminations, _, _ = env.step({"A": {"delta": 0.0}, "B": {"delta": 0.0}})
    assert terminations == {"A": True, "B": False}
    assert env.agents == ["B"]
    observations, rewards, _, truncations, infos = env.step({"B": {"delta": 0.0}})
    assert set(observations) == set(rewards) == set(truncations) == set(infos) == {"B"}
    gone = observations["B"]["others"]["A"]
    assert gone["_visible"].tolist() == [0] and gone["gold"].tolist() == [0.0]
    observations, _, _, truncations, _ = env.step({"B": {"delta": 0.0}})
    assert truncations == {"B": True} and env.agents == []


def test_step_after_the_end_returns_nothing() -> None:
    env = parallel_env(world_dict("trade", max_turns=2))
    env.reset(seed=0)
    while env.agents:
        env.step(sampled_actions(env))
    assert env.step({}) == ({}, {}, {}, {}, {})
    assert env.agents == []
    assert_element(env.state_space, env.state(), "state")


def test_step_after_the_end_leaves_the_world() -> None:
    env = parallel_env(world_dict("trade", max_turns=2))
    env.reset(seed=0)
    while env.agents:
        env.step(sampled_actions(env))
    final = copy.deepcopy(env.world)
    env.step({})
    assert env.world == final


# -- determinism --------------------------------------------------------------------------------


def trade_trajectory(seed: int | None, turns: int = 20) -> list[tuple[WorldState, dict]]:
    """States and rewards under a fixed action sequence (so only the env's rng varies)."""
    env = parallel_env("trade")
    env.reset(seed=seed)
    choices = np.random.default_rng(123)
    verbs, towns = ["move", "buy", "sell", "produce", "rest"], ["Farmstead", "Capital"]
    trajectory = []
    for _ in range(turns):
        actions = {
            agent: {
                "verb": verbs[choices.integers(5)],
                "good": "food",
                "target_town": towns[choices.integers(2)],
                "amount": float(choices.uniform(0, 10)),
            }
            for agent in env.agents
        }
        _, rewards, _, _, _ = env.step(actions)
        trajectory.append((copy.deepcopy(env.world), rewards))
    return trajectory


def test_same_seed_same_trajectory_and_different_seed_differs() -> None:
    first = trade_trajectory(1)
    assert trade_trajectory(1) == first
    other = trade_trajectory(2)
    assert [s for s, _ in other] != [s for s, _ in first]


def test_config_seed_is_used_on_the_first_reset() -> None:
    assert load_world("trade").simulation.seed == 7
    assert trade_trajectory(None) == trade_trajectory(7)


def test_unseeded_reset_continues_from_the_env_rng() -> None:
    """A second unseeded reset draws a new seed from the generator, deterministically."""
    runs = []
    for _ in range(2):
        env = parallel_env("forage")
        env.reset()
        env.reset()
        runs.append(env.seed_value)
    assert runs[0] == runs[1] != 0  # first reset used the config's seed 0, the second drew one


@pytest.mark.parametrize("world", WORLDS)
def test_sampled_actions_are_seeded_by_reset(world: str) -> None:
    def run() -> list[Any]:
        return [copy.deepcopy(o) for o, *_ in rollout(parallel_env(world), seed=9, turns=15)]

    first, second = run(), run()
    for a, b in zip(first, second, strict=True):
        assert_same(a, b)


# -- snapshots ----------------------------------------------------------------------------------


def seeded_trade_actions(seed: int, turns: int) -> list[dict[str, dict[str, Any]]]:
    """Plain-value actions for every trader and turn, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    verbs, goods = ["move", "buy", "sell", "produce", "rest"], ["food", "wood", "metal"]
    towns = ["Farmstead", "Timberfall", "Ironforge", "Capital"]
    return [
        {
            f"Trader_{i}": {
                "verb": verbs[rng.integers(5)],
                "good": goods[rng.integers(3)],
                "target_town": towns[rng.integers(4)],
                "amount": float(rng.uniform(0, 10)),
            }
            for i in range(1, 5)
        }
        for _ in range(turns)
    ]


Record = list[tuple[dict[str, Any], dict[str, float], WorldState, dict[str, Any]]]


def play(env: ParallelEnv, actions: list[dict[str, dict[str, Any]]]) -> Record:
    """(observations, rewards, ground truth, state()) after each turn."""
    record = []
    for turn_actions in actions:
        observations, rewards, _, _, _ = env.step(turn_actions)
        unwrapped = env.unwrapped
        record.append((observations, rewards, copy.deepcopy(unwrapped.world), unwrapped.state()))
    return record


def assert_same_record(replayed: Record, original: Record) -> None:
    assert len(replayed) == len(original)
    for turn, (a, b) in enumerate(zip(replayed, original, strict=True)):
        assert_same(a[0], b[0], f"turn {turn} observations")
        assert a[1] == b[1], f"turn {turn} rewards"
        assert a[2] == b[2], f"turn {turn} world"
        assert_same(a[3], b[3], f"turn {turn} state")


@pytest.fixture
def trade_after_seven() -> tuple[Any, Record, list[dict[str, dict[str, Any]]]]:
    """Trade with observability: 7 turns, a snapshot, then 10 more turns recorded."""
    actions = seeded_trade_actions(42, 17)
    env = observed("trade")
    env.reset(seed=11)
    play(env, actions[:7])
    snapshot = env.unwrapped.snapshot()
    assert snapshot.turn == 7
    return snapshot, play(env, actions[7:]), actions[7:]


def test_snapshot_restores_the_episode_exactly(
    trade_after_seven: tuple[Any, Record, list[dict[str, dict[str, Any]]]],
) -> None:
    snapshot, original, actions = trade_after_seven
    # the noisy views differ between observers and turns: they are compared, not skipped
    noisy = original[0][0]["Trader_2"]["others"]["Trader_1"]["economic_strength"]
    assert noisy.tolist() != [np.float32(original[0][2].agents["Trader_1"]["economic_strength"])]
    fresh = observed("trade")
    restored = fresh.unwrapped.restore(snapshot)
    assert fresh.agents == fresh.possible_agents
    assert all(observation["turn"] == 7 for observation in restored.values())
    assert_same_record(play(fresh, actions), original)


def test_checkpoint_file_restores_the_episode_exactly(
    trade_after_seven: tuple[Any, Record, list[dict[str, dict[str, Any]]]], tmp_path: Path
) -> None:
    snapshot, original, actions = trade_after_seven
    source = observed("trade")
    source.unwrapped.restore(snapshot)
    path = source.unwrapped.save_checkpoint(tmp_path / "checkpoints" / "trade.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["turn"] == 7
    trader = data["agents"]["Trader_1"]
    assert isinstance(trader["location"], list) and len(trader["location"]) == 2
    assert all(isinstance(item, list) for item in trader["position_history"])
    assert isinstance(data["global_state"]["capital"]["position"], list)

    fresh = observed("trade")
    fresh.reset(seed=999)  # another episode under way: loading replaces all of it
    play(fresh, seeded_trade_actions(0, 3))
    fresh.unwrapped.load_checkpoint(path)
    world = fresh.unwrapped.world
    assert isinstance(world.agents["Trader_1"]["location"], tuple)
    assert all(isinstance(item, tuple) for item in world.agents["Trader_1"]["position_history"])
    assert isinstance(world.global_state["capital"]["position"], tuple)
    assert_same_record(play(fresh, actions), original)


def test_snapshot_of_another_world_is_refused() -> None:
    env = parallel_env("forage")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="snapshot is of config"):
        parallel_env("trade").restore(env.snapshot())


def test_snapshot_is_not_changed_by_later_turns() -> None:
    env = parallel_env("forage")
    env.reset(seed=0)
    snapshot = env.snapshot()
    for _ in range(5):
        env.step(sampled_actions(env))
    assert snapshot.turn == 0
    assert snapshot.to_world_state().agents["Forager_1"]["position"] == (0, 0)


# -- state and rendering ------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_render_ansi_names_agents_and_variables(world: str) -> None:
    env = parallel_env(world, render_mode="ansi")
    env.reset(seed=0)
    env.step(sampled_actions(env))
    text = env.render()
    assert isinstance(text, str) and "turn 1" in text
    config = load_config(world_dict(world))
    for name in [*config.agent_names, *config.state_variables.agent_vars]:
        assert name in text
    for name in config.state_variables.global_vars:
        assert name in text


def test_render_without_a_mode_is_none() -> None:
    env = parallel_env("forage")
    env.reset(seed=0)
    assert env.render() is None


def test_state_is_the_ground_truth() -> None:
    env = parallel_env("trade")
    env.reset(seed=0)
    state = env.state()
    assert_element(env.state_space, state, "state")
    assert state["turn"] == 0
    assert state["agents"]["Trader_2"]["gold"].tolist() == [80.0]
    assert state["agents"]["Trader_4"]["carrying"].tolist() == [1]
    assert state["global"]["season"] == 0  # spring
    assert state["agents"]["Trader_1"]["location"][0].tolist() == [15.0]


@pytest.mark.parametrize("world", WORLDS)
def test_observability_shortcut_is_the_wrapper(world: str) -> None:
    shortcut = parallel_env(world, observability=True)
    assert isinstance(shortcut, ObservabilityWrapper)
    a, b = list(rollout(shortcut, seed=4, turns=5)), list(rollout(observed(world), seed=4, turns=5))
    for (obs_a, *_), (obs_b, *_) in zip(a, b, strict=True):
        assert_same(obs_a, obs_b)
