"""Encoders for many boards at once: a few numpy calls per batch instead of some per board.

- ``boards_to_tensor``, ``boards_to_fens``: the (N, 8, 8, 12) piece planes and the FENs of N boards,
  equal to ``chess_env.core.encoding.board_to_tensor`` and ``chess_env.core.fen.fen_of``.
- ``BoardBatch``: what ``ChessVectorEnv`` fills with its live games each step: the planes, the
  FENs and the action mask rows of the side to move.

How: each board gives five integers, the bits of its squares' piece codes (as in
``chess_env.core.fen``: bits 0-2 the piece type P=1 ... K=6, and black, worth 6) and its occupied
squares. One ``unpackbits`` and one ``einsum`` turn those of all boards into (N, 8, 8) square
codes, rank 8 first, written into a buffer that already holds the rank separators; one ``take``
from a one-hot table turns the codes into the planes. For the FEN, a table indexed by a rank's
occupancy byte adds to each empty square the code of the run of empty squares it starts (or
nothing, inside a run), and one ``bytes.translate`` turns the buffer into the FEN text of all
boards, leaving out the squares inside runs. The legal actions of all boards fill one mask.

Few numpy calls, not only cheap ones: in a vector env each batch runs after N games' move
generation, which leaves numpy's code out of the processor's caches, so every call costs several
microseconds whatever its size.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence

import chess
import numpy as np

from chess_env.core.encoding import ACTION_SIZE

__all__ = ["BoardBatch", "boards_to_fens", "boards_to_tensor", "fen_fields"]

_BOARD_SHAPE = (8, 8, 12)
_VALUES = 5  # integers per board, in ``_board_values`` order
_WEIGHTS = np.array([1, 2, 4, 6], dtype=np.uint8)  # piece-type bits 0-2, then black


def _onehot(channel_of_code: Sequence[int]) -> np.ndarray:
    """(13, 12) uint8: row ``code`` is the planes' channel vector of a square holding ``code``."""
    table = np.zeros((13, 12), dtype=np.uint8)
    table[np.arange(1, 13), channel_of_code] = 1
    return table


# A square's code is 1-6 for white's P-K and 7-12 for black's p-k. Planes seen from white put
# white's pieces in channels 0-5; seen from black, black's.
_WHITE_PLANES = _onehot(range(12))
_BLACK_PLANES = _onehot([*range(6, 12), *range(6)])
# The FEN text of a buffer byte: 1-12 a piece's letter, 13 and 14 the separators after a rank and
# after a board's last rank, 16 + k the first square of a run of k empty squares; 0, a square
# inside such a run, is left out.
_SLASH, _SPACE, _RUN = 13, 14, 16
_FEN_TEXT = bytes.maketrans(
    bytes([*range(1, 15), *range(_RUN + 1, _RUN + 9)]), b"PNBRQKpnbrqk/ 12345678"
)


def _empty_runs() -> np.ndarray:
    """(256, 8) uint8: for a rank whose occupied files are the bits of the row index, 16 + the
    length of the run of empty squares that starts on each file, and 0 elsewhere."""
    table = np.zeros((256, 8), dtype=np.uint8)
    for occupied in range(256):
        run = 0
        for file in reversed(range(8)):  # a run is counted from its last square back
            run = 0 if occupied >> file & 1 else run + 1
            if run and (file == 0 or occupied >> (file - 1) & 1):
                table[occupied, file] = _RUN + run
    return table


_RUNS = _empty_runs()

_CASTLING: dict[int, str] = {}  # castling rights on the corner squares -> python-chess's X-FEN
_CORNERS = chess.BB_A1 | chess.BB_H1 | chess.BB_A8 | chess.BB_H8


