"""``chess_env.core.players``: every player and opponent, named one way and made in one place.

Everything that names a player goes through ``make_player``: ``ChessEnv(opponent=)``,
``ChessText-v0``, the server's reset options, the game service's seats, ``training.evaluate``,
``python -m chess_env eval|demo|play`` and ``python -m training eval``. A player is an
``Opponent``: ``choose_move(board, legal_moves)``, seeded by ``reset(seed)``, released by
``close()``.

Specs are ``KIND[:ARGUMENT][?KEY=VALUE&...]``:

- ``random``, ``greedy`` (mate in one, else the best capture)
- ``stockfish``, ``stockfish:DEPTH``, ``stockfish?elo=1500``,
  ``stockfish?skill=3&depth=5&movetime=0.1`` (keys: depth, skill, elo, movetime)
- ``alphabeta:DEPTH``: the built-in searcher, no engine needed (``chess_env.core.alphabeta``)
- ``model:PATH``, or a bare path ending in ``.zip``: a saved SB3 PPO / MaskablePPO model
  (needs the ``train`` extra)
- ``openai:MODEL``: an LLM on an OpenAI-compatible endpoint (keys: base_url, api_key_env,
  timeout, tool_calling, retries, temperature, endpoint_retries; defaults from
  ``$OPENAI_BASE_URL``) shown the prompt condition of prompt, board, legal and history
  (``openai:MODEL?prompt=game_arena``; see ``chess_env.text.prompt_conditions``)
- ``hf:PATH``: a local transformers checkpoint (a trained one) through the text env and its chat
  template, greedy by default (keys: temperature, max_tokens, retries, seed, tool_calling: the
  ``move`` tool a ``training.llm_rl`` checkpoint learnt, and the prompt condition's); needs the
  ``llm-rl`` extra
- ``human``: a person typing moves at this terminal
- a name given to ``register_player``

Objects are accepted too: an ``Opponent`` (used as it is), an SB3 model or policy, or any
callable ``board -> chess.Move``.

Guard rails, so that no spec can hang a game: Stockfish's depth is at most
``MAX_STOCKFISH_DEPTH`` (30) and every Stockfish move stops after ``movetime`` or at most
``DEFAULT_MOVE_SECONDS`` (10 s); alpha-beta's depth is at most 4. A player whose engine dies or
overruns raises ``PlayerFailedError``, and the envs end the game as that side's loss.

Example:
    >>> make_player("stockfish:3?skill=5").depth if stockfish_installed() else 3
    3
    >>> make_player("greedy").name, parse_player("alphabeta:2").argument
    ('greedy', '2')
    >>> make_player("stockfsh:3")
    Traceback (most recent call last):
    ...
    chess_env.errors.PlayerSpecError: unknown player 'stockfsh:3' (did you mean 'stockfish:3'?); ...
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import chess

from chess_env.core.opponents import (
    DEFAULT_MOVE_SECONDS,
    MAX_STOCKFISH_DEPTH,
    CallableOpponent,
    GreedyOpponent,
    Opponent,
    PolicyOpponent,
    RandomOpponent,
    StockfishOpponent,
    find_stockfish,
)
from chess_env.errors import PlayerSpecError, StockfishNotFoundError
from envkit.player_spec import PlayerSpec, parse_spec

__all__ = [
    "DEFAULT_MOVE_SECONDS",
    "MAX_STOCKFISH_DEPTH",
    "PLAYER_FORMS",
    "PlayerLike",
    "PlayerSpec",
    "check_player",
    "is_sb3_object",
    "make_player",
    "parse_player",
    "player_kinds",
    "register_player",
    "stockfish_installed",
    "unregister_player",
]

PlayerLike = str | Opponent | Callable[[chess.Board], chess.Move] | Any
"""What ``make_player`` takes: a spec, an ``Opponent``, an SB3 model or policy, or a callable."""


Factory = Callable[[PlayerSpec], "Opponent | Callable[[chess.Board], chess.Move]"]


@dataclass(frozen=True)
class _Kind:
    """One kind of player: how its spec is checked and how the player is made."""

    form: str
    make: Factory
    check: Callable[[PlayerSpec], object]  # raises on a bad spec; what it returns is unused
    served: bool  # a server may make it for a remote client's request


def _check_nothing(spec: PlayerSpec) -> None:
    spec.reject_extras(argument=False)


def _stockfish_settings(spec: PlayerSpec) -> dict[str, Any]:
    spec.reject_extras(argument=True, keys=("depth", "skill", "elo", "movetime"))
    return {
        "depth": spec.integer("depth", 1, MAX_STOCKFISH_DEPTH, from_argument=True),
        "skill": spec.integer("skill", 0, 20),
        "elo": spec.integer("elo", 0, 10_000),
        "movetime": spec.number("movetime", 0.0, DEFAULT_MOVE_SECONDS * 6),
    }


def _make_stockfish(spec: PlayerSpec) -> Opponent:
    settings = _stockfish_settings(spec)
    try:
        return StockfishOpponent(**settings)
    except ValueError as error:  # an Elo outside the engine's own range
        raise spec.error(str(error)) from None


def _alphabeta_depth(spec: PlayerSpec) -> int:
    from chess_env.core.alphabeta import MAX_ALPHABETA_DEPTH

    spec.reject_extras(argument=True, keys=("depth",))
    return spec.integer("depth", 1, MAX_ALPHABETA_DEPTH, from_argument=True) or 2


def _make_alphabeta(spec: PlayerSpec) -> Opponent:
    from chess_env.core.alphabeta import AlphaBetaOpponent

    return AlphaBetaOpponent(depth=_alphabeta_depth(spec))


def _check_model(spec: PlayerSpec) -> None:
    if not spec.argument:
        raise spec.error("expected model:PATH, the path of a saved SB3 model (.zip)")


def _make_model(spec: PlayerSpec) -> Opponent:
    from chess_env.core.model_player import load_sb3_model

    _check_model(spec)
    return PolicyOpponent(load_sb3_model(spec.argument or ""))


# LLM players live in the text layer, which builds on this one: the registry loads them by name
# when a spec asks for one, as Gymnasium loads an env's entry point, so the core never imports
# the layers above it (tests/test_layers.py checks the direction).
LLM_PLAYERS = "chess_env.text.llm_player"


def _llm_players() -> Any:
    return importlib.import_module(LLM_PLAYERS)


def _check_openai(spec: PlayerSpec) -> None:
    _llm_players().llm_settings(spec)


def _make_openai(spec: PlayerSpec) -> Opponent:
    opponent: Opponent = _llm_players().llm_opponent(spec)
    return opponent


def _check_hf(spec: PlayerSpec) -> None:
    _llm_players().hf_settings(spec)


def _make_hf(spec: PlayerSpec) -> Opponent:
    opponent: Opponent = _llm_players().hf_opponent(spec)
    return opponent


def _make_human(spec: PlayerSpec) -> Opponent:
    from chess_env.core.human import HumanPlayer

    _check_nothing(spec)
    return HumanPlayer()


def _make_simple(kind: type[Opponent]) -> Factory:
    def make(spec: PlayerSpec) -> Opponent:
        _check_nothing(spec)
        return kind()

    return make


_BUILT_IN: dict[str, _Kind] = {
    "random": _Kind("random", _make_simple(RandomOpponent), _check_nothing, served=True),
    "greedy": _Kind("greedy", _make_simple(GreedyOpponent), _check_nothing, served=True),
    "stockfish": _Kind(
        "stockfish[:DEPTH][?depth=&skill=&elo=&movetime=]",
        _make_stockfish,
        _stockfish_settings,
        served=True,
    ),
    "alphabeta": _Kind("alphabeta[:DEPTH]", _make_alphabeta, _alphabeta_depth, served=True),
    "model": _Kind("model:PATH (or PATH.zip)", _make_model, _check_model, served=False),
    "openai": _Kind(
        "openai:MODEL[?base_url=&api_key_env=&timeout=&tool_calling=&retries=&temperature="
        "&endpoint_retries=&prompt=&board=&legal=&history=]",
        _make_openai,
        _check_openai,
        served=False,
    ),
    "hf": _Kind(
        "hf:PATH[?temperature=&max_tokens=&retries=&seed=&tool_calling=&prompt=&board=&legal="
        "&history=]",
        _make_hf,
        _check_hf,
        served=False,
    ),
    "human": _Kind("human", _make_human, _check_nothing, served=False),
}
_REGISTERED: dict[str, _Kind] = {}
PLAYER_FORMS = tuple(kind.form for kind in _BUILT_IN.values())


def _forms_hint(served: bool = False) -> str:
    kinds = {**_BUILT_IN, **_REGISTERED}
    forms = [kind.form for kind in kinds.values() if kind.served or not served]
    if served:
        return f"a player a server makes is one of: {', '.join(forms)}"
    return (
        f"a player is one of: {', '.join(forms)}; "
        "or an Opponent, an SB3 model or policy, or a callable board -> chess.Move"
    )


def player_kinds(*, served: bool = False) -> list[str]:
    """The kinds a spec may name (``served``: only those a server makes for its clients)."""
    kinds = {**_BUILT_IN, **_REGISTERED}
    return [name for name, kind in kinds.items() if kind.served or not served]


def register_player(name: str, factory: Factory, *, served: bool = True) -> None:
    """Make ``name`` a player kind: ``factory(spec)`` returns an ``Opponent`` or a callable.

    The factory gets the parsed ``PlayerSpec`` (``name:ARG?key=value`` reaches it as
    ``argument`` and ``options``). ``served``: a server may make it for a client that names it
    (registered players are the operator's own code, so they are by default).

    Example:
        >>> register_player("first", lambda spec: lambda board: next(iter(board.legal_moves)))
        >>> make_player("first")(chess.Board()).uci()
        'g1h3'
        >>> unregister_player("first")
    """
    if not name.isidentifier():
        raise ValueError(f"a player name is an identifier (letters, digits, _), got {name!r}")
    if name in _BUILT_IN or name == "remote":  # remote: a client's seat in the game service
        raise ValueError(f"{name!r} is a built-in player name; choose another")
    _REGISTERED[name] = _Kind(f"{name}[:ARG][?KEY=VALUE]", factory, lambda spec: None, served)


def unregister_player(name: str) -> None:
    """Forget a player ``register_player`` added (tests, notebooks)."""
    _REGISTERED.pop(name, None)


def parse_player(text: str, *, served: bool = False) -> PlayerSpec:
    """The ``PlayerSpec`` of ``text``; an unknown kind or a malformed spec is ``PlayerSpecError``
    (``served``: its hint lists only what a server makes).

    Example:
        >>> parse_player("runs/demo/model.zip").kind
        'model'
    """
    if not isinstance(text, str):
        raise PlayerSpecError(f"a player spec is text, got {type(text).__name__}")
    stripped = text.strip()
    if stripped.startswith("model:") or (stripped.endswith(".zip") and "?" not in stripped):
        path = stripped.removeprefix("model:")
        return PlayerSpec("model", path or None, {}, text, PlayerSpecError, _forms_hint(served))
    kinds = [*_BUILT_IN, *_REGISTERED]
    return parse_spec(text, kinds, error_type=PlayerSpecError, forms=_forms_hint(served))


def _kind(spec: PlayerSpec, served: bool) -> _Kind:
    kind = _REGISTERED.get(spec.kind) or _BUILT_IN[spec.kind]
    if served and not kind.served:
        allowed = ", ".join(player_kinds(served=True))
        raise PlayerSpecError(
            f"player {spec.text!r}: a server does not make {spec.kind} players for its clients "
            f"(it makes: {allowed})"
        )
    return kind


def check_player(text: str, *, served: bool = False) -> PlayerSpec:
    """``text`` parsed and checked, without making the player (no engine, file or endpoint).

    ``served``: refuse kinds a server does not make for its clients (a model file, an LLM on the
    server's key, a person at the server's terminal).

    Example:
        >>> check_player("human", served=True)
        Traceback (most recent call last):
        ...
        chess_env.errors.PlayerSpecError: player 'human': a server does not make human players ...
    """
    spec = parse_player(text, served=served)
    _kind(spec, served).check(spec)
    return spec


def make_player(player: PlayerLike, *, served: bool = False) -> Opponent:
    """An ``Opponent`` for a spec or object (see the module docstring); ``served`` as for
    ``check_player``.

    Example:
        >>> make_player(lambda board: next(iter(board.legal_moves))).name
        '<lambda>'
    """
    if isinstance(player, Opponent):
        return player
    if isinstance(player, str | os.PathLike):
        spec = parse_player(os.fspath(player), served=served)
        made = _kind(spec, served).make(spec)
        opponent = made if isinstance(made, Opponent) else CallableOpponent(made)
        opponent.name = spec.text
        return opponent
    if is_sb3_object(player):
        return PolicyOpponent(player)
    if callable(player):
        return CallableOpponent(player)
    raise PlayerSpecError(f"cannot make a player of a {type(player).__name__}; {_forms_hint()}")


def is_sb3_object(value: object) -> bool:
    """An SB3 (or sb3-contrib) model or policy, recognised without importing SB3."""
    return any(
        cls.__module__.partition(".")[0] in ("stable_baselines3", "sb3_contrib")
        for cls in type(value).__mro__
    )


def stockfish_installed() -> bool:
    """Whether a Stockfish binary is on PATH or at /usr/games/stockfish."""
    try:
        find_stockfish()
    except StockfishNotFoundError:
        return False
    return True
