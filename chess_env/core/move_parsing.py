"""Reading one move out of free text (an LLM's answer) and saying exactly why it cannot be played.

``parse_move(text, board)`` returns the legal move the text names, or raises ``MoveParseError``
with a ``reason`` code (one of ``REASONS``) and a message that names the square or move, worked
out from the board.

- Where: the first ``[bracketed]`` part that holds a move-like token, else the whole text. The
  first move-like token there decides, even when a later one would be legal: "from g1 to f3" reads
  the pawn move g1, so ask for the move in brackets.
- Notation: UCI (``e2e4``, ``e7e8q``, also ``e2-e4``) or SAN (``e4``, ``Nf3``, ``exd5``, ``e8=Q``,
  ``e8Q``, ``O-O``, ``0-0-0``). Check and annotation marks (``+ # ! ?``) are ignored. python-chess
  reads the notation (``Move.from_uci``, ``Board.parse_san``); this module only finds the token.
- Case: UCI and castling ignore case (``E2E4``, ``o-o``). SAN with a capital letter is read
  exactly as written (``Bxc4`` is a bishop move). SAN in one case is read lowercase first, then
  with its first letter as a piece (``nf3`` and ``NF3`` are Nf3). So a lowercase or all-caps ``b``
  is the b-file first: ``b4`` and ``bxc4`` are pawn moves whenever those are legal, and bishop
  moves only when no pawn reading is.

Example:
    >>> board = chess.Board()
    >>> parse_move("I open with [e2e4].", board).uci(), parse_move("**nf3**", board).uci()
    ('e2e4', 'g1f3')
    >>> try:
    ...     parse_move("g1g3", board)
    ... except MoveParseError as error:
    ...     print(error.reason, "-", error)
    cannot_move_there - the knight on g1 cannot move to g3
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import chess

from chess_env.errors import IllegalActionError

__all__ = ["REASONS", "MoveParseError", "parse_move"]

REASONS = (
    "unreadable",  # no move-like token in the text
    "no_piece",  # no piece (of the named kind) where the move starts
    "not_your_piece",  # the piece on the from-square is the opponent's
    "cannot_move_there",  # the piece cannot make that move, castling included
    "leaves_king_in_check",  # the move is pseudo-legal but exposes or keeps the king in check
    "missing_promotion",  # a pawn reaches the last rank without naming the new piece
    "ambiguous",  # SAN that matches several legal moves
    "game_over",  # the side to move has no legal move
)

_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9=+#!?-]*")
_ANNOTATIONS = "+#!?=-"
_UCI = re.compile(r"([a-h][1-8])[-x]?([a-h][1-8])=?([qrbn])?")
_CASTLING = {"O-O": True, "O-O-O": False}  # the SAN -> kingside?
_PIECE_LETTERS = "nbrqk"
_PREVIEW_LENGTH = 40


class MoveParseError(IllegalActionError):
    """Text that names no legal move; ``reason`` is one of ``REASONS``.

    Example:
        >>> try:
        ...     parse_move("Ke3", chess.Board())
        ... except MoveParseError as error:
        ...     print(error.reason, "|", error)
        cannot_move_there | the king on e1 cannot move to e3
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[type[MoveParseError], tuple[str, str]]:
        """Pickle with the reason too (subprocess vector envs send errors between processes)."""
        return type(self), (self.reason, str(self))


def parse_move(
    text: str, board: chess.Board, legal_moves: Sequence[chess.Move] | None = None
) -> chess.Move:
    """The legal move ``text`` names on ``board``, or ``MoveParseError`` saying why there is none.

    ``legal_moves`` are the board's legal moves when the caller has them (None: generated here).
    """
    legal = list(board.generate_legal_moves()) if legal_moves is None else legal_moves
    if not legal:
        ending = "checkmate" if board.is_check() else "stalemate"
        raise MoveParseError("game_over", f"the game is over ({ending}): no move can be played")
    readings = _first_token_readings(text)
    if not readings:
        raise MoveParseError(
            "unreadable",
            f"no move found in {_preview(text)}; write one move in UCI (e2e4) or SAN (Nf3)",
        )
    errors = []
    for reading in readings:
        try:
            return _read(reading, board, legal)
        except MoveParseError as error:
            errors.append(error)
    # A reading whose piece is missing is the least likely meant: "bxc4" with no b-pawn.
    raise next((error for error in errors if error.reason != "no_piece"), errors[0])


