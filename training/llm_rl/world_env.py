"""``WorldToolEnv``: one seat of any YAML world as a TRL environment (``environment_factory``).

TRL turns every public method but ``reset`` and ``get_reward`` into a tool, reading its type
hints and its Google-style ``Args:`` docstring (``transformers.utils.get_json_schema``). A world's
tool is generated from its action definitions, so the model is shown exactly what the world
accepts:

- ``act(...)``: one parameter per action field (categorical -> ``Literal[...]``, float, int, bool,
  str; lists, tuples and dicts as their JSON types), then one optional parameter per message
  channel (a broadcast's text; a direct message as ``{"to": agent, "text": ...}``). Each
  parameter's ``Args:`` line says its bounds or values. The tool plays the seat's action, the
  other seats' players act, and it returns what the seat observes next (its observation envelope
  as text, with the messages it heard) and the reward of the turn. An action the world refuses
  raises ``ValueError`` with the world's reason, which TRL hands back to the model as the tool's
  error; the turn is not played.
- ``reset(seed=None, **row)``: a new episode (seeded by ``seed``; the other columns of a dataset
  row are ignored), returning the seat's first observation as the prompt.
- ``get_reward()``: the seat's return so far (the episode's return once it has ended).

The other seats are played by any world player spec (``multiagent.players``; default
``random``). ``world_tool_env(world, seat, others=...)`` returns a picklable factory, as
``environment_factory`` (and its asynchronous trainer) needs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Literal

from multiagent.config import SimulationConfig
from multiagent.dto import Message
from multiagent.env import WorldEnv, as_config
from multiagent.messages import ChannelConfig
from multiagent.play import heard_messages, seat_seed, seat_turns
from multiagent.players import WorldPlayer, make_world_player
from multiagent.variables import VariableDefinition
from multiagent.wrappers import ObservabilityWrapper
from training.llm_rl.tools import ToolParameter, tool_env_class, tool_method

__all__ = ["TOOL_NAME", "WorldToolEnv", "world_tool_env"]

TOOL_NAME = "act"


class WorldToolEnv:
    """One seat of a world, played through the ``act`` tool (see the module docstring).

    Made by ``world_tool_env``, which adds the world's ``act`` method to a subclass.

    Example:
        >>> env = world_tool_env("forage", "Forager_1")()
        >>> print(env.reset(seed=0).splitlines()[0])
        Turn 0, observer Forager_1
        >>> env.act(move="up").splitlines()[0]
        'Reward this turn: -0.01'
        >>> round(env.get_reward(), 2)
        -0.01
    """

    def __init__(self, config: SimulationConfig, seat: str, others: Mapping[str, str]) -> None:
        self._config, self._seat = config, seat
        self._others: dict[str, WorldPlayer] = {
            name: make_world_player(others.get(name, "random"), config)
            for name in config.agent_names
            if name != seat
        }
        self._world = WorldEnv(config)
        self._env = ObservabilityWrapper(self._world)
        self._observations: dict[str, Any] = {}
        self._feedback: dict[str, str | None] = {}
        self._heard: dict[str, list[Message]] = {}
        self._return = 0.0
        self._done = True

    def reset(self, seed: int | None = None, **row: Any) -> str:
        """A new episode; the seat's first observation, as the prompt."""
        del row  # a dataset row's other columns (the prompt) are not the env's business
        self._observations, _ = self._env.reset(seed=seed)
        for index, name in enumerate(self._config.agent_names):
            if name in self._others:
                self._others[name].reset(seat_seed(seed, index))
        self._feedback, self._heard = {}, {}
        self._return, self._done = 0.0, False
        return self._observation_text()

    def get_reward(self) -> float:
        """The seat's return so far."""
        return self._return

    def _play(self, action: dict[str, Any]) -> str:
        """Play the seat's ``action`` and the others' for one turn; what the seat sees next."""
        if self._done:
            raise ValueError("the episode is over: no more actions")
        try:
            self._world.decode_turn(self._seat, action)
        except ValueError as error:  # refused before anything moves
            raise ValueError(str(error)) from None
        live = [name for name in self._env.agents if name != self._seat]
        turns = seat_turns(self._world, self._env.plan, live, self._observations,
                           self._feedback, self._heard)  # fmt: skip
        actions = {name: self._others[name].act(turns[name]) for name in live}
        actions[self._seat] = action
        self._observations, rewards, terminations, truncations, infos = self._env.step(actions)
        self._feedback = {name: info.get("action_error") for name, info in infos.items()}
        self._heard = heard_messages(infos)
        reward = float(rewards[self._seat])
        self._return += reward
        self._done = terminations[self._seat] or truncations[self._seat]
        lines = [f"Reward this turn: {reward:g}"]
        if self._done:
            lines.append(f"The episode is over; your return: {self._return:g}")
            return "\n".join(lines)
        return "\n".join([*lines, self._observation_text()])

    def _observation_text(self) -> str:
        turns = seat_turns(self._world, self._env.plan, [self._seat], self._observations,
                           self._feedback, self._heard)  # fmt: skip
        return turns[self._seat].envelope.to_text()


