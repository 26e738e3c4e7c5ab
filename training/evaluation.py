"""``evaluate``: a seeded match of a chess agent against an opponent, as ``EvaluationResult``.

The games are ``ChessEnv`` episodes, so the rules (draw claims, the ply cap) are the env's; the
agent plays white in even games and black in odd ones. The agent and the opponent are any player
of ``chess_env.core.players``: an SB3 model or policy, or the path of a saved one (its logits masked
to the legal moves unless ``masked=False``), a spec (``random``, ``stockfish:3``, ``alphabeta:2``,
``openai:MODEL``, ...), an ``Opponent`` or a callable ``board -> chess.Move``. Game ``i`` is seeded
from ``(seed, i)``: the same seed replays the match.

- ``policy_logits(policy, observations)``: a batch of SB3 policy logits (4672 per board).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import numpy as np
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from chess_env import ChessEnv
from chess_env.core.encoding import encode_move
from chess_env.core.model_player import load_sb3_model
from chess_env.core.opponents import Opponent
from chess_env.core.pgn import set_tags
from chess_env.core.players import PlayerLike, is_sb3_object, make_player, parse_player
from chess_env.core.rules import DEFAULT_MAX_PLIES
from training.dto import ColorResult, EvaluationResult

__all__ = [
    "LOCKSTEP_GAMES",
    "FinishedGame",
    "evaluate",
    "game_seed",
    "play_policy_games",
    "policy_logits",
]

Chooser = Callable[[ChessEnv, np.ndarray], int]
LOCKSTEP_GAMES = 32  # games a policy plays side by side, one batched forward pass per move
LOCKSTEP_KINDS = ("random", "greedy", "alphabeta")


def game_seed(seed: int, index: int) -> int:
    """The seed of game ``index`` of a match: independent streams, stable across processes."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1, np.uint64)[0] >> 1)


def policy_logits(policy: Any, observations: np.ndarray) -> np.ndarray:
    """The policy's action logits for a batch of observations, as float64 numpy."""
    import torch

    with torch.no_grad():
        tensor, _ = policy.obs_to_tensor(observations)
        logits = policy.get_distribution(tensor).distribution.logits
    return logits.cpu().numpy().astype(np.float64)


def _sb3_policy(agent: PlayerLike) -> Any | None:
    """The SB3 policy of a model, a policy or a saved model's path; None for other players."""
    if isinstance(agent, str | os.PathLike):
        spec = parse_player(os.fspath(agent))
        if spec.kind != "model":
            return None
        agent = load_sb3_model(spec.argument or "")
    if not is_sb3_object(agent):
        return None
    return getattr(agent, "policy", agent)


def _policy_chooser(policy: Any, masked: bool) -> Chooser:
    def choose(env: ChessEnv, observation: np.ndarray) -> int:
        logits = policy_logits(policy, observation[None])[0]
        if masked:
            logits[~env.action_masks()] = -np.inf
        return int(np.argmax(logits))

    return choose


def _player_chooser(player: Opponent) -> Chooser:
    def choose(env: ChessEnv, observation: np.ndarray) -> int:
        move = player.choose_move(env.board, env.game.legal_moves)
        return encode_move(move, env.board.turn)

    return choose


@dataclass
class _Tally:
    """Running counts of a match."""

    records: dict[str, Counter[str]] = field(
        default_factory=lambda: {"white": Counter(), "black": Counter()}
    )
    terminations: Counter[str] = field(default_factory=Counter)
    plies: list[int] = field(default_factory=list)
    illegal: int = 0
    checkmates: int = 0

    def add(self, color: str, reward: float, outcome: str, plies: int) -> None:
        verdict = "wins" if reward > 0 else "losses" if reward < 0 else "draws"
        self.records[color][verdict] += 1
        self.terminations[outcome] += 1
        self.plies.append(plies)
        self.checkmates += outcome == "checkmate" and reward > 0

    def record(self, color: str) -> ColorResult:
        counts = self.records[color]
        return ColorResult(
            games=sum(counts.values()),
            wins=counts["wins"],
            draws=counts["draws"],
            losses=counts["losses"],
        )


