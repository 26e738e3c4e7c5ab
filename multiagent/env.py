"""A world as a PettingZoo env: ``parallel_env(config)`` and ``aec_env(config)``.

The env holds the ground truth (``env.world``, a ``WorldState``) and returns it: every agent
sees everything, exactly. Partial observability and noise are wrappers
(``multiagent.wrappers``), so they compose. Each turn:

1. every live agent's action is validated against the ``actions`` definitions (an action may be
   an element of ``action_space(agent)`` -- what RL code sends -- or plain values such as
   ``{"verb": "buy", "amount": 2.5}`` -- what an LLM sends); an invalid or missing one is
   reported in ``infos[agent]["action_error"]`` and dropped (``invalid_action="noop"``) or
   raises (``"raise"``); the messages it carries on the world's ``channels`` are checked with it
   (``multiagent.messages``: an invalid message makes the whole action invalid);
2. the dynamics (``engine.dynamics``) produce the next state, rewards, terminations and infos;
3. the new state is validated against the definitions: a dynamics bug that breaks a bound
   raises ``DynamicsError`` naming the variable's path;
4. a world with a ``collapse`` section terminates every agent once its variable is below the
   threshold (``infos[agent]["collapsed"] = True``);
5. ``max_turns`` truncates;
6. the turn's messages are delivered by the observability rule of ``multiagent.messages``:
   ``infos[recipient]["messages"]`` lists what it heard (only when it heard something), and
   ``env.messages_sent`` holds every message of the step with its recipients.

With ``record=`` (a path, or True for memory only) the env keeps an episode log of what it
returns (``multiagent.recording``); ``parallel_env(config, observability=True, record=...)``
records the observations of the config's observability instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from multiagent.config import SimulationConfig, load_config, resolve_dynamics
from multiagent.dto import SimulationSnapshot
from multiagent.errors import StateValidationError
from multiagent.messages import Outgoing, SentMessage, deliver, parse_messages, split_action
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.observation_layout import ObservationLayout
from multiagent.recording import EpisodeLog, EpisodeRecorder, Record
from multiagent.spaces import from_space_value, ordered_dict, seed_space, space_for, to_space_value
from multiagent.state import (
    StateValidator,
    create_agent_state_model,
    create_global_state_model,
    validate_value,
)
from multiagent.variables import VariableDefinition
from multiagent.world_state import Transition, WorldState

__all__ = ["DynamicsError", "WorldEnv", "aec_env", "initial_state", "parallel_env"]

Dynamics = Callable[[WorldState, dict[str, dict[str, Any]], np.random.Generator, dict], Transition]


class DynamicsError(RuntimeError):
    """The dynamics function returned something the definitions do not allow."""


def _static(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """The dynamics of a world that names none: nothing changes but the turn."""
    return Transition(WorldState(state.turn + 1, state.agents, state.global_state))


def load_dynamics(target: str | None) -> Dynamics:
    """The function named ``"package.module:function"`` (the no-op dynamics for None), resolved
    as ``load_config`` checked it; a ``WorldConfigError`` when it cannot be."""
    return _static if target is None else resolve_dynamics(target)


def as_config(config: SimulationConfig | str | Path | Mapping[str, Any]) -> SimulationConfig:
    """A config from a ``SimulationConfig``, a YAML path, a dict or a built-in world's name."""
    if isinstance(config, SimulationConfig):
        return config
    if isinstance(config, str) and not Path(config).exists() and "/" not in config:
        from multiagent.worlds import load_world

        return load_world(config)
    return load_config(config)


def initial_state(config: SimulationConfig) -> WorldState:
    """Turn 0: every variable at its default, each agent's ``initial_state`` on top, validated."""
    variables = config.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    agent_model = create_agent_state_model(variables.agent_vars)
    agents = {
        agent.name: agent_model(name=agent.name, **agent.start_values).model_dump(by_alias=True)
        for agent in config.agents
    }
    global_state = create_global_state_model(variables.global_vars)().model_dump(by_alias=True)
    return WorldState(
        turn=0,
        agents=validator.agents(agents),
        global_state=validator.global_state(global_state),
    )


