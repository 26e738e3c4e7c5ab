"""Episode logs: what the env returned, turn by turn, is what the log holds; the same seed gives
the same bytes; JSON (and gzip) round trips; the hidden/exact/noisy marks follow the plan; files
that cannot load say which file and which field.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic_core import to_jsonable_python

from multiagent import WorldEnv, aec_env, parallel_env
from multiagent.observability import GLOBAL_TARGET, ObservabilityPlan
from multiagent.observation_layout import ObservationLayout
from multiagent.recording import (
    EpisodeLog,
    EpisodeLogError,
    load_episode_log,
    observability_cells,
    save_episode_log,
)
from multiagent.world_state import WorldState
from multiagent.worlds import WORLDS, world_path
from multiagent.wrappers import ObservabilityWrapper, ParallelNoiseWrapper, RecordEpisode


def short_world(name: str, max_turns: int) -> dict[str, Any]:
    """A built-in world's definition with fewer turns (so an episode ends in a test)."""
    data = yaml.safe_load(world_path(name).read_text(encoding="utf-8"))
    data["simulation"]["max_turns"] = max_turns
    data.pop("scenarios", None)  # their episode lengths would exceed the shorter max_turns
    return data


def play(env: Any, seed: int, turns: int, action_seed: int = 0) -> list[tuple]:
    """Reset and step with seeded random actions; every (observations, step results, actions)."""
    rng = np.random.default_rng(action_seed)
    observations, _ = env.reset(seed=seed)
    history = [(observations, None, None)]
    for _ in range(turns):
        if not env.agents:
            break
        actions = {}
        for agent in env.agents:
            space = env.action_space(agent)
            space.seed(int(rng.integers(2**31)))
            actions[agent] = space.sample()
        observations, *results = env.step(actions)
        history.append((observations, results, actions))
    return history


