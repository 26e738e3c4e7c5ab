"""Where the time of one partial, noisy observation of the 100-agent ring goes, and its floor.

The workload is ``benchmarks.multiagent``'s (b): 100 agents on a ring, 50 variables each, every
agent an insider to itself, external with noise 0.1 to its 10 neighbours, the global state
external with noise 0.05. Times are CPU time of this thread (``time.thread_time``), so other
processes on a shared machine slow them less than wall time; each figure is taken over many
turns, ``observe_all`` and the floor alternated, and given as min / median.

- ``observe_all``: one turn, the views freed inside the timing (as ``benchmarks.multiagent``).
- floor: the same output built from values already made as Python objects (every noisy float
  and int, every label), so only the dicts, lists, tuples and ``WorldState`` of the views are
  made and freed, the fastest way we know (``floor_recipe``; the first round's ``dict(zip())``
  floor was beaten by ``multiagent.dict_builders``, so it is a floor only as far as we know).
- floor + numbers: the same, the numbers made from a float64 matrix by ``tolist`` as well.
- garbage collector: collections per turn of each generation with the collector left on.

    python -m benchmarks.observation_profile [--turns 300] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import time
from collections.abc import Callable
from itertools import starmap
from typing import Any

import numpy as np

from benchmarks.machine import machine_line
from benchmarks.multiagent import workload_config, workload_state
from multiagent.dict_builders import dict_builder
from multiagent.observability import ObservabilityPlan, collector_paused, observe_all
from multiagent.world_state import WorldState


def floor_recipe(observed: dict[str, WorldState]) -> Callable[[bool], Any]:
    """A function rebuilding ``observed`` from ready Python values the fastest way we know:
    views of one key set together, a variable at a time (``dict_builder`` over all views,
    lists of tuples by ``zip`` and slices), the collector paused as ``observe_all`` does. Its
    argument says whether the numbers are first made again from a float64 matrix (``tolist``).
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    order = []
    for state in observed.values():
        for view in [*state.agents.values(), state.global_state]:
            shape = tuple((key, _shape(value)) for key, value in view.items())
            groups.setdefault(shape, []).append(view)
            order.append((shape, len(groups[shape]) - 1))
    recipes = []
    numbers = 0
    for shape, views in groups.items():
        columns = []
        for key, kind in shape:
            values = [view[key] for view in views]
            if kind[0] == "dict":
                rows = [list(value.values()) for value in values]
                columns.append(("dict", kind[1], rows))
            elif kind[0] == "rows":
                fields = [[item[j] for value in values for item in value] for j in range(2)]
                columns.append(("rows", kind[1], fields))
            elif kind[0] in ("list", "tuple"):
                columns.append((kind[0], None, [list(value) for value in values]))
            else:
                columns.append(("value", None, values))
            numbers += len(views) * _leaves(kind)
        recipes.append(([key for key, _ in shape], len(views), columns))
    matrix = np.random.default_rng(0).uniform(0, 1000, numbers)
    names = list(observed)
    seen = [(list(state.agents), len(state.agents)) for state in observed.values()]
    turn = next(iter(observed.values())).turn

    def rebuild(make_numbers: bool) -> Any:
        # Paused as observe_all pauses it: so the floor also pays the young-generation pass over
        # its views that the first allocation after gc.enable() sets off while they are alive.
        with collector_paused():
            if make_numbers:
                matrix.tolist()
            built = {}
            for shape, (keys, count, columns) in zip(groups, recipes, strict=True):
                made = []
                for kind, extra, values in columns:
                    if kind == "dict":
                        made.append(list(starmap(dict_builder(extra), values)))
                    elif kind == "rows":
                        items = list(zip(*values, strict=True))
                        starts = range(0, len(items), extra)
                        ends = range(extra, len(items) + 1, extra)
                        made.append(list(map(items.__getitem__, map(slice, starts, ends))))
                    elif kind == "list":
                        made.append(list(map(list, values)))
                    elif kind == "tuple":
                        made.append(list(map(tuple, values)))
                    else:
                        made.append(values)
                views = list(map(dict_builder(keys), *made)) if made else []
                built[shape] = views if views else [{} for _ in range(count)]
            picked = iter([built[shape][index] for shape, index in order])
            out = {}
            for name, (targets, size) in zip(names, seen, strict=True):
                agents = dict_builder(targets)(*[next(picked) for _ in range(size)])
                out[name] = WorldState(turn=turn, agents=agents, global_state=next(picked))
            return out

    return rebuild


def _leaves(shape: tuple[Any, ...]) -> int:
    if shape[0] == "dict":
        return len(shape[1])
    if shape[0] == "rows":
        return 2 * shape[1]
    return shape[1] if shape[0] in ("list", "tuple") else 1


def _shape(value: Any) -> tuple[Any, ...]:
    if isinstance(value, dict):
        return ("dict", tuple(value))
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return ("rows", len(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, len(value))
    return ("value",)


def timed(runs: dict[str, Callable[[], Any]], turns: int) -> dict[str, list[float]]:
    """CPU ms per call of each run, alternated (the result freed inside the timing)."""
    samples: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(turns):
        for label, run in runs.items():
            start = time.thread_time()
            run()
            samples[label].append((time.thread_time() - start) * 1e3)
    return samples


def collections_per_turn(run: Callable[[], Any], turns: int) -> list[float]:
    counts = [0, 0, 0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            counts[info["generation"]] += 1

    gc.callbacks.append(count)
    try:
        for _ in range(turns):
            run()
    finally:
        gc.callbacks.remove(count)
    return [c / turns for c in counts]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    args = parser.parse_args(argv)
    plan, state = ObservabilityPlan(workload_config()), workload_state()
    turns = iter(range(1, 10**9))

    def observe() -> Any:
        return observe_all(state, plan, seed=7, turn=next(turns))

    observed = observe()
    rebuild = floor_recipe(observed)
    assert rebuild(False) == observed
    runs = {
        "observe_all, one turn": observe,
        "floor: the views built from ready values": lambda: rebuild(False),
        "floor + the numbers made by tolist": lambda: rebuild(True),
    }
    for run in runs.values():
        run()
    samples = timed(runs, args.turns)
    print(machine_line("numpy"))
    print()
    print("| measurement | min CPU ms | median CPU ms |")
    print("|---|---:|---:|")
    for label, values_ms in samples.items():
        print(f"| {label} | {min(values_ms):.2f} | {statistics.median(values_ms):.2f} |")
    print()
    views = sum(len(s.agents) for s in observed.values()) + len(observed)
    print(f"{views} views per turn")
    print("collections per turn (gen 0, 1, 2), collector on outside observe_all:",
          collections_per_turn(observe, 50))  # fmt: skip
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: [observe() for _ in range(100)])
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
