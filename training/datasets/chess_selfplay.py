"""Game-like chess positions, each labelled by Stockfish as it is played: ``selfplay_positions``.

Games start from the arena's opening suite, a few random plies further on so that no two games
start alike, and go on with moves drawn from the labels themselves. At each position Stockfish
scores every legal move at ``soft_depth`` (MultiPV); the move played is drawn from
``softmax(score / temperature_cp)``, or, with probability ``random_move_rate``, uniformly. So the
positions are those of a fallible engine's games, the kind an agent meets against a weak engine,
with its mistakes and their punishment. Each position is labelled with the best move and its score
at ``label_depth`` and with every legal move's score at ``soft_depth``: the soft targets.

Work is split into blocks of ``BLOCK_POSITIONS`` positions; block ``b``'s games are seeded by
``(seed, b, game)`` and each starts from a cleared engine hash, so any number of workers gives the
same rows, and a block's rows do not depend on the blocks before it (the unit a resumed run
skips).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import chess
import numpy as np
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from chess_env.arena.openings import OpeningSuite, load_openings
from training.datasets.parallel import BLOCK_POSITIONS, GAMES_PER_BLOCK, episode_seed, run_jobs
from training.datasets.uci import MATE_SCORE, UciEngine

ALL_MOVES = 500  # Stockfish's largest MultiPV: every legal move, with no count of them here

__all__ = [
    "LabelledPosition",
    "SelfPlayConfig",
    "WorkCost",
    "play_block",
    "selfplay_positions",
    "win_probability",
]


@dataclass(frozen=True)
class SelfPlayConfig:
    """How the games are played and labelled.

    Attributes:
        label_depth: Stockfish's depth for the best move and its score.
        soft_depth: the depth at which every legal move is scored (MultiPV).
        temperature_cp: the softness of the move drawn from the soft scores, in centipawns (a
            move 1 temperature worse than the best is ``e`` times less likely).
        random_move_rate: the share of moves drawn uniformly instead.
        opening_random_plies: up to this many uniform plies after the opening line.
        max_plies: a game stops after this many plies past its opening.
        openings: the opening suite (``chess_env.arena.openings.load_openings``'s sources).
    """

    label_depth: int = 6
    soft_depth: int = 2
    temperature_cp: float = 80.0
    random_move_rate: float = 0.05
    opening_random_plies: int = 4
    max_plies: int = 200
    openings: str = "default"


@dataclass(frozen=True)
class LabelledPosition:
    """One position of a game and its labels (moves in UCI, scores in centipawns for the side to
    move; a mate is ``training.datasets.uci.MATE_SCORE`` less its plies).

    Attributes:
        fen: the position.
        game: the game it comes from, unique within the run.
        best: Stockfish's move at ``label_depth``.
        score: its score.
        moves: every legal move, best first by ``scores``.
        scores: each move's score at ``soft_depth``.
    """

    fen: str
    game: int
    best: str
    score: int
    moves: tuple[str, ...]
    scores: tuple[int, ...]


@dataclass(frozen=True)
class WorkCost:
    """CPU seconds a block took: this process's and the engine's."""

    python: float
    engine: float

    def __add__(self, other: WorkCost) -> WorkCost:
        return WorkCost(self.python + other.python, self.engine + other.engine)


def selfplay_positions(
    positions: int,
    seed: int,
    config: SelfPlayConfig | None = None,
    *,
    workers: int = 1,
    progress_bar: bool = True,
) -> tuple[list[LabelledPosition], WorkCost]:
    """``positions`` labelled positions from seeded games, and what they cost.

    Example:
        >>> rows, cost = selfplay_positions(8, seed=0, progress_bar=False)  # doctest: +SKIP
        >>> len(rows), rows[0].scores[0] == max(rows[0].scores)  # doctest: +SKIP
        (8, True)
    """
    if positions < 1:
        raise ValueError(f"positions must be at least 1, got {positions}")
    config = config or SelfPlayConfig()
    quotas = [
        min(BLOCK_POSITIONS, positions - start) for start in range(0, positions, BLOCK_POSITIONS)
    ]
    jobs = [(seed, block, quota, config) for block, quota in enumerate(quotas)]
    with tqdm(total=positions, desc="self-play", unit="pos", disable=not progress_bar) as bar:
        results = run_jobs(play_block, jobs, quotas, workers, bar)
    rows = [row for block_rows, _ in results for row in block_rows]
    cost = sum((block_cost for _, block_cost in results), WorkCost(0.0, 0.0))
    return rows, cost


def play_block(
    seed: int, block: int, quota: int, config: SelfPlayConfig
) -> tuple[list[LabelledPosition], WorkCost]:
    """Block ``block``'s ``quota`` positions, from its own games: one worker's share."""
    started = time.process_time()
    suite = load_openings(config.openings)
    rows: list[LabelledPosition] = []
    with UciEngine() as engine:
        engine_start = engine.cpu_seconds()
        game = 0
        while len(rows) < quota:
            game_id = block * GAMES_PER_BLOCK + game
            rng = np.random.default_rng(episode_seed(seed, block, game))
            rows += _play_game(engine, suite, rng, config, game_id, quota - len(rows))
            game += 1
        engine_cost = engine.cpu_seconds() - engine_start
    return rows, WorkCost(time.process_time() - started, engine_cost)


def _play_game(
    engine: UciEngine,
    suite: OpeningSuite,
    rng: np.random.Generator,
    config: SelfPlayConfig,
    game: int,
    limit: int,
) -> list[LabelledPosition]:
    """One game's labelled positions (at most ``limit``)."""
    openings = suite.openings
    opening = openings[int(rng.integers(len(openings)))]
    board = chess.Board(opening.root_fen)
    for move in opening.moves:
        board.push_uci(move)
    for _ in range(int(rng.integers(config.opening_random_plies + 1))):
        legal = list(board.legal_moves)
        if not legal:
            break
        board.push(legal[int(rng.integers(len(legal)))])
    engine.new_game()
    rows: list[LabelledPosition] = []
    for _ in range(config.max_plies):
        if len(rows) >= limit or _game_over(board):
            break
        fen = board.fen()
        lines = engine.analyse(fen, config.soft_depth, multipv=ALL_MOVES)
        best = lines[0]
        if config.label_depth != config.soft_depth:
            best = engine.analyse(fen, config.label_depth)[0]
        moves = tuple(line.move for line in lines)
        scores = tuple(line.score for line in lines)
        rows.append(LabelledPosition(fen, game, best.move, best.score, moves, scores))
        board.push(chess.Move.from_uci(_draw_move(moves, scores, rng, config)))
    return rows


def _game_over(board: chess.Board) -> bool:
    """Mate, stalemate, a draw by material, the 75-move rule or a threefold repetition; cheaper
    than ``Board.is_game_over`` (which looks for fivefold repetitions move by move)."""
    return (
        not any(board.generate_legal_moves())
        or board.is_insufficient_material()
        or board.halfmove_clock >= 150
        or board.is_repetition(3)
    )


def _draw_move(
    moves: tuple[str, ...],
    scores: tuple[int, ...],
    rng: np.random.Generator,
    config: SelfPlayConfig,
) -> str:
    """The move played: uniform with probability ``random_move_rate``, else by the soft scores."""
    if rng.random() < config.random_move_rate:
        return moves[int(rng.integers(len(moves)))]
    top, temperature = scores[0], max(config.temperature_cp, 1e-6)  # scores are best first
    weights = [math.exp(max(score - top, -50 * temperature) / temperature) for score in scores]
    point, total = rng.random() * sum(weights), 0.0
    for move, weight in zip(moves, weights, strict=True):
        total += weight
        if point < total:
            return move
    return moves[-1]


def win_probability(score: int) -> float:
    """The side to move's expected score for a centipawn ``score`` (Lichess's logistic fit;
    a mate is a certain result)."""
    if abs(score) >= MATE_SCORE - 1000:
        return 1.0 if score > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-0.00368208 * score))
