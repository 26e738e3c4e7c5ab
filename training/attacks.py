"""Attack maps of a batch of (8, 8, 12) boards, in torch: the squares each side attacks.

Why: the chess CNN's argmax missed 488 of the 769 mates in one it had in 400 games against random
(a DAgger run's final match), and 76 of its 119 draws had passed one by. Seeing a mate means
seeing which squares around the king are covered, which four 3x3 convolutions can hardly work out
for a rook or a queen across the board. These planes are a function of the position (no move is
played, nothing is searched), so a network reading them is still a pure network.

The board is the env's tensor: "us" (channels 0-5: P, N, B, R, Q, K) plays up the board (row 0 is
the far rank), "them" (6-11) down. A square is attacked by a side when one of its pieces could
capture there by the rules of movement (python-chess's ``attacks``: sliders up to and including
the first piece in the way, pawns diagonally forward, whoever stands on the square).
"""

from __future__ import annotations

import torch
from torch.nn import functional

__all__ = ["ATTACK_PLANES", "CHECK_PLANES", "attack_maps", "check_squares"]

ATTACK_PLANES = 2  # squares attacked by us, by them
CHECK_PLANES = 3  # squares from which a knight, a rook, a bishop of ours would check their king
_ROOK_STEPS = ((0, 1), (0, -1), (1, 0), (-1, 0))
_BISHOP_STEPS = ((1, 1), (1, -1), (-1, 1), (-1, -1))
_KNIGHT_STEPS = ((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1))
_KING_STEPS = _ROOK_STEPS + _BISHOP_STEPS


def _kernel(steps: tuple[tuple[int, int], ...], size: int) -> torch.Tensor:
    """A (1, 1, size, size) kernel whose convolution moves a piece on (r, c) to every (r+dr,
    c+dc) of ``steps``: ``conv2d`` reads input (i + u - half, j + v - half) at weight (u, v)."""
    half = size // 2
    kernel = torch.zeros(1, 1, size, size)
    for dr, dc in steps:
        kernel[0, 0, half - dr, half - dc] = 1.0
    return kernel


_KNIGHT = _kernel(_KNIGHT_STEPS, 5)
_KING = _kernel(_KING_STEPS, 3)
_PAWN = {True: _kernel(((-1, 1), (-1, -1)), 3), False: _kernel(((1, 1), (1, -1)), 3)}
_SLIDE = torch.cat([_kernel((step,), 3) for step in _ROOK_STEPS + _BISHOP_STEPS])  # (8, 1, 3, 3)


def attack_maps(boards: torch.Tensor) -> torch.Tensor:
    """(B, 12, 8, 8) piece planes, channels first -> (B, 2, 8, 8): 1.0 where us / them attack.

    Example:
        >>> import chess
        >>> from chess_env.core.encoding import board_to_tensor
        >>> board = torch.as_tensor(board_to_tensor(chess.Board())).permute(2, 0, 1)[None]
        >>> ours, theirs = attack_maps(board.float())[0]
        >>> int(ours.sum()), int(ours[5].sum()), int(theirs[2].sum())  # the 3rd rank; their 6th
        (22, 8, 8)
    """
    boards = boards.float()
    empty = 1.0 - boards.sum(dim=1, keepdim=True).clamp(max=1.0)  # (B, 1, 8, 8)
    return torch.cat(
        [_side(boards[:, :6], empty, up=True), _side(boards[:, 6:], empty, up=False)], dim=1
    )


def _side(pieces: torch.Tensor, empty: torch.Tensor, *, up: bool) -> torch.Tensor:
    """(B, 6, 8, 8) one side's P, N, B, R, Q, K -> (B, 1, 8, 8) the squares it attacks."""
    pawns, knights, bishops, rooks, queens, kings = pieces.split(1, dim=1)
    attacked = functional.conv2d(pawns, _PAWN[up], padding=1)
    attacked = attacked + functional.conv2d(knights, _KNIGHT, padding=2)
    attacked = attacked + functional.conv2d(kings, _KING, padding=1)
    straight, diagonal = _rays(rooks + queens, bishops + queens, empty)
    return (attacked + straight + diagonal).clamp(max=1.0)


def check_squares(boards: torch.Tensor) -> torch.Tensor:
    """(B, 12, 8, 8) piece planes -> (B, 3, 8, 8): 1.0 where a knight, a rook, a bishop of ours
    would give check (a queen: where either of the last two would).

    Why: a mate in one is a checking move, and a stalemate a quiet one; these are the squares
    such a move lands on, read like ``attack_maps`` from their king's square outwards (a piece
    checks from where it would be attacked by the same piece on the king's square).

    Example:
        >>> import chess
        >>> from chess_env.core.encoding import board_to_tensor
        >>> board = chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
        >>> planes = torch.as_tensor(board_to_tensor(board)).permute(2, 0, 1)[None].float()
        >>> [int(plane.sum()) for plane in check_squares(planes)[0]]  # knight, rook, bishop
        [4, 14, 7]
    """
    boards = boards.float()
    empty = 1.0 - boards.sum(dim=1, keepdim=True).clamp(max=1.0)
    king = boards[:, 11:12]
    knight = functional.conv2d(king, _KNIGHT, padding=2)  # the knight's steps are symmetric
    straight, diagonal = _rays(king, king, empty)
    return torch.cat([knight, straight.clamp(max=1.0), diagonal.clamp(max=1.0)], dim=1)


def _rays(
    straight: torch.Tensor, diagonal: torch.Tensor, empty: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The squares reached from (B, 1, 8, 8) rook-like and bishop-like pieces along their rays,
    up to and including the first occupied square: (straight, diagonal) counts, (B, 1, 8, 8)."""
    frontier = torch.cat([straight.expand(-1, 4, -1, -1), diagonal.expand(-1, 4, -1, -1)], dim=1)
    rays = torch.zeros_like(frontier)
    for _ in range(7):  # one square further along each ray, through empty squares only
        frontier = functional.conv2d(frontier, _SLIDE, padding=1, groups=8)
        rays = rays + frontier
        frontier = frontier * empty
    return rays[:, :4].sum(dim=1, keepdim=True), rays[:, 4:].sum(dim=1, keepdim=True)
