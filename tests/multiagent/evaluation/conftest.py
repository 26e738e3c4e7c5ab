"""The ``build`` fixture: hand-built runs of the forage world with one scenario, ``duel``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from multiagent.config import SimulationConfig
from multiagent.evaluation.records import EpisodeRecord, EvalConfig, SeatRecord
from multiagent.scenarios import CollapseCondition, ScenarioConfig
from multiagent.worlds import load_world

STRONG = "scripted:forage_strong"
FOCAL = "scripted:forage_focal"
LLM = "openai:tiny-model?base_url=http://localhost:1/v1"


class RunBuilder:
    """Worlds, configurations, seats and episodes with every field the tests do not vary fixed."""

    strong, focal, llm = STRONG, FOCAL, LLM

    def world(self, *, baseline: str | None = STRONG, collapse: bool = True) -> SimulationConfig:
        """forage with a scenario ``duel``: two focal foragers, the third a background noop."""
        scenario = ScenarioConfig(
            focal=["Forager_1", "Forager_2"], background={"Forager_3": "noop"}, baseline=baseline
        )
        update: dict[str, Any] = {"scenarios": {"duel": scenario}}
        if collapse:
            update["collapse"] = CollapseCondition(variable="eaten", below=0)
        return load_world("forage").model_copy(update=update)

    def config(
        self, focal: Sequence[str] = (FOCAL,), baselines: Sequence[str] = ("random", STRONG)
    ) -> EvalConfig:
        return EvalConfig(
            world="forage",
            world_hash="0123",
            scenarios=["duel"],
            focal=list(focal),
            baselines=list(baselines),
            episodes=2,
            seed=7,
            observability=["configured", "full"],
            noise_scales=[1.0],
            error_allowance=3,
        )

    def seat(self, name: str, focal: bool, player: str, reward: float, **fields: Any) -> SeatRecord:
        values: dict[str, Any] = {"status": "truncated", "decisions": 10, "invalid_actions": 0}
        values |= fields
        return SeatRecord(
            seat=name, role="forager", focal=focal, player=player, reward=reward, **values
        )

    def episode(
        self,
        focal: str,
        index: int,
        rewards: tuple[float, float, float],
        *,
        condition: str = "configured",
        turns: int = 10,
        collapsed: bool = False,
        seats: list[SeatRecord] | None = None,
    ) -> EpisodeRecord:
        """One episode of ``duel``: ``rewards`` of Forager_1, Forager_2 (focal) and Forager_3."""
        first, second, third = rewards
        return EpisodeRecord(
            key=f"{condition}/duel/default/{focal}/{index}",
            condition=condition,
            scenario="duel",
            focal=focal,
            background_set="default",
            episode=index,
            seed=100 + index,
            length=10,
            turns=turns,
            end="completed" if collapsed else "truncated",
            collapsed=collapsed,
            seats=seats
            or [
                self.seat("Forager_1", True, focal, first),
                self.seat("Forager_2", True, focal, second),
                self.seat("Forager_3", False, "noop", third),
            ],
            cpu_seconds=0.5 + index,
            wall_seconds=1.0 + index,
        )

    def constant_run(self, condition: str = "configured") -> list[EpisodeRecord]:
        """Focal per-capita 3 on both seeds, random 1, the strong baseline 5."""
        return [
            self.episode(spec, index, (value - 1, value + 1, 0.0), condition=condition)
            for spec, value in [(FOCAL, 3.0), ("random", 1.0), (STRONG, 5.0)]
            for index in range(2)
        ]


@pytest.fixture
def build() -> RunBuilder:
    """The builder of hand-made runs."""
    return RunBuilder()
