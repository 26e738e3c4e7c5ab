"""Board tensors and the AlphaZero action encoding.

- ``board_to_tensor``: the (8, 8, 12) uint8 piece planes, built from bitboards.
- ``ACTION_SIZE`` (4672 = 64 from-squares x 73 move types), ``encode_move``, ``decode_action``,
  ``legal_action_mask``: the same action indices as PettingZoo's ``chess_v6``.

Action index ``(file * 8 + rank) * 73 + plane`` where file/rank are those of the from-square seen
by the side to move (black's squares are mirrored vertically). Planes 0-55 are queen-like moves
(``distance - 1) * 8 + direction``, planes 56-63 knight jumps, planes 64-72 underpromotions
(``3 * (dx + 1) + {knight, bishop, rook}``). Queen promotions use the queen-like planes.

Every table is built once at import, so encoding a move is a list look-up on an integer key.
"""

from __future__ import annotations

import struct
from typing import Literal

import chess
import numpy as np

from chess_env.errors import IllegalActionError

__all__ = [
    "ACTION_SIZE",
    "KEY_SPACE",
    "Perspective",
    "board_to_tensor",
    "decode_action",
    "encode_move",
    "legal_action_mask",
    "legal_actions",
    "move_key",
]

ACTION_SIZE = 4672
N_PLANES = 73
Perspective = Literal["side_to_move", "white", "black"]

_QUEEN_DIRECTIONS = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if (dx, dy) != (0, 0)]
_KNIGHT_JUMPS = [(dx, dy) for dx in range(-2, 3) for dy in range(-2, 3) if abs(dx) + abs(dy) == 3]
_UNDERPROMOTIONS = (chess.KNIGHT, chess.BISHOP, chess.ROOK)
KEY_SPACE = 64 * 64 * 6  # from | to << 6 | promotion << 12 (promotion 0 or N..Q)


def move_key(move: chess.Move) -> int:
    """The integer that identifies a move (from, to, promotion) in the look-up tables."""
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def _plane_target(file: int, rank: int, plane: int) -> tuple[int, int, int | None] | None:
    """(to_file, to_rank, underpromotion) for a plane seen from white's side, or None off-board."""
    if plane < 56:
        dx, dy = _QUEEN_DIRECTIONS[plane % 8]
        distance = plane // 8 + 1
        dx, dy, promotion = dx * distance, dy * distance, None
    elif plane < 64:
        (dx, dy), promotion = _KNIGHT_JUMPS[plane - 56], None
    else:
        dx, dy, promotion = (plane - 64) // 3 - 1, 1, _UNDERPROMOTIONS[(plane - 64) % 3]
        if rank != 6:
            return None
    to_file, to_rank = file + dx, rank + dy
    if not (0 <= to_file < 8 and 0 <= to_rank < 8):
        return None
    return to_file, to_rank, promotion


def _build_tables() -> tuple[list[list[int]], list[list[tuple[int, int, int | None] | None]]]:
    key_to_action: list[list[int]] = [[-1] * KEY_SPACE, [-1] * KEY_SPACE]
    action_to_move: list[list[tuple[int, int, int | None] | None]] = [
        [None] * ACTION_SIZE,
        [None] * ACTION_SIZE,
    ]
    for file in range(8):
        for rank in range(8):
            for plane in range(N_PLANES):
                target = _plane_target(file, rank, plane)
                if target is None:
                    continue
                to_file, to_rank, promotion = target
                action = (file * 8 + rank) * N_PLANES + plane
                from_square, to_square = chess.square(file, rank), chess.square(to_file, to_rank)
                # A one-step forward or diagonal move from the 7th rank is a queen promotion
                # when a pawn makes it, so the queen-like plane also answers for that key.
                queen_promotion = plane < 8 and rank == 6 and to_rank == 7
                for color, mirror in ((chess.WHITE, 0), (chess.BLACK, 56)):
                    src, dst = from_square ^ mirror, to_square ^ mirror
                    action_to_move[color][action] = (src, dst, promotion)
                    key_to_action[color][src | dst << 6 | (promotion or 0) << 12] = action
                    if queen_promotion:
                        key_to_action[color][src | dst << 6 | chess.QUEEN << 12] = action
    return key_to_action, action_to_move


KEY_TO_ACTION, ACTION_TO_MOVE = _build_tables()
UCI_OF_KEY: list[str] = [
    chess.SQUARE_NAMES[key & 63]
    + chess.SQUARE_NAMES[key >> 6 & 63]
    + (chess.piece_symbol(key >> 12) if key >> 12 else "")
    for key in range(KEY_SPACE)
]