def _board_values(board: chess.BaseBoard) -> tuple[int, int, int, int, int]:
    """The bitboards ``_decode`` reads: piece-type bits 0, 1 and 2, black's pieces, all pieces."""
    bishops, queens, kings = board.bishops, board.queens, board.kings
    return (
        board.pawns | bishops | queens,  # types 1, 3, 5
        board.knights | bishops | kings,  # types 2, 3, 6
        board.rooks | queens | kings,  # types 4, 5, 6
        board.occupied_co[chess.BLACK],
        board.occupied,
    )


@functools.lru_cache(maxsize=8)
def _separators(count: int) -> np.ndarray:
    """(count, 8, 9) uint8 whose last column holds the separators after each rank."""
    text = np.zeros((count, 8, 9), dtype=np.uint8)
    text[:, :, 8] = _SLASH
    text[:, 7, 8] = _SPACE  # one board's placement ends where the next one's starts
    return text


def _decode(values: Sequence[int], whites: Sequence[bool]) -> tuple[np.ndarray, list[str]]:
    """The (k, 8, 8, 12) planes and the k FEN piece placements of k boards, from ``_VALUES``
    integers per board (``_board_values``), row i's planes seen from white when ``whites[i]``."""
    count = len(whites)
    # Big-endian: byte 0 of a bitboard is rank 8, as a FEN and white's planes have it; in each
    # byte bit 0 is the a-file, hence the little bit order.
    raw = np.frombuffer(struct.pack(f">{len(values)}Q", *values), dtype=np.uint8)
    raw = raw.reshape(count, _VALUES, 8)
    bits = np.unpackbits(raw[:, :4], axis=2, bitorder="little").reshape(count, 4, 8, 8)
    text = _separators(count).copy()
    codes = text[:, :, :8]  # (board, 8 - rank, file)
    np.einsum("c,kcrf->krf", _WEIGHTS, bits, out=codes)
    planes = _planes(codes, whites)
    codes += _RUNS.take(raw[:, 4], axis=0)  # empty squares: 0 becomes a run's code, or stays
    placements = text.tobytes().translate(_FEN_TEXT, b"\0")
    return planes, placements[:-1].decode("ascii").split(" ")


def _planes(codes: np.ndarray, whites: Sequence[bool]) -> np.ndarray:
    """The planes of square codes (rank 8 first); black's side sees the ranks in reverse."""
    if all(whites):
        return _WHITE_PLANES.take(codes, axis=0)
    blacks = [row for row, white in enumerate(whites) if not white]
    if len(blacks) == len(whites):
        return _BLACK_PLANES.take(codes[:, ::-1], axis=0)
    planes = _WHITE_PLANES.take(codes, axis=0)
    planes[blacks] = _BLACK_PLANES.take(codes[blacks, ::-1], axis=0)
    return planes


def fen_fields(board: chess.Board) -> str:
    """The FEN after the piece placement, as ``fen_of`` writes it: " w KQkq - 0 1"."""
    rights = board.clean_castling_rights()
    castling = _CASTLING.get(rights)
    if castling is None:
        castling = board.castling_xfen()
        if not rights & ~_CORNERS:  # rooks in the corners: "KQkq" letters, whatever else stands
            _CASTLING[rights] = castling
    en_passant = board.ep_square if board.has_legal_en_passant() else None
    return (
        f" {'w' if board.turn else 'b'} {castling} "
        f"{'-' if en_passant is None else chess.SQUARE_NAMES[en_passant]} "
        f"{board.halfmove_clock} {board.fullmove_number}"
    )


def boards_to_tensor(
    boards: Sequence[chess.BaseBoard], colors: Sequence[chess.Color]
) -> np.ndarray:
    """The (N, 8, 8, 12) uint8 planes of ``boards``, row i seen from ``colors[i]``'s side.

    Row i equals ``board_to_tensor(boards[i], "white" if colors[i] else "black")``.

    Example:
        >>> from chess_env.core.encoding import board_to_tensor
        >>> boards = [chess.Board(), chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")]
        >>> planes = boards_to_tensor(boards, [chess.WHITE, chess.BLACK])
        >>> planes.shape, planes.dtype
        ((2, 8, 8, 12), dtype('uint8'))
        >>> bool((planes[1] == board_to_tensor(boards[1], "black")).all())
        True
    """
    if len(boards) != len(colors):
        raise ValueError(f"{len(boards)} boards but {len(colors)} colors")
    if not boards:
        return np.zeros((0, *_BOARD_SHAPE), dtype=np.uint8)
    values = [value for board in boards for value in _board_values(board)]
    return _decode(values, [bool(color) for color in colors])[0]


