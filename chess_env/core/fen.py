"""``fen_of(board)``: python-chess's ``Board.fen()``, read off the bitboards for less.

Why: every env step reports the FEN, and ``Board.fen()`` asks ``piece_at`` for each of the 64
squares, which costs more than a legal-move generation. Here the piece placement comes from four
bitboards (the bits of each square's piece code) through integer and string operations written in
C, and the rest of the record (castling, a legally capturable en-passant square, the clocks) is
python-chess's own. Standard chess only (no promoted-piece marks, no Shredder castling), as our
envs play.
"""

from __future__ import annotations

import chess

__all__ = ["board_fen_of", "fen_of"]

# A square's piece as one hex digit: bits 0-2 the piece type (P=1 ... K=6), bit 3 set for black;
# 0 is an empty square, written "1" until the runs of empty squares are counted.
_LETTERS = str.maketrans("01234569abcde", "1PNBRQKpnbrqk")
# Longest first, so each run of empty squares (at most 8, never across a "/") is replaced whole.
_RUNS = [("1" * length, str(length)) for length in range(8, 1, -1)]


def _nibbles(bitboard: int) -> int:
    """``bitboard`` with bit i moved to bit 4 * i: its binary digits read as hex digits."""
    return int(format(bitboard, "064b"), 16)


def board_fen_of(board: chess.BaseBoard) -> str:
    """The FEN's piece placement, equal to ``board.board_fen()``.

    Example:
        >>> board_fen_of(chess.Board("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2"))
        '4k3/8/8/3pP3/8/8/8/4K3'
    """
    bishops, queens, kings = board.bishops, board.queens, board.kings
    codes = (
        _nibbles(board.pawns | bishops | queens)  # types 1, 3, 5
        | _nibbles(board.knights | bishops | kings) << 1  # types 2, 3, 6
        | _nibbles(board.rooks | queens | kings) << 2  # types 4, 5, 6
        | _nibbles(board.occupied_co[chess.BLACK]) << 3
    )
    # Hex digit i from the right is square i: reversed, the string runs a1, b1, ..., h8.
    cells = format(codes, "064x")[::-1].translate(_LETTERS)
    placement = "/".join(
        (cells[56:], cells[48:56], cells[40:48], cells[32:40],
         cells[24:32], cells[16:24], cells[8:16], cells[:8])
    )  # fmt: skip
    for run, count in _RUNS:
        placement = placement.replace(run, count)
    return placement


def fen_of(board: chess.Board) -> str:
    """The position's FEN, equal to ``board.fen()`` in standard chess.

    Example:
        >>> board = chess.Board()
        >>> _ = board.push_uci("e2e4")
        >>> fen_of(board)
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1'
    """
    en_passant = board.ep_square if board.has_legal_en_passant() else None
    return " ".join(
        (
            board_fen_of(board),
            "w" if board.turn == chess.WHITE else "b",
            board.castling_xfen() if board.castling_rights else "-",  # none left: skip its scan
            chess.SQUARE_NAMES[en_passant] if en_passant is not None else "-",
            str(board.halfmove_clock),
            str(board.fullmove_number),
        )
    )
