"""Move quality: Stockfish's verdict on every move of a game, and the numbers a scorecard shows.

- ``analyse_game(start, moves, evaluate)``: one ``MoveEval`` per move, from any ``Evaluator``.
- ``analyse_games(games, depth, cache_path=...)``: many games by Stockfish, in ``workers``
  processes, each position evaluated once and kept in an ``EvalCache`` across runs.
- ``QualitySummary.summarise(evals)``: average centipawn loss, blunders, mistakes,
  inaccuracies and the mean accuracy of a set of moves (one player's: filter by ``color``).
- ``StockfishEvaluator``: one engine that evaluates positions independently of each other.
- ``EvalCache``: evaluations by (EPD, depth), in memory or appended to a JSONL file.
- ``move_accuracy`` and ``win_percent``: lichess's accuracy of one move.
- ``BLUNDER_CP`` (200), ``MISTAKE_CP`` (100), ``INACCURACY_CP`` (50): a move's centipawn loss
  at or above one of these makes it that kind; ``CP_CAP`` (1000): every evaluation is clipped to
  +-1000 centipawns and a forced mate counts as the cap, as lichess does, so one lost won
  position weighs like a lost rook-and-more rather than like 100,000 centipawns.

Every evaluation is in centipawns from the point of view of the side to move. A move's loss is
the evaluation before it (the mover's) minus the evaluation after it (the opponent's, negated),
never below zero. Positions where the game is over never reach the engine: checkmate is
``-CP_CAP`` for the side mated, a draw by rule (stalemate, insufficient material, fivefold
repetition, the 75-move rule) is 0.

Example:
    >>> scores = iter([30, -20, 250, -240])  # each position in turn, for its side to move
    >>> evals = analyse_game(chess.Board(), ["e2e4", "e7e5", "d1h5"], lambda board: next(scores))
    >>> [(e.uci, e.cp_before, e.cp_after, e.cp_loss, e.kind) for e in evals]
    [('e2e4', 30, 20, 10, 'ok'), ('e7e5', -20, -250, 230, 'blunder'), ('d1h5', 250, 240, 10, 'ok')]
    >>> summary = QualitySummary.summarise(e for e in evals if e.color == chess.WHITE)
    >>> summary.moves, summary.acpl, summary.blunders, round(summary.accuracy, 1)
    (2, 10.0, 0, 97.3)
"""

from __future__ import annotations

import json
import math
import multiprocessing
import multiprocessing.util
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, NamedTuple

import chess

from chess_env.core.opponents import MAX_STOCKFISH_DEPTH, find_stockfish

if TYPE_CHECKING:
    import chess.engine

__all__ = [
    "BLUNDER_CP",
    "CP_CAP",
    "INACCURACY_CP",
    "MISTAKE_CP",
    "EvalCache",
    "Evaluator",
    "MoveEval",
    "MoveKind",
    "QualitySummary",
    "StockfishEvaluator",
    "analyse_game",
    "analyse_games",
    "move_accuracy",
    "win_percent",
]

BLUNDER_CP = 200
MISTAKE_CP = 100
INACCURACY_CP = 50
CP_CAP = 1000
_MATE_SCORE = 100_000  # any mate scores beyond the cap, so clipping turns it into the cap

Evaluator = Callable[[chess.Board], int]
"""Centipawns for the side to move in a position that is not over, clipped to +-``CP_CAP``."""

MoveKind = Literal["ok", "inaccuracy", "mistake", "blunder"]


def _clip(cp: int) -> int:
    return max(-CP_CAP, min(CP_CAP, int(cp)))


def _check_depth(depth: int) -> None:
    if not 1 <= depth <= MAX_STOCKFISH_DEPTH:
        raise ValueError(f"depth must be in 1..{MAX_STOCKFISH_DEPTH}, got {depth}")


