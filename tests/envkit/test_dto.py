"""FrozenDTO's contract and the migration registry's paths, names and copies."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import Field, ValidationError

from envkit.dto import FrozenDTO, MigrationError, MigrationRegistry


class Result(FrozenDTO):
    schema_version: int = Field(3, ge=1, description="Version of this DTO's shape")
    score: float = Field(description="The score")
    tags: tuple[str, ...] = Field((), description="Labels")


def test_a_dto_is_frozen() -> None:
    result = Result(score=1.0)
    with pytest.raises(ValidationError, match="frozen"):
        result.score = 2.0  # type: ignore[misc]


def test_a_dto_forbids_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="scroe"):
        Result.model_validate({"score": 1.0, "scroe": 2.0})


def test_a_dto_is_read_by_attribute_not_by_key() -> None:
    result = Result(score=1.0)
    assert result.score == 1.0
    with pytest.raises(TypeError):
        result["score"]  # type: ignore[index]


def test_schema_version_defaults_to_the_class_version() -> None:
    class Plain(FrozenDTO):
        value: int = Field(description="A value")

    assert Plain(value=1).schema_version == 1
    assert Result(score=1.0).schema_version == 3
    assert Result.model_json_schema()["properties"]["schema_version"]["default"] == 3


def test_a_payload_of_another_version_is_refused() -> None:
    with pytest.raises(ValidationError, match="schema version 3, got 2; migrate"):
        Result.model_validate({"schema_version": 2, "score": 1.0})


def test_json_round_trip_restores_the_same_dto() -> None:
    result = Result(score=0.5, tags=("a", "b"))
    text = result.model_dump_json()
    assert '"schema_version":3' in text
    assert Result.model_validate_json(text) == result


def chain() -> MigrationRegistry:
    """1 -> 2 -> 3, with documented and undocumented handlers."""
    registry = MigrationRegistry()

    @registry.register(from_version=1, to_version=2)
    def add_rng(data: dict[str, Any]) -> dict[str, Any]:
        """Add rng state.

        More detail that is not part of the name.
        """
        data["rng_state"] = {}
        return data

    def rename_tick_to_turn(data: dict[str, Any]) -> dict[str, Any]:
        data["turn"] = data.pop("tick")
        return data

    registry.add(2, 3, rename_tick_to_turn)
    return registry


def test_the_path_crosses_every_intermediate_version() -> None:
    path = chain().find_path(1, 3)
    assert [(m.from_version, m.to_version) for m in path] == [(1, 2), (2, 3)]
    assert chain().find_path(2, 2) == []


def test_the_shortest_path_is_taken() -> None:
    registry = chain()
    registry.add(1, 3, lambda data: {"turn": data["tick"], "rng_state": {}})
    assert [(m.from_version, m.to_version) for m in registry.find_path(1, 3)] == [(1, 3)]


def test_no_path_names_both_versions_and_what_is_registered() -> None:
    with pytest.raises(
        MigrationError, match=r"from schema version 3 to 1 \(registered: 1->2, 2->3\)"
    ):
        chain().find_path(3, 1)
    with pytest.raises(MigrationError, match="from schema version 1 to 4"):
        chain().apply({"tick": 0}, to_version=4)
    assert issubclass(MigrationError, ValueError)


def test_apply_records_names_and_sets_the_version() -> None:
    migrated, applied = chain().apply({"tick": 7}, to_version=3)
    assert migrated == {"turn": 7, "rng_state": {}, "schema_version": 3}
    assert applied == ["1->2: Add rng state", "2->3: rename_tick_to_turn"]


def test_apply_starts_from_the_payload_version() -> None:
    migrated, applied = chain().apply({"schema_version": 2, "tick": 7}, to_version=3)
    assert migrated == {"turn": 7, "schema_version": 3}
    assert applied == ["2->3: rename_tick_to_turn"]
    assert chain().apply({"schema_version": 3, "turn": 1}, to_version=3) == (
        {"schema_version": 3, "turn": 1},
        [],
    )


def test_handlers_never_change_the_input() -> None:
    registry = MigrationRegistry()

    @registry.register(from_version=1, to_version=2)
    def nest(data: dict[str, Any]) -> dict[str, Any]:
        data["agents"]["A"]["gold"] += 1
        data["agents"]["B"] = {}
        return data

    original = {"agents": {"A": {"gold": 1}}}
    kept = copy.deepcopy(original)
    migrated, _ = registry.apply(original, to_version=2)
    assert original == kept
    assert migrated["agents"] == {"A": {"gold": 2}, "B": {}}
    migrated["agents"]["A"]["gold"] = 99
    assert original == kept


def test_a_cycle_in_the_graph_does_not_loop() -> None:
    registry = MigrationRegistry()
    registry.add(1, 2, lambda data: data)
    registry.add(2, 1, lambda data: data)
    registry.add(2, 3, lambda data: data)
    registry.add(3, 2, lambda data: data)
    assert [m.to_version for m in registry.find_path(1, 3)] == [2, 3]
    with pytest.raises(MigrationError, match="from schema version 1 to 5"):
        registry.find_path(1, 5)


def test_a_registered_downgrade_is_found() -> None:
    registry = chain()

    @registry.register(from_version=3, to_version=2)
    def turn_back_into_tick(data: dict[str, Any]) -> dict[str, Any]:
        """Rename turn back to tick."""
        data["tick"] = data.pop("turn")
        return data

    migrated, applied = registry.apply({"schema_version": 3, "turn": 4}, to_version=2)
    assert migrated == {"tick": 4, "schema_version": 2}
    assert applied == ["3->2: Rename turn back to tick"]


def test_a_failing_or_malformed_handler_is_named() -> None:
    with pytest.raises(MigrationError, match="'2->3: rename_tick_to_turn' failed: KeyError"):
        chain().apply({"schema_version": 2}, to_version=3)
    registry = MigrationRegistry()
    registry.add(1, 2, lambda data: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(MigrationError, match="returned NoneType, not a dict"):
        registry.apply({}, to_version=2)
    with pytest.raises(MigrationError, match="must be an integer"):
        registry.apply({"schema_version": "1"}, to_version=2)


def test_registering_an_edge_twice_or_onto_itself_is_refused() -> None:
    registry = chain()
    with pytest.raises(MigrationError, match="from version 1 to 2 is already registered"):
        registry.add(1, 2, lambda data: data)
    with pytest.raises(MigrationError, match="must change the version"):
        registry.add(2, 2, lambda data: data)
