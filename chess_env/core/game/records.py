"""Chess game models: the data model's section 1.

- ``BoardState``: one position: FEN, legal moves (UCI), check and end flags, castling rights,
  en-passant square, clocks. Every field must agree with the FEN; ``board_tensor`` is computed
  from it, so the JSON stays small.
- ``Move``: one ply as played, every field read from python-chess before the move was pushed.
- ``Game``: two agents, the start FEN, the moves, the position, status and result. Frozen:
  ``with_move``, ``resign`` and ``timeout`` return the next ``Game``, so the history only grows,
  and a finished game takes nothing more (``GameOverError``). ``to_pgn`` exports it. A side
  whose agent fails (crashes, or answers an illegal move) resigns with termination
  "agent_error": the spec's "in_progress -> resigned (agent error/timeout fallback)". A game
  created with ``max_plies`` is a draw (termination "max_plies") on the ply that reaches it.
- ``GameSession``: the runtime record of a game: its spectators, activity, and whether it is
  still live (``is_active``).
- ``AgentConfig``: a chess-playing LLM agent: identity, model, prompt, sampling, timeout, stats.
- ``AgentStats``: an agent's results over games; wins, losses and draws sum to the games played.
Construction checks what needs no replay (turn, counts, status, times);
``chess_env.core.game.check.validate_game_state`` replays the moves and lists every inconsistency.

A move costs the same at any length of game: each game hands its live ``ChessGame`` (the board
with its move stack, which repetition draws need) to the next, so the moves are not replayed,
and a game known to be sound checks only what the step changed, not the whole history again.

Draws follow ``chess_env.core.rules.ChessGame`` with ``claim_draws``: threefold repetition and the
50-move rule end the game on the ply that reaches them.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime, timezone
from itertools import pairwise
from typing import Annotated, Any, Literal, Self

import chess
import chess.pgn
import numpy as np
from pydantic import (
    AfterValidator,
    AwareDatetime,
    Field,
    PrivateAttr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from chess_env.core.encoding import board_to_tensor
from chess_env.core.fen import fen_of
from chess_env.core.move_parsing import MoveParseError
from chess_env.core.pgn import set_tags
from chess_env.core.positions import board_from_fen, start_game
from chess_env.core.rules import ChessGame
from chess_env.errors import GameOverError, IllegalActionError
from envkit.dto import FrozenDTO

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
]

Color = Literal["white", "black"]
GameStatus = Literal["in_progress", "checkmate", "stalemate", "draw", "resigned", "timeout"]
GameResult = Literal["white_wins", "black_wins", "draw"]
Termination = Literal[
    "checkmate",
    "stalemate",
    "insufficient_material",
    "seventyfive_moves",
    "fivefold_repetition",
    "fifty_moves",
    "threefold_repetition",
    "resigned",
    "agent_error",
    "timeout",
    "max_plies",
]
ResignTermination = Literal["resigned", "agent_error"]
PieceName = Literal["pawn", "knight", "bishop", "rook", "queen", "king"]
PromotionPiece = Literal["queen", "rook", "bishop", "knight"]

_SQUARE = r"^[a-h][1-8]$"
_UCI = r"^[a-h][1-8][a-h][1-8][qrbn]?$"
_CASTLING_UCI = {"white": ("e1g1", "e1c1"), "black": ("e8g8", "e8c8")}
# The status of each termination not listed here is "draw".
_STATUS_OF = {name: name for name in ("checkmate", "stalemate", "resigned", "timeout")}
_STATUS_OF["agent_error"] = "resigned"
# Endings that are not the position's doing (a player's, or the server's ply limit): a position
# that had ended the game already excludes them, and moves that do not end it allow them.
_OFF_BOARD_ENDINGS = ("resigned", "agent_error", "timeout", "max_plies")
_RESULT_OF_WINNER: dict[bool | None, GameResult] = {
    chess.WHITE: "white_wins",
    chess.BLACK: "black_wins",
    None: "draw",
}
_PGN_RESULT = {"white_wins": "1-0", "black_wins": "0-1", "draw": "1/2-1/2", None: "*"}
_PGN_TERMINATION = {
    "timeout": "time forfeit",
    "agent_error": "abandoned",
    "max_plies": "adjudication",  # the server stops the game: a third party decides
    None: "unterminated",
}
# Endings the position alone shows; repetitions need the moves (validate_game_state replays).
_POSITION_ENDINGS = {
    "checkmate": chess.Board.is_checkmate,
    "stalemate": chess.Board.is_stalemate,
    "insufficient_material": chess.Board.is_insufficient_material,
    "fifty_moves": chess.Board.is_fifty_moves,
    "seventyfive_moves": chess.Board.is_seventyfive_moves,
}


def _uuid4(value: str) -> str:
    """A UUID4 in canonical form (lower case, hyphens), or ValueError."""
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a UUID") from None
    if parsed.variant != uuid.RFC_4122 or parsed.version != 4:
        raise ValueError(f"{value!r} is not a version 4 UUID")
    return str(parsed)


@functools.lru_cache(maxsize=512)  # each new position is validated twice in a row (see below)
def _normal_fen(fen: str) -> str:
    """``fen`` as python-chess writes it, after checking it is a legal position."""
    return board_from_fen(fen).fen()


UUID4Str = Annotated[str, AfterValidator(_uuid4)]
Fen = Annotated[str, AfterValidator(_normal_fen)]
Square = Annotated[str, Field(pattern=_SQUARE)]
UciMove = Annotated[str, Field(pattern=_UCI)]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _color(turn: chess.Color) -> Color:
    return "white" if turn == chess.WHITE else "black"


def _other(color: Color) -> Color:
    return "black" if color == "white" else "white"


class AgentStats(FrozenDTO):
    """Performance over games.

    ``average_thinking_time`` is the total thinking time over ``total_moves`` (0 without moves);
    a move's thinking time includes the illegal attempts before it.

    Example:
        >>> AgentStats(games_played=2, games_won=1, games_drawn=1).games_lost
        0
        >>> AgentStats(games_played=2, games_won=1)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for AgentStats
          Value error, games_won + games_lost + games_drawn = 1, but games_played = 2 ...
    """

    games_played: int = Field(0, ge=0, description="Games finished")
    games_won: int = Field(0, ge=0, description="Games won")
    games_lost: int = Field(0, ge=0, description="Games lost (checkmate, illegal moves, timeout)")
    games_drawn: int = Field(0, ge=0, description="Games drawn, or cut off unfinished")
    total_moves: int = Field(0, ge=0, description="Moves the agent played")
    average_thinking_time: float = Field(
        0.0, ge=0, description="Mean decision time per move played (seconds)"
    )
    illegal_moves_attempted: int = Field(0, ge=0, description="Illegal or unreadable moves sent")
    timeouts: int = Field(0, ge=0, description="Decisions that ran out of time")

    @model_validator(mode="after")
    def _results_add_up(self) -> AgentStats:
        decided = self.games_won + self.games_lost + self.games_drawn
        if decided != self.games_played:
            raise ValueError(
                f"games_won + games_lost + games_drawn = {decided}, "
                f"but games_played = {self.games_played}"
            )
        return self


class AgentConfig(FrozenDTO):
    """A chess agent: who it is, which model plays for it and how.

    Example:
        >>> AgentConfig(agent_id="white", name="Aggressive Alpha", personality="aggressive",
        ...     model_name="Qwen/Qwen2.5-32B-Instruct", system_prompt="Attack.").stats.games_played
        0
    """

    agent_id: str = Field(min_length=1, description="Unique per game, typically 'white'/'black'")
    name: str = Field(min_length=1, max_length=50, description="Display name")
    personality: str = Field(description="Playing style, e.g. 'aggressive', 'defensive'")
    model_name: str = Field(min_length=1, description="LLM model identifier")
    system_prompt: str = Field(description="The agent's instructions (plain text)")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature")
    max_tokens: int = Field(2048, gt=0, description="Most tokens in one reply")
    timeout_seconds: float = Field(
        30.0, gt=0, allow_inf_nan=False, description="Move decision timeout (seconds)"
    )
    stats: AgentStats = Field(default_factory=AgentStats, description="Results so far")


class BoardState(FrozenDTO):
    """One position; every field is what python-chess reads from ``fen`` (checked on creation).

    ``is_game_over`` covers the endings the position alone shows (checkmate, stalemate,
    insufficient material, the 50-move rule); repetitions need the moves, see ``Game.status``.

    Example:
        >>> state = BoardState.from_fen("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2")
        >>> state.en_passant_square, state.castling_rights, len(state.legal_moves)
        ('d6', '-', 7)
        >>> BoardState.from_board(chess.Board()).board_tensor.shape
        (8, 8, 12)
    """

    fen: Fen = Field(description="The position in FEN, as python-chess writes it")
    legal_moves: tuple[UciMove, ...] = Field(description="The legal moves in UCI, sorted")
    is_check: bool = Field(description="The side to move is in check")
    is_checkmate: bool = Field(description="In check with no legal move")
    is_stalemate: bool = Field(description="Not in check, with no legal move")
    is_game_over: bool = Field(description="The position alone ends the game")
    castling_rights: str = Field(
        pattern=r"^(-|K?Q?k?q?)$", description="As in the FEN: a subset of 'KQkq', '-' for none"
    )
    en_passant_square: str | None = Field(
        None, pattern=r"^[a-h][36]$", description="Where a pawn can capture en passant now"
    )
    halfmove_clock: int = Field(
        ge=0, le=100, description="Plies since the last capture or pawn move (100: drawn)"
    )
    fullmove_number: int = Field(ge=1, description="Starts at 1, grows after black's move")

    @classmethod
    def from_board(cls, board: chess.Board) -> BoardState:
        """The state of ``board``'s position (its move stack plays no part)."""
        fen = fen_of(board)
        return cls(fen=fen, **dict(_fen_facts(fen)))

    @classmethod
    def from_fen(cls, fen: str) -> BoardState:
        """The state of ``fen``; ``InvalidPositionError`` names what is wrong with it."""
        return cls.from_board(board_from_fen(fen))

    def board(self) -> chess.Board:
        """A fresh python-chess board of this position (no move stack)."""
        return chess.Board(self.fen)

    @property
    def board_tensor(self) -> np.ndarray:
        """The (8, 8, 12) uint8 piece planes, white's pieces in channels 0-5 (the spec's layout)."""
        return board_to_tensor(self.board(), "white")

    @model_validator(mode="after")
    def _agrees_with_fen(self) -> BoardState:
        facts = dict(_fen_facts(self.fen))
        wrong = [
            f"{name} is {getattr(self, name)!r} but the FEN gives {value!r}"
            for name, value in facts.items()
            if name != "legal_moves" and getattr(self, name) != value
        ]
        if sorted(self.legal_moves) != list(facts["legal_moves"]):
            missing = sorted(set(facts["legal_moves"]) - set(self.legal_moves))
            extra = sorted(set(self.legal_moves) - set(facts["legal_moves"]))
            wrong.append(f"legal_moves disagree with the FEN (missing {missing}, extra {extra})")
        if wrong:
            raise ValueError("; ".join(wrong))
        return self


