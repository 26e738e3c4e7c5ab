"""Chess positions from an expert's own games, each labelled with the expert's move."""

from __future__ import annotations

import chess
import numpy as np
from gymnasium import spaces
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from chess_env.core.encoding import ACTION_SIZE, board_to_tensor, encode_move
from chess_env.core.fen import fen_of
from chess_env.core.opponents import Opponent, RandomOpponent
from chess_env.core.players import parse_player
from chess_env.core.rules import ChessGame
from training.datasets.dataset import (
    BOARD_SHAPE,
    BCDataset,
    Rows,
    assemble,
    manifest_template,
    packed_mask,
)
from training.datasets.parallel import (
    GAMES_PER_BLOCK,
    Block,
    episode_seed,
    run_jobs,
    split_into_blocks,
)
from training.experts import chess_expert

CHESS_SOURCES = ("vs_random", "self_play")  # half the positions each (vs_random gets the odd one)
GAME_PLIES = 200  # a game is cut here: long endgames would crowd the data with similar positions
OPENING_PLIES = (2, 8)  # self-play starts with this many random plies (inclusive): else every
# game against a deterministic expert (Stockfish at a fixed depth) would be the same game


def _label_game(
    expert: Opponent,
    rows: Rows,
    *,
    source: int,
    episode: int,
    seed: int,
    quota: int,
    progress: tqdm | None,
) -> None:
    """One game of ``CHESS_SOURCES[source]``: every position is labelled with the expert's move,
    up to ``quota`` positions. Against the random player the expert is white in even episodes
    (the vs_random games are numbered first, from 0)."""
    rng = np.random.default_rng(seed)
    expert.reset(int(rng.integers(2**63 - 1)))
    random_player = RandomOpponent()
    random_player.reset(int(rng.integers(2**63 - 1)))
    if CHESS_SOURCES[source] == "vs_random":
        expert_colour, opening = chess.WHITE if episode % 2 == 0 else chess.BLACK, 0
    else:
        expert_colour, opening = None, int(rng.integers(OPENING_PLIES[0], OPENING_PLIES[1] + 1))
    game = ChessGame(max_plies=GAME_PLIES)
    board = game.board
    while not game.is_over and quota > 0:
        # The position without its move stack: the label depends on what the agent sees only,
        # and Stockfish answers a FEN faster than a replayed game.
        label = expert.choose_move(board.copy(stack=False), game.legal_moves)
        if not game.is_legal(label):
            raise RuntimeError(
                f"the expert {expert!r} chose {label.uci()}, illegal in {board.fen()}"
            )
        rows.observations.append(board_to_tensor(board))
        rows.actions.append(encode_move(label, board.turn))
        rows.masks.append(packed_mask(game.legal_actions))
        rows.episodes.append(episode)
        rows.source.append(source)
        rows.fens.append(fen_of(board))
        quota -= 1
        if progress is not None:
            progress.update(1)
        random_side = expert_colour is not None and board.turn != expert_colour
        if random_side or game.plies < opening:
            game.play(random_player.choose_move(board, game.legal_moves))
        else:
            game.play(label)


