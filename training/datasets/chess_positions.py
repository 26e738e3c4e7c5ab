"""Positions reached by someone else (a policy, for DAgger), labelled with an expert's moves."""

from __future__ import annotations

import chess
import numpy as np
from gymnasium import spaces
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from chess_env.core.encoding import ACTION_SIZE, board_to_tensor, encode_move
from chess_env.core.rules import ChessGame, EndingActions
from training.datasets.chess_games import expert_name
from training.datasets.dataset import (
    BOARD_SHAPE,
    BCDataset,
    Rows,
    assemble,
    manifest_template,
    packed_mask,
)
from training.datasets.parallel import chunked, episode_seed, run_jobs
from training.experts import chess_expert


def label_positions(
    expert: str,
    fens: list[str],
    episodes: np.ndarray,
    seed: int,
    *,
    source: str = "dagger",
    endings: list[EndingActions] | None = None,
    workers: int = 1,
    progress_bar: bool = True,
) -> BCDataset:
    """Positions reached by someone else (a policy, for DAgger), labelled with ``expert``'s moves.

    Each FEN is labelled on its own board (no move stack, as the agent sees it), in blocks of
    ``BLOCK_POSITIONS`` seeded from ``seed``, in ``workers`` processes; ``episodes`` says which
    game each position came from, so ``split`` keeps games whole. ``endings`` gives, per position,
    the actions that would have mated and drawn its game there (``ChessGame.ending_actions``):
    the dataset's ``mates`` and ``avoid``.
    """
    if not fens:
        raise ValueError("no positions to label")
    if endings is not None and len(endings) != len(fens):
        raise ValueError(f"endings has {len(endings)} entries for {len(fens)} positions")
    name = expert_name(expert)
    chunks = chunked(fens)
    jobs = [(name, episode_seed(seed, 0, index), chunk) for index, chunk in enumerate(chunks)]
    with tqdm(
        total=len(fens), desc=f"labelling {name}", unit="pos", disable=not progress_bar
    ) as bar:
        labelled = run_jobs(_label_fens, jobs, [len(c) for c in chunks], workers, bar)
    rows = Rows()
    for chunk, (observations, actions, masks) in zip(chunks, labelled, strict=True):
        rows.observations += observations
        rows.actions += actions
        rows.masks += masks
        rows.fens += chunk
    return assemble(
        observations=np.stack(rows.observations),
        actions=np.asarray(rows.actions, dtype=np.int64),
        masks=np.stack(rows.masks),
        episodes=np.asarray(episodes, dtype=np.int32),
        source=np.zeros(len(fens), dtype=np.uint8),
        fens=np.asarray(fens, dtype=str),
        **(
            {}
            if endings is None
            else {
                "mates": np.stack([packed_mask(ending.mating) for ending in endings]),
                "avoid": np.stack([packed_mask(ending.drawing) for ending in endings]),
            }
        ),
        template=manifest_template(
            "chess", name, seed, BOARD_SHAPE, spaces.Discrete(ACTION_SIZE), (source,)
        ),
    )


def _label_fens(
    expert: str, seed: int, fens: list[str]
) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
    """(boards, labels, packed masks) of ``fens``: one worker's share of ``label_positions``."""
    player = chess_expert(expert)
    player.reset(seed)
    observations, actions, masks = [], [], []
    try:
        for fen in fens:
            game = ChessGame(chess.Board(fen))
            label = player.choose_move(game.board.copy(stack=False), game.legal_moves)
            if not game.is_legal(label):
                raise RuntimeError(f"the expert {player!r} chose {label.uci()}, illegal in {fen}")
            observations.append(board_to_tensor(game.board))
            actions.append(encode_move(label, game.board.turn))
            masks.append(packed_mask(game.legal_actions))
    finally:
        player.close()
    return observations, actions, masks