@functools.lru_cache(maxsize=512)
def _fen_facts(fen: str) -> tuple[tuple[str, Any], ...]:
    """``_position_facts`` of ``fen``, cached: ``from_board`` reads a new position, and the
    validation of the state it builds reads the same FEN again at once."""
    return tuple(_position_facts(chess.Board(fen)).items())


def _position_facts(board: chess.Board) -> dict[str, Any]:
    """Every ``BoardState`` field but the FEN, as python-chess reads ``board``."""
    legal = tuple(sorted(move.uci() for move in board.generate_legal_moves()))
    check = board.is_check()
    en_passant = board.ep_square if board.has_legal_en_passant() else None
    return {
        "legal_moves": legal,
        "is_check": check,
        "is_checkmate": check and not legal,
        "is_stalemate": not check and not legal,
        "is_game_over": (
            not legal or board.is_insufficient_material() or board.halfmove_clock >= 100
        ),
        "castling_rights": board.castling_xfen(),
        "en_passant_square": None if en_passant is None else chess.square_name(en_passant),
        "halfmove_clock": board.halfmove_clock,
        "fullmove_number": board.fullmove_number,
    }


class Move(FrozenDTO):
    """One ply as played. ``Move.from_board`` fills it in from the board before the push.

    Example:
        >>> board = chess.Board("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2")
        >>> move = Move.from_board(board, chess.Move.from_uci("e5d6"), thinking_time=1.5)
        >>> move.san_notation, move.piece, move.is_capture, move.thinking_time
        ('exd6', 'pawn', True, 1.5)
    """

    from_square: Square = Field(description="Where the piece started")
    to_square: Square = Field(description="Where it went (the king's square when castling)")
    piece: PieceName = Field(description="The piece that moved (a promoting pawn is a pawn)")
    player: Color = Field(description="The side that moved")
    uci_notation: UciMove = Field(description="from_square + to_square + promotion letter")
    san_notation: str = Field(min_length=2, description="Standard algebraic notation: Nf3, O-O")
    is_capture: bool = Field(description="Took a piece, en passant included")
    is_castling: bool = Field(description="O-O or O-O-O")
    is_promotion: bool = Field(description="A pawn reached the last rank")
    promotion_piece: PromotionPiece | None = Field(
        None, description="What the pawn became; set if and only if is_promotion"
    )
    is_check: bool = Field(description="Gives check (or mate)")
    timestamp: AwareDatetime = Field(description="When the move was made")
    thinking_time: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="Seconds the player took to decide"
    )

    @classmethod
    def from_board(
        cls,
        board: chess.Board,
        move: chess.Move,
        thinking_time: float = 0.0,
        timestamp: datetime | None = None,
    ) -> Move:
        """The record of ``move`` played on ``board`` (read before it is pushed; not pushed)."""
        if not board.is_legal(move):
            raise IllegalActionError(f"move {move.uci()} is illegal in {board.fen()}")
        promotion = move.promotion
        return cls(
            from_square=chess.square_name(move.from_square),
            to_square=chess.square_name(move.to_square),
            piece=chess.piece_name(board.piece_type_at(move.from_square)),  # type: ignore[arg-type]
            player=_color(board.turn),
            uci_notation=move.uci(),
            san_notation=board.san(move),
            is_capture=board.is_capture(move),
            is_castling=board.is_castling(move),
            is_promotion=promotion is not None,
            promotion_piece=None if promotion is None else chess.piece_name(promotion),
            is_check=board.gives_check(move),
            timestamp=_now() if timestamp is None else timestamp,
            thinking_time=thinking_time,
        )

    @model_validator(mode="after")
    def _consistent(self) -> Move:
        problems = []
        if self.from_square == self.to_square:
            problems.append(f"from_square and to_square are both {self.from_square}")
        letter = "" if self.promotion_piece is None else _piece_letter(self.promotion_piece)
        expected_uci = self.from_square + self.to_square + letter
        if self.uci_notation != expected_uci:
            problems.append(
                f"uci_notation is {self.uci_notation!r}, but the squares and promotion give "
                f"{expected_uci!r}"
            )
        if self.is_promotion != (self.promotion_piece is not None):
            problems.append("promotion_piece must be set if and only if is_promotion")
        last_rank = "8" if self.player == "white" else "1"
        if self.is_promotion != (self.piece == "pawn" and self.to_square[1] == last_rank):
            problems.append(
                f"is_promotion is {self.is_promotion}, but a {self.player} {self.piece} moving "
                f"to {self.to_square} {'does not promote' if self.is_promotion else 'promotes'}"
            )
        castling = self.piece == "king" and self.uci_notation in _CASTLING_UCI[self.player]
        if self.is_castling != castling:
            problems.append(
                f"is_castling is {self.is_castling}, but {self.player}'s {self.piece} "
                f"{self.uci_notation} {'is' if castling else 'is not'} castling"
            )
        problems += _san_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _san_problems(move: Move) -> list[str]:
    """Where ``san_notation`` contradicts the other fields (the piece, target, capture...)."""
    san = move.san_notation
    body = san.rstrip("+#")
    if body in ("O-O", "O-O-O"):
        rank = "1" if move.player == "white" else "8"
        reading: dict[str, Any] = {
            "piece": "king",
            "to_square": ("g" if body == "O-O" else "c") + rank,
            "promotion_piece": None,
            "is_castling": True,
        }
    else:
        match = chess.SAN_REGEX.match(san)
        if match is None:
            return [f"san_notation {san!r} is not SAN"]
        letter, _, _, target, promotion = match.groups()
        reading = {
            "piece": _piece_name(letter or "p"),
            "to_square": target,
            "promotion_piece": None if promotion is None else _piece_name(promotion[-1]),
            "is_castling": False,
        }
    reading["is_capture"] = "x" in body
    reading["is_check"] = body != san
    wrong = [name for name, value in reading.items() if getattr(move, name) != value]
    return [f"san_notation {san!r} contradicts {', '.join(wrong)}"] if wrong else []


