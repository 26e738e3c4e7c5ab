"""What the viewer's JSON routes take and give: replays (any game, ply by ply) and the archive.

- ``ReplayRequest``: the body of ``POST /viewer/api/replay``: a PGN file's or a ``games.jsonl``'s
  text, its format, and which games of it to replay (``start``, ``count``)
- ``ReplayPly``: one ply as the viewer shows it: the position after it (FEN, from python-chess),
  SAN and UCI, the time taken, the comment, the evaluation, the refused answers
- ``ReplayGame``: one game: its headers, its start position and its plies
- ``Replay``: the answer to ``POST /viewer/api/replay``: the games of the window asked for, and
  how many the file holds
- ``ArchivedGame``: one line of ``GET /viewer/api/archive`` (the archive's ``Game``, summarised)

Every FEN here was written by python-chess (``Board.fen()``), so the page draws positions
without knowing any chess rule.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from chess_env.core.game import Color, GameResult, GameStatus, Termination

__all__ = [
    "MAX_REPLAY_BODY",
    "MAX_REPLAY_GAMES",
    "MAX_REPLAY_TEXT",
    "ArchivedGame",
    "Replay",
    "ReplayFormat",
    "ReplayGame",
    "ReplayPly",
    "ReplayRequest",
]

MAX_REPLAY_TEXT = 5 * 1024 * 1024  # characters of a file replayed
MAX_REPLAY_BODY = 6 * 1024 * 1024  # bytes of its request: the text, JSON-escaped; beyond: 413
MAX_REPLAY_GAMES = 200  # games replayed in one reply; the rest by "start"
ReplayFormat = Literal["pgn", "jsonl"]
PgnResult = Literal["1-0", "0-1", "1/2-1/2", "*"]


class ReplayRequest(BaseModel):
    """A file to replay: its text and format, and the window of its games wanted.

    Example:
        >>> ReplayRequest(text="1. e4 e5 *", format="pgn").count
        200
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"text": '[White "A"]\n\n1. e4 e5 *\n', "format": "pgn"}]},
    )

    text: str = Field(
        max_length=MAX_REPLAY_TEXT,
        description="The file's text: PGN games, or JSON lines of arena games (ArenaGame) or "
        "of the service archive's games (Game)",
    )
    format: ReplayFormat = Field(description='"pgn" or "jsonl"')
    start: int = Field(0, ge=0, description="The first game replayed (0: the file's first)")
    count: int = Field(
        MAX_REPLAY_GAMES, ge=1, le=MAX_REPLAY_GAMES, description="Games replayed at most"
    )


class ReplayPly(BaseModel):
    """One ply as played, and the position after it.

    ``eval_cp`` is from White's side in centipawns; a forced mate is +-10000 there and ``mate``
    holds the moves to it (positive: White mates).
    """

    ply: int = Field(ge=1, description="1 for the first move after the start position")
    move_number: int = Field(ge=1, description="The move's number, as PGN prints it")
    color: Color = Field(description="The side that moved")
    san: str = Field(description="The move in SAN")
    uci: str = Field(description="The move in UCI")
    fen_after: str = Field(description="The position after the move, as python-chess writes it")
    seconds: float | None = Field(
        None, description="Time the player took (from [%emt] or the record); None: not recorded"
    )
    comment: str = Field("", description="The comment, without [%eval]/[%emt]/[%clk] commands")
    eval_cp: int | None = Field(
        None, description="Evaluation after the move from White's side (mate: +-10000)"
    )
    mate: int | None = Field(None, description="Moves to a forced mate (positive: White mates)")
    refused: list[str] = Field(
        default_factory=list, description="Reason codes of the answers refused before this move"
    )
    book: bool = Field(False, description="A move of the opening book, not the player's")


class ReplayGame(BaseModel):
    """One game, ply by ply: what the replay page steps through."""

    index: int = Field(ge=0, description="The game's place in its file (0: the first)")
    line: int = Field(ge=1, description="The line of the file where the game starts")
    game_id: str | None = Field(None, description="The game's id, when the file names one")
    white: str = Field(description="White's name")
    black: str = Field(description="Black's name")
    white_player: str | None = Field(None, description="White's player spec, when known")
    black_player: str | None = Field(None, description="Black's player spec, when known")
    result: PgnResult = Field(description='"1-0", "0-1", "1/2-1/2", or "*" (unfinished)')
    termination: str | None = Field(None, description="How the game ended, in the file's words")
    opening: str | None = Field(None, description="The opening's name, when the file has it")
    event: str | None = Field(None, description="The PGN Event tag")
    comment: str = Field("", description="The comment on the game as a whole")
    status: GameStatus | None = Field(
        None, description="For the service's games: playing, or how it ended"
    )
    start_fen: str = Field(description="The position before the first ply")
    plies: list[ReplayPly] = Field(description="Every ply, in order")


class Replay(BaseModel):
    """The games of one window of a file, and how many the file holds."""

    format: ReplayFormat = Field(description="The file's format")
    total: int = Field(ge=0, description="Games in the file")
    start: int = Field(ge=0, description="The index of the first game here")
    games: list[ReplayGame] = Field(description="The games from start on, at most count")


class ArchivedGame(BaseModel):
    """One archived game, in a listing (``GET /viewer/api/archive/{id}`` has the ``Game``)."""

    game_id: str = Field(description="The game's UUID4")
    white: str = Field(description="White's name")
    black: str = Field(description="Black's name")
    white_player: str = Field(description='White\'s model or player spec ("remote": a client)')
    black_player: str = Field(description='Black\'s model or player spec ("remote": a client)')
    status: GameStatus = Field(description="How the game ended, or in_progress if it did not")
    result: GameResult | None = Field(None, description="None: unfinished when archived")
    termination: Termination | None = Field(None, description="Why it ended")
    plies: int = Field(ge=0, description="Moves played")
    started_at: datetime = Field(description="When the game was created")
    ended_at: datetime | None = Field(None, description="When it ended (None: unfinished)")