# -- finding the move in the text ---------------------------------------------------------------


def _first_token_readings(text: str) -> list[str]:
    """The readings of the first move-like token, looking inside brackets first."""
    for part in [*_BRACKETED.findall(text), text]:
        for token in _TOKEN.findall(part):
            readings = _readings(token.rstrip(_ANNOTATIONS))
            if readings:
                return readings
    return []


def _readings(token: str) -> list[str]:
    """The ways ``token`` can be read as a move, most likely first ([] when it is no move)."""
    castling = token.upper().replace("0", "O")
    if castling in _CASTLING:
        return [castling]
    lower = token.lower()
    if _UCI.fullmatch(lower):
        return [lower]
    if chess.SAN_REGEX.match(token) and not token.islower():
        return [token]  # SAN with a capital letter: the case is deliberate
    readings = [lower]
    if lower[0] in _PIECE_LETTERS:
        readings.append(lower[0].upper() + lower[1:])
    return [reading for reading in readings if chess.SAN_REGEX.match(reading)]


def _preview(text: str) -> str:
    """``text`` shortened and quoted in ASCII, safe to show in an ASCII observation."""
    if len(text) > _PREVIEW_LENGTH:
        text = text[: _PREVIEW_LENGTH - 3] + "..."
    return ascii(text)


# -- reading one token --------------------------------------------------------------------------


def _read(reading: str, board: chess.Board, legal: Sequence[chess.Move]) -> chess.Move:
    if reading in _CASTLING:
        try:
            return board.parse_san(reading)
        except chess.IllegalMoveError:
            raise _castling_error(board, _CASTLING[reading]) from None
    uci = _UCI.fullmatch(reading)
    if uci:
        # Not Move.from_uci, which raises for a move staying on its square ("a1a1"): that one
        # is explained like any other illegal move.
        start, goal, promotion = uci.groups()
        promoted = chess.PIECE_SYMBOLS.index(promotion) if promotion else None
        move = chess.Move(chess.parse_square(start), chess.parse_square(goal), promoted)
        if move in legal:
            return move
        raise _uci_error(move, board)
    try:
        return board.parse_san(reading)
    except chess.AmbiguousMoveError:
        raise _ambiguous_error(reading, board) from None
    except chess.IllegalMoveError:
        raise _san_error(reading, board) from None


def _uci_error(move: chess.Move, board: chess.Board) -> MoveParseError:
    start = chess.square_name(move.from_square)
    piece = board.piece_at(move.from_square)
    if piece is None:
        return MoveParseError("no_piece", f"no piece on {start}")
    if piece.color != board.turn:
        return MoveParseError(
            "not_your_piece",
            f"the {chess.piece_name(piece.piece_type)} on {start} is "
            f"{chess.COLOR_NAMES[piece.color]}'s, and you play {chess.COLOR_NAMES[board.turn]}",
        )
    if board.is_castling(move):
        return _castling_error(board, move.to_square > move.from_square)
    return _unplayable_error(
        move.uci(), board, piece.piece_type, [move.from_square], move.to_square, move.promotion
    )


def _san_error(san: str, board: chess.Board) -> MoveParseError:
    piece_type, squares, target, promotion, where = _san_pieces(san, board)
    if not squares:
        return MoveParseError("no_piece", f"you have no {chess.piece_name(piece_type)}{where}")
    return _unplayable_error(san, board, piece_type, squares, target, promotion)


def _ambiguous_error(san: str, board: chess.Board) -> MoveParseError:
    _, squares, target, promotion, _ = _san_pieces(san, board)
    moves = [chess.Move(square, target, promotion) for square in squares]
    candidates = [board.san(move) for move in moves if board.is_legal(move)]
    listed = ", ".join(candidates[:-1]) + " or " + candidates[-1]
    return MoveParseError("ambiguous", f"{san} is ambiguous: {listed}")


