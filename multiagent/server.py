"""A world as an OpenEnv server: ``WorldAdapter``, ``create_world_app`` and ``serve``.

``python -m multiagent serve --world trade [--host 127.0.0.1] [--port 8000]`` runs it (``--help``
lists the rest: token, rate limit, sessions and their idle timeout, as ``python -m chess_env``).
A session plays one agent's seat, chosen at reset (``agent``, default the first). The seats no
client plays are played by the server: ``players`` names a served kind per seat (``random``,
``noop`` or a kind the operator registered with ``register_world_player``; see
``multiagent.players``), and a seat it does not name gets ``random``. Other kinds (``scripted``,
``model``, ``openai``) would run the client's code, read the server's disk or spend its key: a
422 (reason "invalid_player") names the seat and the kinds the server makes::

    POST /reset {"agent": "Trader_1", "players": {"Trader_2": "noop"}}
    POST /step  {"action": {"verb": "buy", "good": "food", "target_town": "Farmstead",
                            "amount": 2.5}, "session_id": "..."}

Several clients play one episode: the creator names the seats ``open`` to others, and the reply's
``metadata`` carries the ``episode_id`` and a ``seat_tokens`` map (its own seat's and each open
seat's, shown only there; the server keeps their SHA-256). Another client joins a seat with its
token (each seat acts in its own session; one client may open several)::

    POST /reset {"agent": "Forager_1", "open": ["Forager_2"], "players": {"Forager_3": "noop"}}
    POST /reset {"join": "<episode_id>", "agent": "Forager_2", "seat_token": "<token>"}

A turn advances once every live client seat has sent its action (served seats act at once): a
step waits for the others, up to ``turn_timeout`` seconds (then 409 "turn_timeout", its action
withdrawn), and returns the seat's own observation and reward. Nobody acts for a seat they do not
hold: a join without a token is 401 "missing_seat_token", with another seat's or a wrong one 403
"wrong_seat_token", of a served seat 403 "server_seat"; a second action in a turn is 409
"already_acted"; each leaves the episode as it was (``multiagent.server_episodes``).

The seed of an episode is the server's secret: one who knew it could replay the episode offline
with the same actions and read what the seat may not see (the other agents' hidden variables, the
true values behind the noise, the others' next actions). So every reset draws a fresh seed from
``secrets``, no reply shows it, and a client's ``seed`` is refused (422, reason
"seed_not_allowed"). An operator who wants reproducible episodes (an evaluation whose clients are
trusted) allows client seeds: ``create_world_app(..., client_seeds=True)``, ``python -m
multiagent serve --allow-client-seeds``; then the same seed gives the same trajectory, and
the creator's ``/state`` shows the seed it chose (never one the server drew; a joiner sends
none and sees none).

The observation is the seat's ``ObservationEnvelope``: the config's observability applies, so
targets the seat is unaware of are absent and the others are seen with noise. An action is
checked against the world's Malli-lite signature (``world_signature``) before anything moves:
quoted numbers are coerced (listed in ``metadata["coerced"]``), and a wrong action is a
VALIDATION_ERROR (reason "invalid_action") whose message lists every issue as ``path: message``
and whose ``errors`` list has each as ``{"loc": [...], "msg", "type"}``; the episode is left as
it was. The MCP tool ``act`` takes the same action.

This module and ``multiagent.server_episodes`` are the only ones of ``multiagent`` that import
FastAPI (the ``server`` extra).

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
from collections.abc import Mapping
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

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
from multiagent.env import as_config
from multiagent.players import WorldPlayerSpecError, check_world_player
from multiagent.server_episodes import EpisodeTable, SeatResult, SharedEpisode
from multiagent.signatures import world_signature

__all__ = [
    "TURN_TIMEOUT_S",
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

SEED_BITS = 64  # a drawn seed is as wide as any seed a client may send (ResetRequest)
TURN_TIMEOUT_S = 30.0  # how long a step waits for the other clients' actions by default
# OpenEnv's typed clients add "metadata" to every action; it is not part of any world's action.
_CLIENT_KEYS = ("metadata",)


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
    """The reset options of a world episode (besides OpenEnv's ``seed``): create one, or join
    one (``join``, ``agent`` and ``seat_token`` only).

    Example:
        >>> WorldResetOptions(agent="Trader_2", players={"Trader_1": "noop"}).players
        {'Trader_1': 'noop'}
        >>> WorldResetOptions(players={"Trader_1": 3})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for WorldResetOptions
        players.Trader_1
          Input should be a valid string ...
    """

    model_config = ConfigDict(extra="forbid")

    agent: str | None = Field(
        None,
        max_length=200,
        description="The seat this session plays (default: the first agent; needed to join)",
    )
    players: dict[str, str] = Field(
        default_factory=dict,
        max_length=1000,
        description="A served player per seat no client plays: random, noop or a kind the "
        "operator registered (default: random)",
    )
    open: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="Seats other clients play, each joined with the seat token the reply carries",
    )
    join: str | None = Field(
        None, max_length=200, description="The id of the episode to join (its episode_id)"
    )
    seat_token: str | None = Field(
        None, max_length=200, description="The joined seat's token (only with join)"
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
    would leak what the seat cannot see. ``episode_id`` is the world episode's, the same for
    every client of it.

    Example:
        >>> adapter = WorldAdapter("forage", client_seeds=True)
        >>> _ = adapter.reset(seed=3, agent="Forager_1", players={"Forager_3": "noop"})
        >>> state = WorldEpisodeState(**adapter.state())
        >>> state.world, state.agent, state.turn, state.seed, state.players
        ('forage', 'Forager_1', 0, 3, {'Forager_2': 'random', 'Forager_3': 'noop'})
        >>> _ = adapter.reset(agent="Forager_1")  # a secret seed, drawn by the server
        >>> "seed" in adapter.state()
        False
    """

    world: str | None = Field(None, description="The world's name")
    agent: str | None = Field(None, description="The seat this session plays")
    turn: int | None = Field(None, description="The world's turn")
    seed: int | None = Field(
        None,
        description="The seed the client chose (only where the server allows client seeds, "
        "and only to the creator); absent when the server drew it, which it keeps secret",
    )
    players: dict[str, str] | None = Field(
        None, description="The served player of each seat no client plays"
    )
    clients: list[str] | None = Field(None, description="The seats clients play")
    waiting_for: list[str] | None = Field(
        None, description="The live client seats whose action for this turn is not in yet"
    )
    done: bool | None = Field(None, description="Whether the seat's episode has ended")


class WorldAdapter:
    """One seat of a world episode per session; the episode may be shared with other sessions
    (see the module doc).

    Args:
        world: a built-in world's name, a YAML path, a config dict or a ``SimulationConfig``.
        client_seeds: whether ``reset`` takes a seed from the client (default False: it is
            refused with ``SeedNotAllowedError``). Without one, every reset draws a fresh seed
            from ``secrets`` and keeps it secret.
        episodes: the episodes other sessions may join (``create_world_app`` shares one among
            every session of a server; default: this adapter's own).
        turn_timeout: seconds a step waits for the other client seats' actions (default
            ``TURN_TIMEOUT_S``; None: forever); past it, 409 "turn_timeout" and the action is
            withdrawn.

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
        episodes: EpisodeTable | None = None,
        turn_timeout: float | None = TURN_TIMEOUT_S,
    ) -> None:
        self.config = as_config(world)
        self.client_seeds = client_seeds
        self.episodes = EpisodeTable() if episodes is None else episodes
        self.turn_timeout = turn_timeout
        self.name = self.config.simulation.name
        agents = self.config.agent_names
        self.description = (
            f"The {self.name} world, {len(agents)} agents ({', '.join(agents)}): a session plays "
            "one agent's seat (chosen at reset); the server plays the seats no client plays, "
            "and other clients may join the seats the creator opens; each step sends the seat's "
            "action and returns its partial, noisy observation and reward."
        )
        self.version = _package_version()
        self.signature: Schema = world_signature(self.config)
        self.action_model = _action_model(self.name, self.signature)
        self.observation_model = WorldObservation
        self.state_model = WorldEpisodeState
        self._episode: SharedEpisode | None = None
        self._seat = ""
        self._include_text = False
        self._client_seed: int | None = None

    def reset(self, *, seed: int | None = None, **options: Any) -> AdapterResult:
        """Create an episode as ``options`` say (``WorldResetOptions``), with the client's seed
        where allowed, else a fresh secret one (a seed known to the client would let it replay
        the episode offline and read what its seat may not see); or join one."""
        parsed = WorldResetOptions.model_validate(options)
        seat = self._seat_named(parsed.agent, joining=parsed.join is not None)
        extra: dict[str, Any] = {}
        if parsed.join is not None:
            _check_join_options(parsed, seed)
            episode = self.episodes.get(parsed.join)
            episode.hold(seat, parsed.seat_token, self)
        else:
            if seed is not None and not self.client_seeds:
                raise SeedNotAllowedError()
            if parsed.seat_token is not None:
                raise _option_error("seat_token", "only a join (with join) sends a seat token")
            episode, tokens = self._create(seat, parsed, seed)
            if parsed.open:
                extra = {"episode_id": episode.id, "seat_tokens": tokens}
        old, self._episode, self._seat = self._episode, episode, seat
        self._include_text = parsed.include_text
        self._client_seed = seed if parsed.join is None else None
        if old is not None:
            self.episodes.leave(old, self, keep=seat if old is episode else None)
        return self._result(episode.view(seat), extra)

    def _seat_named(self, agent: str | None, *, joining: bool) -> str:
        agents = self.config.agent_names
        if agent is None:
            if joining:
                raise _option_error("agent", "name the seat to join")
            return agents[0]
        if agent not in agents:
            raise InvalidInputError(
                f"unknown agent {agent!r}; the agents are {', '.join(agents)}",
                reason="unknown_agent",
            )
        return agent

    def _create(
        self, seat: str, parsed: WorldResetOptions, seed: int | None
    ) -> tuple[SharedEpisode, dict[str, str]]:
        """A new episode with ``seat`` held by this session; its seat tokens."""
        agents = self.config.agent_names
        _check_seats("open", parsed.open, [a for a in agents if a != seat])
        others = [a for a in agents if a != seat and a not in parsed.open]
        _check_seats("players", list(parsed.players), others)
        for other, spec in parsed.players.items():
            _check_served(other, spec)
        drawn = secrets.randbits(SEED_BITS) if seed is None else seed
        try:
            episode, tokens = SharedEpisode.open(
                self.config, drawn, [seat, *parsed.open], parsed.players
            )
        except WorldPlayerSpecError as error:  # a registered kind's factory refused its spec
            raise _player_error("players", str(error)) from None
        self.episodes.add(episode)
        episode.claim(seat, self)
        return episode, tokens

    def step(self, action: BaseModel) -> AdapterResult:
        episode = self._live_episode()
        checked = validate(self.signature, _plain(action), mode="strict", direction="input")
        if not checked.ok:
            raise InvalidActionError(checked.errors)
        try:
            episode.world.decode_turn(self._seat, checked.value)  # what the signature cannot say
        except ValueError as error:
            raise InvalidInputError(str(error), reason="invalid_action") from None
        result = episode.act(self._seat, self, checked.value, self.turn_timeout)
        extra: dict[str, Any] = {"info": result.info} if result.info else {}
        if checked.warnings:
            extra["coerced"] = [str(warning) for warning in checked.warnings]
        if result.truncated:
            extra["truncated"] = True
        return self._result(result, extra)

    def state(self) -> dict[str, Any]:
        """The ``WorldEpisodeState`` fields; ``seed`` only if this client chose it."""
        episode = self._episode
        if episode is None:
            return {}
        state = {
            "episode_id": episode.id,
            "world": self.name,
            "agent": self._seat,
            "turn": episode.turn,
            "players": dict(episode.players),
            "clients": list(episode.client_seats),
            "waiting_for": episode.waiting_for(),
            "done": episode.done(self._seat),
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
        if self._episode is not None:
            self.episodes.leave(self._episode, self)
        self._episode = None

    def _live_episode(self) -> SharedEpisode:
        if self._episode is None:
            raise EpisodeStateError("no episode yet: reset first", reason="not_reset")
        if self._episode.done(self._seat):
            raise EpisodeStateError(
                f"{self._seat}'s episode is over; reset to play again", reason="episode_over"
            )
        return self._episode

    def _result(self, seat: SeatResult, extra: dict[str, Any]) -> AdapterResult:
        fields: dict[str, Any] = {
            "envelope": seat.envelope,
            "agent": self._seat,
            "turn": seat.turn,
            "done": seat.done,
        }
        if self._include_text:
            fields["text"] = seat.envelope.to_text()
        return AdapterResult(WorldObservation(**fields), seat.reward, seat.done, extra)


def _check_seats(option: str, named: list[str], allowed: list[str]) -> None:
    """Refuse seats in ``named`` outside ``allowed`` or named twice (422 "unknown_agent")."""
    strangers = sorted({seat for seat in named if seat not in allowed})
    twice = sorted({seat for seat in named if named.count(seat) > 1})
    if strangers or twice:
        what = f"{', '.join(map(repr, strangers))}, not another seat" if strangers else ""
        what += ("; " if what else "") + (f"{', '.join(twice)} twice" if twice else "")
        raise InvalidInputError(
            f"{option} names {what}; the seats it may name are {', '.join(allowed) or 'none'}",
            reason="unknown_agent",
            errors=[ErrorDetail(loc=(option,), msg=what, type="value_error")],
        )


def _check_served(seat: str, spec: str) -> None:
    """Refuse a player the server does not make (422 "invalid_player", naming the seat and
    the kinds it makes)."""
    try:
        check_world_player(spec, served=True)
    except WorldPlayerSpecError as error:
        raise _player_error(f"players.{seat}", str(error), seat) from None


def _player_error(where: str, message: str, seat: str | None = None) -> InvalidInputError:
    loc = ("players",) if seat is None else ("players", seat)
    return InvalidInputError(
        f"{where}: {message}",
        reason="invalid_player",
        errors=[ErrorDetail(loc=loc, msg=message, type="value_error")],
    )


def _option_error(option: str, why: str) -> InvalidInputError:
    return InvalidInputError(
        f"{option}: {why}",
        reason="invalid_option",
        errors=[ErrorDetail(loc=(option,), msg=why, type="value_error")],
    )


def _check_join_options(parsed: WorldResetOptions, seed: int | None) -> None:
    """A join takes ``agent``, ``seat_token`` and ``include_text`` only: the episode is the
    creator's (its seed, its open seats, its served players)."""
    if seed is not None:
        raise _option_error("seed", "a joined episode keeps the seed it was created with")
    for option in ("open", "players"):
        if getattr(parsed, option):
            raise _option_error(option, "the creator of the episode chose these")


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
    world: str | Path | SimulationConfig,
    *,
    client_seeds: bool = False,
    turn_timeout: float | None = TURN_TIMEOUT_S,
    **settings: Any,
) -> FastAPI:
    """The server app of ``world``; ``client_seeds`` and ``turn_timeout`` as ``WorldAdapter``
    takes them (default: seeds are the server's secret, a step waits 30 s for the other
    clients), ``settings`` go to ``envkit.server.create_app`` (``max_sessions``,
    ``idle_timeout``, ...). The config is loaded once, and every session shares one table of
    episodes, so that a session may join another's."""
    factory = partial(
        WorldAdapter,
        as_config(world),
        client_seeds=client_seeds,
        episodes=EpisodeTable(),
        turn_timeout=turn_timeout,
    )
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
