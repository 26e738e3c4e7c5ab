"""Chess game records: the data model's Game, BoardState, Move, agents, sessions and checks.

``models``: the frozen pydantic models; ``check``: ``validate_game_state``.
"""

from chess_env.core.game.check import validate_game_state
from chess_env.core.game.records import (
    AgentConfig,
    AgentStats,
    BoardState,
    Color,
    Game,
    GameResult,
    GameSession,
    GameStatus,
    Move,
    ResignTermination,
    Termination,
)

__all__ = [
    "AgentConfig",
    "AgentStats",
    "BoardState",
    "Color",
    "Game",
    "GameResult",
    "GameSession",
    "GameStatus",
    "Move",
    "ResignTermination",
    "Termination",
    "validate_game_state",
]
