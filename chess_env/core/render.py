"""Board pictures for the ``render_mode``s: "ansi" text, "human" (that text printed), "svg" markup
and "rgb_array" pixels.

The SVG comes from ``chess.svg``; "rgb_array" rasterises that same SVG with resvg (a Rust
renderer shipped as a PyPI wheel, no system libraries), so every mode shows the same picture.
"human" prints the unicode board to stdout rather than opening a window: it works in any
terminal, over SSH and in notebooks, needs no display library (importing ``chess_env`` never
imports pygame), and tests can read it.
"""

from __future__ import annotations

import io

import chess
import chess.svg
import numpy as np

__all__ = [
    "RENDER_MODES",
    "render",
    "render_ansi",
    "render_human",
    "render_rgb_array",
    "render_svg",
]

RENDER_MODES = ("human", "ansi", "rgb_array", "svg")
DEFAULT_SIZE = 400


def render_ansi(board: chess.Board, orientation: chess.Color = chess.WHITE) -> str:
    """A unicode board with rank and file coordinates.

    Example:
        >>> print(render_ansi(chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")).splitlines()[0])
          a b c d e f g h
    """
    files = "abcdefgh" if orientation == chess.WHITE else "hgfedcba"
    rows = board.unicode(empty_square="·", orientation=orientation).splitlines()
    ranks = "87654321" if orientation == chess.WHITE else "12345678"
    header = "  " + " ".join(files)
    body = [f"{rank} {row} {rank}" for rank, row in zip(ranks, rows, strict=True)]
    return "\n".join([header, *body, header])


def render_human(board: chess.Board, orientation: chess.Color = chess.WHITE) -> None:
    """Print the unicode board and the last move, for watching a game in a terminal.

    Nothing paces the frames (``render_fps`` is advisory): a game prints as fast as it is played.

    Example:
        >>> render_human(chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"))  # doctest: +ELLIPSIS
          a b c d e f g h
        8 · · · · ♚ · · · 8
        ...
        1 · · · · ♔ · · · 1
          a b c d e f g h
        ply 0, no move yet
        <BLANKLINE>
    """
    last = f"last move {board.peek().uci()}" if board.move_stack else "no move yet"
    print(f"{render_ansi(board, orientation)}\nply {board.ply()}, {last}\n", flush=True)


def render_svg(
    board: chess.Board, orientation: chess.Color = chess.WHITE, size: int = DEFAULT_SIZE
) -> str:
    """An SVG board with the last move and any check highlighted."""
    lastmove = board.peek() if board.move_stack else None
    check = board.king(board.turn) if board.is_check() else None
    return chess.svg.board(
        board, orientation=orientation, lastmove=lastmove, check=check, size=size
    )


def render_rgb_array(
    board: chess.Board, orientation: chess.Color = chess.WHITE, size: int = DEFAULT_SIZE
) -> np.ndarray:
    """The SVG board as a (size, size, 3) uint8 image."""
    import resvg_py
    from PIL import Image

    png = resvg_py.svg_to_bytes(svg_string=render_svg(board, orientation, size))
    with Image.open(io.BytesIO(bytes(png))) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def render(
    board: chess.Board, mode: str | None, orientation: chess.Color = chess.WHITE
) -> str | np.ndarray | None:
    """What ``env.render()`` returns for ``mode``: None for no mode and for "human" (printed)."""
    if mode is None:
        return None
    if mode == "human":
        render_human(board, orientation)
        return None
    if mode == "ansi":
        return render_ansi(board, orientation)
    if mode == "svg":
        return render_svg(board, orientation)
    if mode == "rgb_array":
        return render_rgb_array(board, orientation)
    raise ValueError(f"render_mode must be one of {list(RENDER_MODES)} or None, got {mode!r}")