def _san_pieces(
    san: str, board: chess.Board
) -> tuple[chess.PieceType, list[chess.Square], chess.Square, chess.PieceType | None, str]:
    """What SAN names: piece type, the mover's pieces that fit the hints, target, promotion, and
    where those pieces were looked for (" on the e-file"), for messages."""
    match = chess.SAN_REGEX.match(san)
    assert match is not None  # _readings only lets matching SAN through
    letter, file, rank, target, promotion = match.groups()
    piece_type = chess.PIECE_SYMBOLS.index(letter.lower()) if letter else chess.PAWN
    if piece_type == chess.PAWN and not file:
        file = target[0]  # as in python-chess: a pawn without a file hint moves straight ahead
    squares = [
        square
        for square in board.pieces(piece_type, board.turn)
        if (not file or chess.square_name(square)[0] == file)
        and (not rank or chess.square_name(square)[1] == rank)
    ]
    if file and rank:
        where = f" on {file}{rank}"
    elif file or rank:
        where = f" on the {file}-file" if file else f" on rank {rank}"
    else:
        where = ""
    promoted = chess.PIECE_SYMBOLS.index(promotion[-1].lower()) if promotion else None
    return piece_type, squares, chess.parse_square(target), promoted, where


# -- explaining a move the pieces exist for -----------------------------------------------------


def _unplayable_error(
    written: str,
    board: chess.Board,
    piece_type: chess.PieceType,
    squares: list[chess.Square],
    target: chess.Square,
    promotion: chess.PieceType | None,
) -> MoveParseError:
    """Why none of the mover's ``squares`` can play ``written`` (a move that is not legal)."""
    last_rank = chess.square_rank(target) in (0, 7)
    if promotion and not (piece_type == chess.PAWN and last_rank):
        return MoveParseError(
            "cannot_move_there", f"{written}: only a pawn reaching the last rank can promote"
        )
    moves = [chess.Move(square, target, promotion) for square in squares]
    if piece_type == chess.PAWN and last_rank and not promotion:
        moves = [chess.Move(square, target, chess.QUEEN) for square in squares]
        promoting = next((move for move in moves if board.is_legal(move)), None)
        if promoting:
            return MoveParseError(
                "missing_promotion",
                f"missing promotion piece: {written} reaches the last rank; write "
                f"{promoting.uci()} or {board.san(promoting)} for a queen (r, b, n: rook, "
                "bishop, knight)",
            )
    pseudo_legal = next((move for move in moves if board.is_pseudo_legal(move)), None)
    if pseudo_legal:
        return MoveParseError(
            "leaves_king_in_check",
            f"{written} leaves your king in check" + _check_detail(board, pseudo_legal, piece_type),
        )
    name, goal = chess.piece_name(piece_type), chess.square_name(target)
    if len(squares) == 1:
        start = chess.square_name(squares[0])
        return MoveParseError("cannot_move_there", f"the {name} on {start} cannot move to {goal}")
    starts = ", ".join(chess.square_name(square) for square in squares)
    return MoveParseError(
        "cannot_move_there", f"none of your {name}s ({starts}) can move to {goal}"
    )


def _check_detail(board: chess.Board, move: chess.Move, piece_type: chess.PieceType) -> str:
    """Why a pseudo-legal ``move`` leaves the king in check, when there is a short answer."""
    if piece_type == chess.KING:
        return f" (the king would be attacked on {chess.square_name(move.to_square)})"
    if board.is_pinned(board.turn, move.from_square):
        name, start = chess.piece_name(piece_type), chess.square_name(move.from_square)
        return f" (the {name} on {start} is pinned)"
    if board.is_check():
        return " (you are in check, and this move does not get you out)"
    return ""


def _castling_error(board: chess.Board, kingside: bool) -> MoveParseError:
    side = "kingside" if kingside else "queenside"
    if kingside:
        has_rights = board.has_kingside_castling_rights(board.turn)
    else:
        has_rights = board.has_queenside_castling_rights(board.turn)
    back_rank = 0 if board.turn == chess.WHITE else 7
    rook = chess.square(7 if kingside else 0, back_rank)
    king = chess.square(4, back_rank)
    if not has_rights:
        why = "the right is gone (the king or that rook has moved)"
    elif board.is_check():
        why = "your king is in check"
    elif chess.between(king, rook) & board.occupied:
        why = "pieces stand between your king and rook"
    else:
        why = "your king would pass through or land on an attacked square"
    return MoveParseError("cannot_move_there", f"you cannot castle {side}: {why}")