def _piece_name(letter: str) -> str:
    return chess.piece_name(chess.PIECE_SYMBOLS.index(letter.lower()))


def _piece_letter(name: str) -> str:
    return chess.piece_symbol(chess.PIECE_NAMES.index(name))


def _built_moves(value: Any, handler: ValidatorFunctionWrapHandler) -> tuple[Move, ...]:
    """A tuple of built moves as it is: each was checked when built, and pydantic would rerun
    every move's after-validator whenever a game is validated from its parts."""
    if isinstance(value, tuple) and all(isinstance(move, Move) for move in value):
        return value
    return handler(value)


MoveHistory = Annotated[tuple[Move, ...], WrapValidator(_built_moves)]


def _built_board_state(value: Any, handler: ValidatorFunctionWrapHandler) -> BoardState:
    """A built ``BoardState`` as it is: it was checked against its FEN when built, and pydantic
    would otherwise check it again (all legal moves generated anew) in every ``Game`` validated
    from its parts."""
    if isinstance(value, BoardState):
        return value
    return handler(value)


BuiltBoardState = Annotated[BoardState, WrapValidator(_built_board_state)]


class _Handoff:
    """What a ``Game`` hands on to the next one outside its fields: whether it is ``sound``
    (validated, or a checked step from a sound game), and its live ``ChessGame``.

    A live game belongs to one record at a time: ``take`` removes it atomically (``dict.pop``),
    so of two threads moving from the same record one gets it and the other replays. Never part
    of what a game is: any two compare equal, and a copy or a pickle starts empty and not
    sound, since ``model_copy(update=...)`` may change fields the board would then contradict.
    """

    __slots__ = ("_slot", "sound")

    def __init__(self) -> None:
        self.sound = False
        self._slot: dict[str, ChessGame] = {}

    def take(self) -> ChessGame | None:
        """The live game, now the caller's alone, or None when there is none (or no more)."""
        return self._slot.pop("game", None)

    def give(self, game: ChessGame) -> None:
        """Make ``game`` the live game; it must be at this record's position, with its moves."""
        self._slot["game"] = game

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Handoff)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[_Handoff], tuple[()]]:
        return _Handoff, ()