class WorldEnv(ParallelEnv):
    """A world from a config, as a PettingZoo ``ParallelEnv`` returning the ground truth.

    Args:
        config: a ``SimulationConfig``, a YAML path, a dict, or a built-in world's name.
        invalid_action: "noop" (default: report in ``infos[agent]["action_error"]`` and skip
            the agent's action this turn) or "raise" (``ValueError`` naming the field).
        render_mode: None or "ansi" (a table of every agent's variables).
        record: None (default: no log), True (the episode since the last reset is kept as
            ``episode_log``) or a path: a ``.json`` (or gzipped ``.json.gz``) file each episode
            is written to, or a folder where episode n goes to ``<world>-episode-<n>.json``.
            The log holds what this env returns: the ground truth for every agent. An episode
            is written when its last agent is done, or unfinished on ``reset``, ``restore`` or
            ``close``; ``restore`` starts a new log at the snapshot's turn.

    ``messages_sent`` lists the messages of the last step (``multiagent.messages.SentMessage``,
    with their recipients; empty after ``reset`` and ``restore``); ``hearing`` is the configured
    ``ObservabilityPlan`` that decides who hears whom.

    Example:
        >>> env = WorldEnv("forage")
        >>> observations, infos = env.reset(seed=0)
        >>> sorted(observations["Forager_1"])
        ['global', 'others', 'self', 'turn']
    """

    metadata = {"render_modes": ["ansi"], "name": "polyarena_world_v0", "is_parallelizable": True}

    def __init__(
        self,
        config: SimulationConfig | str | Path | Mapping[str, Any],
        *,
        invalid_action: str = "noop",
        render_mode: str | None = None,
        record: Record | None = None,
    ) -> None:
        if invalid_action not in ("noop", "raise"):
            raise ValueError(f"invalid_action must be 'noop' or 'raise', got {invalid_action!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.config = as_config(config)
        self.invalid_action, self.render_mode = invalid_action, render_mode
        self.possible_agents = self.config.agent_names
        self.agents: list[str] = []
        variables = self.config.state_variables
        self._dynamics = load_dynamics(self.config.engine.dynamics)
        self._validator = StateValidator(variables.agent_vars, variables.global_vars)
        self.action_definition = (
            VariableDefinition(type="object", schema_=self.config.actions)
            if self.config.actions
            else None
        )
        self.plan = ObservabilityPlan(self.config, full=True)
        # Who hears whom follows the configured observability, whatever the agents are shown.
        self.hearing = ObservabilityPlan(self.config)
        self.messages_sent: list[SentMessage] = []
        self._layouts = {a: ObservationLayout.from_plan(self.plan, a) for a in self.possible_agents}
        self._observation_spaces = {a: self._layouts[a].space() for a in self.possible_agents}
        self._action_spaces = {a: self._make_action_space() for a in self.possible_agents}
        self._agent_definition = (
            VariableDefinition(type="object", schema_=variables.agent_vars)
            if variables.agent_vars
            else None
        )
        self.state_space = self._make_state_space()
        self.world: WorldState | None = None
        self.seed_value = 0
        self.rng = np.random.default_rng()
        self.recorder = None if record is None else EpisodeRecorder(self, self.plan, record)

    @property
    def episode_log(self) -> EpisodeLog | None:
        """With ``record``, the episode since the last reset; otherwise None."""
        return None if self.recorder is None else self.recorder.episode_log

    def close(self) -> None:
        """Write the episode in progress when recording."""
        if self.recorder is not None:
            self.recorder.close()

    # -- spaces -----------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_spaces[agent]

    def _make_action_space(self) -> spaces.Space[Any]:
        if self.action_definition is None:
            return spaces.Dict({})
        return space_for(self.action_definition)

    def _make_state_space(self) -> spaces.Dict:
        variables = self.config.state_variables
        agent = self._agent_definition
        parts: dict[str, spaces.Space[Any]] = {
            "agents": ordered_dict(
                {
                    name: space_for(agent) if agent else spaces.Dict({})
                    for name in self.possible_agents
                }
            ),
            "global": ordered_dict(
                {name: space_for(d) for name, d in variables.global_vars.items()}
            ),
            "turn": spaces.Discrete(self.config.simulation.max_turns + 1),
        }
        return ordered_dict(parts)

    # -- the episode ------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Start at turn 0: every variable at its default, agents' ``initial_state`` on top.

        The seed fixes the dynamics' generator and the noise of any observation wrapper; with
        none, the config's ``simulation.seed`` is used on the first reset, and later resets
        continue from the env's generator.
        """
        if seed is None and self.world is None:
            seed = self.config.simulation.seed
        if seed is None:
            seed = int(self.rng.integers(2**63 - 1))
        self.seed_value = int(seed)
        self.rng = np.random.default_rng(self.seed_value)
        for agent in self.possible_agents:
            drawn = int(self.rng.integers(2**31))  # one draw each, as the dynamics expect
            seed_space(self._action_spaces[agent], np.random.default_rng([self.seed_value, drawn]))
        self.world = initial_state(self.config)
        self.agents = list(self.possible_agents)
        self.messages_sent = []
        observations = self._observations()
        if self.recorder is not None:
            self.recorder.start(list(self.agents))
        return observations, {agent: {} for agent in self.agents}

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict]]:
        world = self._require_world()
        if not self.agents:  # the episode is over: PettingZoo's convention is an empty step
            return {}, {}, {}, {}, {}
        errors: dict[str, str] = {}
        valid: dict[str, dict[str, Any]] = {}
        outgoing: list[Outgoing] = []
        for agent in self.agents:
            try:
                valid[agent], said = self.decode_turn(agent, actions.get(agent))
            except ValueError as error:
                if self.invalid_action == "raise":
                    raise
                errors[agent] = str(error)
                continue
            outgoing += said
        transition = self._dynamics(world, valid, self.rng, self.config.engine.params)
        self.world = self._checked(transition, world.turn)
        rewards = {a: float(transition.rewards.get(a, 0.0)) for a in self.agents}
        terminations = {a: bool(transition.terminations.get(a, False)) for a in self.agents}
        collapsed = self._collapsed()
        if collapsed:
            terminations = dict.fromkeys(self.agents, True)
        truncated = self.world.turn >= self.config.simulation.max_turns
        truncations = dict.fromkeys(self.agents, truncated)
        infos = {a: dict(transition.infos.get(a, {})) for a in self.agents}
        for agent, message in errors.items():
            infos[agent]["action_error"] = message
        if collapsed:
            for info in infos.values():
                info["collapsed"] = True
        self.messages_sent = deliver(outgoing, self.hearing, self.agents, world.turn)
        for sent in self.messages_sent:
            for recipient in sent.recipients:
                infos[recipient].setdefault("messages", []).append(sent.envelope())
        observations = self._observations()
        if self.recorder is not None:
            self.recorder.step(actions, self.agents, rewards, terminations, truncations, infos)
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def _collapsed(self) -> bool:
        collapse = self.config.collapse
        world = self._require_world()
        return collapse is not None and world.global_state[collapse.variable] < collapse.below

    def decode_action(self, agent: str, action: Any) -> dict[str, Any]:
        """An agent's action fields as validated plain values, or ``ValueError`` naming the
        field (its messages are checked too, and left out).

        An element of ``action_space(agent)`` is decoded from the space; anything else is read
        as plain values (an int field is then ambiguous only if the whole action is also a
        valid space element, and the space reading wins). Message keys (the world's channels)
        may come with either.
        """
        return self.decode_turn(agent, action)[0]

    def decode_turn(self, agent: str, action: Any) -> tuple[dict[str, Any], list[Outgoing]]:
        """An agent's action fields and its messages, validated, or ``ValueError`` naming the
        path of the first problem (``decode_action`` keeping the messages)."""
        fields, given = split_action(action, self.config.channels)
        decoded = self._decode_fields(agent, fields)
        return decoded, parse_messages(agent, given, self.config.channels, self.possible_agents)

    def _decode_fields(self, agent: str, action: Any) -> dict[str, Any]:
        path = f"actions[{agent}]"
        if self.action_definition is None:
            return {}
        if action is None:
            raise ValueError(f"{path}: no action given")
        element = _as_element(self._action_spaces[agent], action)
        if element is not None:
            action = from_space_value(self.action_definition, element)
        try:
            return validate_value(self.action_definition, action, path)
        except StateValidationError as error:
            raise ValueError(str(error)) from None

    def _checked(self, transition: Any, turn: int) -> WorldState:
        name = self.config.engine.dynamics or "the static dynamics"
        if not isinstance(transition, Transition):
            raise DynamicsError(f"{name} returned {type(transition).__name__}, not a Transition")
        state = transition.state
        if state.turn != turn + 1:
            raise DynamicsError(f"{name} returned turn {state.turn} after turn {turn}")
        try:
            agents = self._validator.agents(state.agents)
            global_state = self._validator.global_state(state.global_state)
        except StateValidationError as error:
            raise DynamicsError(
                f"{name} produced an invalid state at turn {state.turn}:\n{error}"
            ) from None
        if set(agents) != set(self.possible_agents):
            raise DynamicsError(f"{name} changed the set of agents to {sorted(agents)}")
        return WorldState(state.turn, agents, global_state)

    def _observations(self) -> dict[str, Any]:
        world = self._require_world()
        views = observe_all(world, self.plan, seed=self.seed_value, observers=self.agents)
        live = set(self.agents)
        return {agent: self.encode_view(agent, views[agent], live) for agent in self.agents}

    def encode_view(
        self,
        agent: str,
        view: WorldState,
        live: set[str],
        layout: ObservationLayout | None = None,
        space: spaces.Dict | None = None,
    ) -> dict[str, Any]:
        """``view`` as the agent's observation; targets not in ``live`` are zero-filled."""
        visible = WorldState(view.turn, {t: v for t, v in view.agents.items() if t in live},
                             view.global_state)  # fmt: skip
        layout = layout or self._layouts[agent]
        return layout.encode(visible, space or self._observation_spaces[agent])

    def _require_world(self) -> WorldState:
        if self.world is None:
            raise RuntimeError("call reset() before using the env")
        return self.world

    # -- state, rendering, snapshots --------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The ground truth as an element of ``state_space``."""
        world = self._require_world()
        agent = self._agent_definition
        return {
            "agents": {
                name: to_space_value(agent, {k: v for k, v in values.items() if k != "name"})
                if agent is not None
                else {}
                for name, values in world.agents.items()
            },
            "global": {
                name: to_space_value(defn, world.global_state[name])
                for name, defn in self.config.state_variables.global_vars.items()
            },
            "turn": min(world.turn, self.config.simulation.max_turns),
        }

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        world = self._require_world()
        names = list(self.config.state_variables.agent_vars)
        lines = [f"{self.config.simulation.name} -- turn {world.turn}"]
        for agent, values in world.agents.items():
            marker = "" if agent in self.agents else " (done)"
            lines.append(f"{agent}{marker}")
            lines += [f"  {name:<20} {_short(values.get(name))}" for name in names]
        if world.global_state:
            lines.append("global")
            lines += [f"  {name:<20} {_short(v)}" for name, v in world.global_state.items()]
        return "\n".join(lines)

    def snapshot(self) -> SimulationSnapshot:
        """The episode's ground truth and generator state (restore continues it exactly)."""
        world = self._require_world()
        return SimulationSnapshot.from_world_state(
            world, self.config, self.rng, seed=self.seed_value, live_agents=list(self.agents)
        )

    def restore(self, snapshot: SimulationSnapshot) -> dict[str, Any]:
        """Continue from ``snapshot``; returns the observations at that point."""
        if snapshot.config_hash not in (self.config.config_hash, "unknown"):
            raise ValueError(
                f"snapshot is of config {snapshot.config_hash}, this env runs "
                f"{self.config.config_hash}"
            )
        state = snapshot.to_world_state()
        self.world = WorldState(
            state.turn,
            self._validator.agents(state.agents),
            self._validator.global_state(state.global_state),
        )
        self.rng = np.random.default_rng()
        if snapshot.rng_state:
            self.rng.bit_generator.state = copy.deepcopy(snapshot.rng_state)
        if snapshot.seed is not None:
            self.seed_value = snapshot.seed
        self.agents = list(
            snapshot.live_agents if snapshot.live_agents is not None else self.possible_agents
        )
        self.messages_sent = []
        if self.recorder is not None:
            self.recorder.start(list(self.agents))
        return self._observations()

    def save_checkpoint(self, path: str | Path) -> Path:
        from multiagent.checkpoints import save_checkpoint

        return save_checkpoint(self.snapshot(), path)

    def load_checkpoint(self, path: str | Path) -> dict[str, Any]:
        from multiagent.checkpoints import load_checkpoint

        return self.restore(load_checkpoint(path, config=self.config))


def _as_element(space: spaces.Space[Any], action: Any) -> Any:
    """``action`` as an element of a Dict action space (Box fields may be given as plain
    numbers), or None when it is not one: then it is read as plain values."""
    if not isinstance(space, spaces.Dict) or not isinstance(action, Mapping):
        return None
    if set(action) != set(space.spaces):
        return None
    element = {}
    for name, field_space in space.spaces.items():
        value = action[name]
        if isinstance(field_space, spaces.Box):
            if isinstance(value, (str, bool)):
                return None
            try:
                value = np.asarray(value, dtype=field_space.dtype).reshape(field_space.shape)
            except (TypeError, ValueError):
                return None
        elif isinstance(field_space, spaces.Discrete) and (
            isinstance(value, bool) or not isinstance(value, (int, np.integer))
        ):
            return None
        element[name] = value
    return element if space.contains(element) else None


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def parallel_env(
    config: SimulationConfig | str | Path | Mapping[str, Any],
    *,
    observability: bool = False,
    record: Record | None = None,
    **kwargs: Any,
) -> ParallelEnv:
    """The world as a PettingZoo ``ParallelEnv``: the ground truth, or with ``observability``
    the config's filter and noise (``multiagent.wrappers.ObservabilityWrapper``).

    ``record`` (True or a path, see ``WorldEnv``) puts ``multiagent.wrappers.RecordEpisode`` on
    top, so the log holds the observations the agents get (filtered and noisy with
    ``observability``)."""
    env: ParallelEnv = WorldEnv(config, **kwargs)
    if observability:
        from multiagent.wrappers import ObservabilityWrapper

        env = ObservabilityWrapper(env)
    if record is not None:
        from multiagent.wrappers import RecordEpisode

        env = RecordEpisode(env, record)
    return env


def aec_env(
    config: SimulationConfig | str | Path | Mapping[str, Any],
    *,
    observability: bool = False,
    record: Record | None = None,
    **kwargs: Any,
) -> AECEnv:
    """The world as a PettingZoo ``AECEnv`` (PettingZoo's own parallel-to-AEC conversion);
    ``record`` as in ``parallel_env`` (a turn is recorded when every agent has acted)."""
    return parallel_to_aec(
        parallel_env(config, observability=observability, record=record, **kwargs)
    )
