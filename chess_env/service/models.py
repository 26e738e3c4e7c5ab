"""The service's request and response models: what a client sends and what a listing shows.

- ``AgentSpec``: who plays one side (``kind``: engine, random, greedy or remote) and the
  ``AgentConfig`` fields the game records for it
- ``CreateGameRequest``, ``MoveRequest``, ``ResignRequest``: the bodies of ``POST /games``,
  ``POST /games/{id}/moves`` and ``POST /games/{id}/resign``
- ``GameSummary``: one game in ``GET /games``
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chess_env.game import AgentConfig, Color, GameResult, GameStatus, Termination

__all__ = [
    "AgentKind",
    "AgentSpec",
    "CreateGameRequest",
    "GameSummary",
    "MoveRequest",
    "ResignRequest",
]

AgentKind = Literal["engine", "random", "greedy", "remote"]
_UCI_MOVE = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?$")
_SAN_MOVE = re.compile(
    r"^(?:[NBRQK]?[a-h]?[1-8]?x?[a-h][1-8](?:=?[QRBN])?|O-O(?:-O)?|0-0(?:-0)?)[+#]?$"
)
_CONFIG_FIELDS = (
    "personality",
    "model_name",
    "system_prompt",
    "temperature",
    "max_tokens",
    "timeout_seconds",
)


class AgentSpec(BaseModel):
    """Who plays one side: the kind of agent, and the ``AgentConfig`` fields to record for it.

    Example:
        >>> AgentSpec(kind="engine", name="Stockfish", depth=3).config("black").model_name
        'stockfish-depth-3'
        >>> AgentSpec(kind="remote", name="Me").config("white").personality
        'remote'
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"kind": "engine", "name": "Stockfish", "depth": 3}]},
    )

    kind: AgentKind = Field(description="engine (Stockfish), random, greedy, or remote (a client)")
    name: str = Field(min_length=1, max_length=50, description="Display name")
    depth: int | None = Field(
        None, ge=1, le=30, description="Stockfish's search depth (engine only; default 1)"
    )
    seed: int | None = Field(
        None, ge=0, lt=2**64, description="Seed of a random or greedy agent's choices"
    )
    # Capped so that a game's snapshot frame stays well under 64 KB (4 bytes a character).
    personality: str | None = Field(
        None, max_length=100, description="Playing style (default: the kind)"
    )
    model_name: str | None = Field(
        None, min_length=1, max_length=200, description="Model id (default: the kind)"
    )
    system_prompt: str | None = Field(None, max_length=4000, description="The agent's instructions")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="Sampling temperature")
    max_tokens: int | None = Field(None, gt=0, description="Most tokens in one reply")
    timeout_seconds: float | None = Field(
        None, gt=0, description="Longest a server agent may think (default 30 s)"
    )

    @model_validator(mode="after")
    def _options_fit_kind(self) -> AgentSpec:
        if self.depth is not None and self.kind != "engine":
            raise ValueError(f"depth is for engine agents, not {self.kind}")
        if self.seed is not None and self.kind not in ("random", "greedy"):
            raise ValueError(f"seed is for random and greedy agents, not {self.kind}")
        return self

    def config(self, color: Color) -> AgentConfig:
        """The ``AgentConfig`` the game records for this agent playing ``color``."""
        default_model = f"stockfish-depth-{self.depth or 1}" if self.kind == "engine" else self.kind
        given = self.model_dump(include=set(_CONFIG_FIELDS), exclude_none=True)
        defaults = {"personality": self.kind, "model_name": default_model, "system_prompt": ""}
        return AgentConfig(agent_id=color, name=self.name, **{**defaults, **given})


class CreateGameRequest(BaseModel):
    """The two agents, and the start position (default: the standard one).

    Example:
        >>> request = CreateGameRequest.model_validate({  # the body of POST /games
        ...     "white": {"kind": "remote", "name": "Me"},
        ...     "black": {"kind": "random", "name": "R", "seed": 1},
        ... })
        >>> request.white.kind, request.black.config("black").model_name, request.fen
        ('remote', 'random', None)
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "white": {"kind": "remote", "name": "Me"},
                    "black": {"kind": "random", "name": "R"},
                }
            ]
        },
    )

    white: AgentSpec = Field(description="The agent playing white")
    black: AgentSpec = Field(description="The agent playing black")
    fen: str | None = Field(None, max_length=100, description="Start position in FEN")


class MoveRequest(BaseModel):
    """A remote agent's move.

    Example:
        >>> MoveRequest(move="Nf3", color="white")
        MoveRequest(move='Nf3', color='white', thinking_time=0.0)
        >>> MoveRequest(move="Nf9")
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for MoveRequest
        move
          Value error, not a move in UCI (e2e4, e7e8q) or SAN (Nf3, O-O, exd5, e8=Q) ...
    """

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"move": "e2e4"}, {"move": "Nf3"}]}
    )

    move: str = Field(max_length=10, description="UCI (e2e4, e7e8q) or SAN (Nf3, O-O, exd5)")
    color: Color | None = Field(
        None, description="The side the client plays; 409 when it is not that side's turn"
    )
    thinking_time: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="Seconds the agent took (recorded as is)"
    )

    @field_validator("move")
    @classmethod
    def _uci_or_san(cls, move: str) -> str:
        if not (_UCI_MOVE.match(move) or _SAN_MOVE.match(move)):
            raise ValueError("not a move in UCI (e2e4, e7e8q) or SAN (Nf3, O-O, exd5, e8=Q)")
        return move


class ResignRequest(BaseModel):
    """The side giving up.

    Example:
        >>> ResignRequest.model_validate({"color": "black"})
        ResignRequest(color='black')
    """

    model_config = ConfigDict(extra="forbid")

    color: Color = Field(description="The side that resigns; the other wins")


class GameSummary(BaseModel):
    """One game in a listing (``GET /games/{id}`` has the whole record).

    Example:
        >>> from chess_env.game_store import StateManager
        >>> from chess_env.service.core import ChessService
        >>> games = StateManager()
        >>> _ = games.create_game(AgentSpec(kind="remote", name="Me").config("white"),
        ...                       AgentSpec(kind="remote", name="You").config("black"))
        >>> [summary] = ChessService(games).summaries(status=None)
        >>> summary.white, summary.black_kind, summary.status, summary.current_turn, summary.ply
        ('Me', 'remote', 'in_progress', 'white', 0)
    """

    game_id: str = Field(description="The game's UUID4")
    white: str = Field(description="White's name")
    black: str = Field(description="Black's name")
    white_kind: AgentKind = Field(description="Who plays white")
    black_kind: AgentKind = Field(description="Who plays black")
    status: GameStatus = Field(description="Playing, or how the game ended")
    result: GameResult | None = Field(description="Set once the game is over")
    termination: Termination | None = Field(description="Why it ended, once over")
    current_turn: Color = Field(description="The side to move")
    ply: int = Field(description="Moves played")
    fen: str = Field(description="The position now")
    last_updated: datetime = Field(description="The latest change")
    spectators: int = Field(description="Spectators connected now (as the game's session says)")