class Game(FrozenDTO):
    """A game between two agents, from its start position to now.

    Frozen: ``with_move``, ``resign`` and ``timeout`` return the next game (validated), so the
    history only grows, and a finished game refuses them (``GameOverError``). Their ``at`` is
    the time of the change (now by default); an ``at`` earlier than ``last_updated`` counts as
    ``last_updated``, because a wall clock can step back and the history must stay in order.

    Their cost does not grow with the game: the next game takes over this one's live board
    (replayed only when this game has none: loaded from JSON, copied, or its board taken by an
    earlier call), and when this game is sound (validated, or built by these methods) only the
    new move, the position, the times and the ending are checked, not the history again.

    Example:
        >>> agent = dict(personality="balanced", model_name="m", system_prompt="Play well.")
        >>> game = Game.new(AgentConfig(agent_id="white", name="W", **agent),
        ...                 AgentConfig(agent_id="black", name="B", **agent))
        >>> for move in ("f3", "e7e5", "g4", "Qh4#"):
        ...     game = game.with_move(move)
        >>> game.status, game.result, game.termination, len(game.move_history)
        ('checkmate', 'black_wins', 'checkmate', 4)
        >>> game.with_move("a3")
        Traceback (most recent call last):
        ...
        chess_env.errors.GameOverError: game ... is over (checkmate, black_wins): no more moves
    """

    game_id: UUID4Str = Field(description="UUID4, unique among the games in memory")
    white: AgentConfig = Field(description="The agent playing white")
    black: AgentConfig = Field(description="The agent playing black")
    start_fen: Fen = Field(description="The position before the first move")
    max_plies: int | None = Field(
        None,
        ge=1,
        description="Plies (moves of either side) after which the game is a draw; None: no limit",
    )
    board_state: BuiltBoardState = Field(description="The position now")
    move_history: MoveHistory = Field((), description="Every move played, in order")
    current_turn: Color = Field(description="The side to move")
    status: GameStatus = Field("in_progress", description="Playing, or how the game ended")
    result: GameResult | None = Field(None, description="Set once the game is over")
    termination: Termination | None = Field(None, description="Why it ended, once over")
    started_at: AwareDatetime = Field(description="When the game was created")
    ended_at: AwareDatetime | None = Field(None, description="When it ended, once over")
    last_updated: AwareDatetime = Field(description="The latest change: creation, move or end")

    _handoff: _Handoff = PrivateAttr(default_factory=_Handoff)

    @classmethod
    def new(
        cls,
        white: AgentConfig,
        black: AgentConfig,
        fen: str | None = None,
        *,
        at: datetime | None = None,
        max_plies: int | None = None,
    ) -> Game:
        """A game from ``fen`` (the standard start when None) with a fresh UUID4.

        ``max_plies`` caps the game's length, counted in plies from ``fen``: the move that reaches
        it ends the game in a draw, termination "max_plies", unless that move ends it otherwise
        (checkmate wins). None: no limit. A position that is illegal or already over is an
        ``InvalidPositionError``.
        """
        options = None if fen is None else {"fen": fen}
        live = start_game(options, claim_draws=True, max_plies=None)
        board = live.board
        at = _now() if at is None else at
        game = cls(
            game_id=str(uuid.uuid4()),
            white=white,
            black=black,
            start_fen=board.fen(),
            max_plies=max_plies,
            board_state=BoardState.from_board(board),
            current_turn=_color(board.turn),
            started_at=at,
            last_updated=at,
        )
        game._handoff.give(live)
        return game

    @property
    def is_over(self) -> bool:
        return self.status != "in_progress"

    def with_move(
        self, move: str, thinking_time: float = 0.0, *, at: datetime | None = None
    ) -> Game:
        """The game after ``move`` (UCI or SAN, read by ``chess_env.core.move_parsing.parse_move``).

        An illegal or unreadable move is a ``MoveParseError`` (an ``IllegalActionError``) whose
        message names the move and says why, and whose ``reason`` is the parser's code; this
        game is then as it was, its live board included. The move that reaches ``max_plies``
        ends the game in a draw (termination "max_plies") unless the rules end it on that move.
        """
        self._check_playing()
        at = self._next_time(at)
        game = self._handoff.take() or self._replay()
        try:
            chosen = self._read_move(game, move)
            record = Move.from_board(game.board, chosen, thinking_time, at)
        except BaseException:
            self._handoff.give(game)  # read, never pushed: still at this game's position
            raise
        game.play(chosen)
        changes: dict[str, Any] = {
            "board_state": BoardState.from_board(game.board),
            "move_history": (*self.move_history, record),
            "current_turn": _color(game.board.turn),
            "last_updated": record.timestamp,
        }
        ending = self._ending_after(game, record.timestamp)
        if ending is None:
            return self._next(changes, game)
        return self._next(changes | ending)  # a finished game plays no more: its board goes

    def resign(
        self,
        color: Color,
        *,
        termination: ResignTermination = "resigned",
        at: datetime | None = None,
    ) -> Game:
        """``color`` gives up: the other side wins. ``termination`` says why: "resigned" (by
        choice) or "agent_error" (its agent failed to produce a legal move); the status is
        "resigned" either way."""
        self._check_playing()
        winner = _other(_checked_color(color))
        if termination not in ("resigned", "agent_error"):
            raise ValueError(
                f"termination must be 'resigned' or 'agent_error', got {termination!r}"
            )
        at = self._next_time(at)
        return self._next({**_ending(termination, f"{winner}_wins", at), "last_updated": at})

    def timeout(self, color: Color, *, at: datetime | None = None) -> Game:
        """``color`` ran out of time deciding its move: the other side wins.

        Only the side to move can: its clock is the one running.
        """
        self._check_playing()
        if _checked_color(color) != self.current_turn:
            raise ValueError(
                f"only the side to move can run out of time: it is {self.current_turn}'s turn "
                f"in game {self.game_id}, not {color}'s"
            )
        at = self._next_time(at)
        return self._next({**_ending("timeout", f"{_other(color)}_wins", at), "last_updated": at})

    def to_pgn(self) -> str:
        """The game in PGN with its players, start FEN (when not standard), result and id; tag
        values are sanitised (``chess_env.core.pgn``), so a player's name cannot forge a game."""
        pgn = chess.pgn.Game.from_board(self._replay().board)
        started = self.started_at.astimezone(timezone.utc)
        set_tags(
            pgn,
            Event="polyarena",
            Date=started.strftime("%Y.%m.%d"),
            Round="-",
            White=self.white.name,
            Black=self.black.name,
            Result=_PGN_RESULT[self.result],
            # PGN's own words: a resignation ends a game "normal"ly, a failed agent "abandon"s it.
            Termination=_PGN_TERMINATION.get(self.termination, "normal"),
            UTCTime=started.strftime("%H:%M:%S"),
            GameId=self.game_id,
        )
        return str(pgn)

    def __copy__(self) -> Self:
        """A shallow copy, without this game's handoff (pydantic's copy would share it):
        ``model_copy(update=...)`` changes fields unchecked, so the copy is not known sound."""
        copied = super().__copy__()
        copied._handoff = _Handoff()
        return copied

    def _check_playing(self) -> None:
        if self.is_over:
            raise GameOverError(
                f"game {self.game_id} is over ({self.status}, {self.result}): no more moves"
            )

    def _read_move(self, game: ChessGame, move: str) -> chess.Move:
        """``game.read_move(move)``, its error naming this game and the side to move."""
        try:
            return game.read_move(move)
        except MoveParseError as error:
            raise MoveParseError(
                error.reason,
                f"{self.current_turn} cannot play {move!r} in game {self.game_id}: {error}",
            ) from None

    def _ending_after(self, game: ChessGame, at: datetime) -> dict[str, Any] | None:
        """The ending fields when the move just played on ``game`` ends this game: by the rules,
        else by reaching ``max_plies``; None when the game goes on."""
        outcome, ending = game.outcome, game.ending
        if outcome is not None and ending is not None:  # an outcome always names its ending
            return _ending(ending, _RESULT_OF_WINNER[outcome.winner], at)
        if self.max_plies is not None and len(self.move_history) + 1 >= self.max_plies:
            return _ending("max_plies", "draw", at)
        return None

    def _next_time(self, at: datetime | None) -> datetime:
        at = _now() if at is None else at
        if at.tzinfo is None:
            raise ValueError(f"times must be timezone-aware, got {at.isoformat()}")
        return max(at, self.last_updated)

    def _next(self, changes: dict[str, Any], live: ChessGame | None = None) -> Game:
        """This game with ``changes``, checked, holding ``live`` (its board, if it goes on).

        From a sound game only what changed is checked (``_record_problems`` from the first new
        move on; the new parts were validated as they were built); any other game is validated
        in full, as ``model_validate`` would (``model_copy`` would skip the checks).
        """
        fields = {**dict(self), **changes}
        if self._handoff.sound:
            following = type(self).model_construct(**fields)
            problems = _record_problems(following, since=len(self.move_history))
            if problems:
                raise _validation_error(type(self), problems, fields)
            following._handoff.sound = True
        else:
            following = type(self).model_validate(fields)
        if live is not None:
            following._handoff.give(live)
        return following

    def _replay(self) -> ChessGame:
        """A ``ChessGame`` at the current position, with the whole move stack on its board.

        Only the plies since the last capture or pawn move go through ``ChessGame`` (no earlier
        position can recur, so its repetition counts stay exact); the others are plain pushes,
        which skip ``ChessGame``'s move generation after every ply, and the legality check
        (every recorded move was legal when it was added).
        """
        board = chess.Board(self.start_fen)
        moves = [move.uci_notation for move in self.move_history]
        split = len(moves) - min(len(moves), self.board_state.halfmove_clock)
        for uci in moves[:split]:
            board.push(chess.Move.from_uci(uci))
        game = ChessGame(board, claim_draws=True, max_plies=None)
        for uci in moves[split:]:
            game.play_uci(uci)
        return game

    @model_validator(mode="after")
    def _consistent(self) -> Game:
        problems = _record_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        self._handoff.sound = True
        return self


