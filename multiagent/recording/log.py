"""The episode log of a world: what happened each turn, what each agent saw of it, and why.

- ``EpisodeLog`` (schema version 1): the world's identity, the seed, the observability matrix
  as ``ViewCell`` cells (observer x target: level, noise and each variable's ``Mark``) and
  one ``TurnRecord`` per turn: the ground truth (``TurnState``), each live agent's observation
  (``ObserverView``), the actions taken on that turn, what they earned and the messages sent
  with them (``multiagent.messages.SentMessage``: sender, channel, text, addressee, recipients;
  logs written before messages existed load with none), and for LLM seats of an evaluation the
  decision behind each action (``envkit.llm.ReasoningStep``: prompt, answers, refusals, tokens)
  and, for the log, which player filled each seat.
- ``Mark``: how an observer saw one variable of a target: "hidden" (the target is unaware to it,
  or the variable is internal and it is external), "exact", or "noisy" (its true value is the
  ground truth of the same turn).
- ``save_episode_log(log, path)`` writes compact JSON atomically (gzipped when the name ends in
  ``.gz``: a tenth of the size); ``load_episode_log(path)`` reads either back (migrating older
  schema versions through ``EPISODE_LOG_MIGRATIONS``) or raises ``EpisodeLogError`` naming the
  file and the field.

One JSON object per episode, so the viewer reads a file with one ``JSON.parse``. Values are kept
as JSON gives them back (tuples as lists, dict keys as strings), so a log equals itself after a
round trip. Only the log itself is versioned; its parts are frozen models without a version.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from envkit.dto import FrozenDTO, MigrationError, MigrationRegistry
from envkit.llm import ReasoningStep
from multiagent.messages import SentMessage
from multiagent.world_state import WorldState

__all__ = [
    "EPISODE_LOG_MIGRATIONS",
    "GLOBAL_TARGET",
    "EpisodeLog",
    "EpisodeLogError",
    "Level",
    "Mark",
    "ObserverView",
    "TurnRecord",
    "TurnState",
    "ViewCell",
    "load_episode_log",
    "save_episode_log",
]

GLOBAL_TARGET = "global"
Mark = Literal["hidden", "exact", "noisy"]
Level = Literal["unaware", "external", "insider"]
_PART = ConfigDict(frozen=True, extra="forbid")


class EpisodeLogError(ValueError):
    """An episode log that cannot load: the message names the file and the field."""


class ViewCell(BaseModel):
    """One cell of the observability matrix: how ``observer`` sees ``target`` all episode.

    Example:
        >>> cell = ViewCell(observer="A", target="B", level="external", noise=0.1,
        ...                    variables={"gold": "noisy", "secret": "hidden"})
        >>> cell.variables["secret"]
        'hidden'
    """

    model_config = _PART
    observer: str = Field(min_length=1, description="The observing agent")
    target: str = Field(min_length=1, description=f"The observed agent, or {GLOBAL_TARGET!r}")
    level: Level = Field(description="How much of the target the observer sees")
    noise: float = Field(ge=0.0, le=1.0, description="The noise level of its numeric values")
    variables: dict[str, Mark] = Field(
        description="Every variable of the target (definition order) and how it is seen"
    )


class TurnState(BaseModel):
    """The ground truth of one turn (an agent's name is its key, not one of its variables)."""

    model_config = _PART
    agents: dict[str, dict[str, Any]] = Field(description="{agent: {variable: value}}")
    global_state: dict[str, Any] = Field(description="{variable: value}")


class ObserverView(BaseModel):
    """What one observer was given on one turn: only the targets and variables it sees."""

    model_config = _PART
    agents: dict[str, dict[str, Any]] = Field(
        description="{target: {variable: value as seen}}; unaware targets are absent"
    )
    global_state: dict[str, Any] | None = Field(
        description="The global variables as seen; None when the observer is unaware of them"
    )


class TurnRecord(BaseModel):
    """One turn: the state and the observations at its start, then what the agents did.

    ``actions`` are the validated actions taken on this turn (they lead to the next turn's
    state); ``rewards``, ``terminated``, ``truncated`` and ``infos`` are what those actions
    earned; ``messages`` were sent with them (delivered with the next turn; a recipient's
    infos do not repeat them). The last turn of a log has no actions.
    """

    model_config = _PART
    turn: int = Field(ge=0, description="The world's turn counter")
    state: TurnState = Field(description="The ground truth")
    observations: dict[str, ObserverView] = Field(
        description="Each live agent's observation of this turn's state"
    )
    actions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="{agent: {field: value}}: the valid actions taken"
    )
    action_errors: dict[str, str] = Field(
        default_factory=dict, description="{agent: why its action was refused (a no-op)}"
    )
    rewards: dict[str, float] = Field(
        default_factory=dict, description="{agent: reward for this turn's action}"
    )
    terminated: list[str] = Field(
        default_factory=list, description="Agents whose episode ended with this turn"
    )
    truncated: list[str] = Field(
        default_factory=list, description="Agents cut off by max_turns with this turn"
    )
    infos: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="The dynamics' infos for this turn's actions"
    )
    messages: list[SentMessage] = Field(
        default_factory=list, description="The messages sent on this turn, with their recipients"
    )
    decisions: dict[str, ReasoningStep] = Field(
        default_factory=dict,
        description="{agent: the LLM decision behind its action}: the prompt, the answers and "
        "what was refused (LLM seats of an evaluation; empty otherwise)",
    )