# lichess's formulas, from lila: modules/tree/src/main/WinPercent.scala (the win chance) and
# modules/analyse/src/main/AccuracyPercent.scala (fromWinPercents: the accuracy of one move,
# with its +1 "uncertainty bonus" for imperfect analysis, and 100 when the move loses nothing).
def win_percent(cp: int) -> float:
    """The mover's chance to win, 0 to 100, from centipawns (lichess's fitted logistic curve).

    Example:
        >>> win_percent(0), round(win_percent(300), 1), round(win_percent(-CP_CAP), 1)
        (50.0, 75.1, 2.5)
    """
    return 50 + 50 * (2 / (1 + math.exp(-0.00368208 * _clip(cp))) - 1)


def move_accuracy(cp_before: int, cp_after: int) -> float:
    """lichess's accuracy % of one move, from the mover's evaluations before and after it.

    It falls with the drop in win chance, not in centipawns: 300 cp lost in an even position
    costs more than 300 cp lost when already a rook up.

    Example:
        >>> move_accuracy(50, 50), round(move_accuracy(50, -50), 1)
        (100.0, 67.0)
        >>> round(move_accuracy(900, 600), 1), round(move_accuracy(150, -150), 1)
        (76.0, 29.8)
    """
    before, after = win_percent(cp_before), win_percent(cp_after)
    if after >= before:
        return 100.0
    raw = 103.1668100711649 * math.exp(-0.04354415386753951 * (before - after)) - 3.166924740191411
    return max(0.0, min(100.0, raw + 1))


def _kind(cp_loss: int) -> MoveKind:
    if cp_loss >= BLUNDER_CP:
        return "blunder"
    if cp_loss >= MISTAKE_CP:
        return "mistake"
    if cp_loss >= INACCURACY_CP:
        return "inaccuracy"
    return "ok"


@dataclass(frozen=True)
class MoveEval:
    """One move judged: the mover's evaluations before and after it, and what they make of it.

    ``cp_before`` is the evaluation of the position the move was played in and ``cp_after`` that
    of the position it made, negated: both in centipawns from the mover's side, clipped to
    +-``CP_CAP``. ``kind`` is "blunder" for a loss of at least ``BLUNDER_CP``, "mistake" for
    at least ``MISTAKE_CP``, "inaccuracy" for at least ``INACCURACY_CP``, else "ok".
    """

    ply: int  # 0-based index among the moves analysed
    uci: str
    color: chess.Color  # who moved
    cp_before: int
    cp_after: int
    cp_loss: int  # max(0, cp_before - cp_after)
    accuracy: float  # move_accuracy(cp_before, cp_after)
    kind: MoveKind


@dataclass(frozen=True)
class QualitySummary:
    """The move quality of a set of moves (a player's: the caller filters ``MoveEval.color``).

    ``blunders``, ``mistakes`` and ``inaccuracies`` count each move once, by its ``kind``: a
    loss of 250 is a blunder and not also a mistake. ``accuracy`` is the plain mean of the
    moves' ``move_accuracy``; lichess's game accuracy weights moves by the volatility of the
    position and averages that with a harmonic mean, so it reads lower for uneven play.
    ``acpl`` and ``accuracy`` are None when there are no moves.
    """

    moves: int
    acpl: float | None
    blunders: int
    mistakes: int
    inaccuracies: int
    accuracy: float | None

    @classmethod
    def summarise(cls, evals: Iterable[MoveEval]) -> QualitySummary:
        """Count and average ``evals``.

        Example:
            >>> empty = QualitySummary.summarise([])
            >>> empty.moves, empty.acpl, empty.accuracy
            (0, None, None)
        """
        evals = list(evals)
        kinds = [move.kind for move in evals]
        count = len(evals)
        return cls(
            moves=count,
            acpl=sum(move.cp_loss for move in evals) / count if count else None,
            blunders=kinds.count("blunder"),
            mistakes=kinds.count("mistake"),
            inaccuracies=kinds.count("inaccuracy"),
            accuracy=sum(move.accuracy for move in evals) / count if count else None,
        )