def _validation_error(
    model: type[Game], problems: list[str], fields: dict[str, Any]
) -> ValidationError:
    """The ``ValidationError`` that validating ``fields`` as ``model`` reports for ``problems``."""
    error = ValueError("; ".join(problems))
    return ValidationError.from_exception_data(
        model.__name__,
        [{"type": "value_error", "loc": (), "input": fields, "ctx": {"error": error}}],
    )


def _checked_color(color: str) -> Color:
    if color not in ("white", "black"):
        raise ValueError(f"color must be 'white' or 'black', got {color!r}")
    return color  # type: ignore[return-value]


def _ending(termination: str, result: str, at: datetime) -> dict[str, Any]:
    return {
        "status": _STATUS_OF.get(termination, "draw"),
        "result": result,
        "termination": termination,
        "ended_at": at,
    }


class GameSession(FrozenDTO):
    """The runtime record of one game: who watches it and whether it is live.

    Its websockets live in the server, not here: ``spectators`` counts them. ``is_active``
    turns False when the game ends (the session is kept until the game leaves memory).

    Example:
        >>> session = GameSession.new(str(uuid.uuid4()))
        >>> session.spectators, session.is_active, session.last_activity == session.created_at
        (0, True, True)
    """

    session_id: UUID4Str = Field(description="UUID4, unique among the sessions")
    game_id: UUID4Str = Field(description="The game watched")
    created_at: AwareDatetime = Field(description="When the session opened")
    last_activity: AwareDatetime = Field(description="The latest move, request or connection")
    spectators: int = Field(0, ge=0, description="Clients connected to it now")
    is_active: bool = Field(True, description="False once the game is over")

    @classmethod
    def new(cls, game_id: str, *, at: datetime | None = None) -> GameSession:
        at = _now() if at is None else at
        return cls(session_id=str(uuid.uuid4()), game_id=game_id, created_at=at, last_activity=at)

    @model_validator(mode="after")
    def _in_order(self) -> GameSession:
        if self.last_activity < self.created_at:
            raise ValueError(
                f"last_activity ({self.last_activity.isoformat()}) is before created_at "
                f"({self.created_at.isoformat()})"
            )
        return self


