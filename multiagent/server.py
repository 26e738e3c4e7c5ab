"""A world as an OpenEnv server: ``WorldAdapter``, ``create_world_app`` and ``serve``.

``python -m multiagent serve --world trade [--host 127.0.0.1] [--port 8000]`` runs it (``--help``
lists the rest: token, rate limit, sessions and their idle timeout, as ``python -m chess_env``).
A session plays ONE agent's seat, chosen at reset; the other agents act by their policies
("random": a sample of their action space, seeded from the episode's seed)::

    POST /reset {"agent": "Trader_1", "policies": {"Trader_2": "random"}}
    POST /step  {"action": {"verb": "buy", "good": "food", "target_town": "Farmstead",
                            "amount": 2.5}, "session_id": "..."}

The seed of an episode is the server's secret: one who knew it could replay the episode offline
with the same actions and read what the seat may not see (the other agents' hidden variables, the
true values behind the noise, the others' next actions). So every reset draws a fresh seed from
``secrets``, no reply shows it, and a client's ``seed`` is refused (422, reason
"seed_not_allowed"). An operator who wants reproducible episodes (an evaluation whose clients are
trusted) allows client seeds: ``create_world_app(..., client_seeds=True)``, ``python -m
multiagent serve --allow-client-seeds``; then the same seed gives the same trajectory, and
``/state`` shows the seed the client chose (never one the server drew).

The observation is the seat's ``ObservationEnvelope``: the config's observability applies, so
targets the seat is unaware of are absent and the others are seen with noise. An action is
checked against the world's Malli-lite signature (``action_signature``) before anything moves:
quoted numbers are coerced (listed in ``metadata["coerced"]``), and a wrong action is a
VALIDATION_ERROR (reason "invalid_action") whose message lists every issue as ``path: message``
and whose ``errors`` list has each as ``{"loc": [...], "msg", "type"}``; the episode is left as
it was. The MCP tool ``act`` takes the same action.

This is the only module of ``multiagent`` that imports FastAPI (the ``server`` extra).

Example:
    >>> adapter = WorldAdapter("forage", client_seeds=True)
    >>> first = adapter.reset(seed=0, agent="Forager_2")
    >>> first.observation.envelope.observer, first.observation.turn
    ('Forager_2', 0)
    >>> adapter.step(WorldAction(move="up")).observation.turn
    1
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from envkit.schema import Issue, Schema, tool_definition, validate
from envkit.server import (
    AdapterResult,
    EpisodeState,
    EpisodeStateError,
    InvalidInputError,
    ToolSpec,
    create_app,
    make_server,
)
from envkit.server.errors import ErrorDetail, issue_details
from envkit.server.ws_limits import MAX_WS_PENDING_BYTES
from multiagent.config import SimulationConfig
from multiagent.dto import ObservationEnvelope
from multiagent.env import WorldEnv, as_config
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.signatures import action_signature
from multiagent.wrappers.text import observation_envelope

__all__ = [
    "POLICIES",
    "InvalidActionError",
    "SeedNotAllowedError",
    "WorldAction",
    "WorldAdapter",
    "WorldEpisodeState",
    "WorldObservation",
    "WorldResetOptions",
    "create_world_app",
    "serve",
]

PolicyName = Literal["random"]
SEED_BITS = 64  # a drawn seed is as wide as any seed a client may send (ResetRequest)
Policy = Callable[[WorldEnv, str], Any]
# OpenEnv's typed clients add "metadata" to every action; it is not part of any world's action.
_CLIENT_KEYS = ("metadata",)


def _random_policy(env: WorldEnv, agent: str) -> Any:
    """A sample of the agent's action space (seeded by ``WorldEnv.reset`` from its seed)."""
    return env.action_space(agent).sample()


POLICIES: dict[str, Policy] = {"random": _random_policy}


class InvalidActionError(InvalidInputError):
    """An action the world's signature refuses; ``issues`` are its Malli-lite errors, sent to
    the client as ``errors`` too, so that it sees every failing path at once.

    Example:
        >>> adapter = WorldAdapter("forage"); _ = adapter.reset()
        >>> try:
        ...     adapter.step(WorldAction(move="fly", speed=2))
        ... except InvalidActionError as error:
        ...     print([issue.path for issue in error.issues])
        ['move', 'speed']
    """

    def __init__(self, issues: list[Issue]) -> None:
        details = "; ".join(str(issue) for issue in issues)
        super().__init__(
            f"invalid action: {details}", reason="invalid_action", errors=issue_details(issues)
        )
        self.issues = issues


