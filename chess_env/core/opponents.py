"""Opponents: random, greedy (1-ply), Stockfish, a trained SB3 policy, or any callable.

All share one protocol: ``opponent(board) -> chess.Move``. The env calls ``choose_move(board,
legal_moves)`` instead, handing over the legal moves it already generated, ``reset(seed)`` at every
episode start (seeded from the env, so the same seed gives the same game) and ``close()`` with the
env. A plain callable ``board -> chess.Move`` is wrapped in ``CallableOpponent``. Specs such as
``"stockfish:3"`` are read by ``chess_env.core.players.make_player``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import chess
import numpy as np

from chess_env.core.encoding import board_to_tensor, legal_actions
from chess_env.core.stalls import STALLS
from chess_env.errors import PlayerFailedError, StockfishNotFoundError

if TYPE_CHECKING:
    import chess.engine

__all__ = [
    "DEFAULT_MOVE_SECONDS",
    "MAX_STOCKFISH_DEPTH",
    "CallableOpponent",
    "GreedyOpponent",
    "Opponent",
    "PolicyOpponent",
    "RandomOpponent",
    "StockfishOpponent",
    "find_stockfish",
]

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
MAX_STOCKFISH_DEPTH = 30  # deeper searches take minutes a move on one core
DEFAULT_MOVE_SECONDS = 10.0  # every Stockfish move stops by then, whatever its depth


class Opponent:
    """Base of every opponent: seeded by the env, closed with it, callable on a board.

    Example:
        >>> class FirstMove(Opponent):
        ...     name = "first"
        ...     def choose_move(self, board, legal_moves):
        ...         return legal_moves[0]
        >>> FirstMove()(chess.Board()).uci()
        'g1h3'
    """

    name = "opponent"

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; ``seed`` fixes every random choice that follows."""
        self.rng = np.random.default_rng(seed)

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        """A move for the side to move; ``legal_moves`` is non-empty and in python-chess order."""
        raise NotImplementedError

    def __call__(self, board: chess.Board) -> chess.Move:
        return self.choose_move(board, list(board.legal_moves))

    def close(self) -> None:
        """Release what the opponent holds (an engine process)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RandomOpponent(Opponent):
    """Plays a uniformly random legal move.

    Example:
        >>> opponent = RandomOpponent(); opponent.reset(seed=0)
        >>> opponent(chess.Board()) in chess.Board().legal_moves
        True
    """

    name = "random"

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        return legal_moves[int(self.rng.integers(len(legal_moves)))]


class GreedyOpponent(Opponent):
    """One ply deep: mate if it can, else the capture (or promotion) that wins the most material.

    Captures are ordered MVV-LVA: the most valuable victim first (a promotion adds the promoted
    piece's value minus the pawn's), then the least valuable attacker; ties and quiet positions
    are broken by the seeded random generator.

    Example:
        >>> board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
        >>> GreedyOpponent()(board).uci()
        'a1a8'
    """

    name = "greedy"

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        for move in legal_moves:
            if board.gives_check(move):
                board.push(move)
                mate = board.is_checkmate()
                board.pop()
                if mate:
                    return move
        best: list[chess.Move] = []
        best_score = (0, 0)
        for move in legal_moves:
            gain = _material_gain(board, move)
            if gain <= 0:
                continue
            attacker = board.piece_type_at(move.from_square) or chess.PAWN
            score = (gain, -PIECE_VALUES.get(attacker, 100))
            if score > best_score:
                best, best_score = [move], score
            elif score == best_score:
                best.append(move)
        choices = best or legal_moves
        return choices[int(self.rng.integers(len(choices)))]


def _material_gain(board: chess.Board, move: chess.Move) -> int:
    victim = chess.PAWN if board.is_en_passant(move) else board.piece_type_at(move.to_square)
    gain = PIECE_VALUES.get(victim, 0) if victim else 0
    if move.promotion:
        gain += PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
    return gain


def find_stockfish(path: str | os.PathLike[str] | None = None) -> str:
    """The Stockfish binary: ``path``, else ``stockfish`` on PATH, else /usr/games/stockfish."""
    candidates = [os.fspath(path)] if path is not None else ["stockfish", "/usr/games/stockfish"]
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    where = f"at {os.fspath(path)!r}" if path is not None else "on PATH or at /usr/games/stockfish"
    raise StockfishNotFoundError(
        f"no Stockfish binary found {where}; install it (Debian/Ubuntu: "
        "'apt-get install stockfish') or pass path=... to StockfishOpponent"
    )


class StockfishOpponent(Opponent):
    """Stockfish through ``chess.engine`` at a fixed depth or move time (optionally weakened).

    Args:
        depth: search depth in plies, 1 to ``MAX_STOCKFISH_DEPTH`` (30); default 1 when no
            ``movetime`` is given, else None (the time decides).
        skill: Stockfish "Skill Level" 0-20 (None: full strength). Below 20 Stockfish picks moves
            with its own clock-seeded randomness, so games are no longer reproducible.
        elo: limit strength to this Elo (``UCI_LimitStrength``); the range depends on the
            Stockfish version (15.1: 1350-2850) and is checked against the engine's own.
        movetime: seconds to think per move (None: until ``depth``).
        max_seconds: the guard rail: a move stops after this many seconds whatever the depth
            (default ``DEFAULT_MOVE_SECONDS``, 10), and an engine that has not answered when as
            long again has passed is abandoned (its side loses). A search cut short by it is no
            longer reproducible; depth 1 finishes in about a millisecond.
        path: the binary; default ``stockfish`` on PATH, then /usr/games/stockfish.
        threads: engine threads (default 1, which with a fixed depth makes play deterministic).

    The binary is looked up when the opponent is made (a clear ``StockfishNotFoundError`` then),
    and the engine process starts on the first move (at once with ``elo``, whose range only the
    engine knows) and ends with ``close()``. An engine that cannot start (an overloaded machine),
    dies, fails or does not answer in time raises ``PlayerFailedError``: its side loses. A search
    whose guard ran out while this process was stopped (``chess_env.core.stalls``) is made again
    once, with a fresh engine.

    Example:
        >>> StockfishOpponent(depth=8, path="/no/stockfish")  # no binary: told at once
        Traceback (most recent call last):
        ...
        chess_env.errors.StockfishNotFoundError: no Stockfish binary found at '/no/stockfish'; ...
    """

    name = "stockfish"

    def __init__(
        self,
        depth: int | None = 1,
        skill: int | None = None,
        elo: int | None = None,
        path: str | os.PathLike[str] | None = None,
        threads: int = 1,
        movetime: float | None = None,
        max_seconds: float = DEFAULT_MOVE_SECONDS,
    ) -> None:
        super().__init__()
        if depth is None and movetime is None:
            depth = 1
        if depth is not None and not 1 <= depth <= MAX_STOCKFISH_DEPTH:
            raise ValueError(f"depth must be in 1..{MAX_STOCKFISH_DEPTH}, got {depth}")
        if skill is not None and not 0 <= skill <= 20:
            raise ValueError(f"skill must be in 0..20, got {skill}")
        for name, seconds in (("movetime", movetime), ("max_seconds", max_seconds)):
            if seconds is not None and not 0 < seconds < float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {seconds}")
        self.depth, self.skill, self.elo, self.threads = depth, skill, elo, threads
        self.movetime, self.max_seconds = movetime, max_seconds
        self.path = find_stockfish(path)
        self._engine: chess.engine.SimpleEngine | None = None
        if elo is not None:  # only the engine knows its Elo range: ask it now, not mid-game
            self._engine = self._start()
        self._game_token = object()

    def limit_seconds(self, seconds: float) -> None:
        """Stop every move after at most ``seconds`` from now on (a server's cap on its engines:
        ``max_seconds`` lowered, and ``movetime`` with it when it asked for more)."""
        if not 0 < seconds < float("inf"):
            raise ValueError(f"seconds must be a positive number, got {seconds}")
        self.max_seconds = min(self.max_seconds, seconds)
        if self.movetime is not None:
            self.movetime = min(self.movetime, self.max_seconds)
        if self._engine is not None:
            self._engine.timeout = self.max_seconds

    def _start(self) -> chess.engine.SimpleEngine:
        """A configured engine; one that cannot start or answer its handshake (an overloaded
        machine: python-chess's start-up timeout) is ``PlayerFailedError``, its side's loss."""
        import chess.engine

        try:
            engine = chess.engine.SimpleEngine.popen_uci(self.path)
        except (chess.engine.EngineError, TimeoutError, OSError) as error:
            reason = "it did not answer in time" if isinstance(error, TimeoutError) else error
            raise PlayerFailedError(f"Stockfish could not start: {reason}") from error
        options: dict[str, Any] = {"Threads": self.threads}
        if self.skill is not None:
            options["Skill Level"] = self.skill
        if self.elo is not None:
            options.update({"UCI_LimitStrength": True, "UCI_Elo": self.elo})
        try:
            elo_range = engine.options.get("UCI_Elo")  # a spin option: it has a min and a max
            if (
                self.elo is not None
                and elo_range is not None
                and elo_range.min is not None
                and elo_range.max is not None
                and not elo_range.min <= self.elo <= elo_range.max
            ):
                raise ValueError(
                    f"elo={self.elo} is outside this Stockfish's UCI_Elo range "
                    f"{elo_range.min}..{elo_range.max}"
                )
            engine.configure(options)
        except BaseException as error:
            with contextlib.suppress(Exception):  # an engine we will not keep must not outlive us
                engine.quit()
            if isinstance(error, (chess.engine.EngineError, TimeoutError)):
                raise PlayerFailedError(f"Stockfish could not be set up: {error}") from error
            raise
        engine.timeout = self.max_seconds  # python-chess's grace after a move's time is up
        return engine

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._game_token = object()  # a new game object makes python-chess send ucinewgame

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        import chess.engine

        seconds = min(self.movetime or self.max_seconds, self.max_seconds)
        limit = chess.engine.Limit(depth=self.depth, time=seconds)
        for attempt in range(2):
            if self._engine is None:
                self._engine = self._start()  # a bad setting (elo out of range) is a ValueError
            STALLS.watch()
            started = time.monotonic()
            try:
                result = self._engine.play(board, limit, game=self._game_token)
                break
            except (chess.engine.EngineError, TimeoutError) as error:
                self._abandon()
                # A process stopped mid-search (kill -STOP) finds the guard's time up on waking,
                # though the engine answered: that search is made again, once, not lost.
                if (
                    isinstance(error, TimeoutError)
                    and not attempt
                    and STALLS.stalled_since(started)
                ):
                    continue
                reason = "did not answer in time" if isinstance(error, TimeoutError) else error
                raise PlayerFailedError(f"Stockfish failed in {board.fen()}: {reason}") from error
        if result.move is None:
            raise PlayerFailedError(f"Stockfish returned no move for {board.fen()}")
        return result.move

    def _abandon(self) -> None:
        """Drop an engine that failed; the next move starts a fresh one."""
        engine, self._engine = self._engine, None
        if engine is not None:
            with contextlib.suppress(Exception):  # it is already gone: nothing left to release
                engine.close()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.quit()
            self._engine = None

    def __repr__(self) -> str:
        settings = f"depth={self.depth}, skill={self.skill}, elo={self.elo}"
        return f"StockfishOpponent({settings}, movetime={self.movetime})"


class PolicyOpponent(Opponent):
    """Plays the moves of a Stable-Baselines3 model or policy (PPO or MaskablePPO) trained on
    this env.

    The policy sees the board as the env showed it in training (``perspective``, and a
    ``{"board", "action_mask"}`` dict when its observation space is a Dict); illegal actions are
    masked out of its logits, so it always plays a legal move. ``deterministic=False`` samples
    from the masked distribution with the seeded generator.
    """

    name = "policy"

    def __init__(
        self, model: Any, *, deterministic: bool = True, perspective: str = "side_to_move"
    ) -> None:
        super().__init__()
        self.model, self.deterministic, self.perspective = model, deterministic, perspective
        self.policy = getattr(model, "policy", model)  # a model holds one; a policy is one

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        import torch

        move_of_action = legal_actions(board)
        actions = np.fromiter(move_of_action, dtype=np.int64)
        tensor = board_to_tensor(board, self.perspective)  # type: ignore[arg-type]
        if hasattr(self.policy.observation_space, "spaces"):
            mask = np.zeros(self.policy.action_space.n, dtype=np.int8)
            mask[actions] = 1
            observation: Any = {"board": tensor, "action_mask": mask}
        else:
            observation = tensor
        policy = self.policy
        with torch.no_grad():
            obs_tensor, _ = policy.obs_to_tensor(observation)
            logits = policy.get_distribution(obs_tensor).distribution.logits[0].cpu().numpy()
        legal_logits = logits[actions].astype(np.float64)
        if self.deterministic:
            choice = int(np.argmax(legal_logits))
        else:
            probabilities = np.exp(legal_logits - legal_logits.max())
            choice = int(self.rng.choice(len(actions), p=probabilities / probabilities.sum()))
        return move_of_action[int(actions[choice])]


class CallableOpponent(Opponent):
    """Wraps a plain ``board -> chess.Move`` callable so the env can treat it like any opponent.

    Example:
        >>> def first_move(board):
        ...     return next(iter(board.legal_moves))
        >>> opponent = CallableOpponent(first_move)
        >>> type(opponent).__name__, opponent.name, opponent(chess.Board()).uci()
        ('CallableOpponent', 'first_move', 'g1h3')
    """

    def __init__(self, function: Callable[[chess.Board], chess.Move]) -> None:
        super().__init__()
        self.function = function
        self.name = getattr(function, "__name__", type(function).__name__)

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        return self.function(board.copy())  # user code cannot push onto the env's board

    def __repr__(self) -> str:
        return f"CallableOpponent({self.function!r})"