class EpisodeLog(FrozenDTO):
    """A recorded episode of a world (see the module docstring).

    Example:
        >>> from multiagent.wrappers import RecordEpisode
        >>> from multiagent import parallel_env
        >>> env = RecordEpisode(parallel_env("forage", observability=True), record=True)
        >>> _ = env.reset(seed=0)
        >>> _ = env.step(dict.fromkeys(env.agents, {"move": "down"}))
        >>> log = env.episode_log
        >>> [turn.turn for turn in log.turns], log.turns[0].actions["Forager_1"]
        ([0, 1], {'move': 'down'})
        >>> log.cell("Forager_1", "Forager_2").variables
        {'position': 'noisy', 'energy': 'hidden', 'carrying': 'hidden'}
        >>> log.turns[1].state.agents["Forager_1"]["position"]
        [1, 0]
    """

    schema_version: int = Field(1, ge=1, description="Version of this DTO's shape")
    world: str = Field(min_length=1, description="The world's name (simulation.name)")
    config_hash: str = Field(description="SimulationConfig.config_hash of the world")
    seed: int = Field(description="The episode seed (the dynamics and the noise derive from it)")
    agents: list[str] = Field(min_length=1, description="Every agent, in the config's order")
    agent_variables: list[str] = Field(description="The agents' variables, in definition order")
    global_variables: list[str] = Field(description="The global variables, in definition order")
    observability: bool = Field(
        description="Whether the config's observability applied (False: everyone saw everything)"
    )
    distribution: Literal["uniform", "gaussian"] = Field(description="The noise's distribution")
    cells: list[ViewCell] = Field(
        description="The matrix: one cell per (observer, target), targets the agents then global"
    )
    turns: list[TurnRecord] = Field(min_length=1, description="Turn 0 (the reset) onwards")
    players: dict[str, str] = Field(
        default_factory=dict, description="{agent: the player spec that filled the seat}"
    )
    complete: bool = Field(description="True when every agent terminated or was truncated")

    @model_validator(mode="after")
    def _consistent(self) -> EpisodeLog:
        marks = {(c.observer, c.target): c.variables for c in self.cells}
        problems = _cell_problems(self)
        for index, turn in enumerate(self.turns):
            problems += _turn_problems(self, f"turns[{index}]", turn, marks)
        first = self.turns[0].turn
        for index, turn in enumerate(self.turns):
            if turn.turn != first + index:
                problems.append(f"turns[{index}].turn: {turn.turn}, expected {first + index}")
        if problems:
            raise ValueError("; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))
        return self

    def cell(self, observer: str, target: str) -> ViewCell:
        """How ``observer`` sees ``target`` (an agent or "global"); KeyError for a stranger."""
        for cell in self.cells:
            if cell.observer == observer and cell.target == target:
                return cell
        raise KeyError(f"no cell ({observer!r}, {target!r}) in the log of {self.world!r}")

    def state(self, index: int) -> WorldState:
        """``turns[index]``'s ground truth as a ``WorldState`` (agents carry their names)."""
        turn = self.turns[index]
        agents = {name: {"name": name, **values} for name, values in turn.state.agents.items()}
        return WorldState(turn.turn, agents, dict(turn.state.global_state))


def _cell_problems(log: EpisodeLog) -> list[str]:
    expected = {(o, t) for o in log.agents for t in [*log.agents, GLOBAL_TARGET]}
    seen: set[tuple[str, str]] = set()
    problems = []
    for index, cell in enumerate(log.cells):
        key = (cell.observer, cell.target)
        names = log.global_variables if cell.target == GLOBAL_TARGET else log.agent_variables
        if key in seen:
            problems.append(f"cells[{index}]: ({cell.observer}, {cell.target}) is repeated")
        elif key not in expected:
            problems.append(f"cells[{index}]: {cell.observer!r} or {cell.target!r} is unknown")
        elif list(cell.variables) != names:
            problems.append(f"cells[{index}].variables: {list(cell.variables)}, expected {names}")
        seen.add(key)
    problems += [f"cells: no cell ({o}, {t})" for o, t in sorted(expected - seen)]
    return problems


def _turn_problems(
    log: EpisodeLog, where: str, turn: TurnRecord, marks: dict[tuple[str, str], dict[str, Mark]]
) -> list[str]:
    problems = []
    if list(turn.state.agents) != log.agents:
        problems.append(f"{where}.state.agents: {list(turn.state.agents)}, expected {log.agents}")
    strangers = [
        f"{where}.{part}[{name}]: not an agent of the episode"
        for part, names in (
            ("observations", turn.observations),
            ("actions", turn.actions),
            ("rewards", turn.rewards),
        )
        for name in names
        if name not in log.agents
    ]
    for index, message in enumerate(turn.messages):
        named = [message.sender, *message.recipients, *([message.to] if message.to else [])]
        strangers += [
            f"{where}.messages[{index}]: {name!r} is not an agent of the episode"
            for name in named
            if name not in log.agents
        ]
    if strangers:
        return problems + strangers
    for observer, observed in turn.observations.items():
        parts = [(t, v, f"agents[{t}]") for t, v in observed.agents.items()]
        if observed.global_state is not None:
            parts.append((GLOBAL_TARGET, observed.global_state, "global_state"))
        for target, values, field in parts:
            shown = marks.get((observer, target), {})
            hidden = [name for name in values if shown.get(name, "hidden") == "hidden"]
            if hidden:
                problems.append(
                    f"{where}.observations[{observer}].{field}: {hidden} are hidden from "
                    f"{observer} by the matrix"
                )
    return problems


EPISODE_LOG_MIGRATIONS = MigrationRegistry()
_CURRENT_VERSION: int = EpisodeLog.model_fields["schema_version"].default


def save_episode_log(log: EpisodeLog, path: str | os.PathLike[str]) -> Path:
    """Write ``log`` as compact JSON to ``path``, gzipped when its name ends in ``.gz`` (with no
    timestamp inside, so the same log gives the same bytes), through a temporary file renamed
    over it (a crash leaves the previous file whole); returns the path."""
    target = Path(path)
    data = log.model_dump_json().encode()
    if target.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "xb") as file:
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return target