class SeedNotAllowedError(InvalidInputError):
    """A client sent ``seed`` to a server that keeps its seeds secret.

    Example:
        >>> WorldAdapter("forage").reset(seed=3)
        Traceback (most recent call last):
        ...
        multiagent.server.SeedNotAllowedError: seed: this server draws a secret seed for every ...
    """

    def __init__(self) -> None:
        why = (
            "this server draws a secret seed for every episode, since a client who knew it "
            "could replay the episode offline and see what its seat may not"
        )
        super().__init__(
            f"seed: {why}; reset without a seed (its operator may allow client seeds: "
            "--allow-client-seeds)",
            reason="seed_not_allowed",
            errors=[ErrorDetail(loc=("seed",), msg=why, type="forbidden")],
        )


class WorldResetOptions(BaseModel):
    """The reset options of a world episode (besides OpenEnv's ``seed`` and ``episode_id``).

    Example:
        >>> WorldResetOptions(agent="Trader_2", policies={"Trader_1": "random"})
        WorldResetOptions(agent='Trader_2', policies={'Trader_1': 'random'}, include_text=False)
        >>> WorldResetOptions(policies={"Trader_1": "greedy"})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for WorldResetOptions
        policies.Trader_1
          Input should be 'random' ...
    """

    model_config = ConfigDict(extra="forbid")

    agent: str | None = Field(
        None, max_length=200, description="The seat this session plays (default: the first agent)"
    )
    policies: dict[str, PolicyName] = Field(
        default_factory=dict,
        description='Policy of each other agent (default and only choice so far: "random")',
    )
    include_text: bool = Field(
        False, strict=True, description="Add the envelope rendered as prompt text"
    )


class WorldAction(BaseModel):
    """The seat's action as plain JSON values; the world's signature checks it in ``step``.

    Open on purpose: pydantic would coerce more than Malli-lite allows and stop at fewer
    errors, so the adapter validates (``GET /schema`` shows the world's own action schema).

    Example:
        >>> WorldAction(verb="buy", good="food", target_town="Farmstead", amount=2.5).model_extra
        {'verb': 'buy', 'good': 'food', 'target_town': 'Farmstead', 'amount': 2.5}
        >>> adapter = WorldAdapter("forage"); _ = adapter.reset()
        >>> adapter.step(WorldAction(move="fly"))
        Traceback (most recent call last):
        ...
        multiagent.server.InvalidActionError: invalid action: move: expected one of [...], got "fly"
    """

    model_config = ConfigDict(extra="allow")


class WorldObservation(BaseModel):
    """What the seat sees after a turn.

    Example:
        >>> adapter = WorldAdapter("forage", client_seeds=True)
        >>> observation = adapter.reset(seed=0, agent="Forager_2", include_text=True).observation
        >>> observation.agent, observation.turn, sorted(observation.envelope.agents)
        ('Forager_2', 0, ['Forager_1', 'Forager_2', 'Forager_3'])
        >>> print(observation.text.splitlines()[-1])
        Global state (external, noise 0.15): {"eaten": 0, "food": [3, 3]}
    """

    envelope: ObservationEnvelope = Field(
        description="The seat's partial, noisy view; unaware targets are absent"
    )
    agent: str = Field(description="The seat this session plays")
    turn: int = Field(ge=0, description="The world's turn")
    done: bool = Field(description="Whether the seat's episode has ended")
    text: str | None = Field(None, description="The envelope as prompt text; only if asked")