def _record_problems(game: Game, since: int = 0) -> list[str]:
    """What the game's fields say about each other, without replaying the moves.

    The moves before ``since`` (their players and times) are taken as checked already: a step
    from a sound game checks only what it added, so its cost does not grow with the history.
    """
    problems = []
    try:
        _uuid4(game.game_id)
    except ValueError as error:
        problems.append(f"game_id: {error}")
    if game.white.agent_id == game.black.agent_id:
        problems.append(f"white and black have the same agent_id {game.white.agent_id!r}")
    try:
        start, board = _ply_of(game.start_fen), chess.Board(game.board_state.fen)
    except ValueError as error:
        return [*problems, f"a FEN does not parse: {error}"]
    return (
        problems
        + _turn_problems(game, start, board, since)
        + _time_problems(game, since)
        + _status_problems(game, board)
    )


@functools.lru_cache(maxsize=512)
def _ply_of(fen: str) -> int:
    """The plies before ``fen``'s position (even: white to move), cached: a game's start
    position is read again at every step, and parsing it costs more than the rest of a check."""
    return chess.Board(fen).ply()


def _turn_problems(game: Game, start: int, board: chess.Board, since: int) -> list[str]:
    """Turns against the position; ``start`` is the ply of the start position."""
    problems = []
    if game.current_turn != _color(board.turn):
        problems.append(
            f"current_turn is {game.current_turn!r} "
            f"but board_state has {_color(board.turn)} to move"
        )
    plies = board.ply() - start
    if plies != len(game.move_history):
        problems.append(
            f"move_history holds {len(game.move_history)} moves, but board_state is {plies} plies "
            "after start_fen"
        )
    for index in range(since, len(game.move_history)):
        move = game.move_history[index]
        mover = _color((start + index) % 2 == 0)
        if move.player != mover:
            problems.append(
                f"move_history[{index}] ({move.uci_notation}) is played by {move.player}, "
                f"but it is {mover}'s turn"
            )
    return problems


