"""DAgger for chess: the policy plays, the expert labels the positions it reached, BC again.

Behaviour cloning learns from the expert's games, but a policy that is only nearly the expert
soon stands in positions the expert never reached: won endgames it does not convert, stalemates
it gives, moves it repeats. A round here plays ``games`` games of the policy against the
opponent (in lockstep, one batched forward pass per move), labels every position the policy
moved in with the expert's move, marks the moves that would have mated or drawn the game there
(the BC loss pulls the mates up and pushes the draws down: ``BCConfig.mate_coef`` and
``avoid_coef``; ``DaggerConfig.focus`` repeats those rows), adds them to the rounds before
(DAgger's aggregate), mixes in ``replay`` times as many rows of the BC dataset (so the opening
and middlegame are not forgotten), and trains the same policy on that for a few epochs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from chess_env import ChessEnv
from chess_env.core.rules import EndingActions
from training.bc import train_bc
from training.config import BCConfig, DaggerConfig
from training.datasets import BCDataset, combine, label_positions
from training.dto import BCTrainingResult
from training.evaluation import play_policy_games

if TYPE_CHECKING:
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

__all__ = ["collect_positions", "dagger_round"]


def collect_positions(
    policy: Any, *, games: int, opponent: str, seed: int, max_plies: int
) -> tuple[list[str], np.ndarray, list[EndingActions]]:
    """The FENs of every position the policy moved in, the game each came from, and the moves
    that would have mated or drawn that game there (``ChessGame.ending_actions``: the game's
    history decides repetitions, which the FEN alone cannot)."""
    fens: list[str] = []
    episodes: list[int] = []
    endings: list[EndingActions] = []

    def record(index: int, env: ChessEnv) -> None:
        fens.append(env.board.fen())
        episodes.append(index)
        endings.append(env.game.ending_actions())

    play_policy_games(
        policy, opponent, games=games, seed=seed, max_plies=max_plies, before_move=record
    )
    return fens, np.asarray(episodes, dtype=np.int32), endings


def dagger_round(
    model: PPO | MaskablePPO,
    config: DaggerConfig,
    bc: BCConfig,
    *,
    base: BCDataset | None,
    aggregate: BCDataset | None,
    seed: int,
) -> tuple[BCTrainingResult, BCDataset]:
    """One round on ``model`` (trained in place): the BC result and the new aggregate."""
    fens, episodes, endings = collect_positions(
        model.policy,
        games=config.games,
        opponent=config.opponent,
        seed=seed,
        max_plies=config.max_plies,
    )
    labelled = label_positions(
        config.expert,
        fens,
        episodes,
        seed,
        endings=endings,
        workers=bc.workers,
        progress_bar=bc.progress_bar,
    )
    aggregate = labelled if aggregate is None else combine([aggregate, labelled])
    parts = [aggregate]
    if config.focus > 1:  # the rare rows where the game could end: mates to find, draws to dodge
        mates, avoid = aggregate.mates, aggregate.avoid
        assert mates is not None and avoid is not None  # label_positions records both
        ending = np.flatnonzero(mates.any(axis=1) | avoid.any(axis=1))
        parts.append(aggregate.subset(np.repeat(ending, config.focus - 1)))
    if base is not None and config.replay > 0:
        count = min(len(base), round(config.replay * len(aggregate)))
        rows = np.sort(np.random.default_rng(seed).choice(len(base), count, replace=False))
        parts.insert(0, base.subset(rows))
    round_config = bc.model_copy(
        update={"epochs": config.epochs, "learning_rate": config.learning_rate, "dataset": None}
    )
    result = train_bc(round_config, dataset=combine(parts), model=model)
    return result, aggregate
