"""``run(...)``: a tournament from its players to ``OUT/`` (``python -m chess_env arena``).

Where games run:
- engines, the built-in players and SB3 models: in ``workers`` processes (the "spawn" start
  method: nothing of this process's state is inherited), each keeping its players between games;
  with ``workers=1`` in one thread of this process;
- games with an LLM (``openai:``) or a player registered at run time (``register_player`` is not
  seen by a fresh process): in threads, at most ``llm_concurrency`` at a time per endpoint (the
  ``base_url``), with new players per game.

Every finished game is appended to ``OUT/games.jsonl`` at once (``chess_env.arena.store``); a rerun
of the same command plays only what is missing. Then, with ``analyse_depth``, Stockfish rates the
moves (cached in ``OUT/evals.jsonl``), and ``OUT/result.json``, ``games.pgn``, ``leaderboard.md``
and ``leaderboard.html`` are written.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.util
import os
import re
import sys
import time
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import chess
from tqdm import tqdm

from chess_env.arena.match import PlayerPool, play_scheduled
from chess_env.arena.openings import load_openings, pick_openings
from chess_env.arena.pgn_export import write_pgn
from chess_env.arena.ratings import fit_ratings
from chess_env.arena.report import write_reports
from chess_env.arena.results import ArenaConfig, ArenaGame, ArenaResult, Format
from chess_env.arena.schedule import (
    DEFAULT_LADDER,
    DEFAULT_MAX_PLIES,
    ScheduledGame,
    pairings,
    schedule,
)
from chess_env.arena.scorecard import DEFAULT_PRIOR_DRAWS, Prices, build_result, game_scores
from chess_env.arena.store import GameLog
from chess_env.core.players import check_player, make_player, parse_player, stockfish_installed
from chess_env.errors import PlayerSpecError, StockfishNotFoundError

__all__ = ["DEFAULT_LADDER", "DEFAULT_MAX_PLIES", "Tournament", "parse_anchor", "prepare", "run"]

_IN_PROCESS_KINDS = {"random", "greedy", "stockfish", "alphabeta", "model"}
_RATING = re.compile(r"^(?P<spec>.+)@(?P<rating>-?\d+(?:\.\d+)?)$")


def parse_anchor(text: str) -> tuple[str, float | None]:
    """An anchor's spec and pinned rating: ``SPEC@RATING``, a Stockfish ``elo=``, else None.

    Example:
        >>> parse_anchor("stockfish?elo=1750&movetime=0.05")
        ('stockfish?elo=1750&movetime=0.05', 1750.0)
        >>> parse_anchor("random@400"), parse_anchor("greedy")
        (('random', 400.0), ('greedy', None))
    """
    pinned = _RATING.match(text)
    if pinned:
        return pinned["spec"], float(pinned["rating"])
    spec = parse_player(text)
    elo = spec.options.get("elo") if spec.kind == "stockfish" else None
    return text, float(elo) if elo is not None else None


def run(players: Sequence[str], **options: Any) -> ArenaResult:
    """Play (or resume) a tournament and write its results: ``prepare(...).play()``.

    Example:
        >>> import tempfile
        >>> result = run(["greedy", "random"], anchors=[], openings="startpos",
        ...              games_per_pair=2, out=tempfile.mkdtemp(), progress=False)
        >>> [(card.name, card.points) for card in result.players]
        [('greedy', 2.0), ('random', 0.0)]
    """
    return prepare(players, **options).play()


@dataclass
class Tournament:
    """A checked tournament, its schedule and its log, ready to play what is missing."""

    config: ArenaConfig
    games: list[ScheduledGame]
    log: GameLog
    analyse_depth: int | None
    workers: int
    llm_concurrency: int
    prices: Prices | None
    bootstrap: int
    prior_draws: float
    progress: bool

    @property
    def pending(self) -> list[ScheduledGame]:
        """The games still to play: never played, or stopped by an endpoint outage."""
        done = self.log.done
        return [game for game in self.games if game.game_id not in done]

    def play(self) -> ArenaResult:
        """Play the pending games, analyse, and write ``result.json`` and the reports."""
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        _run_async(_play_all(self))
        log, depth = self.log, self.analyse_depth
        analyses = None if depth is None else _analyse(log, depth, self.workers, self.progress)
        result = build_result(
            self.config,
            log.records,
            analyses=analyses,
            analyse_depth=depth,
            prices=self.prices,
            bootstrap=self.bootstrap,
            prior_draws=self.prior_draws,
            wall_seconds=time.perf_counter() - started,
            cpu_seconds=_cpu_seconds() - cpu_started,
        )
        out_dir = log.out_dir
        (out_dir / "result.json").write_text(result.model_dump_json(indent=2) + "\n", "utf-8")
        latest = sorted(log.latest.values(), key=lambda game: game.index)
        write_pgn(latest, out_dir / "games.pgn", analyses)
        write_reports(result, out_dir)
        return result


def prepare(
    players: Sequence[str],
    *,
    anchors: Sequence[str] | None = None,
    format: Format = "round-robin",
    games_per_pair: int | None = None,
    openings: str = "default",
    analyse_depth: int | None = None,
    workers: int = 1,
    seed: int = 0,
    out: str | os.PathLike[str] = "arena",
    fresh: bool = False,
    max_plies: int = DEFAULT_MAX_PLIES,
    llm_concurrency: int = 4,
    prices: Prices | None = None,
    bootstrap: int = 1000,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    progress: bool = True,
) -> Tournament:
    """Check everything a tournament needs before its first game, and open its log.

    A bad spec, an odd ``games_per_pair``, an unreadable opening file or a changed configuration
    in ``out`` raise here (``ValueError``; ``StockfishNotFoundError`` for a missing engine).

    Args:
        players: the candidates' specs (``chess_env.core.players``); a round robin plays everyone.
        anchors: the ladder (default ``DEFAULT_LADDER``; ``[]`` for none): a Stockfish with
            ``elo=`` is pinned at that Elo, ``SPEC@RATING`` at RATING, other anchors are rated.
        format: "round-robin" (every pair among players and anchors) or "gauntlet" (every
            candidate against every anchor, plus the ladder among itself).
        games_per_pair: even; each picked opening is played with both colours (default: every
            opening of the suite, twice).
        openings: "default" (the package's suite), "startpos", or a FEN/EPD/PGN file.
        analyse_depth: Stockfish depth of the move-quality analysis (None: none).
        workers: processes for engine and policy games (and the analysis).
        seed: picks the openings and seeds every game.
        out: the folder of ``games.jsonl`` and the reports; a rerun resumes from it.
        fresh: discard the games in ``out`` and start over (needed when the configuration
            changed).
        max_plies: a game still going after this many plies (after the opening) is a draw.
        llm_concurrency: LLM games at once per endpoint.
        prices: model -> (dollars per million prompt tokens, per million completion tokens).
        bootstrap: bootstrap resamples of the rating intervals.
        prior_draws: virtual draws added to each pairing that met, so that a perfect score
            stays finite (``DEFAULT_PRIOR_DRAWS``; 0: plain maximum likelihood).
        progress: a progress bar with the current ratings on stderr.
    """
    _check_counts(workers, llm_concurrency, max_plies, analyse_depth, bootstrap)
    ladder = [parse_anchor(text) for text in (DEFAULT_LADDER if anchors is None else anchors)]
    if anchors is None and not stockfish_installed():
        raise StockfishNotFoundError(
            "the default anchors are Stockfish at UCI_Elo 1350, 1750 and 2150, and no Stockfish "
            "was found: install it (apt-get install stockfish), or give other --anchors "
            "(e.g. random greedy alphabeta:2, or none)"
        )
    if analyse_depth is not None and not stockfish_installed():
        raise StockfishNotFoundError(
            "--analyse-depth (analyse_depth) needs Stockfish to evaluate the moves: install it "
            "(apt-get install stockfish) or leave the analysis out"
        )
    suite = load_openings(openings)
    per_pair = 2 * len(suite.openings) if games_per_pair is None else games_per_pair
    picked = pick_openings(suite, per_pair // 2, seed)
    config = ArenaConfig(
        players=list(players),
        anchors=[spec for spec, _ in ladder],
        anchor_ratings={spec: rating for spec, rating in ladder if rating is not None},
        format=format,
        games_per_pair=max(per_pair, 2),
        openings=str(openings),
        openings_digest=suite.digest,
        opening_ids=[opening.id for opening in picked],
        seed=seed,
        max_plies=max_plies,
    )
    games = schedule(pairings(config.players, config.anchors, format), picked, per_pair, seed)
    _check_players([*config.players, *config.anchors])
    log = GameLog(out, config, fresh=fresh)
    return Tournament(
        config,
        games,
        log,
        analyse_depth,
        workers,
        llm_concurrency,
        prices,
        bootstrap,
        prior_draws,
        progress,
    )


def _cpu_seconds() -> float:
    """CPU time of this process and of the processes it has waited for (workers, engines)."""
    import resource

    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))  # fmt: skip
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _check_counts(
    workers: int, llm_concurrency: int, max_plies: int, analyse_depth: int | None, bootstrap: int
) -> None:
    for name, value in (("workers", workers), ("llm_concurrency", llm_concurrency),
                        ("max_plies", max_plies), ("bootstrap", bootstrap + 1)):  # fmt: skip
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if analyse_depth is not None and not 1 <= analyse_depth <= 30:
        raise ValueError(f"analyse_depth must be in 1..30, got {analyse_depth}")


def _check_players(specs: Sequence[str]) -> None:
    """Every spec is made once now, so that a bad path or an Elo out of the engine's range is
    reported before the first game rather than by a worker mid-run."""
    for text in specs:
        spec = check_player(text)
        if spec.kind == "human":
            raise PlayerSpecError(f"{text!r}: a person at this terminal cannot play an arena")
        if spec.kind != "openai":
            make_player(text).close()


def _run_async(coroutine: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run``, also from a notebook whose event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine)
        return
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, coroutine).result()


def _threaded(game: ScheduledGame) -> bool:
    return any(
        parse_player(name).kind not in _IN_PROCESS_KINDS for name in (game.white, game.black)
    )


def _endpoints(game: ScheduledGame) -> list[str]:
    """The LLM endpoints a game talks to (its concurrency keys, "local" for registered kinds
    with none), in a fixed order so that two games never wait on each other's."""
    from chess_env.text.llm_player import llm_settings

    keys = set()
    for name in (game.white, game.black):
        spec = parse_player(name)
        if spec.kind == "openai":
            keys.add(llm_settings(spec)[0].base_url)
    return sorted(keys) or ["local"]


async def _play_all(tournament: Tournament) -> None:
    """Play ``tournament``'s pending games, appending each to its log as soon as it ends."""
    pending, log = tournament.pending, tournament.log
    workers, llm_concurrency = tournament.workers, tournament.llm_concurrency
    max_plies, total = tournament.config.max_plies, len(tournament.games)
    threaded = [game for game in pending if _threaded(game)]
    pooled = [game for game in pending if not _threaded(game)]
    limits: dict[str, asyncio.Semaphore] = {}
    bar = tqdm(total=total, initial=total - len(pending), desc="arena games", unit="game",
               file=sys.stderr, disable=not tournament.progress, dynamic_ncols=True)  # fmt: skip
    with contextlib.ExitStack() as stack:
        loop = asyncio.get_running_loop()
        engines = stack.enter_context(_engine_executor(workers, bool(pooled)))
        threads = stack.enter_context(ThreadPoolExecutor(max_workers=max(llm_concurrency, 1) * 4))
        local_pool = PlayerPool()
        stack.callback(local_pool.close)

        async def play_pooled(game: ScheduledGame) -> ArenaGame:
            if isinstance(engines, ProcessPoolExecutor):
                return await loop.run_in_executor(engines, _play_in_worker, game, max_plies)
            return await loop.run_in_executor(engines, play_scheduled, game, local_pool, max_plies)

        async def play_threaded(game: ScheduledGame) -> ArenaGame:
            async with contextlib.AsyncExitStack() as held:
                for key in _endpoints(game):
                    await held.enter_async_context(
                        limits.setdefault(key, asyncio.Semaphore(llm_concurrency))
                    )
                fresh = PlayerPool(fresh=True)
                return await loop.run_in_executor(threads, play_scheduled, game, fresh, max_plies)

        tasks = [asyncio.ensure_future(play_pooled(game)) for game in pooled]
        tasks += [asyncio.ensure_future(play_threaded(game)) for game in threaded]
        try:
            for finished in asyncio.as_completed(tasks):
                game = await finished
                log.append(game)
                bar.update()
                bar.set_postfix_str(_standings(log, tournament.prior_draws), refresh=False)
        finally:
            for task in tasks:
                task.cancel()
            bar.close()


@contextlib.contextmanager
def _engine_executor(workers: int, needed: bool) -> Iterator[Executor]:
    if workers == 1 or not needed:
        with ThreadPoolExecutor(max_workers=1) as thread:
            yield thread
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_WORKER_POOL: PlayerPool | None = None


def _init_worker() -> None:
    global _WORKER_POOL
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # a model's torch: one thread per worker
    _WORKER_POOL = PlayerPool()
    # A pool worker joins its threads before atexit runs, and python-chess's engine thread lives
    # until its engine quits: without this exit hook the worker, and the pool, never end.
    multiprocessing.util.Finalize(_WORKER_POOL, _WORKER_POOL.close, exitpriority=10)


def _play_in_worker(game: ScheduledGame, max_plies: int) -> ArenaGame:
    assert _WORKER_POOL is not None, "the worker's initializer did not run"
    return play_scheduled(game, _WORKER_POOL, max_plies)


def _standings(log: GameLog, prior_draws: float, shown: int = 4) -> str:
    """The current leaders, for the progress bar (a point fit, no intervals)."""
    rated = [game for game in log.latest.values() if game.rated]
    if not rated:
        return ""
    names = sorted({name for game in rated for name in (game.white, game.black)})
    anchors = {k: v for k, v in log.config.anchor_ratings.items() if k in names} or None
    fit = fit_ratings(game_scores(rated), names, anchors, bootstrap=0, prior_draws=prior_draws)
    leaders = sorted(fit.ratings.items(), key=lambda item: -item[1])[:shown]
    return ", ".join(f"{_short(name)} {rating:.0f}" for name, rating in leaders)


def _short(name: str, width: int = 18) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _analyse(log: GameLog, depth: int, workers: int, progress: bool) -> dict[str, list[Any]]:
    from chess_env.arena.analysis import analyse_games

    rated = [game for game in log.latest.values() if game.rated]
    starts = []
    for game in rated:
        board = chess.Board(game.root_fen)
        for uci in game.opening_moves:
            board.push_uci(uci)
        starts.append((board.fen(), [move.uci for move in game.moves]))
    evals = analyse_games(
        starts, depth, cache_path=log.out_dir / "evals.jsonl", workers=workers, progress=progress
    )
    return {game.game_id: game_evals for game, game_evals in zip(rated, evals, strict=True)}
