"""Start positions for ``reset(options=...)``: a FEN and/or an opening, with clear errors."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import chess

from chess_env.core.rules import ChessGame
from chess_env.errors import IllegalActionError, InvalidPositionError

__all__ = ["RESET_OPTIONS", "board_from_fen", "start_game"]

RESET_OPTIONS = ("fen", "moves")

_STATUS_MESSAGES = {
    chess.STATUS_NO_WHITE_KING: "white has no king",
    chess.STATUS_NO_BLACK_KING: "black has no king",
    chess.STATUS_TOO_MANY_KINGS: "a side has more than one king",
    chess.STATUS_TOO_MANY_WHITE_PAWNS: "white has more than 8 pawns",
    chess.STATUS_TOO_MANY_BLACK_PAWNS: "black has more than 8 pawns",
    chess.STATUS_PAWNS_ON_BACKRANK: "pawns on the first or eighth rank",
    chess.STATUS_TOO_MANY_WHITE_PIECES: "white has more than 16 pieces",
    chess.STATUS_TOO_MANY_BLACK_PIECES: "black has more than 16 pieces",
    chess.STATUS_BAD_CASTLING_RIGHTS: "castling rights without the king and rook in place",
    chess.STATUS_INVALID_EP_SQUARE: "an en-passant square no double pawn push could have made",
    chess.STATUS_OPPOSITE_CHECK: "the side not to move is in check",
    chess.STATUS_EMPTY: "the board is empty",
    chess.STATUS_TOO_MANY_CHECKERS: "the king is checked by more than two pieces",
    chess.STATUS_IMPOSSIBLE_CHECK: "a check no legal move could have given",
}


def board_from_fen(fen: str) -> chess.Board:
    """A board for ``fen``, or ``InvalidPositionError`` naming every problem with it.

    Example:
        >>> try:
        ...     board_from_fen("8/8/8/8/8/8/8/K7 w - - 0 1")
        ... except InvalidPositionError as error:
        ...     print(error)
        FEN '8/8/8/8/8/8/8/K7 w - - 0 1' is not a legal position: black has no king
    """
    if not isinstance(fen, str):
        raise InvalidPositionError(f"FEN must be a string, got {type(fen).__name__}")
    try:
        board = chess.Board(fen)
    except ValueError as error:
        raise InvalidPositionError(f"FEN {fen!r} does not parse: {error}") from None
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [text for flag, text in _STATUS_MESSAGES.items() if status & flag]
        raise InvalidPositionError(f"FEN {fen!r} is not a legal position: {'; '.join(problems)}")
    return board


def start_game(
    options: Mapping[str, object] | None, *, claim_draws: bool, max_plies: int | None
) -> ChessGame:
    """The game a ``reset(options=...)`` asks for: ``{"fen": ..., "moves": [uci, ...]}``.

    The position must leave a move to play: a finished position or an opening that ends the game
    is an ``InvalidPositionError``. Unknown option keys are ignored with a warning.
    """
    options = dict(options or {})
    unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
    if unknown:
        # A warning, not an error: generic tools (PettingZoo's api_test) pass options of their own.
        warnings.warn(
            f"ignoring unknown reset option(s) {unknown}; this env reads {list(RESET_OPTIONS)}",
            stacklevel=3,
        )
    fen = options.get("fen")
    board = chess.Board() if fen is None else board_from_fen(fen)  # type: ignore[arg-type]
    game = ChessGame(board, claim_draws=claim_draws, max_plies=max_plies)
    moves = options.get("moves") or []
    if isinstance(moves, str) or not isinstance(moves, (list, tuple)):
        raise InvalidPositionError(
            f"options['moves'] must be a list of UCI moves, got {type(moves).__name__}"
        )
    for index, uci in enumerate(moves):
        if game.outcome is not None:
            raise InvalidPositionError(
                f"options['moves'][{index}] = {uci!r}: the game already ended "
                f"({game.outcome.termination.name.lower()})"
            )
        try:
            game.play_uci(str(uci))
        except IllegalActionError as error:
            raise InvalidPositionError(f"options['moves'][{index}]: {error}") from None
    if game.outcome is not None:
        raise InvalidPositionError(
            f"the start position is already over ({game.outcome.termination.name.lower()}): "
            f"{game.board.fen()}"
        )
    return game