def board_to_tensor(board: chess.Board, perspective: Perspective = "side_to_move") -> np.ndarray:
    """The (8, 8, 12) uint8 piece planes of ``board``.

    Row 0 is rank 8 and column is the file, seen from white; channels 0-5 hold P, N, B, R, Q, K of
    "us" (the side to move, or the named colour) and 6-11 those of the other side. From black's
    point of view the board is flipped vertically so that "us" always plays up the board.

    Example:
        >>> t = board_to_tensor(chess.Board())
        >>> t.shape, t.dtype, int(t[6, 4, 0]), int(t.sum())
        ((8, 8, 12), dtype('uint8'), 1, 32)
    """
    if perspective == "side_to_move":
        us = board.turn
    elif perspective in ("white", "black"):
        us = perspective == "white"
    else:
        raise ValueError(
            f"perspective must be 'side_to_move', 'white' or 'black', got {perspective!r}"
        )
    ours, theirs = board.occupied_co[us], board.occupied_co[not us]
    pawns, knights, bishops = board.pawns, board.knights, board.bishops
    rooks, queens, kings = board.rooks, board.queens, board.kings
    # Big-endian bytes put rank 8 first (row 0); little-endian puts rank 1 first: black's flip.
    packed = struct.pack(
        ">12Q" if us == chess.WHITE else "<12Q",
        pawns & ours, knights & ours, bishops & ours, rooks & ours, queens & ours, kings & ours,
        pawns & theirs, knights & theirs, bishops & theirs, rooks & theirs, queens & theirs,
        kings & theirs,
    )  # fmt: skip
    planes = np.unpackbits(np.frombuffer(packed, dtype=np.uint8), bitorder="little")
    return np.ascontiguousarray(planes.reshape(12, 8, 8).transpose(1, 2, 0))


def encode_move(move: chess.Move, turn: chess.Color) -> int:
    """The action index of ``move`` played by ``turn`` (``chess.WHITE`` or ``chess.BLACK``).

    Example:
        >>> encode_move(chess.Move.from_uci("e2e4"), chess.WHITE)
        2421
        >>> encode_move(chess.Move.from_uci("e7e5"), chess.BLACK)
        2421
    """
    action = action_of_key(move_key(move), turn)
    if action < 0:
        raise ValueError(f"move {move.uci()} has no action index (not a chess move shape)")
    return action


def action_of_key(key: int, turn: chess.Color) -> int:
    """The action index for a ``move_key``, or -1 when no action has that shape."""
    return KEY_TO_ACTION[turn][key] if key < KEY_SPACE else -1


def legal_actions(board: chess.Board) -> dict[int, chess.Move]:
    """Action index -> legal move, from one legal-move generation."""
    table = KEY_TO_ACTION[board.turn]
    return {
        table[m.from_square | m.to_square << 6 | (m.promotion or 0) << 12]: m
        for m in board.generate_legal_moves()
    }


def legal_action_mask(board: chess.Board) -> np.ndarray:
    """The (4672,) bool mask of legal actions for the side to move.

    Example:
        >>> int(legal_action_mask(chess.Board()).sum())
        20
    """
    mask = np.zeros(ACTION_SIZE, dtype=bool)
    mask[list(legal_actions(board))] = True
    return mask


def check_action_range(action: object) -> int:
    """``action`` as a Python int in [0, 4672), or ``IllegalActionError``."""
    if isinstance(action, np.ndarray) and action.size == 1:
        action = action.item()
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise IllegalActionError(
            f"action {action!r} is not an integer index (got {type(action).__name__})"
        )
    if not 0 <= action < ACTION_SIZE:
        raise IllegalActionError(f"action {action} is out of range [0, {ACTION_SIZE})")
    return int(action)


def action_to_move(action: int, board: chess.Board) -> chess.Move | None:
    """The move an in-range action denotes for the side to move (legal or not); None off-board."""
    entry = ACTION_TO_MOVE[board.turn][action]
    if entry is None:
        return None
    from_square, to_square, promotion = entry
    last_rank = 7 if board.turn == chess.WHITE else 0
    if (
        promotion is None
        and chess.square_rank(to_square) == last_rank
        and board.pawns & board.occupied_co[board.turn] & chess.BB_SQUARES[from_square]
    ):
        promotion = chess.QUEEN
    return chess.Move(from_square, to_square, promotion)


def explain_illegal(action: int, move: chess.Move | None, board: chess.Board) -> str:
    """Why ``action`` is not legal in ``board``: the message of ``IllegalActionError``."""
    side = "white" if board.turn == chess.WHITE else "black"
    if move is None:
        file, rank = divmod(action // N_PLANES, 8)
        square = chess.square_name(chess.square(file, rank if board.turn else 7 - rank))
        return f"action {action} leaves the board from {square} ({side} to move)"
    name = chess.square_name(move.from_square)
    piece = board.piece_at(move.from_square)
    if piece is None:
        why = f"no piece on {name}"
    elif piece.color != board.turn:
        why = f"the {chess.piece_name(piece.piece_type)} on {name} is not {side}'s"
    else:
        why = f"not legal here for the {chess.piece_name(piece.piece_type)} on {name}"
    return f"action {action} ({move.uci()}) is illegal: {why} ({side} to move, fen {board.fen()})"


def decode_action(action: int, board: chess.Board) -> chess.Move:
    """The legal move that ``action`` denotes in ``board``, or ``IllegalActionError``.

    Example:
        >>> decode_action(2421, chess.Board())
        Move.from_uci('e2e4')
    """
    index = check_action_range(action)
    move = action_to_move(index, board)
    if move is None or not board.is_legal(move):
        raise IllegalActionError(explain_illegal(index, move, board))
    return move
