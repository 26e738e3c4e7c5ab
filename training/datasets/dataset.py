"""The behaviour-cloning dataset: its arrays, checks, file format and merging.

``BCDataset`` holds the rows; ``save`` writes an .npz with its manifest as .json beside it, and
``load_dataset`` reads them back, checked by SHA-256. The .npz holds ``observations`` (or
``observations/<key>`` per key of a Dict observation), ``actions`` (int64), ``episodes`` (int32,
the game each row comes from), ``source`` (uint8, an index into the manifest's ``sources``), and
for chess ``masks`` (uint8, the 4672 legal-action bits packed by ``np.packbits`` into 584 bytes),
``fens`` (the positions, for debugging) and, when the positions come from whole games the
learner played (DAgger), ``mates`` and ``avoid`` (packed like the masks: the moves that would have
mated, and drawn, the game there). Its bytes depend on the arrays only (fixed zip timestamps), so
the same seed gives the same SHA-256.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from pydantic import ValidationError

from chess_env.core.encoding import ACTION_SIZE
from training.config import WorldName
from training.dto import DatasetManifest

BOARD_SHAPE = (8, 8, 12)
MASK_BYTES = math.ceil(ACTION_SIZE / 8)  # 584
OBSERVATION_PREFIX = "observations/"
EXTRA_MOVE_SETS = ("mates", "avoid")  # optional packed move sets beside the legal-move masks


class DatasetError(ValueError):
    """A dataset (or its file) that cannot be used; the message names the file when there is one."""


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
        >>> from training.datasets import generate_world_dataset
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
    manifest: DatasetManifest
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
        shapes = observation_shape(self.observations)
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
        return assemble(
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


def observation_shape(
    observations: np.ndarray | dict[str, np.ndarray],
) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    if isinstance(observations, dict):
        return {key: tuple(value.shape[1:]) for key, value in observations.items()}
    return tuple(observations.shape[1:])


def assemble(
    *,
    observations: np.ndarray | dict[str, np.ndarray],
    actions: np.ndarray,
    masks: np.ndarray | None,
    episodes: np.ndarray,
    source: np.ndarray,
    fens: np.ndarray | None,
    template: DatasetManifest,
    mates: np.ndarray | None = None,
    avoid: np.ndarray | None = None,
) -> BCDataset:
    """A dataset whose manifest is ``template`` with the counts, shapes and hash of these rows."""
    names = list(template.sources)
    counts = np.bincount(source, minlength=len(names))
    manifest = template.model_copy(
        update={
            "positions": len(actions),
            "observation_shape": observation_shape(observations),
            "masked": masks is not None,
            "sources": {name: int(count) for name, count in zip(names, counts, strict=True)},
            "sha256": "0" * 64,
        }
    )
    unhashed = BCDataset(  # checks the shapes before the hash
        observations=observations,
        actions=actions,
        masks=masks,
        episodes=episodes,
        source=source,
        fens=fens,
        manifest=manifest,
        mates=mates,
        avoid=avoid,
    )
    digest = hashlib.sha256(_npz_bytes(unhashed.arrays())).hexdigest()
    # model_copy skips validation: validate the final manifest the way load_dataset will.
    final = DatasetManifest.model_validate({**manifest.model_dump(), "sha256": digest})
    return replace(unhashed, manifest=final)


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
        manifest = DatasetManifest.model_validate_json(manifest_path.read_bytes())
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


@dataclass
class Rows:
    """Columns being filled, one labelled position at a time."""

    observations: list[Any] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    episodes: list[int] = field(default_factory=list)
    source: list[int] = field(default_factory=list)
    fens: list[str] = field(default_factory=list)


def packed_mask(actions: list[int]) -> np.ndarray:
    """``actions`` as a packed 4672-bit mask (the format of ``masks`` and ``avoid``)."""
    mask = np.zeros(ACTION_SIZE, dtype=bool)
    mask[actions] = True
    return np.packbits(mask)


def combine(datasets: list[BCDataset]) -> BCDataset:
    """Chess datasets as one: rows in order, sources merged by name, games kept apart.

    Example:
        >>> from training.datasets import generate_chess_dataset
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
    return assemble(
        observations=np.concatenate([data.observations for data in datasets]),
        actions=np.concatenate([data.actions for data in datasets]),
        masks=np.concatenate([data.masks for data in datasets]),
        episodes=np.concatenate(episodes).astype(np.int32),
        source=np.concatenate(sources),
        fens=np.concatenate([data.fens for data in datasets]),
        **move_sets,
        template=manifest_template(
            "chess",
            "+".join(experts),
            first.seed,
            BOARD_SHAPE,
            spaces.Discrete(ACTION_SIZE),
            tuple(names),
        ),
    )


def manifest_template(
    env: WorldName,
    expert: str,
    seed: int,
    shape: tuple[int, ...] | dict[str, tuple[int, ...]],
    action_space: spaces.Space[Any],
    sources: tuple[str, ...],
    learner: str | None = None,
) -> DatasetManifest:
    """The manifest before the rows are counted and hashed (``assemble`` fills those in)."""
    nvec = None
    if isinstance(action_space, spaces.MultiDiscrete):
        nvec = tuple(int(n) for n in action_space.nvec)
        size = math.prod(nvec)
    elif isinstance(action_space, spaces.Discrete):
        size = int(action_space.n)
    else:
        raise TypeError(f"a dataset's actions are Discrete or MultiDiscrete, got {action_space}")
    return DatasetManifest(
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
