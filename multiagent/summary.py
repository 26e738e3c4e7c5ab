"""What a world holds, in a few lines: the report of ``python -m multiagent validate``.

- ``WorldSummary``: a frozen DTO of a loaded world's name, agents, variables by scope with their
  types, action fields, message channels, observability levels in use, dynamics target,
  collapse condition and scenarios.
- ``summarize(config, source, warnings)``: the summary of a ``SimulationConfig``.
- ``type_text(definition)``: a variable's type in one short phrase (``int [0, 6]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from envkit.dto import FrozenDTO
from multiagent.config import ObservabilityLevel, SimulationConfig
from multiagent.messages import ChannelConfig
from multiagent.scenarios import ScenarioConfig
from multiagent.variables import VariableDefinition

__all__ = ["WorldSummary", "channel_text", "scenario_text", "summarize", "type_text"]


class WorldSummary(FrozenDTO):
    """A world that loaded: enough to check that the YAML says what its author meant.

    Example:
        >>> from multiagent.worlds import load_world
        >>> summary = summarize(load_world("forage"), "forage")
        >>> summary.agents, summary.actions, summary.observability_levels
        (('Forager_1', 'Forager_2', 'Forager_3'), {'move': 'categorical (stay, up, down, left, \
right)'}, ('unaware', 'external', 'insider'))
    """

    source: str = Field(description="The YAML file, or the built-in world's name")
    name: str = Field(description="simulation.name")
    agents: tuple[str, ...] = Field(description="The agents, in the config's order")
    agent_variables: dict[str, str] = Field(description="Each agent variable -> its type")
    global_variables: dict[str, str] = Field(description="Each global variable -> its type")
    actions: dict[str, str] = Field(description="Each action field -> its type")
    observability_levels: tuple[str, ...] = Field(
        description="Levels the matrix and its default use, weakest first (empty: observability "
        "off, every agent sees the ground truth)"
    )
    dynamics: str | None = Field(description="engine.dynamics (None: the state never changes)")
    channels: dict[str, str] = Field(
        default_factory=dict, description="Each message channel -> its kind and length limit"
    )
    collapse: str | None = Field(None, description="The collapse condition (None: never)")
    scenarios: dict[str, str] = Field(
        default_factory=dict, description="Each scenario -> its focal seats, background and tags"
    )
    warnings: tuple[str, ...] = Field(default=(), description="Warnings raised while loading")

    def text(self) -> str:
        """The summary as the lines ``validate`` prints."""
        lines = [f"{self.source}: world {self.name!r} is valid"]
        lines.append(f"  agents: {', '.join(self.agents)}")
        for title, types in (
            ("agent variables", self.agent_variables),
            ("global variables", self.global_variables),
            ("actions", self.actions),
            ("channels", self.channels),
        ):
            lines.append(f"  {title}:" + ("" if types else " none"))
            lines.extend(f"    {name}: {kind}" for name, kind in types.items())
        lines.append(f"  observability: {', '.join(self.observability_levels) or 'off'}")
        lines.append(f"  dynamics: {self.dynamics or 'none'}")
        lines.append(f"  collapse: {self.collapse or 'none'}")
        lines.append("  scenarios:" + ("" if self.scenarios else " none"))
        lines.extend(f"    {name}: {text}" for name, text in self.scenarios.items())
        return "\n".join(lines)


def type_text(definition: VariableDefinition) -> str:
    """A variable's type in one phrase: bounds, values or element types after the type name.

    Example:
        >>> type_text(VariableDefinition(type="int", min=0, max=6))
        'int [0, 6]'
        >>> type_text(VariableDefinition(type="list", item_type="float"))
        'list[float]'
    """
    kind = definition.type
    if definition.values is not None:
        return f"{kind} ({', '.join(definition.values)})"
    if definition.item_types is not None:
        return f"{kind}[{', '.join(type_text(item) for item in definition.item_types)}]"
    if definition.item_type is not None:
        return f"{kind}[{type_text(definition.item_type)}]"
    if definition.value_type is not None:
        return f"{kind}[{definition.key_type or 'str'}, {type_text(definition.value_type)}]"
    if definition.schema_ is not None:
        return f"{kind} {{{', '.join(definition.schema_)}}}"
    if definition.min is not None or definition.max is not None:
        low = "" if definition.min is None else f"{definition.min:g}"
        high = "" if definition.max is None else f"{definition.max:g}"
        return f"{kind} [{low}, {high}]"
    return str(kind)


def channel_text(channel: ChannelConfig) -> str:
    """A channel in one phrase.

    Example:
        >>> channel_text(ChannelConfig(kind="direct", max_length=140))
        'direct, up to 140 characters'
    """
    return f"{channel.kind}, up to {channel.max_length} characters"


def scenario_text(scenario: ScenarioConfig) -> str:
    """A scenario in one line: focal seats, background players, tags and episode length.

    Example:
        >>> scenario_text(ScenarioConfig(focal=["A"], background={"trader": "random"},
        ...                              tags=["visitor"], episode_length=[20, 30]))
        'focal A; background trader=random; tags visitor; 20-30 turns'
    """
    parts = [f"focal {', '.join(scenario.focal)}"]
    if scenario.background:
        players = ", ".join(f"{seat}={spec}" for seat, spec in scenario.background.items())
        parts.append(f"background {players}")
    if scenario.held_out:
        parts.append(f"held out {', '.join(scenario.held_out)}")
    if scenario.tags:
        parts.append(f"tags {', '.join(scenario.tags)}")
    if scenario.baseline:
        parts.append(f"baseline {scenario.baseline}")
    length = scenario.episode_length
    if length is not None:
        low, high = (length, length) if isinstance(length, int) else length
        parts.append(f"{low} turns" if low == high else f"{low}-{high} turns")
    return "; ".join(parts)


def _levels(config: SimulationConfig) -> tuple[str, ...]:
    observability = config.observability
    if observability is None or not observability.enabled:
        return ()
    used = {entry.level for entry in observability.matrix} | {observability.default.level}
    return tuple(level.value for level in ObservabilityLevel if level in used)


def summarize(config: SimulationConfig, source: str, warnings: Sequence[str] = ()) -> WorldSummary:
    """The summary of ``config``, loaded from ``source``."""
    variables = config.state_variables
    return WorldSummary(
        source=source,
        name=config.simulation.name,
        agents=tuple(config.agent_names),
        agent_variables={name: type_text(d) for name, d in variables.agent_vars.items()},
        global_variables={name: type_text(d) for name, d in variables.global_vars.items()},
        actions={name: type_text(d) for name, d in config.actions.items()},
        observability_levels=_levels(config),
        dynamics=config.engine.dynamics,
        channels={name: channel_text(c) for name, c in config.channels.items()},
        collapse=(
            f"{config.collapse.variable} below {config.collapse.below:g}"
            if config.collapse is not None
            else None
        ),
        scenarios={name: scenario_text(s) for name, s in config.scenarios.items()},
        warnings=tuple(warnings),
    )
