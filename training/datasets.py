"""Behaviour-cloning datasets: observations an agent sees, labelled with an expert's actions.

- ``generate_chess_dataset(expert, positions, seed)``: chess positions from the expert's games,
  each with the board tensor ``ChessEnv`` shows, the expert's move as an action index and the
  legal-action mask (for a masked NLL).
- ``generate_world_dataset(world, positions, seed, learner)``: a built-in world's scripted
  expert in the learner's seat, stored as ``FlattenForSB3`` observations and actions, ready for
  SB3's ``MultiInputPolicy``.
- ``BCDataset``: the arrays and their ``DatasetManifestDTO``; ``save`` / ``load_dataset`` (an
  .npz with its manifest as .json beside it, checked by SHA-256), ``split`` (by game),
  ``unpacked_masks``.
- ``DatasetError``: a dataset file that cannot be used; the message names the file.

The .npz holds ``observations`` (or ``observations/<key>`` per key of a Dict observation),
``actions`` (int64), ``episodes`` (int32, the game each row comes from), ``source`` (uint8, an
index into the manifest's ``sources``), and for chess ``masks`` (uint8, the 4672 legal-action
bits packed by ``np.packbits`` into 584 bytes), ``fens`` (the positions, for debugging) and,
when the positions come from whole games the learner played (DAgger), ``mates`` and ``avoid``
(packed like the masks: the moves that would have mated, and drawn, the game there). Its bytes
depend on the arrays only (fixed zip timestamps), so the same seed gives the same SHA-256.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import numpy as np
from gymnasium import spaces
from pydantic import ValidationError
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from chess_env.encoding import ACTION_SIZE, board_to_tensor, encode_move
from chess_env.fen import fen_of
from chess_env.opponents import Opponent, RandomOpponent
from chess_env.players import parse_player
from chess_env.rules import ChessGame, EndingActions
from training.dto import DatasetManifestDTO
from training.envs import env_factory
from training.experts import chess_expert, world_expert

__all__ = [
    "BOARD_SHAPE",
    "CHESS_SOURCES",
    "GAME_PLIES",
    "MASK_BYTES",
    "OPENING_PLIES",
    "BCDataset",
    "DatasetError",
    "combine",
    "episode_seed",
    "flat_action",
    "generate_chess_dataset",
    "generate_world_dataset",
    "label_positions",
    "load_dataset",
]

BOARD_SHAPE = (8, 8, 12)
MASK_BYTES = math.ceil(ACTION_SIZE / 8)  # 584
CHESS_SOURCES = ("vs_random", "self_play")  # half the positions each (vs_random gets the odd one)
WORLD_SOURCES = ("vs_random",)  # the other agents act at random (SingleAgentEnv's default)
GAME_PLIES = 200  # a game is cut here: long endgames would crowd the data with similar positions
OPENING_PLIES = (2, 8)  # self-play starts with this many random plies (inclusive): else every
# game against a deterministic expert (Stockfish at a fixed depth) would be the same game
OBSERVATION_PREFIX = "observations/"
EXTRA_MOVE_SETS = ("mates", "avoid")  # optional packed move sets beside the legal-move masks
BLOCK_POSITIONS = 4096  # positions per independently seeded block: the unit of parallel work
GAMES_PER_BLOCK = 1_000_000  # game seeds of block b are b * GAMES_PER_BLOCK + game


class DatasetError(ValueError):
    """A dataset (or its file) that cannot be used; the message names the file when there is one."""


# -- the dataset ----------------------------------------------------------------------------------


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``np.savez_compressed``'s format with a fixed timestamp, so equal arrays give equal bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


def _paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(``<path>.npz``, ``<path>.json``), whether ``path`` names either file or neither."""
    base = Path(path)
    if base.suffix in (".npz", ".json"):
        base = base.with_suffix("")
    return base.with_name(base.name + ".npz"), base.with_name(base.name + ".json")


