"""The world players' registry: one grammar (``envkit.player_spec``), one place that makes them.

Specs are ``KIND[:ARGUMENT][?KEY=VALUE&...]``:

- ``random``: uniformly random actions, seeded by ``reset`` (``RandomPlayer``)
- ``noop``: the world's fallback action, every field at its default (``fallback_action``)
- ``scripted:MODULE:FUNCTION``: ``FUNCTION(turn: SeatTurn) -> dict`` from ``MODULE``, imported
  from ``sys.path`` and then from the world's folder when one is given (``ScriptedPlayer``)
- ``model:PATH``: an SB3 model trained on a seat through ``SingleAgentEnv`` + ``FlattenForSB3``
  (``ModelPlayer``; needs the ``train`` extra)
- ``openai:MODEL?base_url=&api_key_env=&timeout=&tool_calling=&retries=&temperature=
  &endpoint_retries=&max_tokens=``: a chat model on an OpenAI-compatible endpoint
  (``LLMWorldPlayer``)
- ``hf:PATH?temperature=&max_tokens=&seed=&tool_calling=&retries=``: a local transformers
  checkpoint, e.g. one trained on a seat with ``training.llm_rl`` (``LLMWorldPlayer``; needs the
  ``llm-rl`` extra)
- a name given to ``register_world_player``

Objects are accepted too: a ``WorldPlayer`` (used as it is) or a callable ``SeatTurn -> dict``.

Served kinds, those a server may make for the seats its clients do not play: ``random``,
``noop`` and registered kinds (by default). Not ``scripted`` (it imports any module the client
names, running its code on the server), not ``model`` nor ``hf`` (they read any path on the
server's disk) and not ``openai`` (it spends the server's key and sends requests where the client
says).

Example:
    >>> from multiagent.worlds import load_world
    >>> make_world_player("noop", load_world("forage")).act(None)
    {'move': 'stay'}
    >>> make_world_player("radnom", load_world("forage"))
    Traceback (most recent call last):
    ...
    multiagent.players.base.WorldPlayerSpecError: unknown player 'radnom' (did you mean \
'random'?); ...
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit.player_spec import PlayerSpec, parse_spec
from multiagent.config import SimulationConfig
from multiagent.players.base import WorldPlayer, WorldPlayerSpecError
from multiagent.players.simple import NoopPlayer, RandomPlayer, ScriptedPlayer

__all__ = [
    "WORLD_PLAYER_FORMS",
    "WorldPlayerFactory",
    "check_world_player",
    "make_world_player",
    "parse_world_player",
    "register_world_player",
    "unregister_world_player",
    "world_player_kinds",
]

WorldPlayerFactory = Callable[[PlayerSpec, SimulationConfig], WorldPlayer]
"""What ``register_world_player`` takes: the parsed spec and the world -> a ``WorldPlayer``."""


@dataclass(frozen=True)
class _Kind:
    """One kind of world player: its form, how its spec is checked and how the player is made."""

    form: str
    make: Callable[[PlayerSpec, SimulationConfig, Path | None], WorldPlayer]
    check: Callable[[PlayerSpec], object]  # raises on a bad spec; what it returns is unused
    served: bool


def _check_nothing(spec: PlayerSpec) -> None:
    spec.reject_extras(argument=False)


def _check_scripted(spec: PlayerSpec) -> tuple[str, str]:
    spec.reject_extras(argument=True)
    module, _, function = (spec.argument or "").rpartition(":")
    if not module or not function:
        raise spec.error("expected scripted:MODULE:FUNCTION, e.g. scripted:my_policies:greedy")
    return module, function


def _make_scripted(spec: PlayerSpec, config: SimulationConfig, folder: Path | None) -> WorldPlayer:
    from multiagent.config import resolve_dynamics
    from multiagent.errors import WorldConfigError

    module, function = _check_scripted(spec)
    try:
        policy = resolve_dynamics(f"{module}:{function}", folder=folder)
    except WorldConfigError as error:  # its message says where it looked; ours names the spec
        raise spec.error(str(error).replace("engine.dynamics: ", "", 1)) from None
    return ScriptedPlayer(policy, spec.text)


def _check_model(spec: PlayerSpec) -> None:
    spec.reject_extras(argument=True)
    if not spec.argument:
        raise spec.error("expected model:PATH, the path of a saved SB3 model (.zip)")


def _make_model(spec: PlayerSpec, config: SimulationConfig, folder: Path | None) -> WorldPlayer:
    from multiagent.players.model import ModelPlayer

    _check_model(spec)
    return ModelPlayer(config, spec.argument or "", spec.text)


def _check_openai(spec: PlayerSpec) -> None:
    from multiagent.players.llm import llm_world_settings

    llm_world_settings(spec)


def _make_openai(spec: PlayerSpec, config: SimulationConfig, folder: Path | None) -> WorldPlayer:
    from multiagent.players.llm import LLMWorldPlayer, llm_world_agent

    return LLMWorldPlayer(llm_world_agent(spec, config), spec.text)


def _check_hf(spec: PlayerSpec) -> None:
    from multiagent.players.llm import hf_world_settings

    hf_world_settings(spec)


def _make_hf(spec: PlayerSpec, config: SimulationConfig, folder: Path | None) -> WorldPlayer:
    from multiagent.players.llm import LLMWorldPlayer, hf_world_agent

    return LLMWorldPlayer(hf_world_agent(spec, config), spec.text)


def _make_simple(kind: type[RandomPlayer] | type[NoopPlayer]) -> Callable[..., WorldPlayer]:
    def make(spec: PlayerSpec, config: SimulationConfig, folder: Path | None) -> WorldPlayer:
        _check_nothing(spec)
        return kind(config, spec.text)

    return make


_BUILT_IN: dict[str, _Kind] = {
    "random": _Kind("random", _make_simple(RandomPlayer), _check_nothing, served=True),
    "noop": _Kind("noop", _make_simple(NoopPlayer), _check_nothing, served=True),
    "scripted": _Kind("scripted:MODULE:FUNCTION", _make_scripted, _check_scripted, served=False),
    "model": _Kind("model:PATH", _make_model, _check_model, served=False),
    "openai": _Kind(
        "openai:MODEL[?base_url=&api_key_env=&timeout=&tool_calling=&retries=&temperature="
        "&endpoint_retries=&max_tokens=]",
        _make_openai,
        _check_openai,
        served=False,
    ),
    "hf": _Kind(
        "hf:PATH[?temperature=&max_tokens=&seed=&tool_calling=&retries=]",
        _make_hf,
        _check_hf,
        served=False,
    ),
}
_REGISTERED: dict[str, _Kind] = {}
WORLD_PLAYER_FORMS = tuple(kind.form for kind in _BUILT_IN.values())


def _kinds() -> dict[str, _Kind]:
    return {**_BUILT_IN, **_REGISTERED}


def _forms_hint(served: bool = False) -> str:
    forms = [kind.form for kind in _kinds().values() if kind.served or not served]
    if served:
        return f"a world player a server makes is one of: {', '.join(forms)}"
    return (
        f"a world player is one of: {', '.join(forms)}; "
        "or a WorldPlayer, or a callable SeatTurn -> dict"
    )


def world_player_kinds(served: bool = False) -> list[str]:
    """The kinds a spec may name (``served``: only those a server makes for its clients).

    Example:
        >>> world_player_kinds(served=True)
        ['random', 'noop']
    """
    return [name for name, kind in _kinds().items() if kind.served or not served]


def register_world_player(name: str, factory: WorldPlayerFactory, *, served: bool = True) -> None:
    """Make ``name`` a world player kind: ``factory(spec, config)`` returns a ``WorldPlayer``.

    ``name:ARG?key=value`` reaches the factory as the spec's ``argument`` and ``options``; it
    checks them itself (``spec.reject_extras``, ``spec.integer``, ...). ``served``: a server may
    make it for a client that names it (the operator's own code, so by default it may).

    Example:
        >>> from multiagent.worlds import load_world
        >>> up = ScriptedPlayer(lambda turn: {"move": "up"})
        >>> register_world_player("up", lambda spec, config: up)
        >>> make_world_player("up", load_world("forage")).act(None)
        {'move': 'up'}
        >>> unregister_world_player("up")
    """
    if not name.isidentifier():
        raise ValueError(f"a player name is an identifier (letters, digits, _), got {name!r}")
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is a built-in world player name; choose another")

    def make(spec: PlayerSpec, config: SimulationConfig, folder: Path | None) -> WorldPlayer:
        return factory(spec, config)

    _REGISTERED[name] = _Kind(f"{name}[:ARG][?KEY=VALUE]", make, lambda spec: None, served)


def unregister_world_player(name: str) -> None:
    """Forget a kind ``register_world_player`` added (tests, notebooks)."""
    _REGISTERED.pop(name, None)


def parse_world_player(text: str, *, served: bool = False) -> PlayerSpec:
    """The ``PlayerSpec`` of ``text``; an unknown kind or a malformed spec is a
    ``WorldPlayerSpecError`` listing the forms (``served``: only those a server makes).

    Example:
        >>> parse_world_player("scripted:policies:greedy").argument
        'policies:greedy'
    """
    return parse_spec(text, _kinds(), error_type=WorldPlayerSpecError, forms=_forms_hint(served))


def _kind(spec: PlayerSpec, served: bool) -> _Kind:
    kind = _kinds()[spec.kind]
    if served and not kind.served:
        allowed = ", ".join(world_player_kinds(served=True))
        raise WorldPlayerSpecError(
            f"player {spec.text!r}: a server does not make {spec.kind} players for its clients "
            f"(it makes: {allowed})"
        )
    return kind


def check_world_player(text: str, *, served: bool = False) -> PlayerSpec:
    """``text`` parsed and checked without making the player (no import, file or endpoint).

    Example:
        >>> check_world_player("openai:gpt-4o-mini", served=True)
        Traceback (most recent call last):
        ...
        multiagent.players.base.WorldPlayerSpecError: player 'openai:gpt-4o-mini': a server \
does not make openai players for its clients (it makes: random, noop)
    """
    spec = parse_world_player(text, served=served)
    _kind(spec, served).check(spec)
    return spec


def make_world_player(
    player: str | os.PathLike[str] | WorldPlayer | Callable[..., Any],
    config: SimulationConfig,
    *,
    served: bool = False,
    folder: str | os.PathLike[str] | None = None,
) -> WorldPlayer:
    """A ``WorldPlayer`` for a spec or an object (see the module doc).

    Args:
        player: a spec, a ``WorldPlayer`` (returned as it is) or a callable ``SeatTurn -> dict``.
        config: the world the player plays.
        served: refuse kinds a server does not make for its clients.
        folder: where ``scripted:`` also looks for its module (the world file's folder).

    Example:
        >>> from multiagent.worlds import load_world
        >>> make_world_player(lambda turn: {"move": "up"}, load_world("forage")).name
        '<lambda>'
    """
    if isinstance(player, WorldPlayer):
        return player
    if isinstance(player, str | os.PathLike):
        spec = parse_world_player(os.fspath(player), served=served)
        kind = _kind(spec, served)
        made = kind.make(spec, config, None if folder is None else Path(folder))
        made.name = spec.text
        return made
    if callable(player):
        return ScriptedPlayer(player)
    raise WorldPlayerSpecError(
        f"cannot make a world player of a {type(player).__name__}; {_forms_hint()}"
    )
