"""Work in independently seeded blocks, so any number of processes produces the same rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

BLOCK_POSITIONS = 4096  # positions per independently seeded block: the unit of parallel work
GAMES_PER_BLOCK = 1_000_000  # game seeds of block b are b * GAMES_PER_BLOCK + game

Item = TypeVar("Item")


def episode_seed(seed: int, source: int, episode: int) -> int:
    """The seed of game ``episode`` of source ``source`` (an index into the dataset's sources)
    in a dataset generated with ``seed``: independent streams, the same in every process."""
    state = np.random.SeedSequence([seed, source, episode]).generate_state(1, np.uint64)
    return int(state[0] >> 1)


@dataclass(frozen=True)
class Block:
    """``quota`` positions of one source, from games seeded by ``(seed, source, index, game)``."""

    source: int
    index: int
    quota: int


def split_into_blocks(positions: int) -> list[Block]:
    quotas = ((positions + 1) // 2, positions // 2)
    return [
        Block(source, index, min(BLOCK_POSITIONS, quota - start))
        for source, quota in enumerate(quotas)
        for index, start in enumerate(range(0, quota, BLOCK_POSITIONS))
    ]


def chunked(items: Sequence[Item]) -> list[Sequence[Item]]:
    """``items`` in blocks of ``BLOCK_POSITIONS``, in order."""
    return [items[i : i + BLOCK_POSITIONS] for i in range(0, len(items), BLOCK_POSITIONS)]


def run_jobs(
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