class WorldEpisodeState(EpisodeState):
    """The session's state; never the ground truth, nor a seed the server drew, either of which
    would leak what the seat cannot see.

    Example:
        >>> adapter = WorldAdapter("forage", client_seeds=True)
        >>> _ = adapter.reset(seed=3, agent="Forager_1")
        >>> state = WorldEpisodeState(**adapter.state())
        >>> state.world, state.agent, state.turn, state.seed, state.policies["Forager_2"]
        ('forage', 'Forager_1', 0, 3, 'random')
        >>> _ = adapter.reset(agent="Forager_1")  # a secret seed, drawn by the server
        >>> "seed" in adapter.state()
        False
    """

    world: str | None = Field(None, description="The world's name")
    agent: str | None = Field(None, description="The seat this session plays")
    turn: int | None = Field(None, description="The world's turn")
    seed: int | None = Field(
        None,
        description="The seed the client chose (only where the server allows client seeds); "
        "absent when the server drew it, which it keeps secret",
    )
    policies: dict[str, str] | None = Field(None, description="The other agents' policies")
    done: bool | None = Field(None, description="Whether the seat's episode has ended")


class WorldAdapter:
    """One ``WorldEnv`` per session, one seat of it played by the client.

    Args:
        world: a built-in world's name, a YAML path, a config dict or a ``SimulationConfig``.
        client_seeds: whether ``reset`` takes a seed from the client (default False: it is
            refused with ``SeedNotAllowedError``). Without one, every reset draws a fresh seed
            from ``secrets`` and keeps it secret.

    Example:
        >>> adapter = WorldAdapter("forage", client_seeds=True)
        >>> adapter.reset(seed=0, agent="Forager_1").observation.envelope.observer
        'Forager_1'
        >>> result = adapter.step(WorldAction(move="down"))  # the others move at random
        >>> result.reward, result.done, result.metadata, result.observation.turn
        (-0.01, False, {'info': {'collected': False}}, 1)
    """

    def __init__(
        self,
        world: str | Path | SimulationConfig | Mapping[str, Any],
        *,
        client_seeds: bool = False,
    ) -> None:
        self.config = as_config(world)
        self.client_seeds = client_seeds
        self.name = self.config.simulation.name
        agents = self.config.agent_names
        self.description = (
            f"The {self.name} world, {len(agents)} agents ({', '.join(agents)}): a session plays "
            "one agent's seat (chosen at reset), the others act by their policies; each step "
            "sends the seat's action and returns its partial, noisy observation and reward."
        )
        self.version = _package_version()
        self.signature: Schema = action_signature(self.config.actions)
        self.action_model = _action_model(self.name, self.signature)
        self.observation_model = WorldObservation
        self.state_model = WorldEpisodeState
        self.plan = ObservabilityPlan(self.config)
        self._env: WorldEnv | None = None
        self._seat = ""
        self._policies: dict[str, str] = {}
        self._include_text = False
        self._done = False
        self._client_seed: int | None = None

    def reset(self, *, seed: int | None = None, **options: Any) -> AdapterResult:
        """Start an episode as ``options`` say (``WorldResetOptions``), with the client's seed
        where allowed, else a fresh secret one: a seed known to the client would let it replay
        the episode offline and read what its seat may not see."""
        if seed is not None and not self.client_seeds:
            raise SeedNotAllowedError()
        parsed = WorldResetOptions.model_validate(options)
        agents = self.config.agent_names
        seat = parsed.agent if parsed.agent is not None else agents[0]
        if seat not in agents:
            raise InvalidInputError(
                f"unknown agent {seat!r}; the agents are {', '.join(agents)}",
                reason="unknown_agent",
            )
        strangers = sorted(set(parsed.policies) - (set(agents) - {seat}))
        if strangers:
            raise InvalidInputError(
                f"policies name {', '.join(map(repr, strangers))}, not another agent; the "
                f"others are {', '.join(a for a in agents if a != seat)}",
                reason="unknown_agent",
            )
        env = self._env or WorldEnv(self.config)
        env.reset(seed=secrets.randbits(SEED_BITS) if seed is None else seed)
        self._env, self._seat, self._done, self._client_seed = env, seat, False, seed
        self._policies = {a: parsed.policies.get(a, "random") for a in agents if a != seat}
        self._include_text = parsed.include_text
        return self._result(None, {})

    def step(self, action: BaseModel) -> AdapterResult:
        env = self._live_env()
        checked = validate(self.signature, _plain(action), mode="strict", direction="input")
        if not checked.ok:
            raise InvalidActionError(checked.errors)
        try:
            env.decode_action(self._seat, checked.value)  # what the signature cannot say
        except ValueError as error:
            raise InvalidInputError(str(error), reason="invalid_action") from None
        actions = {self._seat: checked.value}
        for agent in env.agents:
            if agent != self._seat:
                actions[agent] = POLICIES[self._policies[agent]](env, agent)
        _, rewards, terminations, truncations, infos = env.step(actions)
        truncated = truncations[self._seat]
        self._done = terminations[self._seat] or truncated
        extra: dict[str, Any] = {"info": infos[self._seat]} if infos[self._seat] else {}
        if checked.warnings:
            extra["coerced"] = [str(warning) for warning in checked.warnings]
        if truncated:
            extra["truncated"] = True
        return self._result(rewards[self._seat], extra)

    def state(self) -> dict[str, Any]:
        """The ``WorldEpisodeState`` fields; ``seed`` only if the client chose it."""
        if self._env is None or self._env.world is None:
            return {}
        state = {
            "world": self.name,
            "agent": self._seat,
            "turn": self._env.world.turn,
            "policies": dict(self._policies),
            "done": self._done,
        }
        return state if self._client_seed is None else {**state, "seed": self._client_seed}

    def tools(self) -> list[ToolSpec]:
        return [
            ToolSpec(
                "act",
                f"Play one turn of the {self.name} world as your agent; the other agents act at "
                "the same time. Returns your new observation, your reward and whether your "
                "episode ended.",
                self.signature,
            )
        ]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> AdapterResult:
        return self.step(self.action_model.model_validate(arguments))

    def close(self) -> None:
        self._env = None

    def _live_env(self) -> WorldEnv:
        if self._env is None:
            raise EpisodeStateError("no episode yet: reset first", reason="not_reset")
        if self._done:
            raise EpisodeStateError(
                f"{self._seat}'s episode is over; reset to play again", reason="episode_over"
            )
        return self._env

    def _result(self, reward: float | None, extra: dict[str, Any]) -> AdapterResult:
        env = self._env
        assert env is not None and env.world is not None
        views = observe_all(env.world, self.plan, seed=env.seed_value, observers=[self._seat])
        envelope = observation_envelope(self._seat, views[self._seat], self.plan)
        fields: dict[str, Any] = {
            "envelope": envelope,
            "agent": self._seat,
            "turn": env.world.turn,
            "done": self._done,
        }
        if self._include_text:
            fields["text"] = envelope.to_text()
        return AdapterResult(WorldObservation(**fields), reward, self._done, extra)