def same(a: Any, b: Any) -> bool:
    """Equality through nested dicts, tuples and NumPy arrays (observations hold all three)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def as_json(value: Any) -> Any:
    return to_jsonable_python(value)


def view_of(log: EpisodeLog, index: int, observer: str) -> WorldState:
    """The recorded observation as the view ``observe_all`` gave (agents carry their names)."""
    seen = log.turns[index].observations[observer]
    agents = {target: {"name": target, **values} for target, values in seen.agents.items()}
    return WorldState(log.turns[index].turn, agents, seen.global_state or {})


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("observability", [False, True])
def test_the_log_holds_what_the_env_returned(world: str, observability: bool) -> None:
    env = parallel_env(short_world(world, 6), observability=observability, record=True)
    world_env = env.unwrapped
    plan = env.env.plan if observability else world_env.plan
    layouts = {a: ObservationLayout.from_plan(plan, a) for a in env.possible_agents}
    spaces = {a: env.observation_space(a) for a in env.possible_agents}
    observations, _ = env.reset(seed=11)
    index = 0
    while True:
        log = env.episode_log
        turn = log.turns[index]
        truth = world_env.world
        assert turn.turn == truth.turn
        agents = {n: {k: v for k, v in a.items() if k != "name"} for n, a in truth.agents.items()}
        assert turn.state.agents == as_json(agents)
        assert turn.state.global_state == as_json(truth.global_state)
        assert sorted(turn.observations) == sorted(observations)
        for agent, observation in observations.items():
            encoded = layouts[agent].encode(view_of(log, index, agent), spaces[agent])
            assert same(encoded, observation), (index, agent)
        if not env.agents:
            break
        actions = {a: env.action_space(a).sample() for a in env.agents}
        if index == 1:  # one refused action: recorded as an error, not as an action
            actions[env.agents[0]] = {"nonsense": 1}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        recorded = env.episode_log.turns[index]
        for agent in actions:
            if "action_error" in infos[agent]:
                assert recorded.action_errors[agent] == infos[agent]["action_error"]
                assert agent not in recorded.actions
            else:
                decoded = world_env.decode_action(agent, actions[agent])
                assert recorded.actions[agent] == as_json(decoded)
            assert recorded.rewards[agent] == rewards[agent]
        assert recorded.terminated == [a for a in actions if terminations[a]]
        assert recorded.truncated == [a for a in actions if truncations[a]]
        index += 1
    assert env.episode_log.complete and len(env.episode_log.turns) == 7
    assert env.episode_log.turns[-1].actions == {}
    assert env.episode_log.turns[1].action_errors


def test_the_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    paths = []
    for run, seed in enumerate([4, 4, 5]):
        env = parallel_env("trade", observability=True, record=tmp_path / f"{run}.json")
        play(env, seed=seed, turns=8)
        env.close()
        paths.append(env.paths[-1])
    first, again, other = (path.read_bytes() for path in paths)
    assert first == again
    assert first != other


def test_json_and_gzip_round_trips(tmp_path: Path) -> None:
    env = parallel_env("trade", observability=True, record=True)
    play(env, seed=2, turns=10)
    log = env.episode_log
    plain = save_episode_log(log, tmp_path / "episode.json")
    packed = save_episode_log(log, tmp_path / "episode.json.gz")
    assert load_episode_log(plain) == log
    assert load_episode_log(packed) == log
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    assert packed.stat().st_size * 4 < plain.stat().st_size
    assert save_episode_log(log, tmp_path / "again.json.gz").read_bytes() == packed.read_bytes()
    assert json.loads(plain.read_text())["schema_version"] == 1


def seen_and_true(turn: Any, observer: str, target: str) -> tuple[dict | None, dict]:
    """What ``observer`` was given of ``target`` on ``turn`` (None: nothing) and the truth."""
    seen = turn.observations[observer]
    if target == GLOBAL_TARGET:
        return seen.global_state, turn.state.global_state
    return seen.agents.get(target), turn.state.agents[target]


@pytest.mark.parametrize("world", WORLDS)
def test_the_marks_follow_the_plan(world: str) -> None:
    env = parallel_env(world, observability=True, record=True)
    play(env, seed=3, turns=12)
    log = env.episode_log
    plan = env.env.plan
    differs: dict[tuple[str, str, str], bool] = {}
    for cell in log.cells:
        view = plan.view(cell.observer, cell.target)
        if view is None:
            assert cell.level == "unaware" and set(cell.variables.values()) == {"hidden"}
            assert all(seen_and_true(t, cell.observer, cell.target)[0] is None for t in log.turns)
            continue
        assert (cell.level, cell.noise) == (view.level.value, view.noise)
        for name, mark in cell.variables.items():
            assert (mark != "hidden") == (name in view.variables), (cell, name)
            if mark == "noisy":
                assert view.noise > 0
            elif mark == "exact":  # strings are never noised
                assert view.noise == 0 or name in ("agent_name", "action_history")
        shown = sorted(name for name, mark in cell.variables.items() if mark != "hidden")
        for turn in log.turns:
            values, truth = seen_and_true(turn, cell.observer, cell.target)
            assert values is not None and sorted(values) == shown
            for name, value in values.items():
                if cell.variables[name] == "exact":
                    assert value == truth[name], (turn.turn, cell, name)
                else:
                    key = (cell.observer, cell.target, name)
                    differs[key] = differs.get(key, False) or value != truth[name]
    # Noise shows: some noisy value was off its true value, and in trade every noisy float was
    # at least once in twelve turns (forage's small ints can round back to the truth).
    assert any(differs.values())
    floats = {"economic_strength", "location", "prices"}
    assert all(differs[key] for key in differs if key[2] in floats)
    assert (world == "trade") == any(key[2] in floats for key in differs)


def test_the_trade_matrix_has_every_kind_of_cell() -> None:
    config = WorldEnv("trade").config
    cells = {(c.observer, c.target): c for c in observability_cells(ObservabilityPlan(config))}
    assert cells[("Trader_1", "Trader_4")].level == "unaware"
    assert cells[("Trader_4", "Trader_4")].variables["gold"] == "exact"
    assert cells[("Trader_2", "Trader_4")].variables["gold"] == "hidden"
    assert cells[("Trader_2", "Trader_4")].variables["economic_strength"] == "noisy"
    assert cells[("Trader_1", GLOBAL_TARGET)].variables["capital"] == "exact"
    assert cells[("Trader_2", GLOBAL_TARGET)].variables["capital"] == "hidden"
    full = observability_cells(ObservabilityPlan(config, full=True))
    assert {m for c in full for m in c.variables.values()} == {"exact"}


def test_where_episodes_go(tmp_path: Path) -> None:
    env = parallel_env(short_world("forage", 3), observability=True, record=tmp_path / "runs")
    play(env, seed=0, turns=10)  # ends by truncation: written at once
    assert [p.name for p in env.paths] == ["forage-episode-0.json"]
    play(env, seed=1, turns=1)
    env.reset(seed=2)  # the unfinished episode is written on reset
    env.close()  # and the one in progress on close
    names = [p.name for p in env.paths]
    assert names == [f"forage-episode-{n}.json" for n in range(3)]
    logs = [load_episode_log(p) for p in env.paths]
    assert [(log.complete, len(log.turns), log.seed) for log in logs] == [
        (True, 4, 0),
        (False, 2, 1),
        (False, 1, 2),
    ]
    single = WorldEnv("forage", record=tmp_path / "one.json.gz")
    play(single, seed=0, turns=2)
    play(single, seed=1, turns=1)
    single.close()
    assert load_episode_log(tmp_path / "one.json.gz").seed == 1
    assert len(single.recorder.paths) == 2


def test_the_bare_env_records_the_ground_truth_for_everyone() -> None:
    env = WorldEnv("trade", record=True)
    play(env, seed=0, turns=2)
    log = env.episode_log
    assert not log.observability
    for observer, seen in log.turns[2].observations.items():
        assert seen.agents == log.turns[2].state.agents, observer
        assert seen.global_state == log.turns[2].state.global_state


def test_the_aec_env_records_a_turn_when_every_agent_has_acted(tmp_path: Path) -> None:
    path = tmp_path / "aec.json"
    env = aec_env(short_world("forage", 2), observability=True, record=path)
    env.reset(seed=0)
    for _ in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else {"move": "right"})
    log = load_episode_log(path)
    assert [t.turn for t in log.turns] == [0, 1, 2] and log.complete
    assert log.turns[0].actions == {agent: {"move": "right"} for agent in log.agents}


def test_restore_starts_a_new_log_at_the_snapshot() -> None:
    env = WorldEnv("forage", record=True)
    play(env, seed=0, turns=3)
    snapshot = env.snapshot()
    env.step({agent: {"move": "up"} for agent in env.agents})
    env.restore(snapshot)
    assert [t.turn for t in env.episode_log.turns] == [3]


def test_record_goes_where_the_observations_are_built() -> None:
    with pytest.raises(TypeError, match="RecordEpisode goes directly on a world env"):
        RecordEpisode(ParallelNoiseWrapper(ObservabilityWrapper(parallel_env("forage")), 0.1))
    with pytest.raises(TypeError, match="record must be True or a path"):
        WorldEnv("forage", record=False)


# -- files that cannot load --------------------------------------------------------------------


@pytest.fixture(scope="module")
def good() -> dict[str, Any]:
    env = parallel_env("trade", observability=True, record=True)
    play(env, seed=0, turns=3)
    return env.episode_log.model_dump(mode="json")


def broken(data: dict[str, Any], change: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(data))
    change(copy)
    return copy


CASES = {
    "missing state": (
        lambda d: d["turns"][2].pop("state"),
        ["turns[2].state: Field required"],
    ),
    "a bad level": (
        lambda d: d["cells"][0].update(level="psychic"),
        ["cells[0].level", "'unaware', 'external' or 'insider'"],
    ),
    "a bad mark": (
        lambda d: d["cells"][1]["variables"].update(gold="blurred"),
        ["cells[1].variables.gold", "'hidden', 'exact' or 'noisy'"],
    ),
    "a turn out of order": (
        lambda d: d["turns"][2].update(turn=7),
        ["turns[2].turn: 7, expected 2"],
    ),
    "a stranger acts": (
        lambda d: d["turns"][0]["actions"].update(Nobody={}),
        ["turns[0].actions[Nobody]: not an agent of the episode"],
    ),
    "a hidden variable observed": (
        lambda d: d["turns"][1]["observations"]["Trader_2"]["agents"]["Trader_4"].update(gold=1.0),
        ["turns[1].observations[Trader_2].agents[Trader_4]: ['gold'] are hidden from Trader_2"],
    ),
    "an unaware target observed": (
        lambda d: d["turns"][1]["observations"]["Trader_1"]["agents"].update(
            Trader_4={"mood": "content"}
        ),
        ["turns[1].observations[Trader_1].agents[Trader_4]: ['mood'] are hidden"],
    ),
    "a missing cell": (lambda d: d["cells"].pop(), ["cells: no cell (Trader_4, global)"]),
    "an unknown field": (lambda d: d.update(colour="red"), ["colour: Extra inputs"]),
    "a newer version": (
        lambda d: d.update(schema_version=2),
        ["no migration path from schema version 2 to 1"],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_file_names_itself_and_the_field(
    case: str, good: dict[str, Any], tmp_path: Path
) -> None:
    change, expected = CASES[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(broken(good, change)))
    with pytest.raises(EpisodeLogError) as caught:
        load_episode_log(path)
    message = str(caught.value)
    assert str(path) in message
    for part in expected:
        assert part in message, message


def test_files_that_are_not_logs(tmp_path: Path) -> None:
    cases = {
        "text.json": (b'{"turns": [', "not JSON at line 1, column 12"),
        "list.json": (b"[1, 2]", "expected a JSON object, got list"),
        "torn.json.gz": (gzip.compress(b'{"a": 1}')[:-6], "unreadable"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(EpisodeLogError, match="episode log") as caught:
            load_episode_log(path)
        assert str(path) in str(caught.value) and expected in str(caught.value)
    with pytest.raises(FileNotFoundError, match="no episode log at"):
        load_episode_log(tmp_path / "absent.json")
