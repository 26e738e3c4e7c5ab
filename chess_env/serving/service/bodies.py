"""The service's request and response models: what a client sends and what a listing shows.

- ``AgentSpec``: who plays one side (``player``: "remote", a client, or a player spec of
  ``chess_env.core.players`` that the server makes) and the ``AgentConfig`` fields the game records
- ``CreateGameRequest``, ``MoveRequest``, ``ResignRequest``: the bodies of ``POST /games``,
  ``POST /games/{id}/moves`` and ``POST /games/{id}/resign``
- ``CreatedGame``: the answer to ``POST /games``, the only one that carries the seat tokens
- ``GameSummary``: one game in ``GET /games``; ``Listing``: which games ``GET /games`` shows
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chess_env.core.game import AgentConfig, Color, Game, GameResult, GameStatus, Termination
from chess_env.core.players import check_player, parse_player
from chess_env.errors import PlayerSpecError
from chess_env.serving.service.tokens import SEAT_TOKEN_HEADER, SeatTokens

__all__ = [
    "REMOTE",
    "AgentSpec",
    "CreateGameRequest",
    "CreatedGame",
    "GameSummary",
    "Listing",
    "MoveRequest",
    "ResignRequest",
]

REMOTE = "remote"  # the player of a side that a client moves for
# Which games GET /games shows: every game, those created public, or none (403).
Listing = Literal["all", "public", "off"]
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
    """Who plays one side: "remote" or a player spec, and the ``AgentConfig`` fields to record.

    The spec is checked by ``chess_env.core.players.check_player(served=True)`` without starting
    anything: a kind the server does not make for a client (a model file, an LLM on the server's
    key, a person at its terminal), or a malformed spec, is a 422 naming ``player``.

    Example:
        >>> config = AgentSpec(player="stockfish:3", name="Stockfish").config("black")
        >>> config.model_name, config.personality
        ('stockfish:3', 'stockfish')
        >>> AgentSpec(player="remote", name="Me").config("white").personality
        'remote'
        >>> AgentSpec(player="human", name="Me")
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for AgentSpec
        player
          Value error, player 'human': a server does not make human players for its clients ...
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"player": "stockfish:3", "name": "Stockfish"}]},
    )

    # Capped as model_name is: the spec is its default.
    player: str = Field(
        min_length=1,
        max_length=200,
        description=(
            '"remote" (a client moves for this side) or a player spec of chess_env.core.players '
            "that the server makes: random, greedy, "
            "stockfish[:DEPTH][?depth=&skill=&elo=&movetime=], alphabeta[:DEPTH], or a name the "
            "operator registered (not model:, openai: or human)"
        ),
        examples=["remote", "random", "greedy", "stockfish:3", "stockfish?elo=1500", "alphabeta:2"],
    )
    name: str = Field(min_length=1, max_length=50, description="Display name")
    seed: int | None = Field(
        None, ge=0, lt=2**64, description="Seed of a server-made player's choices (not remote)"
    )
    # Capped so that a game's snapshot frame stays well under 64 KB (4 bytes a character).
    personality: str | None = Field(
        None, max_length=100, description="Playing style (default: the player's kind)"
    )
    model_name: str | None = Field(
        None, min_length=1, max_length=200, description="Model id (default: the player spec)"
    )
    system_prompt: str | None = Field(None, max_length=4000, description="The agent's instructions")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="Sampling temperature")
    max_tokens: int | None = Field(None, gt=0, description="Most tokens in one reply")
    timeout_seconds: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="Longest a server agent may think (default 30 s)",
    )

    @field_validator("player")
    @classmethod
    def _remote_or_served(cls, player: str) -> str:
        if player != REMOTE:
            try:
                check_player(player, served=True)
            except PlayerSpecError as error:
                raise PlayerSpecError(f'{error}; or "{REMOTE}": a client plays this side') from None
        return player

    @model_validator(mode="after")
    def _seed_needs_a_server_player(self) -> AgentSpec:
        if self.seed is not None and self.player == REMOTE:
            raise ValueError("seed is for players the server makes, not remote")
        return self

    def config(self, color: Color) -> AgentConfig:
        """The ``AgentConfig`` the game records for this agent playing ``color`` (by default
        the spec as ``model_name`` and its kind, e.g. "stockfish", as ``personality``)."""
        kind = REMOTE if self.player == REMOTE else parse_player(self.player).kind
        given = self.model_dump(include=set(_CONFIG_FIELDS), exclude_none=True)
        defaults = {"personality": kind, "model_name": self.player, "system_prompt": ""}
        return AgentConfig(agent_id=color, name=self.name, **{**defaults, **given})