def _time_problems(game: Game, since: int) -> list[str]:
    """Times out of order, from the last one before move ``since`` (started_at for 0) on."""
    history = game.move_history
    times = [("started_at", game.started_at)]
    if since > 0:
        times = [(f"move_history[{since - 1}].timestamp", history[since - 1].timestamp)]
    times += [
        (f"move_history[{i}].timestamp", history[i].timestamp) for i in range(since, len(history))
    ]
    if game.ended_at is not None:
        times.append(("ended_at", game.ended_at))
    problems = [
        f"{name} ({time.isoformat()}) is before {earlier_name} ({earlier.isoformat()})"
        for (earlier_name, earlier), (name, time) in pairwise(times)
        if time < earlier
    ]
    latest_name, latest = max(times, key=lambda pair: pair[1])
    if game.last_updated < latest:
        problems.append(
            f"last_updated ({game.last_updated.isoformat()}) is before {latest_name} "
            f"({latest.isoformat()})"
        )
    return problems


def _status_problems(game: Game, board: chess.Board) -> list[str]:
    """Status, result, termination and ended_at against each other, the position and the limit."""
    ending = {"result": game.result, "termination": game.termination, "ended_at": game.ended_at}
    if not game.is_over:
        problems = [
            f"{name} is set while the game is in progress"
            for name, value in ending.items()
            if value is not None
        ]
        if _position_ending(board):
            problems.append(f"status is in_progress but the position is over ({board.fen()})")
        return problems + _limit_problems(game)
    missing = [name for name, value in ending.items() if value is None]
    problems = [f"status is {game.status!r} but {', '.join(missing)} not set"] if missing else []
    termination = game.termination
    if termination is not None and _STATUS_OF.get(termination, "draw") != game.status:
        problems.append(f"status {game.status!r} does not fit termination {termination!r}")
    if termination in _POSITION_ENDINGS and not _POSITION_ENDINGS[termination](board):
        problems.append(f"termination is {termination!r} but the position is not ({board.fen()})")
    if termination in _OFF_BOARD_ENDINGS and _position_ending(board):
        problems.append(
            f"termination is {termination!r} but the position had ended the game already "
            f"({_position_ending(board)})"
        )
    expected = _expected_results(game.status, board)
    if game.result is not None and game.result not in expected:
        problems.append(
            f"result is {game.result!r} but a {game.status} here gives {' or '.join(expected)}"
        )
    return problems + _limit_problems(game)


