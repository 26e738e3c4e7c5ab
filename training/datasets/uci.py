"""``UciEngine``: Stockfish over a raw UCI pipe, the labeller of the chess data pipeline.

python-chess's ``chess.engine`` costs about 0.45 ms a call in its asyncio machinery, as much as a
depth-6 search itself, and the pipeline's speed should be Stockfish's. Here one process is driven
by plain line reads and writes: ``position fen ...``, ``go depth D`` with ``MultiPV`` lines, and the
``info`` lines of the last depth parsed into ``Line`` s (a move and its score). python-chess still
decides everything about the rules; the engine only scores moves.

Scores are from the side to move, in centipawns; a mate in ``n`` (moves) is
``MATE_SCORE - plies to mate`` (negative when the side to move is mated), so mates order before
any material and the nearer mate first.

Determinism: one thread, and a hash cleared by ``new_game`` (``ucinewgame``); the same positions
analysed in the same order after ``new_game`` give the same lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass

from chess_env.core.opponents import find_stockfish

__all__ = ["MATE_SCORE", "Line", "UciEngine", "UciError"]

MATE_SCORE = 30_000
"""The score of mate now; a mate in ``n`` plies scores ``MATE_SCORE - n``."""


_INFO = re.compile(
    r"(?: multipv (\d+))? score (cp|mate) (-?\d+)( lowerbound| upperbound)?.*? pv (\S+)"
)
_POLL_SECONDS = 0.0002  # between reads of a search's output: a few wake-ups, not one a line


class UciError(RuntimeError):
    """The engine died, or answered something this module does not understand."""


@dataclass(frozen=True)
class Line:
    """One principal variation's first move (UCI) and its score (centipawns, side to move)."""

    move: str
    score: int


class UciEngine:
    """One Stockfish process, one thread, for ``analyse`` calls in a row.

    Args:
        path: the binary (default: ``find_stockfish()``, ``/usr/games/stockfish`` on Debian).
        hash_mb: the transposition table's size.

    Example:
        >>> engine = UciEngine()  # doctest: +SKIP
        >>> engine.analyse("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", depth=4)[0]  # doctest: +SKIP
        Line(move='a1a8', score=29999)
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, hash_mb: int = 16) -> None:
        self.path = find_stockfish(path)
        self._process = subprocess.Popen(
            [self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._buffer = b""
        self._multipv = 1
        self._send("uci")
        self.name = ""
        for line in self._until("uciok"):
            if line.startswith("id name "):
                self.name = line[len("id name ") :]
        self._send(f"setoption name Threads value 1\nsetoption name Hash value {hash_mb}")
        self.new_game()

    def new_game(self) -> None:
        """Clear the engine's hash: what follows does not depend on what came before."""
        self._send("ucinewgame\nisready")
        for _ in self._until("readyok"):
            pass

    def analyse(self, fen: str, depth: int, multipv: int = 1) -> list[Line]:
        """The best ``multipv`` moves of the position ``fen`` at ``depth``, best first (fewer
        when the position has fewer legal moves; none when it has none)."""
        if multipv != self._multipv:
            self._send(f"setoption name MultiPV value {multipv}")
            self._multipv = multipv
        self._send(f"position fen {fen}\ngo depth {depth}")
        final = f"info depth {depth} "  # the lines of shallower depths are skipped unread
        lines: dict[int, Line] = {}
        for text in self._until("bestmove"):
            if not text.startswith(final) or " pv " not in text:
                continue
            parsed = _parse_info(text)
            if parsed is not None:
                lines[parsed[0]] = parsed[1]
        return [lines[rank] for rank in sorted(lines)]

    def cpu_seconds(self) -> float:
        """The engine process's CPU time so far (user and system), from ``/proc``."""
        try:
            with open(f"/proc/{self._process.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        """Stop the engine (it is killed if it does not quit within 5 s)."""
        if self._process.poll() is None:
            try:
                self._send("quit")
                self._process.wait(timeout=5)
            except (UciError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> UciEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, command: str) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(command.encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            raise UciError(f"the engine {self.path} has exited") from None

    def _until(self, prefix: str) -> list[str]:
        """The engine's lines up to and including the first that starts with ``prefix``.

        The engine flushes every line; reading each as it comes would wake this process once a
        line (about 70 times a position with MultiPV), which costs more CPU than the parsing.
        So the pipe is read in whole chunks, with a short sleep between reads while the search
        goes on.
        """
        assert self._process.stdout is not None
        wanted = prefix.encode()
        while (end := self._line_end(wanted)) == -1:
            chunk = os.read(self._process.stdout.fileno(), 1 << 16)
            if not chunk:
                raise UciError(f"the engine {self.path} exited while we waited for {prefix!r}")
            self._buffer += chunk
            if self._line_end(wanted) == -1:
                time.sleep(_POLL_SECONDS)
        text, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
        return text.decode().split("\n")

    def _line_end(self, prefix: bytes) -> int:
        """Where the first whole buffered line starting with ``prefix`` ends (-1: none yet)."""
        if self._buffer.startswith(prefix):
            return self._buffer.find(b"\n")
        found = self._buffer.find(b"\n" + prefix)
        return -1 if found == -1 else self._buffer.find(b"\n", found + 1)


def _parse_info(text: str) -> tuple[int, Line] | None:
    """(multipv rank, line) of an ``info`` line with an exact score (None: a bound)."""
    found = _INFO.search(text)
    if found is None:
        raise UciError(f"cannot read the engine's line {text!r}")
    rank, kind, number, bound, move = found.groups()
    if bound:
        return None
    value = int(number)
    if kind == "mate":
        plies = 2 * value - 1 if value > 0 else -2 * value
        score = MATE_SCORE - plies if value > 0 else -(MATE_SCORE - plies)
    else:
        score = value
    return int(rank or 1), Line(move, score)