class CreateGameRequest(BaseModel):
    """The two agents, and the start position (default: the standard one).

    Example:
        >>> request = CreateGameRequest.model_validate({  # the body of POST /games
        ...     "white": {"player": "remote", "name": "Me"},
        ...     "black": {"player": "alphabeta:2", "name": "AB", "seed": 1},
        ... })
        >>> request.white.player, request.black.config("black").model_name, request.fen
        ('remote', 'alphabeta:2', None)
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "white": {"player": "remote", "name": "Me"},
                    "black": {"player": "stockfish?elo=1500", "name": "Stockfish"},
                }
            ]
        },
    )

    white: AgentSpec = Field(description="The agent playing white")
    black: AgentSpec = Field(description="The agent playing black")
    fen: str | None = Field(None, max_length=100, description="Start position in FEN")
    public: bool | None = Field(
        None,
        description=(
            "Whether GET /games lists the game when the server lists public games only "
            "(default: true when the server plays both sides, false when a client plays one). "
            "A private game is still readable by its id"
        ),
    )

    @property
    def remote_sides(self) -> list[Color]:
        """The sides a client plays."""
        sides: list[tuple[Color, AgentSpec]] = [("white", self.white), ("black", self.black)]
        return [color for color, spec in sides if spec.player == REMOTE]

    @property
    def listed(self) -> bool:
        """``public``, or its default: only games that no client plays are listed."""
        return not self.remote_sides if self.public is None else self.public


class CreatedGame(BaseModel):
    """The answer to ``POST /games``: the game, and its tokens, which no other reply carries.

    Each side a client plays sends its token in the ``X-Seat-Token`` header to move and resign;
    the creator's token aborts the game. They are not shown again: keep them.
    """

    game: Game = Field(description="The game, after the server's first move if it plays white")
    tokens: SeatTokens = Field(description=f"The secrets for the {SEAT_TOKEN_HEADER} header")


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
        None,
        description=(
            "The side the client plays (default: the seat token's); 403 when the token is not "
            "that side's, 409 when it is not that side's turn"
        ),
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
    """The side giving up (by default the seat token's; 403 when the token is not its).

    Example:
        >>> ResignRequest.model_validate({"color": "black"})
        ResignRequest(color='black')
    """

    model_config = ConfigDict(extra="forbid")

    color: Color | None = Field(
        None, description="The side that resigns (default: the seat token's); the other wins"
    )


class GameSummary(BaseModel):
    """One game in a listing (``GET /games/{id}`` has the whole record).

    Example:
        >>> from chess_env.serving.game_store import StateManager
        >>> from chess_env.serving.service.core import ChessService
        >>> games = StateManager()
        >>> _ = games.create_game(AgentSpec(player="remote", name="Me").config("white"),
        ...                       AgentSpec(player="remote", name="You").config("black"))
        >>> [summary] = ChessService(games, listing="all").summaries(status=None)
        >>> summary.white, summary.black_player, summary.status, summary.current_turn, summary.ply
        ('Me', 'remote', 'in_progress', 'white', 0)
    """

    game_id: str = Field(description="The game's UUID4")
    white: str = Field(description="White's name")
    black: str = Field(description="Black's name")
    white_player: str = Field(description='White\'s player: "remote" or the spec the server plays')
    black_player: str = Field(description='Black\'s player: "remote" or the spec the server plays')
    status: GameStatus = Field(description="Playing, or how the game ended")
    result: GameResult | None = Field(description="Set once the game is over")
    termination: Termination | None = Field(description="Why it ended, once over")
    current_turn: Color = Field(description="The side to move")
    ply: int = Field(description="Moves played")
    fen: str = Field(description="The position now")
    last_updated: datetime = Field(description="The latest change")
    spectators: int = Field(description="Spectators connected now (as the game's session says)")
    aborted: bool = Field(description="Aborted by its creator: nobody moves any more")