def _limit_problems(game: Game) -> list[str]:
    """The number of moves against ``max_plies``: never more, and a game reaching it is over
    (a draw by the limit unless the last move ended it otherwise)."""
    plies, limit = len(game.move_history), game.max_plies
    if limit is None:
        if game.termination == "max_plies":
            return ["termination is 'max_plies' but the game has no max_plies"]
        return []
    if plies > limit:
        return [f"move_history holds {plies} moves, more than max_plies ({limit})"]
    if game.termination == "max_plies" and plies != limit:
        return [f"termination is 'max_plies' but move_history holds {plies} of {limit} plies"]
    if plies == limit and not game.is_over:
        return [f"status is in_progress but move_history holds max_plies ({limit}) moves"]
    return []


def _position_ending(board: chess.Board) -> str | None:
    """How the position alone ends the game, as ``ChessGame`` would say it, or None."""
    for name in ("checkmate", "insufficient_material", "stalemate", "fifty_moves"):
        if _POSITION_ENDINGS[name](board):
            return name
    return None


def _expected_results(status: str, board: chess.Board) -> list[str]:
    """The results a game ending with ``status`` can have; the side to move lost on the board
    after a checkmate and on the clock after a timeout."""
    if status in ("checkmate", "timeout"):
        return [_RESULT_OF_WINNER[not board.turn]]
    if status == "resigned":
        return ["white_wins", "black_wins"]
    return ["draw"]