def generate_chess_dataset(
    expert: str, positions: int, seed: int, progress_bar: bool = True, workers: int = 1
) -> BCDataset:
    """``positions`` chess positions labelled with ``expert``'s moves (see ``chess_expert``).

    Half the positions (the odd one included) come from games of the expert against a uniformly
    random player, the expert white in even games of a block and black in odd ones; the other
    half from self-play games that open with 2-8 random plies (so a deterministic expert does not
    replay one game). Every position of every game is labelled with the expert's move, the
    random side's too: those cost one expert call each, like any other position, and show the
    expert's answer in the worse positions a weak policy reaches. Games end by the env's rules or
    after ``GAME_PLIES`` plies; the last game of a block is cut when its quota is full.

    Each source's quota is cut into blocks of ``BLOCK_POSITIONS``, each seeded on its own, so
    ``workers`` processes label blocks in parallel and the rows are the same for any number of
    workers (``benchmarks/training_speed.py`` measures the labelling rate per expert).

    Args:
        expert: ``stockfish:DEPTH``, ``alphabeta:DEPTH`` or ``auto``; the manifest records the
            expert actually used (``auto`` -> ``stockfish:1`` or ``alphabeta:2``).
        positions: rows to produce (at least 1).
        seed: every game, opening and random move follows from it (Stockfish at a fixed depth
            on one thread is deterministic too).
        progress_bar: show a tqdm bar over the positions.
        workers: processes labelling blocks at once (default 1: this process).

    Example:
        >>> data = generate_chess_dataset("alphabeta:1", 4, seed=0, progress_bar=False)
        >>> data.observations.shape, data.masks.shape, data.manifest.sources
        ((4, 8, 8, 12), (4, 584), {'vs_random': 2, 'self_play': 2})
    """
    if positions < 1:
        raise ValueError(f"positions must be at least 1, got {positions}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    name = expert_name(expert)
    blocks = split_into_blocks(positions)
    with tqdm(
        total=positions, desc=f"labelling {name}", unit="pos", disable=not progress_bar
    ) as bar:
        if workers == 1:
            labelled = [_label_block(name, seed, block, bar) for block in blocks]
        else:
            jobs = [(name, seed, block) for block in blocks]
            labelled = run_jobs(_label_block, jobs, [b.quota for b in blocks], workers, bar)
    return _merge(labelled, name, seed)


def _label_block(expert: str, seed: int, block: Block, progress: tqdm | None = None) -> Rows:
    """One block's rows; its episodes are numbered from 0 (``_merge`` makes them unique)."""
    player = chess_expert(expert)
    rows = Rows()
    try:
        game = 0
        while len(rows.actions) < block.quota:  # every game labels at least its first move
            _label_game(
                player,
                rows,
                source=block.source,
                episode=game,
                seed=episode_seed(seed, block.source, block.index * GAMES_PER_BLOCK + game),
                quota=block.quota - len(rows.actions),
                progress=progress,
            )
            game += 1
    finally:
        player.close()
    return rows


def expert_name(spec: str) -> str:
    """The expert ``spec`` makes, as the spec the manifest records and the workers make theirs
    from: ``KIND:DEPTH`` (``auto`` -> ``stockfish:1`` or ``alphabeta:2``, a depth left out
    filled in), other options kept as written (``stockfish:2?skill=5``). A bad spec, or a
    missing engine, fails here rather than in a worker."""
    player = chess_expert(spec)
    player.close()
    made_from = parse_player(player.name)  # make_player names a player by its spec, auto resolved
    depth = getattr(player, "depth", None)
    query = "&".join(f"{key}={value}" for key, value in made_from.options.items() if key != "depth")
    return (
        made_from.kind + (f":{depth}" if depth is not None else "") + (f"?{query}" if query else "")
    )


def _merge(labelled: list[Rows], expert: str, seed: int) -> BCDataset:
    """The blocks' rows as one dataset, episodes renumbered so that each game has its own."""
    episodes, offset = [], 0
    for rows in labelled:
        numbers = np.asarray(rows.episodes, dtype=np.int32)
        episodes.append(numbers + offset)
        offset += int(numbers.max()) + 1
    return assemble(
        observations=np.stack([o for rows in labelled for o in rows.observations]),
        actions=np.asarray([a for rows in labelled for a in rows.actions], dtype=np.int64),
        masks=np.stack([m for rows in labelled for m in rows.masks]),
        episodes=np.concatenate(episodes),
        source=np.asarray([s for rows in labelled for s in rows.source], dtype=np.uint8),
        fens=np.asarray([f for rows in labelled for f in rows.fens], dtype=str),
        template=manifest_template(
            "chess", expert, seed, BOARD_SHAPE, spaces.Discrete(ACTION_SIZE), CHESS_SOURCES
        ),
    )
