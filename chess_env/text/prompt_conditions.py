"""What a text player is shown each move: the prompt conditions of the LLM-chess benchmarks.

- ``PromptCondition``: which board view (an ASCII or unicode diagram with the FEN, the FEN
  alone, or nothing), whether the legal moves are listed, and which history (none, the last
  move, the whole game as PGN movetext); ``label`` names it in reports and player specs.
- ``PRESETS``: the conditions of the benchmarks a rating is anchored to, by name.
- ``condition_from_options``: a condition from ``prompt=PRESET`` and ``board``, ``legal`` and
  ``history`` overriding it (the options of ``openai:MODEL?...`` and of ``ChessText-v0``).
- ``history_lines`` and ``board_from_history``: the PGN history as a prompt shows it, and the
  position read back from it (a player that is shown no board needs nothing else).

The benchmarks differ in what the model sees, and a model's rating depends on it, so every text
player carries its condition and every game records it. The presets, from each benchmark's code:

- ``default``: this project's ``ChessText-v0`` prompt: a diagram from the player's side with the
  FEN, the last move and the legal moves (UCI).
- ``game_arena``: Kaggle Game Arena (google-deepmind/game_arena, ``harness/prompts.py``
  ``PROMPT_TEMPLATE_NO_LEGAL_ACTIONS``, built by ``agent.default_chess_prompt_builder``): the
  FEN and "the moves played so far" as SAN movetext, no diagram and no legal moves.
- ``textarena``: TextArena's ``Chess-v0`` (LeonGuertler/TextArena, ``envs/Chess/env.py`` with
  ``is_open=True, show_valid=True``): a diagram with coordinates and the valid moves in UCI;
  its ``LLMObservationWrapper`` hands the model the whole log, every move played included.
  TextArena's diagram is always from white's side and has no FEN line; ours has both.
- ``textarena_blind``: TextArena's ``Chess-v0-blind`` (``is_open=False, show_valid=False``):
  only the moves played. It is also the PGN-continuation condition of carlini/chess-llm
  (``chessllm.py``, ``get_query_pgn``: PGN movetext for the model to continue, nothing else).
- ``llm_chess``: maxim-saplin/llm_chess: each move a fresh dialog whose tools return a unicode
  diagram (``get_current_board``) and the legal moves in UCI (``get_legal_moves``), and no
  history. Here both are shown at once, where llm_chess gives them when the model asks.

Example:
    >>> condition = condition_from_options({"prompt": "game_arena", "legal": "true"})
    >>> condition.label
    'board=fen&legal=true&history=pgn'
    >>> history_lines(chess.Board("8/8/8/8/8/8/8/K6k w - - 0 1"))[0]
    'The moves below start from this position (FEN): 8/8/8/8/8/8/8/K6k w - - 0 1'
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeGuard, get_args

import chess

__all__ = [
    "BOARD_VIEWS",
    "HISTORY_MAX_CHARS",
    "HISTORY_VIEWS",
    "PRESETS",
    "PROMPT_OPTIONS",
    "BoardView",
    "HistoryView",
    "PromptCondition",
    "board_from_history",
    "condition_from_options",
    "history_lines",
]

BoardView = Literal["ascii", "unicode", "fen", "none"]
HistoryView = Literal["none", "last", "pgn"]
BOARD_VIEWS: tuple[str, ...] = get_args(BoardView)
HISTORY_VIEWS: tuple[str, ...] = get_args(HistoryView)
PROMPT_OPTIONS = ("prompt", "board", "legal", "history")

# A 512-ply game's movetext has about 3,300 characters (at most about 5,400); a longer game shows
# its last moves that fit, from the position where they start.
HISTORY_MAX_CHARS = 8192
_MOVES_LABEL = "Moves so far (PGN): "
_START_LABEL = "start from this position (FEN): "
_NO_MOVES = "none."
_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no")
_MOVE_NUMBER = re.compile(r"^\d+\.(?:\.\.)?")
_WHITE_NUMBER = re.compile(r"\d+\.")


def _not_one_of(name: str, value: object, allowed: tuple[str, ...]) -> ValueError:
    return ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def _check(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise _not_one_of(name, value, allowed)


def _is_board_view(value: str) -> TypeGuard[BoardView]:
    return value in BOARD_VIEWS


def _is_history_view(value: str) -> TypeGuard[HistoryView]:
    return value in HISTORY_VIEWS


def _flag(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered not in (*_TRUE, *_FALSE):
        raise ValueError(f"{name} must be true or false, got {text!r}")
    return lowered in _TRUE


@dataclass(frozen=True)
class PromptCondition:
    """What a text player is shown: ``board``, ``legal`` (the legal-move list) and ``history``.

    ``board``: "ascii" or "unicode" (a diagram from the player's side, its legend and the FEN),
    "fen" (the FEN line alone) or "none". ``history``: "none", "last" (the last move, UCI and
    SAN) or "pgn" (the game so far as PGN movetext, from the position the game started in).
    A player is stateless from move to move, so ``board="none"`` needs ``history="pgn"``: with
    less it could not know the position.

    Example:
        >>> PromptCondition(board="none", history="pgn", legal=False).label
        'board=none&legal=false&history=pgn'
        >>> PromptCondition(board="none")
        Traceback (most recent call last):
        ...
        ValueError: board=none needs history=pgn (got history='last'): ...
    """

    board: BoardView = "ascii"
    legal: bool = True
    history: HistoryView = "last"

    def __post_init__(self) -> None:
        _check("board", self.board, BOARD_VIEWS)
        _check("history", self.history, HISTORY_VIEWS)
        if not isinstance(self.legal, bool):
            raise ValueError(f"legal must be true or false, got {self.legal!r}")
        if self.board == "none" and self.history != "pgn":
            raise ValueError(
                f"board=none needs history=pgn (got history={self.history!r}): a player sees "
                "each move afresh, so without a board only the moves from the start tell it "
                "the position"
            )

    @property
    def label(self) -> str:
        """The condition as spec options, the same for equal conditions: reports group by it."""
        legal = "true" if self.legal else "false"
        return f"board={self.board}&legal={legal}&history={self.history}"


PRESETS: dict[str, PromptCondition] = {
    "default": PromptCondition(),
    "game_arena": PromptCondition(board="fen", legal=False, history="pgn"),
    "textarena": PromptCondition(board="ascii", legal=True, history="pgn"),
    "textarena_blind": PromptCondition(board="none", legal=False, history="pgn"),
    "llm_chess": PromptCondition(board="unicode", legal=True, history="none"),
}


def condition_from_options(options: Mapping[str, str]) -> PromptCondition:
    """``PRESETS[options["prompt"]]`` (default "default") with ``board``, ``legal`` and
    ``history`` replaced where given; other keys are ignored (the caller checks them).

    A bad value is a ``ValueError`` naming the key and its allowed values.

    Example:
        >>> condition_from_options({"prompt": "textarena", "board": "unicode"}).label
        'board=unicode&legal=true&history=pgn'
        >>> condition_from_options({"history": "all"})
        Traceback (most recent call last):
        ...
        ValueError: history must be one of ['none', 'last', 'pgn'], got 'all'
    """
    preset = options.get("prompt", "default")
    _check("prompt", preset, tuple(PRESETS))
    base = PRESETS[preset]
    board = options.get("board", base.board)
    if not _is_board_view(board):
        raise _not_one_of("board", board, BOARD_VIEWS)
    history = options.get("history", base.history)
    if not _is_history_view(history):
        raise _not_one_of("history", history, HISTORY_VIEWS)
    legal = _flag("legal", options["legal"]) if "legal" in options else base.legal
    return dataclasses.replace(base, board=board, legal=legal, history=history)


def history_lines(board: chess.Board, max_chars: int = HISTORY_MAX_CHARS) -> list[str]:
    """The game on ``board`` as PGN movetext (SAN), from the position it started in.

    From the standard start that is one line; from any other position a line with its FEN comes
    first (the moves alone would not tell the position). A movetext longer than ``max_chars``
    keeps its last moves that fit, from the FEN where they start.

    Example:
        >>> board = chess.Board()
        >>> for san in ("e4", "e5", "Nf3"):
        ...     _ = board.push_san(san)
        >>> history_lines(board)
        ['Moves so far (PGN): 1. e4 e5 2. Nf3']
    """
    start = board.root()
    moves = board.move_stack
    text = start.variation_san(moves)
    skipped = 0
    if len(text) > max_chars:
        skipped, text = _last_moves(text, max_chars)
        for move in moves[:skipped]:
            start.push(move)
    lines = [_MOVES_LABEL + (text or _NO_MOVES)]
    if skipped:
        note = f"The first {skipped} plies are left out; the moves below {_START_LABEL}"
        return [note + start.fen(), *lines]
    if start.fen() != chess.STARTING_FEN:
        return [f"The moves below {_START_LABEL}{start.fen()}", *lines]
    return lines


def board_from_history(text: str) -> chess.Board | None:
    """The position a prompt's PGN history leads to, or None when the prompt has no history.

    Example:
        >>> board_from_history("Moves so far (PGN): 1. e4 e5 2. Nf3").fen()
        'rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2'
    """
    lines = text.splitlines()
    movetext = next((line for line in lines if line.startswith(_MOVES_LABEL)), None)
    if movetext is None:
        return None
    start = next((line for line in lines if _START_LABEL in line), None)
    board = chess.Board(start.partition(_START_LABEL)[2]) if start else chess.Board()
    for token in movetext.removeprefix(_MOVES_LABEL).split():
        san = _MOVE_NUMBER.sub("", token, count=1)  # "1." and "40..." alone, or "40...Ke7"
        if san and token != _NO_MOVES:
            board.push_san(san)
    return board


def _last_moves(text: str, max_chars: int) -> tuple[int, str]:
    """The movetext's last full moves within ``max_chars`` (from a white move), and how many
    plies come before them."""
    tokens = text.split(" ")
    first, length = len(tokens), -1
    while first > 0 and length + len(tokens[first - 1]) + 1 <= max_chars:
        first -= 1
        length += len(tokens[first]) + 1
    while first < len(tokens) and not _WHITE_NUMBER.fullmatch(tokens[first]):
        first += 1  # from a white move number, the moves read on their own
    skipped = sum(not _MOVE_NUMBER.fullmatch(token) for token in tokens[:first])
    return skipped, " ".join(tokens[first:])