class StockfishEvaluator:
    """Stockfish as an ``Evaluator``: one engine (1 thread, 16 MB hash) searching to ``depth``.

    Each position is analysed as a new game (python-chess sends ``ucinewgame``, which clears
    Stockfish's hash and history tables) and as its EPD describes it: no move history and a
    halfmove clock of 0. Its value then depends on nothing else: not on which positions came
    before, nor on how the game reached it, so a cached value is the one a fresh run computes.

    Args:
        depth: search depth in plies, 1 to 30 (``ValueError`` otherwise).
        path: the Stockfish binary; default ``stockfish`` on PATH, then /usr/games/stockfish
            (``StockfishNotFoundError`` when there is none).

    The engine starts with the evaluator and ends with ``close()`` or the ``with`` block.

    Example:
        >>> StockfishEvaluator(8, path="/no/stockfish")
        Traceback (most recent call last):
        ...
        chess_env.errors.StockfishNotFoundError: no Stockfish binary found at '/no/stockfish'; ...
    """

    def __init__(self, depth: int, *, path: str | os.PathLike[str] | None = None) -> None:
        import chess.engine

        _check_depth(depth)
        self.depth = depth
        self.path = find_stockfish(path)
        self._engine: chess.engine.SimpleEngine | None = chess.engine.SimpleEngine.popen_uci(
            self.path
        )
        try:
            self._engine.configure({"Threads": 1, "Hash": 16})
        except BaseException:
            self.close()
            raise

    def __call__(self, board: chess.Board) -> int:
        import chess.engine

        if self._engine is None:
            raise RuntimeError("this StockfishEvaluator is closed")
        position = chess.Board(board.epd())
        info = self._engine.analyse(position, chess.engine.Limit(depth=self.depth), game=object())
        return _clip(info["score"].pov(board.turn).score(mate_score=_MATE_SCORE))

    def close(self) -> None:
        """Quit the engine (again: nothing)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.quit()

    def __enter__(self) -> StockfishEvaluator:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StockfishEvaluator(depth={self.depth}, path={self.path!r})"


class EvalCache:
    """Evaluations by (``board.epd()``, depth), so that no position is evaluated twice.

    With a ``path`` the cache is a JSONL file, one ``{"epd", "depth", "cp"}`` object a line: it
    is read when the cache is made and each new entry is appended at once, so a run that is
    stopped keeps what it computed. Its folder is created if missing. A last line cut short
    (no newline: the run died while writing it) is dropped and cut from the file; any other
    line that is not an entry is a ``ValueError`` naming the file and the line. Without a path
    the cache lives in memory only.

    Example:
        >>> cache = EvalCache()
        >>> cache.put(chess.Board(), 8, 35)
        >>> cache.get(chess.Board(), 8), cache.get(chess.Board(), 12), (chess.Board(), 8) in cache
        (35, None, True)
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._values: dict[tuple[str, int], int] = {}
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                self._load(self.path)

    def get(self, board: chess.Board, depth: int) -> int | None:
        """The evaluation of ``board`` at ``depth``, or None when it has none."""
        return self._values.get((board.epd(), depth))

    def put(self, board: chess.Board, depth: int, cp: int) -> None:
        """Keep ``cp`` for ``board`` at ``depth`` (and append it to the file, when new)."""
        key = (board.epd(), depth)
        if self._values.get(key) == cp:
            return
        self._values[key] = cp
        if self.path is not None:
            entry = json.dumps({"epd": key[0], "depth": depth, "cp": cp}, separators=(",", ":"))
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(entry + "\n")

    def __contains__(self, key: tuple[chess.Board, int]) -> bool:
        board, depth = key
        return (board.epd(), depth) in self._values

    def __len__(self) -> int:
        return len(self._values)

    def _load(self, path: Path) -> None:
        data = path.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline, else a torn last line
        for number, line in enumerate(lines, start=1):
            if line.strip():
                self._add(path, number, line)
        if tail:
            try:
                self._add(path, len(lines) + 1, tail)
            except ValueError:
                with open(path, "r+b") as file:
                    file.truncate(len(data) - len(tail))
            else:
                with open(path, "ab") as file:
                    file.write(b"\n")  # so that the next entry starts a line of its own

    def _add(self, path: Path, number: int, line: bytes) -> None:
        try:
            entry = json.loads(line)
            epd, depth, cp = entry["epd"], entry["depth"], entry["cp"]
            if not (isinstance(epd, str) and _is_int(depth) and _is_int(cp)):
                raise TypeError("epd must be a string, depth and cp integers")
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"{path}, line {number}: not an evaluation ({error})") from error
        self._values[epd, depth] = cp


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Line(NamedTuple):
    """A game walked through: its moves and, for each position, a board to evaluate (without
    history) or the value of a finished game."""

    first_mover: chess.Color
    ucis: list[str]
    positions: list[chess.Board | int]