def load_episode_log(path: str | os.PathLike[str]) -> EpisodeLog:
    """The episode log stored at ``path``, migrated to the current schema version.

    Raises ``FileNotFoundError`` for a missing file and ``EpisodeLogError`` (a ``ValueError``)
    naming the file and the field for anything else: not JSON, not an object, a schema version
    no migration reaches, a missing or ill-typed field, a turn out of order, an observation of a
    variable the matrix hides.
    """
    source = Path(path)
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"no episode log at {str(source)!r}") from None
    try:
        if raw[:2] == b"\x1f\x8b":  # gzip's magic number, whatever the file is called
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise EpisodeLogError(f"episode log {str(source)!r}: unreadable: {error}") from None
    except json.JSONDecodeError as error:
        raise EpisodeLogError(
            f"episode log {str(source)!r}: not JSON at line {error.lineno}, column "
            f"{error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise EpisodeLogError(
            f"episode log {str(source)!r}: expected a JSON object, got {type(data).__name__}"
        )
    try:
        if data.get("schema_version") != _CURRENT_VERSION:  # apply() deep-copies: skip it
            data, _ = EPISODE_LOG_MIGRATIONS.apply(data, _CURRENT_VERSION)
    except MigrationError as error:
        raise EpisodeLogError(f"episode log {str(source)!r}: {error}") from None
    try:
        return EpisodeLog.model_validate(data)
    except ValidationError as error:
        raise EpisodeLogError(f"episode log {str(source)!r}:\n{_describe(error)}") from None


def _describe(error: ValidationError) -> str:
    """One line per problem: the field path in the file (``turns[3].state.agents``) and why."""
    lines = []
    for item in error.errors(include_url=False):
        path = ""
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"  {path or '(top level)'}: {message}")
    return "\n".join(lines)
