"""``AlphaBetaOpponent``: a pure-Python alpha-beta searcher over material and mobility.

It needs no engine and no torch, so it is the strongest player every install has: the chess expert
of behaviour cloning when Stockfish is missing, and ``alphabeta:DEPTH`` in
``chess_env.core.players``.

- ``evaluate(board)``: its evaluation, material and mobility in centipawns, for the side to move.
- ``MAX_ALPHABETA_DEPTH``: the deepest search a spec may ask for (each ply costs 10-30 times the
  one before; deeper searches would make a game hang for minutes per move).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import chess

from chess_env.core.opponents import Opponent

__all__ = [
    "MATE",
    "MAX_ALPHABETA_DEPTH",
    "MOBILITY_CP",
    "PIECE_CP",
    "AlphaBetaOpponent",
    "evaluate",
]

MAX_ALPHABETA_DEPTH = 4
PIECE_CP = (0, 100, 320, 330, 500, 900, 0)  # by piece type (None, P, N, B, R, Q, K), centipawns
MOBILITY_CP = 4  # per square a knight, bishop, rook or queen attacks that its side does not hold
MATE = 100_000  # a mate found at ply p scores MATE - p: the nearer mate is the better one
INFINITY = 10**9
SEVENTH_RANK = (chess.BB_RANK_2, chess.BB_RANK_7)  # where each colour's pawns promote from

_KNIGHT_ATTACKS = chess.BB_KNIGHT_ATTACKS
_DIAG_ATTACKS, _DIAG_MASKS = chess.BB_DIAG_ATTACKS, chess.BB_DIAG_MASKS
_RANK_ATTACKS, _RANK_MASKS = chess.BB_RANK_ATTACKS, chess.BB_RANK_MASKS
_FILE_ATTACKS, _FILE_MASKS = chess.BB_FILE_ATTACKS, chess.BB_FILE_MASKS


def _side_score(board: chess.Board, own: chess.Bitboard, occupied: chess.Bitboard) -> int:
    """Material plus mobility of the pieces in ``own``, from table look-ups and popcounts."""
    knights, bishops = board.knights & own, board.bishops & own
    rooks, queens = board.rooks & own, board.queens & own
    score = (
        PIECE_CP[chess.PAWN] * (board.pawns & own).bit_count()
        + PIECE_CP[chess.KNIGHT] * knights.bit_count()
        + PIECE_CP[chess.BISHOP] * bishops.bit_count()
        + PIECE_CP[chess.ROOK] * rooks.bit_count()
        + PIECE_CP[chess.QUEEN] * queens.bit_count()
    )
    free = ~own
    squares = 0
    # Loops over set bits written out: a generator per piece costs more than the look-ups.
    bits = knights
    while bits:
        square = (bits & -bits).bit_length() - 1
        squares += (_KNIGHT_ATTACKS[square] & free).bit_count()
        bits &= bits - 1
    bits = bishops | queens
    while bits:
        square = (bits & -bits).bit_length() - 1
        squares += (_DIAG_ATTACKS[square][_DIAG_MASKS[square] & occupied] & free).bit_count()
        bits &= bits - 1
    bits = rooks | queens
    while bits:
        square = (bits & -bits).bit_length() - 1
        lines = (
            _RANK_ATTACKS[square][_RANK_MASKS[square] & occupied]
            | _FILE_ATTACKS[square][_FILE_MASKS[square] & occupied]
        )
        squares += (lines & free).bit_count()
        bits &= bits - 1
    return score + MOBILITY_CP * squares


def evaluate(board: chess.Board) -> int:
    """Material and mobility in centipawns, for the side to move (mates are the search's job).

    Example:
        >>> evaluate(chess.Board())
        0
        >>> evaluate(chess.Board("4k3/8/8/8/8/8/8/3QK3 w - - 0 1"))  # 900 + 4 x 17 squares
        968
    """
    occupied, colours = board.occupied, board.occupied_co
    return _side_score(board, colours[board.turn], occupied) - _side_score(
        board, colours[not board.turn], occupied
    )


def _capture_order(board: chess.Board, move: chess.Move) -> int:
    """MVV-LVA: the most valuable victim first, then the least valuable attacker."""
    victim = board.piece_type_at(move.to_square) or chess.PAWN  # en passant: a pawn
    attacker = board.piece_type_at(move.from_square) or chess.PAWN
    promotion = PIECE_CP[move.promotion] if move.promotion else 0
    return PIECE_CP[victim] * 8 - attacker + promotion


def _root_order(board: chess.Board, moves: Sequence[chess.Move]) -> list[chess.Move]:
    """Captures and promotions first (MVV-LVA), then the quiet moves in the order given."""
    them = board.occupied_co[not board.turn]
    noisy = [m for m in moves if m.promotion or chess.BB_SQUARES[m.to_square] & them] + [
        m for m in moves if board.is_en_passant(m)
    ]
    noisy.sort(key=lambda move: _capture_order(board, move), reverse=True)
    chosen = set(noisy)
    return noisy + [m for m in moves if m not in chosen]


class _Search:
    """One alpha-beta search on a private copy of the board (negamax, fail-soft)."""

    def __init__(self, board: chess.Board) -> None:
        self.board = board
        self.killers: dict[int, chess.Move] = {}  # per ply: the last quiet move that cut off

    def moves(self, ply: int) -> Iterator[chess.Move]:
        """Pseudo-legal moves, lazily: captures (MVV-LVA), quiet promotions, the ply's killer,
        then the other quiet moves, so a node that a capture cuts off never generates its quiet
        moves. Legality is checked after the push, only for the moves actually searched."""
        board = self.board
        them = board.occupied_co[not board.turn]
        captures = list(board.generate_pseudo_legal_moves(chess.BB_ALL, them))
        captures.sort(key=lambda move: _capture_order(board, move), reverse=True)
        yield from captures
        quiet_targets = ~them & chess.BB_ALL
        promoting = board.pawns & board.occupied_co[board.turn] & SEVENTH_RANK[board.turn]
        if promoting:
            yield from board.generate_pseudo_legal_moves(promoting, quiet_targets)
        killer = self.killers.get(ply)
        if (
            killer is not None
            and not chess.BB_SQUARES[killer.from_square] & promoting
            and not chess.BB_SQUARES[killer.to_square] & them
            and board.is_pseudo_legal(killer)
        ):
            yield killer
        else:
            killer = None
        for move in board.generate_pseudo_legal_moves(chess.BB_ALL & ~promoting, quiet_targets):
            if move != killer:
                yield move

    def value(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The negamax value for the side to move, exact when it lies inside (alpha, beta)."""
        board = self.board
        if depth == 0:
            if board.is_check() and not any(board.generate_legal_moves()):
                return ply - MATE
            return evaluate(board)
        best = -INFINITY
        for move in self.moves(ply):
            board.push(move)
            if board.was_into_check():  # pseudo-legal, not legal
                board.pop()
                continue
            score = -self.value(depth - 1, -beta, -alpha, ply + 1)
            board.pop()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        self.killers[ply] = move
                        break
        if best == -INFINITY:  # no legal move: mated, or stalemate
            return ply - MATE if board.is_check() else 0
        return best


class AlphaBetaOpponent(Opponent):
    """Negamax with alpha-beta pruning to ``depth`` plies over material and mobility.

    The chess expert when Stockfish is missing, so it is written for speed in pure Python. The
    evaluation is popcounts over
    python-chess's attack tables (pieces at 100/320/330/500/900 centipawns, plus
    ``MOBILITY_CP`` per square a knight, bishop, rook or queen attacks that its side does not
    occupy). Inner nodes generate pseudo-legal moves lazily, captures first in MVV-LVA order,
    then promotions, the killer move of the ply and the quiet moves, and test legality only for
    the moves they search. A mate scores ``MATE - plies``, so the nearest mate is preferred;
    stalemate is a draw.

    Deterministic for a seed: the root is searched with a window one centipawn below the best
    score so far, which gives every move tied with the best its exact score, and ``reset(seed)``
    seeds the generator that draws among them.

    Limits: no quiescence search (a capture on the last ply is taken at face value); on the last
    ply a mate is recognised (a position in check is tested for legal moves) but a stalemate is
    not; repetitions and the 50-move rule are not searched.

    Args:
        depth: plies to search, 1 to ``MAX_ALPHABETA_DEPTH`` (4; default 2); each ply more
            costs roughly 10-30 times as much.

    Example:
        >>> player = AlphaBetaOpponent(depth=2)
        >>> player.reset(seed=0)
        >>> player(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")).uci()  # back-rank mate
        'a1a8'
    """

    name = "alphabeta"

    def __init__(self, depth: int = 2) -> None:
        super().__init__()
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise ValueError(f"depth must be an integer, got {depth!r}")
        if not 1 <= depth <= MAX_ALPHABETA_DEPTH:
            raise ValueError(f"depth must be in 1..{MAX_ALPHABETA_DEPTH}, got {depth}")
        self.depth = depth

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        search = _Search(board.copy(stack=False))
        best, tied = -INFINITY, []
        for move in _root_order(board, legal_moves):
            search.board.push(move)
            score = -search.value(self.depth - 1, -INFINITY, 1 - best, 1)
            search.board.pop()
            if score > best:
                best, tied = score, [move]
            elif score == best:
                tied.append(move)
        return tied[int(self.rng.integers(len(tied)))]

    def __repr__(self) -> str:
        return f"AlphaBetaOpponent(depth={self.depth})"