def _walk(start: chess.Board, moves: Sequence[str]) -> _Line:
    board = start.copy()  # with its history: repetitions before ``start`` count
    positions = [_position(board)]
    for ply, uci in enumerate(moves):
        try:
            board.push(board.parse_uci(uci))
        except ValueError as error:
            raise ValueError(f"ply {ply}: illegal move {uci!r} in {board.fen()}") from error
        positions.append(_position(board))
    return _Line(start.turn, list(moves), positions)


def _position(board: chess.Board) -> chess.Board | int:
    outcome = board.outcome(claim_draw=False)
    if outcome is None:
        return board.copy(stack=False)
    return 0 if outcome.winner is None else -CP_CAP  # in standard chess only mate wins


def _move_evals(line: _Line, value: Callable[[chess.Board], int]) -> list[MoveEval]:
    scores = [p if isinstance(p, int) else value(p) for p in line.positions]
    evals = []
    for ply, uci in enumerate(line.ucis):
        before, after = scores[ply], -scores[ply + 1]
        loss = max(0, before - after)
        evals.append(
            MoveEval(
                ply=ply,
                uci=uci,
                color=line.first_mover if ply % 2 == 0 else not line.first_mover,
                cp_before=before,
                cp_after=after,
                cp_loss=loss,
                accuracy=move_accuracy(before, after),
                kind=_kind(loss),
            )
        )
    return evals


def analyse_game(
    start: chess.Board,
    moves: Sequence[str],
    evaluate: Evaluator,
    *,
    cache: EvalCache | None = None,
    depth: int = 0,
) -> list[MoveEval]:
    """One ``MoveEval`` per move of ``moves`` (UCI) played from ``start``.

    Every position from ``start`` to the last is evaluated once: looked up in ``cache`` under
    ``depth`` first, else given to ``evaluate`` and the value (clipped to +-``CP_CAP``) put in
    the cache. ``depth`` only keys the cache (0 suits an evaluator without one). All moves are
    checked before any evaluation: an illegal one is a ``ValueError`` naming its ply (from 0)
    and the move. ``start`` is copied, its move history included (a repetition counts from it).

    Example:
        >>> mate = analyse_game(chess.Board(), ["f2f3", "e7e5", "g2g4", "d8h4"], lambda b: 0)
        >>> [(e.uci, e.cp_after, e.kind) for e in mate]
        [('f2f3', 0, 'ok'), ('e7e5', 0, 'ok'), ('g2g4', 0, 'ok'), ('d8h4', 1000, 'ok')]
    """
    line = _walk(start, moves)
    cache = EvalCache() if cache is None else cache

    def value(board: chess.Board) -> int:
        cp = cache.get(board, depth)
        if cp is None:
            cp = _clip(evaluate(board))
            cache.put(board, depth, cp)
        return cp

    return _move_evals(line, value)


