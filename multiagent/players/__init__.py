"""World players: any player in any seat, named by one grammar shared with chess.

- ``SeatTurn``, ``WorldPlayer``, ``WorldPlayerSpecError``, ``fallback_action`` (``base``).
- ``make_world_player(spec_or_object, config)``, ``check_world_player``, ``parse_world_player``,
  ``world_player_kinds``, ``register_world_player``, ``unregister_world_player``
  (``registry``; its docstring lists the kinds).
- The kinds: ``RandomPlayer``, ``NoopPlayer``, ``ScriptedPlayer`` (``simple``), ``ModelPlayer``
  (``model``, loads SB3 lazily) and ``LLMWorldPlayer`` (``llm``).

``multiagent.play.play_episode`` plays an episode with one player per seat.
"""

from multiagent.players.base import SeatTurn, WorldPlayer, WorldPlayerSpecError, fallback_action
from multiagent.players.registry import (
    WORLD_PLAYER_FORMS,
    WorldPlayerFactory,
    check_world_player,
    make_world_player,
    parse_world_player,
    register_world_player,
    unregister_world_player,
    world_player_kinds,
)
from multiagent.players.simple import NoopPlayer, Policy, RandomPlayer, ScriptedPlayer

__all__ = [
    "WORLD_PLAYER_FORMS",
    "NoopPlayer",
    "Policy",
    "RandomPlayer",
    "ScriptedPlayer",
    "SeatTurn",
    "WorldPlayer",
    "WorldPlayerFactory",
    "WorldPlayerSpecError",
    "check_world_player",
    "fallback_action",
    "make_world_player",
    "parse_world_player",
    "register_world_player",
    "unregister_world_player",
    "world_player_kinds",
]