def world_tool_env(
    world: str | SimulationConfig,
    seat: str,
    *,
    others: str | Mapping[str, str] = "random",
) -> Callable[[], WorldToolEnv]:
    """A picklable factory of ``WorldToolEnv`` for ``seat`` of ``world`` (a built-in name, a
    YAML path or a config); ``others``: one player spec for every other seat, or one per seat
    (unnamed seats: ``random``). Specs are checked here, before any rollout.

    Example:
        >>> import inspect, pickle
        >>> factory = world_tool_env("commons", "Fisher_1", others="scripted:"
        ...                          "multiagent.worlds.commons:sustainable")
        >>> env = pickle.loads(pickle.dumps(factory))()
        >>> sorted(inspect.signature(env.act).parameters)
        ['harvest', 'talk', 'whisper']
    """
    config = as_config(world)
    if seat not in config.agent_names:
        raise ValueError(f"seat {seat!r} is not an agent of {config.simulation.name!r}; "
                         f"the seats are {config.agent_names}")  # fmt: skip
    specs = dict.fromkeys(config.agent_names, others) if isinstance(others, str) else dict(others)
    unknown = sorted(set(specs) - set(config.agent_names))
    if unknown:
        raise ValueError(f"others: {unknown} are not seats of {config.simulation.name!r}")
    specs.pop(seat, None)
    for spec in specs.values():
        make_world_player(spec, config).close()
    return functools.partial(_make, config, seat, specs)


def _make(config: SimulationConfig, seat: str, others: Mapping[str, str]) -> WorldToolEnv:
    """A ``WorldToolEnv`` whose class (one per world) has the world's ``act`` tool."""
    name = f"{config.simulation.name.title().replace('_', '')}ToolEnv"
    cls = tool_env_class(WorldToolEnv, config.config_hash, name, lambda: _act_tool(config))
    env: WorldToolEnv = cls(config, seat, others)
    return env


def _act_tool(config: SimulationConfig) -> Callable[..., str]:
    """``act(self, <field>: <type>, ..., <channel>: ... = None) -> str``."""
    parameters = [ToolParameter(name, _python_type(defn), _describe(defn))
                  for name, defn in config.actions.items()]  # fmt: skip
    parameters += [
        ToolParameter(name, str if channel.kind == "broadcast" else dict[str, str],
                      _describe_channel(channel), optional=True)
        for name, channel in config.channels.items()
    ]  # fmt: skip
    return tool_method(
        TOOL_NAME,
        f"Take your agent's action for this turn in the world {config.simulation.name!r}.",
        parameters,
        "The turn's reward and what you observe next.",
        lambda env, given: env._play(given),
    )


def _python_type(defn: VariableDefinition) -> Any:
    """The Python type hint ``get_json_schema`` turns into the definition's JSON type."""
    kind = defn.type
    if kind == "categorical":
        return Literal[tuple(defn.values or ())]
    simple = {"float": float, "int": int, "bool": bool, "str": str}
    if kind in simple:
        return simple[kind]
    if kind == "list":
        assert defn.item_definition is not None
        return list[_python_type(defn.item_definition)]  # type: ignore[misc]
    if kind == "tuple":
        return tuple[tuple(_python_type(item) for item in defn.item_types or ())]  # type: ignore[misc]
    return dict


def _describe(defn: VariableDefinition) -> str:
    kind = defn.type
    if kind == "categorical":
        return "one of " + ", ".join(defn.values or ())
    if kind in ("float", "int"):
        noun = "a number" if kind == "float" else "a whole number"
        low, high = defn.min, defn.max
        if low is not None and high is not None:
            return f"{noun} from {low:g} to {high:g}"
        if low is not None:
            return f"{noun}, at least {low:g}"
        return f"{noun}, at most {high:g}" if high is not None else noun
    if kind == "bool":
        return "true or false"
    return f"a {kind} value"


def _describe_channel(channel: ChannelConfig) -> str:
    if channel.kind == "broadcast":
        return (f"optional: a message (at most {channel.max_length} characters) every agent who "
                "can see you hears next turn")  # fmt: skip
    return (f'optional: a private message {{"to": agent, "text": ...}} (text at most '
            f"{channel.max_length} characters) for one agent, heard next turn")  # fmt: skip
