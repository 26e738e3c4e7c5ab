"""``AdapterResult.to_wire_json`` writes exactly what ``dumps(to_wire())`` writes, faster."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from chess_env.serving.app import ChessAction, ChessAdapter
from envkit.server.adapter import AdapterResult
from envkit.server.jsontext import dumps
from multiagent.server import WorldAdapter


class Reading(BaseModel):
    label: str
    value: float | None = None
    counts: list[int] = []
    extra: dict[str, Any] | None = None


readings = st.builds(
    Reading,
    label=st.text(),  # lone surrogates too: JSON escapes them, UTF-8 cannot hold them
    value=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    counts=st.lists(st.integers(), max_size=5),
    extra=st.none() | st.dictionaries(st.text(max_size=5), st.integers() | st.text(), max_size=3),
)


@given(
    observation=readings,
    reward=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    done=st.booleans(),
    metadata=st.dictionaries(st.text(max_size=5), st.booleans() | st.text(), max_size=2),
)
def test_it_writes_what_dumps_of_to_wire_writes(
    observation: Reading, reward: float | None, done: bool, metadata: dict[str, Any]
) -> None:
    result = AdapterResult(observation, reward, done, metadata)
    assert result.to_wire_json() == dumps(result.to_wire())


def test_unset_fields_stay_out_as_in_to_wire() -> None:
    result = AdapterResult(Reading(label="x"), 1.0)
    assert result.to_wire_json() == '{"observation":{"label":"x"},"reward":1.0,"done":false}'


def test_chess_and_world_steps_are_written_alike() -> None:
    chess_adapter, rng = ChessAdapter(), random.Random(0)
    results = [chess_adapter.reset(seed=0, include_tensor=True)]
    for _ in range(40):
        move = rng.choice(results[-1].observation.legal_moves)
        results.append(chess_adapter.step(ChessAction(move=move)))
    world = WorldAdapter("trade", client_seeds=True)
    results.append(world.reset(seed=0))
    rest = {"verb": "rest", "good": "food", "target_town": "Capital", "amount": 0.0}
    results += [world.step(world.action_model.model_validate(rest)) for _ in range(3)]
    assert all(result.to_wire_json() == dumps(result.to_wire()) for result in results)