@dataclass(frozen=True, eq=False)
class BCDataset:
    """Expert-labelled observations; rows are positions, in the order the games produced them.

    Attributes:
        observations: (N, 8, 8, 12) uint8 boards, or a dict of (N, ...) arrays, one per key of
            a flattened world observation.
        actions: (N,) int64 action indices, or (N, k) for a MultiDiscrete action.
        masks: (N, 584) uint8, the legal-action mask packed by ``np.packbits``; None for worlds
            (their actions are never illegal: ``FlattenForSB3``'s spaces have no mask).
        episodes: (N,) int32, the game or episode each row comes from (``split`` keeps games
            whole).
        source: (N,) uint8, each row's kind of game: an index into ``manifest.sources``.
        fens: (N,) str, the chess positions (None for worlds).
        mates: (N, 584) uint8, packed like ``masks``: the legal moves that mate (any of them
            wins, whichever the expert named: ``BCConfig.mate_coef``); None when not recorded.
        avoid: (N, 584) uint8, packed like ``masks``: legal moves that end the game in a draw
            in that game (stalemate, repetition, ...), the negative examples of
            ``BCConfig.avoid_coef``; None when unknown (positions without their game).
        manifest: what the arrays hold and where they came from; ``sha256`` is of the .npz
            ``save`` writes (see the module doc).

    Example:
        >>> data = generate_world_dataset("forage", 20, seed=0, progress_bar=False)
        >>> len(data), data.actions.dtype, data.manifest.sources
        (20, dtype('int64'), {'vs_random': 20})
        >>> train, val = data.split(0.25, seed=0)
        >>> len(train), len(val)
        (15, 5)
    """

    observations: np.ndarray | dict[str, np.ndarray]
    actions: np.ndarray
    masks: np.ndarray | None
    episodes: np.ndarray
    source: np.ndarray
    fens: np.ndarray | None
    manifest: DatasetManifestDTO
    mates: np.ndarray | None = None
    avoid: np.ndarray | None = None

    def __post_init__(self) -> None:
        rows, manifest = len(self.actions), self.manifest
        for name, array in self.arrays().items():
            if len(array) != rows:
                raise DatasetError(f"{name} has {len(array)} rows, actions has {rows}")
        if self.actions.dtype != np.int64:
            raise DatasetError(f"actions must be int64, got {self.actions.dtype}")
        for name, packed in self._packed_arrays().items():
            if packed is not None and (
                packed.dtype != np.uint8 or packed.shape[1:] != (MASK_BYTES,)
            ):
                raise DatasetError(
                    f"{name} must be (N, {MASK_BYTES}) uint8, got {packed.shape} {packed.dtype}"
                )
        for name in EXTRA_MOVE_SETS:
            if getattr(self, name) is not None and self.masks is None:
                raise DatasetError(f"{name} needs masks: it marks legal chess moves")
        if rows != manifest.positions:
            raise DatasetError(f"the manifest says {manifest.positions} positions, got {rows}")
        if manifest.masked != (self.masks is not None):
            raise DatasetError(f"the manifest says masked={manifest.masked}, the masks disagree")
        shapes = _observation_shape(self.observations)
        if shapes != manifest.observation_shape:
            raise DatasetError(
                f"observations have shape {shapes}, the manifest says {manifest.observation_shape}"
            )
        if rows and int(self.source.max()) >= len(manifest.sources):
            raise DatasetError(f"source indices beyond the manifest's {list(manifest.sources)}")

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array, by its name in the .npz."""
        if isinstance(self.observations, dict):
            arrays = {OBSERVATION_PREFIX + key: v for key, v in self.observations.items()}
        else:
            arrays = {"observations": self.observations}
        arrays.update(actions=self.actions, episodes=self.episodes, source=self.source)
        if self.masks is not None:
            arrays["masks"] = self.masks
        if self.fens is not None:
            arrays["fens"] = self.fens
        arrays.update(
            (name, getattr(self, name))
            for name in EXTRA_MOVE_SETS
            if getattr(self, name) is not None
        )
        return arrays

    def _packed_arrays(self) -> dict[str, np.ndarray]:
        named = {"masks": self.masks, **{name: getattr(self, name) for name in EXTRA_MOVE_SETS}}
        return {name: array for name, array in named.items() if array is not None}

    def __len__(self) -> int:
        return len(self.actions)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``<path>.npz`` and its manifest ``<path>.json``; returns the .npz path."""
        npz, manifest = _paths(path)
        npz.parent.mkdir(parents=True, exist_ok=True)
        npz.write_bytes(_npz_bytes(self.arrays()))
        manifest.write_text(self.manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return npz

    def unpacked_masks(self, indices: np.ndarray | slice) -> np.ndarray:
        """The (len(indices), 4672) bool legal-action masks of a batch of rows."""
        return self.unpacked("masks", indices)

    def unpacked(self, name: str, indices: np.ndarray | slice) -> np.ndarray:
        """A batch of rows of the packed move set ``name`` (``masks``, ``mates`` or ``avoid``)
        as (len(indices), 4672) bool."""
        packed = self._packed_arrays().get(name)
        if packed is None:
            kind = {"masks": "action masks", "mates": "mating moves", "avoid": "moves to avoid"}
            raise DatasetError(f"this {self.manifest.env} dataset has no {kind.get(name, name)}")
        return np.unpackbits(packed[indices], axis=1, count=ACTION_SIZE).astype(bool)

    def subset(self, indices: np.ndarray) -> BCDataset:
        """The rows ``indices`` (in that order), with the manifest counted and hashed again."""
        observations = (
            {key: value[indices] for key, value in self.observations.items()}
            if isinstance(self.observations, dict)
            else self.observations[indices]
        )
        return _assemble(
            observations=observations,
            actions=self.actions[indices],
            masks=None if self.masks is None else self.masks[indices],
            episodes=self.episodes[indices],
            source=self.source[indices],
            fens=None if self.fens is None else self.fens[indices],
            **{
                name: None if getattr(self, name) is None else getattr(self, name)[indices]
                for name in EXTRA_MOVE_SETS
            },
            template=self.manifest,
        )

    def split(self, val_fraction: float, seed: int) -> tuple[BCDataset, BCDataset]:
        """(train, val): whole games go to validation, so no game is on both sides.

        Games are taken in a seeded order, skipping any that would make the validation set
        more than half again its target (``val_fraction`` of the rows); when no game is small
        enough (a few long games), rows are drawn one by one instead.
        """
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        rows = len(self)
        if rows < 2:
            raise DatasetError(f"cannot split {rows} position(s) into train and validation")
        target = min(rows - 1, max(1, round(rows * val_fraction)))
        limit = min(rows - 1, math.ceil(1.5 * target))
        rng = np.random.default_rng(seed)
        games, sizes = np.unique(self.episodes, return_counts=True)
        chosen, taken = [], 0
        for index in rng.permutation(len(games)):
            if taken + sizes[index] <= limit:
                chosen.append(games[index])
                taken += int(sizes[index])
            if taken >= target:
                break
        if chosen:
            in_val = np.isin(self.episodes, chosen)
        else:
            in_val = np.zeros(rows, dtype=bool)
            in_val[rng.permutation(rows)[:target]] = True
        return self.subset(np.flatnonzero(~in_val)), self.subset(np.flatnonzero(in_val))


def _observation_shape(
    observations: np.ndarray | dict[str, np.ndarray],
) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    if isinstance(observations, dict):
        return {key: tuple(value.shape[1:]) for key, value in observations.items()}
    return tuple(observations.shape[1:])


def _assemble(
    *,
    observations: np.ndarray | dict[str, np.ndarray],
    actions: np.ndarray,
    masks: np.ndarray | None,
    episodes: np.ndarray,
    source: np.ndarray,
    fens: np.ndarray | None,
    template: DatasetManifestDTO,
    mates: np.ndarray | None = None,
    avoid: np.ndarray | None = None,
) -> BCDataset:
    """A dataset whose manifest is ``template`` with the counts, shapes and hash of these rows."""
    arrays = {
        "observations": observations,
        "actions": actions,
        "masks": masks,
        "episodes": episodes,
        "source": source,
        "fens": fens,
        "mates": mates,
        "avoid": avoid,
    }
    names = list(template.sources)
    counts = np.bincount(source, minlength=len(names))
    manifest = template.model_copy(
        update={
            "positions": len(actions),
            "observation_shape": _observation_shape(observations),
            "masked": masks is not None,
            "sources": {name: int(count) for name, count in zip(names, counts, strict=True)},
            "sha256": "0" * 64,
        }
    )
    unhashed = BCDataset(**arrays, manifest=manifest)  # checks the shapes before the hash
    digest = hashlib.sha256(_npz_bytes(unhashed.arrays())).hexdigest()
    # model_copy skips validation: validate the final manifest the way load_dataset will.
    final = DatasetManifestDTO.model_validate({**manifest.model_dump(), "sha256": digest})
    return BCDataset(**arrays, manifest=final)


def load_dataset(path: str | os.PathLike[str]) -> BCDataset:
    """The dataset saved at ``path`` (``x``, ``x.npz`` or ``x.json``), its hash checked.

    Raises ``DatasetError`` naming the file when either file is missing or unreadable, the
    manifest is invalid, the .npz's SHA-256 differs from the manifest's, or the arrays do not
    fit the manifest.
    """
    npz, manifest_path = _paths(path)
    for file in (npz, manifest_path):
        if not file.is_file():
            kind = "dataset" if file == npz else "manifest"
            raise DatasetError(f"{file}: no such {kind} file (a dataset is an .npz and a .json)")
    try:
        manifest = DatasetManifestDTO.model_validate_json(manifest_path.read_bytes())
    except ValidationError as error:
        raise DatasetError(f"{manifest_path}: not a dataset manifest ({error})") from None
    content = npz.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    if digest != manifest.sha256:
        raise DatasetError(
            f"{npz}: SHA-256 {digest} differs from {manifest.sha256} in {manifest_path.name}; "
            "the file was changed or belongs to another manifest"
        )
    try:
        with np.load(io.BytesIO(content), allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
        observations: np.ndarray | dict[str, np.ndarray] = (
            arrays.pop("observations")
            if "observations" in arrays
            else {
                name.removeprefix(OBSERVATION_PREFIX): arrays.pop(name)
                for name in list(arrays)
                if name.startswith(OBSERVATION_PREFIX)
            }
        )
        return BCDataset(
            observations=observations,
            actions=arrays.pop("actions"),
            masks=arrays.pop("masks", None),
            episodes=arrays.pop("episodes"),
            source=arrays.pop("source"),
            fens=arrays.pop("fens", None),
            **{name: arrays.pop(name, None) for name in EXTRA_MOVE_SETS},
            manifest=manifest,
        )
    except (DatasetError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise DatasetError(f"{npz}: {error}") from None


# -- generating -----------------------------------------------------------------------------------


def episode_seed(seed: int, source: int, episode: int) -> int:
    """The seed of game ``episode`` of source ``source`` (an index into the dataset's sources)
    in a dataset generated with ``seed``: independent streams, the same in every process."""
    state = np.random.SeedSequence([seed, source, episode]).generate_state(1, np.uint64)
    return int(state[0] >> 1)


@dataclass
class _Rows:
    """Columns being filled, one labelled position at a time."""

    observations: list[Any] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    episodes: list[int] = field(default_factory=list)
    source: list[int] = field(default_factory=list)
    fens: list[str] = field(default_factory=list)


def _label_game(
    expert: Opponent,
    rows: _Rows,
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
        # and Stockfish answers a FEN twice as fast as a replayed game (measured here).
        label = expert.choose_move(board.copy(stack=False), game.legal_moves)
        if not game.is_legal(label):
            raise RuntimeError(
                f"the expert {expert!r} chose {label.uci()}, illegal in {board.fen()}"
            )
        rows.observations.append(board_to_tensor(board))
        rows.actions.append(encode_move(label, board.turn))
        rows.masks.append(_packed(game.legal_actions))
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
    workers. Measured on this project's 2-core machine: about 600 positions per CPU-second with
    ``stockfish:1`` (engine included), 150 with ``alphabeta:2``.

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
    name = _expert_name(expert)
    blocks = _blocks(positions)
    with tqdm(
        total=positions, desc=f"labelling {name}", unit="pos", disable=not progress_bar
    ) as bar:
        if workers == 1:
            labelled = [_label_block(name, seed, block, bar) for block in blocks]
        else:
            jobs = [(name, seed, block) for block in blocks]
            labelled = _run_jobs(_label_block, jobs, [b.quota for b in blocks], workers, bar)
    return _merge(labelled, name, seed)


@dataclass(frozen=True)
class _Block:
    """``quota`` positions of one source, from games seeded by ``(seed, source, index, game)``."""

    source: int
    index: int
    quota: int


def _blocks(positions: int) -> list[_Block]:
    quotas = ((positions + 1) // 2, positions // 2)
    return [
        _Block(source, index, min(BLOCK_POSITIONS, quota - start))
        for source, quota in enumerate(quotas)
        for index, start in enumerate(range(0, quota, BLOCK_POSITIONS))
    ]


def _label_block(expert: str, seed: int, block: _Block, progress: tqdm | None = None) -> _Rows:
    """One block's rows; its episodes are numbered from 0 (``_merge`` makes them unique)."""
    player = chess_expert(expert)
    rows = _Rows()
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


def _run_jobs(
    function: Callable[..., Any],
    jobs: list[tuple[Any, ...]],
    sizes: list[int],
    workers: int,
    bar: tqdm,
) -> list[Any]:
    """``function(*job)`` for every job, in job order: here, or in ``workers`` processes; the bar
    advances by each job's size as it is collected."""
    if workers == 1:
        results = []
        for job, size in zip(jobs, sizes, strict=True):
            results.append(function(*job))
            bar.update(size)
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # no fork of a parent that may hold torch
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(function, *job) for job in jobs]
        results = []
        for future, size in zip(futures, sizes, strict=True):
            results.append(future.result())
            bar.update(size)
    return results


def _expert_name(spec: str) -> str:
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


def _merge(labelled: list[_Rows], expert: str, seed: int) -> BCDataset:
    """The blocks' rows as one dataset, episodes renumbered so that each game has its own."""
    episodes, offset = [], 0
    for rows in labelled:
        numbers = np.asarray(rows.episodes, dtype=np.int32)
        episodes.append(numbers + offset)
        offset += int(numbers.max()) + 1
    return _assemble(
        observations=np.stack([o for rows in labelled for o in rows.observations]),
        actions=np.asarray([a for rows in labelled for a in rows.actions], dtype=np.int64),
        masks=np.stack([m for rows in labelled for m in rows.masks]),
        episodes=np.concatenate(episodes),
        source=np.asarray([s for rows in labelled for s in rows.source], dtype=np.uint8),
        fens=np.asarray([f for rows in labelled for f in rows.fens], dtype=str),
        template=_template(
            "chess", expert, seed, BOARD_SHAPE, spaces.Discrete(ACTION_SIZE), CHESS_SOURCES
        ),
    )


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
    name = _expert_name(expert)
    chunks = [fens[i : i + BLOCK_POSITIONS] for i in range(0, len(fens), BLOCK_POSITIONS)]
    jobs = [(name, episode_seed(seed, 0, index), chunk) for index, chunk in enumerate(chunks)]
    with tqdm(
        total=len(fens), desc=f"labelling {name}", unit="pos", disable=not progress_bar
    ) as bar:
        labelled = _run_jobs(_label_fens, jobs, [len(c) for c in chunks], workers, bar)
    rows = _Rows()
    for chunk, (observations, actions, masks) in zip(chunks, labelled, strict=True):
        rows.observations += observations
        rows.actions += actions
        rows.masks += masks
        rows.fens += chunk
    return _assemble(
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
                "mates": np.stack([_packed(ending.mating) for ending in endings]),
                "avoid": np.stack([_packed(ending.drawing) for ending in endings]),
            }
        ),
        template=_template(
            "chess", name, seed, BOARD_SHAPE, spaces.Discrete(ACTION_SIZE), (source,)
        ),
    )


def _packed(actions: list[int]) -> np.ndarray:
    """``actions`` as a packed 4672-bit mask (the format of ``masks`` and ``avoid``)."""
    mask = np.zeros(ACTION_SIZE, dtype=bool)
    mask[actions] = True
    return np.packbits(mask)


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
            masks.append(_packed(game.legal_actions))
    finally:
        player.close()
    return observations, actions, masks


def combine(datasets: list[BCDataset]) -> BCDataset:
    """Chess datasets as one: rows in order, sources merged by name, games kept apart.

    Example:
        >>> a = generate_chess_dataset("alphabeta:1", 4, seed=0, progress_bar=False)
        >>> both = combine([a, a])
        >>> len(both), both.manifest.sources, len(set(both.episodes)) == 2 * len(set(a.episodes))
        (8, {'vs_random': 4, 'self_play': 4}, True)
    """
    if not datasets or any(d.masks is None or d.fens is None for d in datasets):
        raise ValueError("combine takes one or more chess datasets (with masks and FENs)")
    names: list[str] = []
    for data in datasets:
        names += [name for name in data.manifest.sources if name not in names]
    sources, episodes, offset = [], [], 0
    for data in datasets:
        remap = np.asarray([names.index(name) for name in data.manifest.sources], dtype=np.uint8)
        sources.append(remap[data.source])
        episodes.append(data.episodes + offset)
        offset += int(data.episodes.max()) + 1 if len(data) else 0
    experts = list(dict.fromkeys(data.manifest.expert for data in datasets))
    first = datasets[0].manifest
    move_sets = {  # rows without a set mark none of its moves
        name: np.concatenate(
            [
                np.zeros_like(data.masks) if getattr(data, name) is None else getattr(data, name)
                for data in datasets
            ]
        )
        for name in EXTRA_MOVE_SETS
        if any(getattr(data, name) is not None for data in datasets)
    }
    return _assemble(
        observations=np.concatenate([data.observations for data in datasets]),  # type: ignore[misc]
        actions=np.concatenate([data.actions for data in datasets]),
        masks=np.concatenate([data.masks for data in datasets]),  # type: ignore[misc]
        episodes=np.concatenate(episodes).astype(np.int32),
        source=np.concatenate(sources),
        fens=np.concatenate([data.fens for data in datasets]),  # type: ignore[misc]
        **move_sets,
        template=_template(
            "chess",
            "+".join(experts),
            first.seed,
            BOARD_SHAPE,
            spaces.Discrete(ACTION_SIZE),
            tuple(names),
        ),
    )


def _template(
    env: str,
    expert: str,
    seed: int,
    shape: tuple[int, ...] | dict[str, tuple[int, ...]],
    action_space: spaces.Space[Any],
    sources: tuple[str, ...],
    learner: str | None = None,
) -> DatasetManifestDTO:
    """The manifest before the rows are counted and hashed (``_assemble`` fills those in)."""
    nvec = (
        tuple(int(n) for n in action_space.nvec)
        if isinstance(action_space, spaces.MultiDiscrete)
        else None
    )
    size = math.prod(nvec) if nvec else int(action_space.n)  # type: ignore[attr-defined]
    return DatasetManifestDTO(
        env=env,
        expert=expert,
        positions=1,
        seed=seed,
        sha256="0" * 64,
        observation_shape=shape,
        action_size=size,
        action_nvec=nvec,
        learner=learner,
        sources=dict.fromkeys(sources, 0),
    )


# -- worlds ---------------------------------------------------------------------------------------


def flat_action(wrapper: Any, action: dict[str, Any]) -> Any:
    """The ``FlattenForSB3`` action that ``wrapper.action`` turns back into ``action``.

    The inverse of the wrapper's own conversion: a discrete field's index minus its space's
    ``start``, a float field of a MultiDiscrete action to its nearest of ``float_bins`` even
    steps of its bounds, an all-float action concatenated.

    Example:
        >>> from training.envs import env_factory
        >>> env = env_factory("world:trade")()
        >>> action = {"verb": 3, "good": 2, "target_town": 0, "amount": np.array([10.0])}
        >>> flat_action(env, action)
        array([ 3,  2,  0, 10])
        >>> env.action(flat_action(env, action))["amount"]
        array([10.], dtype=float32)
    """
    inner = wrapper.env.action_space
    flat = wrapper.action_space
    if not isinstance(inner, spaces.Dict):
        return action
    fields = list(inner.spaces.items())
    if isinstance(flat, spaces.Discrete):
        ((name, space),) = fields
        return int(action[name]) - int(space.start)
    if isinstance(flat, spaces.Box):
        parts = [np.asarray(action[name], dtype=np.float32).ravel() for name, _ in fields]
        return np.concatenate(parts)
    values = []
    for name, space in fields:
        if isinstance(space, spaces.Discrete):
            values.append(int(action[name]) - int(space.start))
        else:
            bins = wrapper.float_bins
            low, high = float(space.low.ravel()[0]), float(space.high.ravel()[0])
            value = float(np.asarray(action[name]).ravel()[0])
            fraction = (value - low) / (high - low) if high > low else 0.0
            values.append(int(np.clip(round(fraction * (bins - 1)), 0, bins - 1)))
    return np.asarray(values, dtype=np.int64)


def _world_episode(
    env: Any,
    expert: Callable[[Any], dict[str, Any]],
    rows: _Rows,
    episode: int,
    seed: int,
    positions: int,
    progress: tqdm,
) -> None:
    """One episode of the expert in the learner's seat, until it ends or ``positions`` rows."""
    single = env.unwrapped  # the SingleAgentEnv: its observations are what the expert reads
    observation, _ = single.reset(seed=episode_seed(seed, 0, episode))
    done = False
    while not done and len(rows.actions) < positions:
        action = flat_action(env, expert(observation))
        rows.observations.append(env.observation(observation))
        rows.actions.append(action)
        rows.episodes.append(episode)
        rows.source.append(0)
        progress.update(1)
        # What FlattenForSB3.step does, with the unflattened observation kept for the expert.
        observation, _, terminated, truncated, _ = single.step(env.action(action))
        done = terminated or truncated


def generate_world_dataset(
    world: str,
    positions: int,
    seed: int,
    learner: str | None = None,
    progress_bar: bool = True,
) -> BCDataset:
    """``positions`` steps of ``world``'s scripted expert (``training.experts.world_expert``) in
    ``learner``'s seat (default: the first agent), the other agents acting at random.

    The env is ``training.envs.env_factory(f"world:{world}")``'s: the expert reads the
    observation the learner gets under the world's observability, and each row stores that
    observation as ``FlattenForSB3`` flattens it (one array per key) with the expert's action in
    the flattened action space (``flat_action``); the env is stepped with exactly that flat
    action, so a discretised amount is what was played. No masks: every flat action is legal.
    Episode ``i`` resets the env with ``episode_seed(seed, 0, i)``.
    """
    if positions < 1:
        raise ValueError(f"positions must be at least 1, got {positions}")
    env = env_factory(f"world:{world}", learner=learner)()
    expert = world_expert(world)
    rows = _Rows()
    try:
        with tqdm(
            total=positions, desc=f"{world} expert", unit="pos", disable=not progress_bar
        ) as bar:
            episode = 0
            while len(rows.actions) < positions:
                _world_episode(env, expert, rows, episode, seed, positions, bar)
                episode += 1
    finally:
        env.close()
    leaves = env.observation_space.spaces
    observations = {
        key: np.stack([np.asarray(row[key], dtype=space.dtype) for row in rows.observations])
        for key, space in leaves.items()
    }
    return _assemble(
        observations=observations,
        actions=np.asarray(rows.actions, dtype=np.int64),
        masks=None,
        episodes=np.asarray(rows.episodes, dtype=np.int32),
        source=np.asarray(rows.source, dtype=np.uint8),
        fens=None,
        template=_template(
            world,
            "scripted",
            seed,
            _observation_shape(observations),
            env.action_space,
            WORLD_SOURCES,
            learner=env.unwrapped.agent,
        ),
    )