def _plain(action: BaseModel) -> dict[str, Any]:
    """The action's fields as sent, less the keys OpenEnv clients add on their own."""
    fields = dict(action.model_extra or {})
    for key in _CLIENT_KEYS:
        fields.pop(key, None)
    return fields


def _action_model(world: str, signature: Schema) -> type[WorldAction]:
    """A ``WorldAction`` whose JSON Schema (``GET /schema``) is the world's action schema."""
    schema = tool_definition(signature, "act", "", flavor="anthropic")["input_schema"]

    def _replace(target: dict[str, Any]) -> None:
        target.clear()
        target.update({"title": f"{world} action", **schema})

    model_config = ConfigDict(extra="allow", json_schema_extra=_replace)
    return type(f"{world.title()}Action", (WorldAction,), {"model_config": model_config})


def _package_version() -> str:
    try:
        return metadata.version("polyarena")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def create_world_app(
    world: str | Path | SimulationConfig, *, client_seeds: bool = False, **settings: Any
) -> FastAPI:
    """The server app of ``world``; ``client_seeds`` as ``WorldAdapter`` takes it (default
    False: seeds are the server's secret), ``settings`` go to ``envkit.server.create_app``
    (``max_sessions``, ``idle_timeout``, ...). The config is loaded once, for every session."""
    factory = partial(WorldAdapter, as_config(world), client_seeds=client_seeds)
    return create_app(factory, **settings)


def serve(
    world: str | Path | SimulationConfig,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_ws_pending_bytes: int = MAX_WS_PENDING_BYTES,
    **settings: Any,
) -> None:
    """Run the world's server with uvicorn until interrupted (``settings`` as
    ``create_world_app``; ``max_ws_pending_bytes`` as ``envkit.server.make_server``)."""
    app = create_world_app(world, **settings)
    make_server(app, host=host, port=port, max_ws_pending_bytes=max_ws_pending_bytes).run()
