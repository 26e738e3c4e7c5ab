"""Snapshots to disk and back: typed values restored, atomic writes, old versions, clear errors."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

import multiagent.checkpoints as checkpoints
from multiagent.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from multiagent.config import ObservabilityLevel, SimulationConfig, load_config
from multiagent.dto import (
    SNAPSHOT_MIGRATIONS,
    AgentObservation,
    GlobalObservation,
    ObservationEnvelope,
    SimulationSnapshot,
)
from multiagent.errors import StateValidationError
from multiagent.state import create_agent_state_model, create_global_state_model
from multiagent.world_state import WorldState

PAIR = {"type": "tuple", "item_types": ["float", "float"], "default": [0.0, 0.0]}


def world(max_turns: int = 10) -> dict[str, Any]:
    """Agent and global variables of every complex kind (the variable-types spec's examples)."""
    return {
        "simulation": {"name": "traders", "max_turns": max_turns},
        "agents": [{"name": "Trader_1"}, {"name": "Trader_2"}],
        "state_variables": {
            "agent_vars": {
                "gold": {"type": "int", "min": 0, "default": 10},
                "location": PAIR,
                "inventory": {"type": "dict", "key_type": "str", "value_type": "float"},
                "action_history": {"type": "list", "item_type": "str", "max_length": 10},
                "position_history": {
                    "type": "list",
                    "item_type": {"type": "tuple", "item_types": ["float", "float"]},
                },
                "target_destination": {"type": "str", "default": None},
            },
            "global_vars": {
                "capital": {
                    "type": "object",
                    "schema": {
                        "name": {"type": "str", "default": "Capital City"},
                        "position": PAIR,
                        "population": {"type": "int", "min": 0, "default": 10000},
                        "resources": {"type": "dict", "key_type": "str", "value_type": "float"},
                    },
                },
                "price": {"type": "float", "min": 0, "default": 1.0},
            },
        },
    }


@pytest.fixture
def config() -> SimulationConfig:
    return load_config(world())


def start_state(config: SimulationConfig) -> WorldState:
    """Defaults from the generated models, then a few turns' worth of changes."""
    variables = config.state_variables
    agent_model = create_agent_state_model(variables.agent_vars)
    agents = {name: agent_model(name=name).model_dump() for name in config.agent_names}
    agents["Trader_1"].update(
        location=(3.5, -1.0),
        inventory={"food": 10.5, "metal": 5.0},
        action_history=["spawn", "move"],
        position_history=[(0.0, 0.0), (3.5, -1.0)],
        target_destination="Capital City",
    )
    global_state = create_global_state_model(variables.global_vars)().model_dump()
    global_state["capital"]["resources"] = {"food": 1000.0}
    return WorldState(turn=4, agents=agents, global_state=global_state)


@pytest.fixture
def snapshot(config: SimulationConfig) -> SimulationSnapshot:
    rng, noise = np.random.default_rng(7), np.random.default_rng(8)
    rng.random(3)
    return SimulationSnapshot.from_world_state(start_state(config), config, rng, noise)


def test_round_trip_restores_an_equal_snapshot(
    tmp_path: Path, config: SimulationConfig, snapshot: SimulationSnapshot
) -> None:
    path = save_checkpoint(snapshot, tmp_path / "turn_4.json")
    assert path == tmp_path / "turn_4.json"
    loaded = load_checkpoint(path, config=config)
    assert loaded == snapshot
    assert loaded.migrations == []
    assert loaded.created_at.tzinfo == timezone.utc


def test_tuples_come_back_as_tuples_and_none_stays_null(
    tmp_path: Path, config: SimulationConfig, snapshot: SimulationSnapshot
) -> None:
    path = save_checkpoint(snapshot, tmp_path / "c.json")
    text = path.read_text()
    assert '"target_destination": null' in text
    stored = json.loads(text)["agents"]
    assert stored["Trader_1"]["location"] == [3.5, -1.0]
    assert "target_destination" in stored["Trader_2"]
    assert stored["Trader_2"]["target_destination"] is None

    loaded = load_checkpoint(path, config=config)
    trader = loaded.agents["Trader_1"]
    assert trader["location"] == (3.5, -1.0) and isinstance(trader["location"], tuple)
    assert all(isinstance(p, tuple) for p in trader["position_history"])
    assert isinstance(loaded.global_state["capital"]["position"], tuple)
    assert loaded.agents["Trader_2"]["target_destination"] is None
    # Without a config nothing knows which arrays were tuples.
    assert load_checkpoint(path).agents["Trader_1"]["location"] == [3.5, -1.0]


def test_the_generators_resume_where_they_were(
    tmp_path: Path, config: SimulationConfig, snapshot: SimulationSnapshot
) -> None:
    loaded = load_checkpoint(save_checkpoint(snapshot, tmp_path / "c.json"), config=config)
    assert loaded.rng_state["state"]["state"] > 2**64  # PCG64's 128-bit ints survive JSON
    resumed = np.random.Generator(np.random.PCG64())
    resumed.bit_generator.state = loaded.rng_state
    expected = np.random.default_rng(7)
    expected.random(3)
    assert resumed.random() == expected.random()
    assert loaded.episode_rng_state == np.random.default_rng(8).bit_generator.state


def test_the_snapshot_is_a_copy_of_the_world_state(config: SimulationConfig) -> None:
    state = start_state(config)
    snap = SimulationSnapshot.from_world_state(state, config, np.random.default_rng(0))
    state.agents["Trader_1"]["action_history"].append("trade")
    assert snap.agents["Trader_1"]["action_history"] == ["spawn", "move"]
    assert snap.config_name == "traders" and snap.config_hash == config.config_hash
    assert snap.episode_rng_state is None
    resumed = snap.to_world_state()
    assert resumed.turn == 4 and resumed.agents["Trader_1"]["action_history"] == ["spawn", "move"]
    resumed.agents["Trader_1"]["gold"] = 0
    assert snap.agents["Trader_1"]["gold"] == 10


def test_save_replaces_an_existing_checkpoint(tmp_path: Path, snapshot: SimulationSnapshot) -> None:
    path = tmp_path / "deep" / "er" / "c.json"
    save_checkpoint(snapshot.model_copy(update={"turn": 1}), path)
    save_checkpoint(snapshot, path)
    assert load_checkpoint(path).turn == 4
    assert os.listdir(path.parent) == ["c.json"]


class FailingFile:
    """A file that writes half of what it is given, then finds the disk full."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def __enter__(self) -> FailingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()

    def write(self, text: str) -> int:
        self.real.write(text[: len(text) // 2])
        self.real.flush()
        raise OSError(28, "No space left on device")


def test_a_failed_write_leaves_the_old_checkpoint_whole(
    tmp_path: Path, snapshot: SimulationSnapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save_checkpoint(snapshot, tmp_path / "c.json")
    before = path.read_bytes()
    written: list[Path] = []

    def half_open(file: Path, *args: Any, **kwargs: Any) -> FailingFile:
        written.append(Path(file))
        return FailingFile(open(file, *args, **kwargs))

    monkeypatch.setattr(checkpoints, "open", half_open, raising=False)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(snapshot.model_copy(update={"turn": 9}), path)
    assert written and written[0].parent == tmp_path  # the half-written file was a temporary one
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.json"]


def test_a_failed_fsync_or_rename_leaves_the_old_checkpoint_whole(
    tmp_path: Path, snapshot: SimulationSnapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save_checkpoint(snapshot, tmp_path / "c.json")
    before = path.read_bytes()

    def fail(*args: Any) -> None:
        raise OSError(5, "Input/output error")

    for name in ("fsync", "replace"):
        with monkeypatch.context() as patch:
            patch.setattr(os, name, fail)
            with pytest.raises(OSError, match="Input/output"):
                save_checkpoint(snapshot.model_copy(update={"turn": 9}), path)
        assert path.read_bytes() == before
        assert os.listdir(tmp_path) == ["c.json"]


def test_a_value_json_cannot_hold_fails_before_the_disk_is_touched(
    tmp_path: Path, snapshot: SimulationSnapshot
) -> None:
    path = save_checkpoint(snapshot, tmp_path / "c.json")
    before = path.read_bytes()
    # MT19937's state holds a numpy array: not JSON.
    bad = snapshot.model_copy(update={"rng_state": np.random.MT19937(0).state})
    with pytest.raises(PydanticSerializationError, match="ndarray"):
        save_checkpoint(bad, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.json"]


def version_1(config: SimulationConfig) -> dict[str, Any]:
    """An old scalar-only checkpoint: turn, agents and globals, no version, rng or config."""
    return {
        "turn": 5,
        "agents": {
            name: {"name": name, "economic_strength": 1000.0 + i}
            for i, name in enumerate(config.agent_names)
        },
        "global_state": {},
    }


def test_an_old_scalar_checkpoint_loads_with_its_migration_recorded(tmp_path: Path) -> None:
    legacy = load_config({"simulation": {"name": "old", "max_turns": 3},
                          "agents": [{"name": "A"}, {"name": "B"}]})  # fmt: skip
    path = tmp_path / "old.json"
    path.write_text(json.dumps(version_1(legacy)))
    before = datetime.now(timezone.utc)
    loaded = load_checkpoint(path, config=legacy)
    assert loaded.schema_version == 2 and loaded.turn == 5
    assert loaded.agents["B"]["economic_strength"] == 1001.0
    assert loaded.config_name == loaded.config_hash == "unknown"
    assert loaded.rng_state == {} and loaded.episode_rng_state is None
    assert loaded.migrations == [
        "1->2: add config identity and rng state (unknown; reseed from the env)"
    ]
    assert before - timedelta(seconds=1) <= loaded.created_at <= datetime.now(timezone.utc)

    # Saved again, it is a version 2 checkpoint that remembers its migration.
    again = load_checkpoint(save_checkpoint(loaded, tmp_path / "new.json"))
    assert again.migrations == loaded.migrations and again.schema_version == 2


def test_the_migration_leaves_the_old_payload_alone() -> None:
    old = {"turn": 0, "agents": {}, "global_state": {}}
    migrated, applied = SNAPSHOT_MIGRATIONS.apply(old, to_version=2)
    assert old == {"turn": 0, "agents": {}, "global_state": {}}
    assert migrated["schema_version"] == 2 and len(applied) == 1


def test_a_snapshot_of_another_config_is_refused(
    tmp_path: Path, config: SimulationConfig, snapshot: SimulationSnapshot
) -> None:
    path = save_checkpoint(snapshot, tmp_path / "c.json")
    other = load_config(world(max_turns=99))
    with pytest.raises(ValueError, match="config hash") as caught:
        load_checkpoint(path, config=other)
    assert config.config_hash in str(caught.value) and other.config_hash in str(caught.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no checkpoint file at .*nowhere\.json"):
        load_checkpoint(tmp_path / "nowhere.json")


def test_bad_json_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "turn": 5,\n  "agents": {,\n}')
    with pytest.raises(CheckpointError, match=r"broken\.json.* at line 3, column 14"):
        load_checkpoint(path)
    path.write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="must hold a JSON object, got list"):
        load_checkpoint(path)


def test_a_bad_field_is_named_by_its_path(tmp_path: Path, snapshot: SimulationSnapshot) -> None:
    data = json.loads(snapshot.model_dump_json())
    data["turn"] = -1
    data["agents"]["Trader_1"] = "rich"
    del data["rng_state"]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert "turn: Input should be greater than or equal to 0" in message
    assert "agents.Trader_1: Input should be a valid dictionary" in message
    assert "rng_state: Field required" in message


def test_a_newer_or_unknown_version_is_refused(
    tmp_path: Path, snapshot: SimulationSnapshot
) -> None:
    data = json.loads(snapshot.model_dump_json())
    data["schema_version"] = 3
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="no migration path from schema version 3 to 2"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    ("section", "owner", "variable", "value", "where"),
    [
        ("agents", "Trader_1", "location", [1.0, "north"], "agents[Trader_1].location[1]"),
        ("agents", "Trader_2", "gold", -3, "agents[Trader_2].gold"),
        ("global_state", "capital", "population", -5, "global_state.capital.population"),
    ],
)
def test_state_that_breaks_the_definitions_names_the_variable(
    tmp_path: Path,
    config: SimulationConfig,
    snapshot: SimulationSnapshot,
    section: str,
    owner: str,
    variable: str,
    value: Any,
    where: str,
) -> None:
    data = json.loads(snapshot.model_dump_json())
    data[section][owner][variable] = value
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="does not match the config's variables") as caught:
        load_checkpoint(path, config=config)
    assert where in str(caught.value)
    assert isinstance(caught.value.__cause__, StateValidationError)
    assert load_checkpoint(path).agents.keys() == snapshot.agents.keys()  # no config, no check


def test_agents_the_config_does_not_define_are_refused(
    tmp_path: Path, config: SimulationConfig, snapshot: SimulationSnapshot
) -> None:
    data = json.loads(snapshot.model_dump_json())
    data["agents"]["Stranger"] = {**data["agents"]["Trader_1"], "name": "Stranger"}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=r"does not define: \['Stranger'\]"):
        load_checkpoint(path, config=config)


def test_the_snapshot_is_frozen_and_time_is_utc(snapshot: SimulationSnapshot) -> None:
    with pytest.raises(ValidationError, match="frozen"):
        snapshot.turn = 5  # type: ignore[misc]
    with pytest.raises(ValidationError, match="timezone"):
        SimulationSnapshot.model_validate(
            {**snapshot.model_dump(), "created_at": datetime(2024, 1, 1)}
        )
    local = datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    moved = SimulationSnapshot.model_validate({**snapshot.model_dump(), "created_at": local})
    assert moved.created_at == local and moved.created_at.tzinfo == timezone.utc


# -- observations -------------------------------------------------------------------------------


def envelope() -> ObservationEnvelope:
    return ObservationEnvelope(
        turn=3,
        observer="Trader_1",
        agents={
            "Trader_2": AgentObservation(
                name="Trader_2",
                variables={"location": (1.25, 2.0), "gold": 7, "target_destination": None},
                level="external",
                noise=0.1,
            ),
            "Trader_1": AgentObservation(
                name="Trader_1", variables={"gold": 10}, level="insider", noise=0.0
            ),
        },
        global_context=GlobalObservation(variables={"price": 1.5}, level="insider", noise=0),
    )


def test_the_envelope_renders_sorted_compact_text() -> None:
    assert envelope().to_text() == (
        "Turn 3, observer Trader_1\n"
        "Agents:\n"
        '- Trader_1 (insider): {"gold": 10}\n'
        '- Trader_2 (external, noise 0.1): {"gold": 7, "location": [1.25, 2.0], '
        '"target_destination": null}\n'
        'Global state (insider): {"price": 1.5}'
    )
    alone = ObservationEnvelope(turn=0, observer="Trader_1")
    assert alone.to_text() == "Turn 0, observer Trader_1\nAgents: none observed\n" + (
        "Global state: not observed"
    )


def test_the_envelope_round_trips_through_json() -> None:
    text = envelope().to_json()
    assert '"target_destination":null' in text and '"global_context":{' in text
    assert ObservationEnvelope.model_validate_json(text).agents["Trader_2"].variables[
        "location"
    ] == [1.25, 2.0]


def test_the_config_levels_are_accepted_and_stored_as_text() -> None:
    seen = AgentObservation(name="B", variables={}, level=ObservabilityLevel.EXTERNAL, noise=0)
    assert seen.level == "external" and type(seen.level) is str


def test_the_envelope_refuses_unaware_levels_and_mislabelled_targets() -> None:
    with pytest.raises(ValidationError, match="level"):
        AgentObservation(name="B", variables={}, level="unaware", noise=0)  # type: ignore[arg-type]
    target = AgentObservation(name="B", variables={}, level="external", noise=0)
    with pytest.raises(ValidationError, match=r"agents\[C\] holds the observation of 'B'"):
        ObservationEnvelope(turn=0, observer="A", agents={"C": target})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        ObservationEnvelope(turn=-1, observer="A")