def boards_to_fens(boards: Sequence[chess.Board]) -> list[str]:
    """The FEN of each board, equal to ``chess_env.core.fen.fen_of`` (and ``board.fen()``), in one
    pass.

    Example:
        >>> board = chess.Board()
        >>> _ = board.push_uci("e2e4")
        >>> boards_to_fens([chess.Board(), board])[1]
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1'
    """
    if not boards:
        return []
    values = [value for board in boards for value in _board_values(board)]
    placements = _decode(values, [True] * len(boards))[1]
    return [place + fen_fields(board) for place, board in zip(placements, boards, strict=True)]


class BoardBatch:
    """The positions of some of ``n`` games (rows), encoded together.

    ``add(row, board, white, actions)`` takes row ``row``'s board, the side its planes are seen
    from and the legal actions of the side to move (``ChessGame.legal_actions``); then one call of
    each reads them all off: ``planes_and_fens``, ``masks``.

    Example:
        >>> from chess_env.core.rules import ChessGame
        >>> game = ChessGame()
        >>> batch = BoardBatch(2)
        >>> batch.add(1, game.board, True, game.legal_actions)
        >>> planes, fens = batch.planes_and_fens()
        >>> planes.shape, fens
        ((1, 8, 8, 12), ['rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1'])
        >>> masks = batch.masks()
        >>> masks.shape, masks.dtype, int(masks[0].sum()), int(masks[1].sum())
        ((2, 4672), dtype('int8'), 0, 20)
    """

    __slots__ = ("actions", "boards", "counts", "n", "rows", "values", "whites")

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows: list[int] = []
        self.boards: list[chess.Board] = []
        self.whites: list[bool] = []
        self.values: list[int] = []
        self.actions: list[int] = []  # the legal actions of all rows, row after row
        self.counts = [0] * n  # legal actions per row, 0 for a row not added

    def add(self, row: int, board: chess.Board, white: bool, actions: list[int]) -> None:
        """Row ``row`` (rows are added in increasing order, each once)."""
        if self.rows and row <= self.rows[-1]:
            raise ValueError(f"row {row} added after row {self.rows[-1]}")
        self.rows.append(row)
        self.boards.append(board)
        self.whites.append(white)
        self.values.extend(_board_values(board))
        self.actions.extend(actions)
        self.counts[row] = len(actions)

    def planes_and_fens(self) -> tuple[np.ndarray, list[str]]:
        """The added rows' planes (in the order added) and full FENs."""
        if not self.rows:
            return np.zeros((0, *_BOARD_SHAPE), dtype=np.uint8), []
        planes, placements = _decode(self.values, self.whites)
        fens = [
            placement + fen_fields(board)
            for placement, board in zip(placements, self.boards, strict=True)
        ]
        return planes, fens

    def masks(self) -> np.ndarray:
        """The (n, 4672) int8 mask: 1 at each added row's legal actions, rows not added all 0."""
        masks = np.zeros(self.n * ACTION_SIZE, dtype=np.int8)
        if self.actions:
            flat = np.fromiter(self.actions, dtype=np.intp, count=len(self.actions))
            if self.n > 1:
                flat += np.repeat(_row_offsets(self.n), self.counts)
            masks.put(flat, 1)
        return masks.reshape(self.n, ACTION_SIZE)


@functools.lru_cache(maxsize=8)
def _row_offsets(n: int) -> np.ndarray:
    """Where each of n rows of a flattened (n, 4672) mask starts."""
    return np.arange(n) * ACTION_SIZE