def evaluate(
    agent: PlayerLike,
    opponent: PlayerLike = "random",
    *,
    games: int = 200,
    seed: int = 0,
    max_plies: int | None = DEFAULT_MAX_PLIES,
    masked: bool = True,
    pgn_path: str | os.PathLike[str] | None = None,
    progress_bar: bool = False,
) -> EvaluationResult:
    """Play ``games`` games of ``agent`` against ``opponent``, colours alternating.

    Args:
        agent: an SB3 model or policy trained on ``ChessEnv``'s board observation, a saved
            model's path (``runs/x/model.zip`` or ``model:PATH``), any other player spec (see
            ``chess_env.core.players``), an ``Opponent`` or a callable ``board -> chess.Move``.
        opponent: the other side, any player (an SB3 model plays one game at a time).
        games: games to play (at least 1).
        seed: seeds every game, the opponent's choices included.
        max_plies: the env's ply cap; a capped game is a draw ("max_plies").
        masked: restrict a policy to legal moves; with False its illegal choice loses the game
            and is counted in ``illegal_actions``.
        pgn_path: write every game here, as PGN.
        progress_bar: show a tqdm bar.
    """
    if games < 1:
        raise ValueError(f"games must be at least 1, got {games}")
    policy = _sb3_policy(agent)
    player = None if policy is not None else make_player(agent)
    opponent_player = make_player(opponent)  # a bad spec fails before any game
    name = opponent if isinstance(opponent, str) else opponent_player.name
    tally, pgns = _Tally(), []
    bar = tqdm(total=games, desc="evaluation", unit="game", disable=not progress_bar)
    finished: Iterable[FinishedGame]
    try:
        if policy is not None and _lockstep_opponent(opponent):
            opponent_player.close()
            finished = play_policy_games(
                policy, str(opponent), games=games, seed=seed, max_plies=max_plies, masked=masked
            )
        else:
            choose = (
                _player_chooser(player) if player is not None else _policy_chooser(policy, masked)
            )
            finished = _one_by_one(choose, player, opponent_player, games, seed, max_plies)
        for game in finished:
            tally.add(game.color, game.reward, game.outcome, game.env.board.ply())
            tally.illegal += game.illegal
            if pgn_path is not None:
                pgns.append(
                    _pgn(game.env, game.color, _name(agent), name, game.index, game.outcome)
                )
            bar.update(1)
    finally:
        bar.close()
        opponent_player.close()
        if player is not None:
            player.close()
    if pgn_path is not None:
        Path(pgn_path).write_text("\n\n".join(pgns) + "\n", encoding="utf-8")
    return EvaluationResult.from_counts(
        opponent=name,
        seed=seed,
        white=tally.record("white"),
        black=tally.record("black"),
        mean_plies=float(np.mean(tally.plies)),
        illegal_actions=tally.illegal,
        checkmates=tally.checkmates,
        terminations=dict(tally.terminations),
    )


@dataclass
class FinishedGame:
    """One game of a match, over: its env (board and moves), the agent's colour and result.

    Example:
        >>> from training.policies import ChessCnnMaskablePolicy
        >>> env = ChessEnv()
        >>> policy = ChessCnnMaskablePolicy(env.observation_space, env.action_space, lambda _: 3e-4,
        ...                                 features_extractor_kwargs={"channels": 8})
        >>> [game] = play_policy_games(policy, "random", games=1, seed=0, max_plies=2)
        >>> game.index, game.color, game.outcome, game.env.board.ply(), game.reward
        (0, 'white', 'max_plies', 2, 0.0)
    """

    index: int
    color: str
    env: ChessEnv
    reward: float
    outcome: str
    illegal: int


def _lockstep_opponent(opponent: object) -> bool:
    """Named opponents with no process or endpoint get one instance per game, so games can run
    side by side; engines, models, LLMs and given instances play one game at a time."""
    return isinstance(opponent, str) and parse_player(opponent).kind in LOCKSTEP_KINDS


def _new_game(index: int, opponent: Opponent, max_plies: int | None) -> ChessEnv:
    return ChessEnv(
        opponent=opponent,
        agent_color="white" if index % 2 == 0 else "black",
        illegal_action="terminate",
        max_plies=max_plies,
    )