def analyse_games(
    games: Sequence[tuple[str, Sequence[str]]],
    depth: int,
    *,
    cache_path: str | os.PathLike[str] | None,
    workers: int = 1,
    stockfish_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> list[list[MoveEval]]:
    """``analyse_game`` by Stockfish at ``depth`` for each game, given as (start FEN, UCI moves).

    Args:
        games: each game's start (the position after its opening, say) and the moves played.
        depth: Stockfish's search depth, 1 to 30.
        cache_path: the ``EvalCache`` file (None: no file). Positions found in it are never
            sent to an engine; new values are appended to it by this process alone, as they
            come, so a stopped run resumes where it was.
        workers: engine processes (default 1: one engine in this process). More start a
            "spawn" process pool, one ``StockfishEvaluator`` per worker for its whole life.
        stockfish_path: the binary (default: ``stockfish`` on PATH, then /usr/games/stockfish).
        progress: a tqdm bar on stderr, counting the positions evaluated.

    All moves are checked first (``ValueError`` for an illegal one, naming its game). When some
    position needs the engine and there is none, ``StockfishNotFoundError`` is raised before
    any evaluation; when every position is cached, no engine is needed or started.

    Example:
        >>> analyse_games([(chess.STARTING_FEN, ["e2e4"])], 8, cache_path=None,
        ...               stockfish_path="/no/stockfish")
        Traceback (most recent call last):
        ...
        chess_env.errors.StockfishNotFoundError: no Stockfish binary found at '/no/stockfish'; ...
    """
    _check_depth(depth)
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    lines = []
    for index, (fen, moves) in enumerate(games):
        try:
            lines.append(_walk(chess.Board(fen), moves))
        except ValueError as error:
            raise ValueError(f"game {index}: {error}") from error
    cache = EvalCache(cache_path)
    values: dict[str, int] = {}
    missing: dict[str, chess.Board] = {}
    for line in lines:
        for position in line.positions:
            if isinstance(position, int) or (epd := position.epd()) in values:
                continue
            cp = cache.get(position, depth)
            if cp is None:
                missing.setdefault(epd, position)
            else:
                values[epd] = cp
    if missing:
        path = find_stockfish(stockfish_path)
        from tqdm import tqdm

        cps = _evaluate_epds(list(missing), depth, path, workers)
        bar = tqdm(cps, total=len(missing), disable=not progress, unit="position", desc="analysis")
        for (epd, board), cp in zip(missing.items(), bar, strict=True):
            values[epd] = cp
            cache.put(board, depth, cp)
    return [_move_evals(line, lambda board: values[board.epd()]) for line in lines]


def _evaluate_epds(epds: list[str], depth: int, path: str, workers: int) -> Iterator[int]:
    """Stockfish's value of each EPD, in order: here, or in a pool of ``workers`` processes."""
    if workers == 1 or len(epds) == 1:
        with StockfishEvaluator(depth, path=path) as evaluator:
            for epd in epds:
                yield evaluator(chess.Board(epd))
        return
    workers = min(workers, len(epds))
    context = multiprocessing.get_context("spawn")  # no fork of a parent holding engine threads
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(depth, path)
    ) as pool:
        # chunks amortise the round trips at low depth while leaving each worker several
        chunksize = max(1, min(16, len(epds) // (4 * workers)))
        yield from pool.map(_evaluate_in_worker, epds, chunksize=chunksize)


_WORKER: dict[str, StockfishEvaluator] = {}


def _start_worker(depth: int, path: str) -> None:
    evaluator = StockfishEvaluator(depth, path=path)
    _WORKER["evaluator"] = evaluator
    # A pool worker joins its threads before atexit runs, and python-chess's engine thread lives
    # until the engine quits: without this exit hook the worker, and the pool, would never end.
    multiprocessing.util.Finalize(evaluator, evaluator.close, exitpriority=10)


def _evaluate_in_worker(epd: str) -> int:
    return _WORKER["evaluator"](chess.Board(epd))
