"""What a multi-agent world hands out: observations for one observer, and whole-state snapshots.

- ``AgentObservation`` / ``GlobalObservation``: one target's visible variables as the observer
  sees them (after visibility filtering and noise), with the level and noise they were seen at.
- ``Message``: a message an observer heard (``multiagent.messages`` says who hears what).
- ``ObservationEnvelope``: everything one observer sees on one turn, and the messages it heard
  since the last; ``to_text()`` for prompts.
- ``SimulationSnapshot`` (schema version 2): the ground truth plus the random generators' states,
  enough to resume an episode exactly; ``multiagent.checkpoints`` writes and reads it.
- ``SNAPSHOT_MIGRATIONS``: how older snapshot payloads reach the current version; ``UNKNOWN``, the
  config identity they get.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from envkit.dto import FrozenDTO, MigrationRegistry
from multiagent.world_state import WorldState

if TYPE_CHECKING:
    import numpy as np

    from multiagent.config import SimulationConfig

__all__ = [
    "SNAPSHOT_MIGRATIONS",
    "UNKNOWN",
    "AgentObservation",
    "GlobalObservation",
    "Message",
    "ObservationEnvelope",
    "SimulationSnapshot",
    "VisibleLevel",
]

# Unaware targets are left out of an observation, so only these two levels ever appear.
VisibleLevel = Literal["external", "insider"]
UNKNOWN = "unknown"  # config identity of a snapshot taken before it was recorded


class AgentObservation(FrozenDTO):
    """One target agent as the observer sees it.

    Example:
        >>> seen = AgentObservation(name="Trader_2", variables={"gold": 31.5}, level="external",
        ...                            noise=0.1)
        >>> seen.model_dump(exclude={"schema_version"})
        {'name': 'Trader_2', 'variables': {'gold': 31.5}, 'level': 'external', 'noise': 0.1}
        >>> AgentObservation(name="Trader_3", variables={}, level="unaware", noise=0)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for AgentObservation
        level
          Input should be 'external' or 'insider' ...
    """

    name: str = Field(min_length=1, description="The target agent's name")
    variables: dict[str, Any] = Field(
        description="The target's visible variables, after visibility filtering and noise"
    )
    level: VisibleLevel = Field(description="How much of the target the observer sees")
    noise: float = Field(ge=0.0, description="The noise factor applied to numeric variables")


class GlobalObservation(FrozenDTO):
    """The global state as the observer sees it.

    Example:
        >>> context = GlobalObservation(variables={"season": "winter"}, level="insider", noise=0)
        >>> print(ObservationEnvelope(turn=3, observer="A", global_context=context).to_text())
        Turn 3, observer A
        Agents: none observed
        Global state (insider): {"season": "winter"}
    """

    variables: dict[str, Any] = Field(
        description="The visible global variables, after visibility filtering and noise"
    )
    level: VisibleLevel = Field(description="How much of the global state the observer sees")
    noise: float = Field(ge=0.0, description="The noise factor applied to numeric variables")


class Message(FrozenDTO):
    """A message one agent heard from another, sent on ``turn`` and delivered with the next.

    Example:
        >>> Message(turn=3, sender="Fisher_2", channel="talk", text="stock is low").text
        'stock is low'
    """

    turn: int = Field(ge=0, description="The turn it was sent on")
    sender: str = Field(min_length=1, description="The agent that sent it")
    channel: str = Field(min_length=1, description="The channel it came on (the world's channels)")
    text: str = Field(description="What was said")


class ObservationEnvelope(FrozenDTO):
    """Everything one observer sees on one turn: the unit handed to a policy or an LLM.

    Messages heard since the last turn come last, in a ``Messages`` block of ``to_text()``
    (absent when there are none).

    Example:
        >>> seen = AgentObservation(name="B", variables={"gold": 3}, level="external", noise=0)
        >>> print(ObservationEnvelope(turn=2, observer="A", agents={"B": seen}).to_text())
        Turn 2, observer A
        Agents:
        - B (external): {"gold": 3}
        Global state: not observed
        >>> heard = Message(turn=1, sender="B", channel="talk", text="hi")
        >>> print(ObservationEnvelope(turn=2, observer="A", messages=[heard]).to_text())
        Turn 2, observer A
        Agents: none observed
        Global state: not observed
        Messages:
        - turn 1, B (talk): hi
    """

    turn: int = Field(ge=0, description="The turn the observation was made on")
    observer: str = Field(min_length=1, description="The observing agent")
    agents: dict[str, AgentObservation] = Field(
        default_factory=dict, description="Observed agents by name; unaware targets are absent"
    )
    global_context: GlobalObservation | None = Field(
        None, description="The observed global state, or None when the observer is unaware of it"
    )
    messages: list[Message] = Field(
        default_factory=list, description="Messages heard since the last turn, in sending order"
    )

    @model_validator(mode="after")
    def _keys_are_names(self) -> ObservationEnvelope:
        for key, target in self.agents.items():
            if key != target.name:
                raise ValueError(f"agents[{key}] holds the observation of {target.name!r}")
        return self

    def to_text(self) -> str:
        """A compact rendering for prompts: agents and variables sorted, values as JSON, each
        message on one line (its line breaks become spaces; ``to_json`` keeps them)."""
        data = self.model_dump(mode="json")
        lines = [f"Turn {self.turn}, observer {self.observer}"]
        if data["agents"]:
            lines.append("Agents:")
            for name in sorted(data["agents"]):
                target = data["agents"][name]
                lines.append(f"- {name} {_seen(target)}: {_compact(target['variables'])}")
        else:
            lines.append("Agents: none observed")
        context = data["global_context"]
        if context is None:
            lines.append("Global state: not observed")
        else:
            lines.append(f"Global state {_seen(context)}: {_compact(context['variables'])}")
        if self.messages:
            lines.append("Messages:")
            lines += [f"- turn {m.turn}, {m.sender} ({m.channel}): {_one_line(m.text)}"
                      for m in self.messages]  # fmt: skip
        return "\n".join(lines)

    def to_json(self) -> str:
        """The envelope as JSON (tuples become arrays, None stays null)."""
        return self.model_dump_json()


def _one_line(text: str) -> str:
    """A text on one line, so a message cannot pass for another line of the observation."""
    return " ".join(text.splitlines())


def _seen(target: dict[str, Any]) -> str:
    noise = f", noise {target['noise']:g}" if target["noise"] else ""
    return f"({target['level']}{noise})"


def _compact(variables: dict[str, Any]) -> str:
    return json.dumps(variables, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


class SimulationSnapshot(FrozenDTO):
    """The whole ground truth of an episode at the start of a turn, with its generators' states.

    ``rng_state`` is numpy's ``bit_generator.state`` (JSON-safe for PCG64: Python ints); an empty
    dict means "no state recorded: reseed from the env" (snapshots migrated from version 1).

    Example:
        >>> from multiagent.env import WorldEnv
        >>> env = WorldEnv("forage"); _ = env.reset(seed=0)
        >>> snapshot = env.snapshot()
        >>> snapshot.config_name, snapshot.turn, snapshot.agents["Forager_1"]["position"]
        ('forage', 0, (0, 0))
        >>> _ = env.step(dict.fromkeys(env.agents, {"move": "down"}))
        >>> _ = env.restore(snapshot); env.world.turn, env.world.agents["Forager_1"]["position"]
        (0, (0, 0))
    """

    schema_version: int = Field(2, ge=1, description="Version of this DTO's shape")
    config_name: str = Field(description=f"The world's name ({UNKNOWN!r} when not recorded)")
    config_hash: str = Field(
        description=f"SimulationConfig.config_hash of the world ({UNKNOWN!r} when not recorded)"
    )
    turn: int = Field(ge=0, description="The turn the state is at")
    agents: dict[str, dict[str, Any]] = Field(
        description="Every agent's state by name: {name: {variable: value}}, each with its name"
    )
    global_state: dict[str, Any] = Field(description="The global variables: {variable: value}")
    rng_state: dict[str, Any] = Field(
        description="The env generator's bit_generator.state; {} means reseed from the env"
    )
    episode_rng_state: dict[str, Any] | None = Field(
        None, description="A second generator's bit_generator.state (noise, opponents), if any"
    )
    seed: int | None = Field(
        None, description="The episode seed (observation noise derives from it)"
    )
    live_agents: list[str] | None = Field(
        None, description="Agents still in the episode (None: all of them)"
    )
    migrations: list[str] = Field(
        default_factory=list, description="Migrations applied on load, oldest first"
    )
    created_at: AwareDatetime = Field(
        default_factory=lambda: datetime.now(timezone.utc), description="When it was taken (UTC)"
    )

    @field_validator("created_at")
    @classmethod
    def _in_utc(cls, moment: datetime) -> datetime:
        return moment.astimezone(timezone.utc)

    @classmethod
    def from_world_state(
        cls,
        state: WorldState,
        config: SimulationConfig,
        rng: np.random.Generator,
        episode_rng: np.random.Generator | None = None,
        *,
        seed: int | None = None,
        live_agents: list[str] | None = None,
    ) -> SimulationSnapshot:
        """A snapshot of ``state`` (deep-copied, so later turns cannot reach into it)."""
        return cls(
            seed=seed,
            live_agents=live_agents,
            config_name=config.simulation.name,
            config_hash=config.config_hash,
            turn=state.turn,
            agents=copy.deepcopy(state.agents),
            global_state=copy.deepcopy(state.global_state),
            rng_state=copy.deepcopy(rng.bit_generator.state),
            episode_rng_state=(
                None if episode_rng is None else copy.deepcopy(episode_rng.bit_generator.state)
            ),
        )

    def to_world_state(self) -> WorldState:
        """The ``WorldState`` to resume from (a deep copy: the snapshot stays as it was)."""
        return WorldState(
            turn=self.turn,
            agents=copy.deepcopy(self.agents),
            global_state=copy.deepcopy(self.global_state),
        )


SNAPSHOT_MIGRATIONS = MigrationRegistry()


@SNAPSHOT_MIGRATIONS.register(from_version=1, to_version=2)
def _add_identity_and_rng(data: dict[str, Any]) -> dict[str, Any]:
    """add config identity and rng state (unknown; reseed from the env)"""
    data.setdefault("config_name", UNKNOWN)
    data.setdefault("config_hash", UNKNOWN)
    data.setdefault("rng_state", {})
    data.setdefault("created_at", datetime.now(timezone.utc).isoformat())
    return data
