"""Chess positions with a known good answer, for short-horizon RL: the shipped set and its builder.

- ``ChessTask``: one position, its ``kind`` and ``answers``: every legal move (UCI) that solves it.
- ``TASK_KINDS``: ``mate_in_1``, ``mate_in_2``, ``win_material``, ``avoid_blunder``.
- ``load_tasks(kind=None)``: the shipped set (``data/chess_tasks.jsonl``, provenance in
  ``data/chess_tasks.meta.json``), or a set built here (``path=``).
- ``check_answer(task, move)``: whether a move, in SAN or UCI, is one of the answers.
- ``build_tasks(...)`` and ``python -m training.llm_rl.tasks build --out FILE``: a new set, made
  with Stockfish.

What each kind means, so that every answer is ground truth and not one engine's single pick:

- ``mate_in_1``: the answers are all the mating moves, found by python-chess alone.
- ``mate_in_2``: no mate in one; Stockfish sees a mate in two, and the answers are every move after
  which each reply allows a mate in one, found by python-chess's exhaustive search.
- ``win_material``: the best move is a capture and gains at least a minor piece
  (``MINOR_PIECE_CP``) over the material on the board; the answers are the moves within
  ``WIN_MARGIN_CP`` of the best, and every other move is at least ``BLUNDER_CP`` worse than the
  best (a clear gap, no borderline moves).
- ``avoid_blunder``: more than half the legal moves lose ``BLUNDER_CP`` or more against the best;
  the answers are the moves that do not.

Both score-based kinds come only from games not yet decided: the best move scores above
``-LOST_CP`` and below ``DECIDED_CP``, where a gap between moves is about material and not about
how fast a won game is won.

Scores are Stockfish's, every legal move searched (MultiPV) at the build depth from a cleared hash
with one thread, so the same engine, seed and depth build the same set. The shipped set is the
builder's defaults (``--count 400 --seed 0 --depth 8``) with Stockfish 15.1.
Positions come from games that start from the arena's opening suite and go on with random moves
against one-ply Stockfish (the weak side blunders, the other side punishes), deduplicated by the
position part of the FEN (board, side, castling, en passant).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import itertools
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

import chess
import chess.engine
import numpy as np
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from chess_env.arena.openings import DEFAULT_SOURCE, load_openings

__all__ = [
    "BLUNDER_CP",
    "DATA_FILE",
    "DECIDED_CP",
    "LOST_CP",
    "META_FILE",
    "MINOR_PIECE_CP",
    "TASK_KINDS",
    "WIN_MARGIN_CP",
    "ChessTask",
    "TaskKind",
    "build_tasks",
    "check_answer",
    "load_tasks",
    "mates_in_one",
    "mates_in_two",
]

TaskKind = Literal["mate_in_1", "mate_in_2", "win_material", "avoid_blunder"]
TASK_KINDS: tuple[TaskKind, ...] = get_args(TaskKind)
MINOR_PIECE_CP = 300
WIN_MARGIN_CP = 100
BLUNDER_CP = 300
LOST_CP = 500
DECIDED_CP = 1500
DEFAULT_DEPTH = 8
DATA_FILE = "data/chess_tasks.jsonl"
META_FILE = "data/chess_tasks.meta.json"
_MATE_CP = 100_000
_PIECE_CP = {
    chess.PAWN: 100,
    chess.KNIGHT: 300,
    chess.BISHOP: 300,
    chess.ROOK: 500,
    chess.QUEEN: 900,
}
_OPENING_PLIES = (0, 40)  # random/weak plies played after the book line, drawn uniformly


@dataclass(frozen=True)
class ChessTask:
    """A position whose ``answers`` (UCI, sorted) are every legal move that solves it.

    ``best`` is Stockfish's move; ``eval_cp`` (centipawns, side to move) or ``mate`` (moves to
    mate) is its score for it.

    Example:
        >>> task = load_tasks("mate_in_1")[0]
        >>> task.kind, task.mate, task.best in task.answers
        ('mate_in_1', 1, True)
    """

    task_id: str
    kind: TaskKind
    fen: str
    answers: tuple[str, ...]
    best: str
    eval_cp: int | None = None
    mate: int | None = None

    def board(self) -> chess.Board:
        """The position (a new board each call)."""
        return chess.Board(self.fen)

    def to_row(self) -> dict[str, object]:
        """The JSON row the task set stores (``answers`` as a list)."""
        return {**asdict(self), "answers": list(self.answers)}


def load_tasks(
    kind: str | None = None, *, path: str | os.PathLike[str] | None = None
) -> list[ChessTask]:
    """The shipped task set (or the JSONL file at ``path``), of one ``kind`` or all, in file order.

    Example:
        >>> tasks = load_tasks()
        >>> sorted({task.kind for task in tasks}) == sorted(TASK_KINDS)
        True
        >>> all(task.kind == "win_material" for task in load_tasks("win_material"))
        True
    """
    if kind is not None and kind not in TASK_KINDS:
        raise ValueError(f"kind must be one of {', '.join(TASK_KINDS)}, got {kind!r}")
    if path is None:
        text = resources.files("training.llm_rl").joinpath(DATA_FILE).read_text(encoding="utf-8")
        label = f"training/llm_rl/{DATA_FILE}"
    else:
        text, label = Path(path).read_text(encoding="utf-8"), str(path)
    tasks = [_task_from_row(line, f"{label}:{number}") for number, line in _lines(text)]
    return [task for task in tasks if kind is None or task.kind == kind]


def check_answer(task: ChessTask, move: str) -> bool:
    """Whether ``move`` (UCI or SAN) is one of the task's answers; a move that does not parse or is
    illegal there is simply not an answer.

    Example:
        >>> task = load_tasks("mate_in_1")[0]
        >>> board = task.board()
        >>> uci = task.answers[0]
        >>> check_answer(task, uci), check_answer(task, board.san(board.parse_uci(uci)))
        (True, True)
        >>> check_answer(task, "nonsense")
        False
    """
    board = task.board()
    text = move.strip()
    try:
        parsed = board.parse_uci(text)
    except ValueError:
        try:
            parsed = board.parse_san(text)
        except ValueError:
            return False
    return parsed.uci() in task.answers


def mates_in_one(board: chess.Board) -> list[chess.Move]:
    """Every move that checkmates, in python-chess's move order.

    Example:
        >>> mates_in_one(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"))
        [Move.from_uci('a1a8')]
    """
    mates = []
    for move in board.legal_moves:
        if board.gives_check(move):
            board.push(move)
            if board.is_checkmate():
                mates.append(move)
            board.pop()
    return mates


def mates_in_two(board: chess.Board) -> list[chess.Move]:
    """Every move after which the opponent has a reply and each reply allows a mate in one
    (exhaustive search; a move that mates at once is not counted).

    Example:
        >>> board = chess.Board("k7/8/2K5/8/8/8/8/7R w - - 0 1")
        >>> mates_in_one(board), [move.uci() for move in mates_in_two(board)]
        ([], ['c6c7', 'c6b6'])
    """
    winners = []
    for move in board.legal_moves:
        board.push(move)
        if not board.is_game_over(claim_draw=False) and all(
            _mate_follows(board, r) for r in board.legal_moves
        ):
            winners.append(move)
        board.pop()
    return winners


def _mate_follows(board: chess.Board, reply: chess.Move) -> bool:
    board.push(reply)
    found = bool(mates_in_one(board))
    board.pop()
    return found


# -- building a set ------------------------------------------------------------------------


def build_tasks(
    count: int,
    engine: chess.engine.SimpleEngine,
    *,
    seed: int = 0,
    depth: int = DEFAULT_DEPTH,
    progress: bool = True,
) -> list[ChessTask]:
    """``count`` tasks, as even a share per kind as ``count`` allows (the first kinds take the
    remainder), from positions of seeded games, classified with ``engine`` at ``depth``.

    Raises ``RuntimeError`` naming the short kinds if the games run out first (after
    ``400 * count`` positions).
    """
    if count < 1:
        raise ValueError(f"count must be a positive integer, got {count}")
    quotas: dict[str, int] = {
        kind: count // len(TASK_KINDS) + (i < count % len(TASK_KINDS))
        for i, kind in enumerate(TASK_KINDS)
    }
    found: dict[str, list[ChessTask]] = {kind: [] for kind in TASK_KINDS}
    seen: set[str] = set()
    with tqdm(
        total=count, desc="chess tasks", unit="task", disable=not progress, file=sys.stderr
    ) as bar:
        used_games: set[int] = set()  # one task per game, for diversity
        for index, (game, board) in enumerate(_positions(engine, seed)):
            if index >= 400 * count:
                short = {k: quotas[k] - len(v) for k, v in found.items() if len(v) < quotas[k]}
                raise RuntimeError(f"ran out of positions; still missing {short}")
            key = board.epd()
            if key in seen or game in used_games:
                continue
            seen.add(key)
            wanted: set[str] = {kind for kind in TASK_KINDS if len(found[kind]) < quotas[kind]}
            task = _classify(board, engine, depth, wanted)
            if task is not None:
                found[task.kind].append(task)
                used_games.add(game)
                bar.update(1)
                bar.set_postfix({kind: len(tasks) for kind, tasks in found.items()})
            if all(len(found[kind]) >= quotas[kind] for kind in TASK_KINDS):
                break
    return [task for kind in TASK_KINDS for task in found[kind]]


def _positions(engine: chess.engine.SimpleEngine, seed: int) -> Iterator[tuple[int, chess.Board]]:
    """Positions of endless seeded games, with their game's number: a book line, then random moves
    against one-ply Stockfish."""
    rng = np.random.default_rng(seed)
    openings = load_openings("default").openings
    for game in itertools.count():
        board = openings[int(rng.integers(len(openings)))].board()
        weak_side = bool(rng.integers(2))
        for _ in range(int(rng.integers(_OPENING_PLIES[0], _OPENING_PLIES[1] + 1))):
            if board.is_game_over(claim_draw=True):
                break
            board.push(_weak_move(board, engine, rng, board.turn == weak_side))
        while not board.is_game_over(claim_draw=True):
            yield game, board.copy(stack=False)
            board.push(_weak_move(board, engine, rng, board.turn == weak_side))


def _weak_move(
    board: chess.Board,
    engine: chess.engine.SimpleEngine,
    rng: np.random.Generator,
    random_side: bool,
) -> chess.Move:
    if random_side:
        moves = list(board.legal_moves)
        return moves[int(rng.integers(len(moves)))]
    move = engine.play(board, chess.engine.Limit(depth=1), game=object()).move
    assert move is not None  # the game is not over
    return move


def _classify(
    board: chess.Board, engine: chess.engine.SimpleEngine, depth: int, wanted: set[str]
) -> ChessTask | None:
    """The first kind (in ``TASK_KINDS`` order) the position is a clean example of, if wanted."""
    mates = mates_in_one(board)
    if mates:
        return (
            _task("mate_in_1", board, sorted(m.uci() for m in mates), mates[0].uci(), None, 1)
            if "mate_in_1" in wanted
            else None
        )
    first = _move_scores(board, engine, depth, lines=1)
    best_move, best = next(iter(first.items()))
    if best >= _MATE_CP - 2:  # Stockfish sees a mate in (at most) two
        if "mate_in_2" not in wanted:
            return None
        answers = sorted(m.uci() for m in mates_in_two(board))
        return (
            _task("mate_in_2", board, answers, best_move, None, 2) if best_move in answers else None
        )
    if not -LOST_CP < best < DECIDED_CP:
        return None
    capture = board.is_capture(chess.Move.from_uci(best_move))
    may_win = "win_material" in wanted and capture and best - _material(board) >= MINOR_PIECE_CP
    if not (may_win or "avoid_blunder" in wanted):
        return None
    scores = _move_scores(board, engine, depth, lines=board.legal_moves.count())
    return _scored_task(board, scores, wanted)


def _scored_task(board: chess.Board, scores: dict[str, int], wanted: set[str]) -> ChessTask | None:
    """A ``win_material`` or ``avoid_blunder`` task from every legal move's score, if it is one."""
    best_move, best = max(scores.items(), key=lambda item: item[1])
    if not -LOST_CP < best < DECIDED_CP:
        return None
    solving = sorted(m for m, s in scores.items() if s >= best - WIN_MARGIN_CP)
    clear_gap = all(s <= best - BLUNDER_CP for m, s in scores.items() if m not in solving)
    gain = best - _material(board)
    capture = board.is_capture(chess.Move.from_uci(best_move))
    if "win_material" in wanted and capture and gain >= MINOR_PIECE_CP and clear_gap:
        return _task("win_material", board, solving, best_move, best, None)
    safe = sorted(m for m, s in scores.items() if s > best - BLUNDER_CP)
    if "avoid_blunder" in wanted and 2 * len(safe) < len(scores):
        return _task("avoid_blunder", board, safe, best_move, best, None)
    return None


def _move_scores(
    board: chess.Board, engine: chess.engine.SimpleEngine, depth: int, lines: int
) -> dict[str, int]:
    """The ``lines`` best moves' scores, best first (centipawns for the side to move; a mate in n
    as ``_MATE_CP - n``), searched from a cleared hash: the same position, the same scores."""
    infos = engine.analyse(board, chess.engine.Limit(depth=depth), multipv=lines, game=object())
    return {
        info["pv"][0].uci(): info["score"].pov(board.turn).score(mate_score=_MATE_CP)
        for info in infos
        if "pv" in info and "score" in info
    }


def _material(board: chess.Board) -> int:
    """Material of the side to move minus the other side's, in centipawns."""
    total = 0
    for piece_type, value in _PIECE_CP.items():
        total += value * (
            len(board.pieces(piece_type, board.turn))
            - len(board.pieces(piece_type, not board.turn))
        )
    return total


def _task(
    kind: TaskKind,
    board: chess.Board,
    answers: Sequence[str],
    best: str,
    eval_cp: int | None,
    mate: int | None,
) -> ChessTask:
    fen = board.fen()
    digest = hashlib.sha256(board.epd().encode()).hexdigest()[:12]
    return ChessTask(f"{kind}-{digest}", kind, fen, tuple(answers), best, eval_cp, mate)


def _task_from_row(line: str, where: str) -> ChessTask:
    try:
        row = json.loads(line)
        task = ChessTask(**{**row, "answers": tuple(row["answers"])})
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"{where}: not a task row: {error}") from error
    if task.kind not in TASK_KINDS:
        raise ValueError(f"{where}.kind: must be one of {', '.join(TASK_KINDS)}, got {task.kind!r}")
    return task


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def _meta(
    tasks: list[ChessTask], engine: chess.engine.SimpleEngine, seed: int, depth: int
) -> dict[str, object]:
    return {
        "count": len(tasks),
        "kinds": {kind: sum(task.kind == kind for task in tasks) for kind in TASK_KINDS},
        "engine": engine.id.get("name", "unknown"),
        "depth": depth,
        "seed": seed,
        "date": datetime.date.today().isoformat(),
        "openings": DEFAULT_SOURCE,
        "play": f"after the book line, {_OPENING_PLIES[0]}-{_OPENING_PLIES[1]} plies of random "
        "moves against Stockfish at depth 1 (random side drawn per game), then later positions, "
        "one task per game",
        "margins_cp": {
            "minor_piece": MINOR_PIECE_CP,
            "win_margin": WIN_MARGIN_CP,
            "blunder": BLUNDER_CP,
            "lost": LOST_CP,
            "decided": DECIDED_CP,
        },
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m training.llm_rl.tasks build --out FILE [--count N] [--seed S] [--depth D]``
    (``--engine PATH``): writes ``FILE`` (JSONL) and ``FILE`` with ``.meta.json`` for ``.jsonl``."""
    parser = argparse.ArgumentParser(prog="python -m training.llm_rl.tasks")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build a task set with Stockfish")
    build.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    build.add_argument("--count", type=int, default=400, help="tasks in all (default 400)")
    build.add_argument("--seed", type=int, default=0, help="seed of the games (default 0)")
    build.add_argument(
        "--depth", type=int, default=DEFAULT_DEPTH, help=f"search depth (default {DEFAULT_DEPTH})"
    )
    build.add_argument("--engine", default="/usr/games/stockfish", help="the UCI engine to run")
    args = parser.parse_args(argv)
    with chess.engine.SimpleEngine.popen_uci(args.engine) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        tasks = build_tasks(args.count, engine, seed=args.seed, depth=args.depth)
        meta = _meta(tasks, engine, args.seed, args.depth)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "".join(json.dumps(task.to_row()) + "\n" for task in tasks), encoding="utf-8"
    )
    meta_path = args.out.with_name(args.out.name.removesuffix(".jsonl") + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(tasks)} tasks to {args.out} and {meta_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