def _one_by_one(
    choose: Chooser,
    player: Opponent | None,
    opponent: Opponent,
    games: int,
    seed: int,
    max_plies: int | None,
) -> Iterator[FinishedGame]:
    for index in range(games):
        env = _new_game(index, opponent, max_plies)
        if player is not None:
            player.reset(game_seed(seed, index) + 1)
        reward, outcome, illegal = _play(env, choose, game_seed(seed, index))
        yield FinishedGame(index, env.agent_color, env, reward, outcome, illegal)


def play_policy_games(
    policy: Any,
    opponent: str,
    *,
    games: int,
    seed: int,
    max_plies: int | None = DEFAULT_MAX_PLIES,
    masked: bool = True,
    width: int | None = None,
    before_move: Callable[[int, ChessEnv], None] | None = None,
) -> list[FinishedGame]:
    """``games`` games of an SB3 policy against a named opponent, ``width`` at a time, the
    policy's moves for all of them chosen in one batched forward pass (10x fewer passes than one
    game at a time). Game ``i`` is seeded as in ``evaluate``; ``before_move(i, env)`` sees every
    position the policy is about to move in. Returns the games in index order."""
    width = width or LOCKSTEP_GAMES
    pending = iter(range(games))
    active: list[tuple[int, ChessEnv, np.ndarray]] = []
    finished: list[FinishedGame] = []

    def start() -> None:
        index = next(pending, None)
        if index is not None:
            env = _new_game(index, make_player(opponent), max_plies)
            observation, _ = env.reset(seed=game_seed(seed, index))
            active.append((index, env, observation))

    for _ in range(min(width, games)):
        start()
    while active:
        if before_move is not None:
            for index, env, _ in active:
                before_move(index, env)
        logits = policy_logits(policy, np.stack([observation for _, _, observation in active]))
        if masked:
            logits[~np.stack([env.action_masks() for _, env, _ in active])] = -np.inf
        still: list[tuple[int, ChessEnv, np.ndarray]] = []
        for (index, env, _), action in zip(active, np.argmax(logits, axis=1), strict=True):
            observation, reward, terminated, truncated, info = env.step(int(action))
            if terminated or truncated:
                illegal = int("illegal_action" in info)
                finished.append(
                    FinishedGame(index, env.agent_color, env, reward, info["outcome"], illegal)
                )
                env.close()
            else:
                still.append((index, env, observation))
        active = still
        while len(active) < width and len(finished) + len(active) < games:
            start()
    return sorted(finished, key=lambda game: game.index)


def _play(env: ChessEnv, choose: Chooser, seed: int) -> tuple[float, str, int]:
    """One game: the agent's final reward, why it ended, and 1 if it ended on an illegal action."""
    observation, info = env.reset(seed=seed)
    reward, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(choose(env, observation))
        done = terminated or truncated
    return reward, info["outcome"], int("illegal_action" in info)


def _name(agent: Any) -> str:
    if isinstance(agent, str | os.PathLike):
        return os.fspath(agent)
    return getattr(agent, "name", None) or type(agent).__name__


def _pgn(env: ChessEnv, color: str, agent: str, opponent: str, index: int, outcome: str) -> str:
    game = chess.pgn.Game.from_board(env.board)
    white, black = (agent, opponent) if color == "white" else (opponent, agent)
    tags = dict(
        Event="polyarena evaluation",
        Round=str(index + 1),
        White=white,
        Black=black,
        Termination=outcome,
    )
    if outcome in ("max_plies", "illegal_action"):
        tags["Result"] = _forced_result(color, outcome)
    elif env.game.outcome is not None:  # the board's own result claims no threefold or 50 moves
        tags["Result"] = env.game.outcome.result()
    set_tags(game, **tags)
    return str(game)


def _forced_result(color: str, outcome: str) -> str:
    """PGN's result when the rules did not end the game: a capped game is unfinished ("*");
    an illegal action loses."""
    if outcome == "max_plies":
        return "*"
    return "0-1" if color == "white" else "1-0"
