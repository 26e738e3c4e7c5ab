"""Deterministic, bounded observation noise, vectorised over every (observer, value) of a turn.

Each noisy number is a function of (env seed, turn, observer, target, variable path) alone: names
and paths are hashed with hashlib and mixed with splitmix64 in numpy, so the same seed gives the
same noise in every process, whatever else was observed first.

Per leaf value, with noise level ``n``:
- float: ``v * (1 + U(-n, n))`` (or ``v * (1 + N(0, n))`` with ``gaussian``), clipped to the
  variable's min/max;
- int: the same, rounded to the nearest integer, clipped;
- bool: flipped with probability ``n``;
- categorical: replaced by one of the other values (uniformly) with probability ``n``;
- str: unchanged; dict, list, tuple and object values: noise reaches every leaf inside them.

How it is fast: a target's visible variables are flattened once per turn into leaves (scalars
first, by kind; uniform containers -- a dict of floats, a list of (float, float) tuples -- in
bulk), ``draw_noise`` computes every observer's copy of every target in one numpy pass, and
``NoisyTarget.assemble`` turns rows back into values with ``dict(zip(...))`` and slices.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from multiagent.variables import VariableDefinition

__all__ = ["NoisyTarget", "draw_noise", "pair_keys", "stable_hash"]

_FLOAT, _INT, _BOOL, _CATEGORY = 0, 1, 2, 3
_KINDS = (_FLOAT, _INT, _BOOL, _CATEGORY)
_KIND_OF = {"float": _FLOAT, "int": _INT, "bool": _BOOL, "categorical": _CATEGORY}
_PATH_HASHES: dict[str, int] = {}


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (unlike ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _path_hash(path: str) -> int:
    value = _PATH_HASHES.get(path)
    if value is None:
        value = _PATH_HASHES[path] = stable_hash(path)
    return value


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a good 64-bit mix, vectorised (wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _uniform(bits: np.ndarray) -> np.ndarray:
    """Floats in [0, 1) from the top 53 bits."""
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def pair_keys(seed: int, turn: int, observers: np.ndarray, target: np.uint64) -> np.ndarray:
    """One 64-bit key per observer of ``target`` at ``turn`` (names given as stable hashes)."""
    mixed_turn = (seed ^ (turn * 0x9E3779B97F4A7C15)) & 0xFFFFFFFFFFFFFFFF
    base = _splitmix64(np.asarray([mixed_turn], dtype=np.uint64))
    return _splitmix64(_splitmix64(base ^ observers) ^ target)


@dataclass
class _Leaves:
    """Flattened leaf values with what the noise needs to know about each."""

    values: list[float] = field(default_factory=list)
    kinds: list[int] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    categories: list[Sequence[str]] = field(default_factory=list)
    paths: list[int] = field(default_factory=list)

    def add_many(self, defn: VariableDefinition, values: list[Any], paths: list[int]) -> None:
        """Leaves that share one definition (a scalar, or the items of a uniform container)."""
        count = len(values)
        kind = _KIND_OF[defn.type]
        if kind == _CATEGORY:
            categories = defn.values or []
            self.values += [float(categories.index(v)) for v in values]
            self.categories += [categories] * count
        else:
            self.values += [float(v) for v in values]
            self.categories += [()] * count
        self.kinds += [kind] * count
        self.low += [-np.inf if defn.min is None else defn.min] * count
        self.high += [np.inf if defn.max is None else defn.max] * count
        self.paths += paths


def _collect(defn: VariableDefinition, value: Any, path: str, leaves: _Leaves) -> None:
    """The generic walk, for containers without a uniform shape."""
    kind = defn.type
    if value is None or kind == "str":
        return
    if kind in _KIND_OF:
        leaves.add_many(defn, [value], [_path_hash(path)])
    elif defn.schema_ is not None:
        for name, child in defn.schema_.items():
            _collect(child, value.get(name), f"{path}.{name}", leaves)
    elif kind == "dict":
        for key, item in value.items():
            _collect(defn.value_type, item, f"{path}[{key}]", leaves)  # type: ignore[arg-type]
    elif kind == "list":
        for index, item in enumerate(value):
            _collect(defn.item_type, item, f"{path}[{index}]", leaves)  # type: ignore[arg-type]
    else:
        for index, (child, item) in enumerate(zip(defn.item_types or [], value, strict=True)):
            _collect(child, item, f"{path}[{index}]", leaves)


def _rebuild(defn: VariableDefinition, value: Any, noisy: dict[int, Iterator[Any]]) -> Any:
    """``value`` with its leaves taken, in walk order, from the per-kind iterators."""
    kind = defn.type
    if value is None or kind == "str":
        return value
    if kind in _KIND_OF:
        return next(noisy[_KIND_OF[kind]])
    if defn.schema_ is not None:  # fields left out (null default) stay left out
        return {
            name: _rebuild(child, value[name], noisy)
            for name, child in defn.schema_.items()
            if name in value
        }
    if kind == "dict":
        return {key: _rebuild(defn.value_type, item, noisy) for key, item in value.items()}  # type: ignore[arg-type]
    if kind == "list":
        return [_rebuild(defn.item_type, item, noisy) for item in value]  # type: ignore[arg-type]
    return tuple(
        _rebuild(child, item, noisy)
        for child, item in zip(defn.item_types or [], value, strict=True)
    )


def _scalar_kind(defn: VariableDefinition | None) -> int | None:
    return _KIND_OF.get(defn.type) if defn is not None else None


@dataclass
class _Container:
    """One container variable's leaves this turn: a uniform ``form`` rebuilt from a slice of
    its kind's values (``start``..``stop``), or "walk" for the generic per-leaf rebuild."""

    name: str
    form: str  # "dict" | "list" | "tuple" | "rows" | "walk"
    kind: int = -1
    keys: tuple[Any, ...] = ()
    width: int = 0
    start: int = 0
    stop: int = 0
    counts: dict[int, int] = field(default_factory=dict)  # leaves per kind ("walk")
    offsets: dict[int, int] = field(default_factory=dict)  # where its leaves start ("walk")


def _add_container(name: str, defn: VariableDefinition, value: Any, leaves: _Leaves) -> _Container:
    """Flatten one container into ``leaves`` (in bulk when uniform) and say how to rebuild it."""
    if defn.schema_ is None:
        if defn.type == "dict" and _scalar_kind(defn.value_type) is not None:
            keys = tuple(value)
            paths = [_path_hash(f"{name}[{key}]") for key in keys]
            leaves.add_many(defn.value_type, list(value.values()), paths)  # type: ignore[arg-type]
            return _Container(name, "dict", _KIND_OF[defn.value_type.type], keys=keys)  # type: ignore[union-attr]
        if defn.type == "list" and _scalar_kind(defn.item_type) is not None:
            paths = [_path_hash(f"{name}[{i}]") for i in range(len(value))]
            leaves.add_many(defn.item_type, list(value), paths)  # type: ignore[arg-type]
            return _Container(name, "list", _KIND_OF[defn.item_type.type])  # type: ignore[union-attr]
        items = defn.item_types or []
        if (
            defn.type == "tuple"
            and _scalar_kind(items[0]) is not None
            and all(c == items[0] for c in items)
        ):
            paths = [_path_hash(f"{name}[{i}]") for i in range(len(items))]
            leaves.add_many(items[0], list(value), paths)
            return _Container(name, "tuple", _KIND_OF[items[0].type])
        row = defn.item_type
        if defn.type == "list" and row is not None and row.type == "tuple" and row.item_types:
            first = row.item_types[0]
            if _scalar_kind(first) is not None and all(c == first for c in row.item_types):
                width = len(row.item_types)
                paths = [
                    _path_hash(f"{name}[{i}][{j}]") for i in range(len(value)) for j in range(width)
                ]
                leaves.add_many(first, [x for item in value for x in item], paths)
                return _Container(name, "rows", _KIND_OF[first.type], width=width)
    before = len(leaves.kinds)
    _collect(defn, value, name, leaves)
    counts = {kind: 0 for kind in _KINDS}
    for kind in leaves.kinds[before:]:
        counts[kind] += 1
    return _Container(name, "walk", counts=counts)


@dataclass
class _Layout:
    """The turn-independent part of a target's visible variables: scalar leaves by kind."""

    names: tuple[str, ...]
    scalar_names: list[str]  # float, int, bool, then categorical variables
    n_plain: int  # how many of them are not categorical
    passthrough: list[str]  # str variables: never noised
    containers: list[str]
    leaves: _Leaves  # the scalar leaves' kinds, bounds, categories and path hashes


LayoutCache = dict[tuple[bool, tuple[str, ...]], _Layout]


def _layout(
    definitions: dict[str, VariableDefinition], names: tuple[str, ...], key: tuple, cache: dict
) -> _Layout:
    if key not in cache:
        by_kind: dict[int, list[str]] = {kind: [] for kind in _KINDS}
        passthrough, containers = [], []
        for name in names:
            defn = definitions[name]
            if defn.type in _KIND_OF:
                by_kind[_KIND_OF[defn.type]].append(name)
            else:
                (passthrough if defn.type == "str" else containers).append(name)
        scalar_names = [name for kind in _KINDS for name in by_kind[kind]]
        leaves = _Leaves()
        for name in scalar_names:
            defn = definitions[name]
            sample = (defn.values or [""])[0] if defn.type == "categorical" else 0.0
            leaves.add_many(defn, [sample], [_path_hash(name)])
        n_plain = len(scalar_names) - len(by_kind[_CATEGORY])
        cache[key] = _Layout(names, scalar_names, n_plain, passthrough, containers, leaves)
    return cache[key]


class NoisyTarget:
    """One target's visible variables this turn, flattened for ``draw_noise``.

    Args:
        variables: the target's values by variable name (only the visible ones are read).
        definitions: the definitions of all the target's variables.
        names: the visible variable names.
        cache: where the turn-independent layout is kept between turns (one per plan: its
            keys assume the same definitions), keyed by ``cache_key``.
    """

    def __init__(
        self,
        variables: dict[str, Any],
        definitions: dict[str, VariableDefinition],
        names: Sequence[str],
        cache: dict | None = None,
        cache_key: tuple = (),
    ) -> None:
        self.variables, self.definitions = variables, definitions
        names = tuple(names)
        cache = {} if cache is None else cache
        self.layout = layout = _layout(definitions, names, (*cache_key, names), cache)
        static = layout.leaves
        scalar_values = [variables[name] for name in layout.scalar_names]
        plain, labels = scalar_values[: layout.n_plain], scalar_values[layout.n_plain :]
        categories = static.categories[layout.n_plain :]
        self.leaves = _Leaves(
            [float(v) for v in plain]
            + [float(c.index(v)) for c, v in zip(categories, labels, strict=True)],
            list(static.kinds), list(static.low), list(static.high),
            list(static.categories), list(static.paths),
        )  # fmt: skip
        self.n_scalar = len(static.kinds)
        self.containers: list[_Container] = []
        self.none_containers = [name for name in layout.containers if variables[name] is None]
        offsets = dict.fromkeys(_KINDS, 0)
        for name in layout.containers:
            if variables[name] is None:
                continue
            before = len(self.leaves.kinds)
            container = _add_container(name, definitions[name], variables[name], self.leaves)
            if container.form == "walk":
                container.offsets = dict(offsets)
                for kind, count in container.counts.items():
                    offsets[kind] += count
            else:
                count = len(self.leaves.kinds) - before
                container.start, container.stop = (
                    offsets[container.kind],
                    offsets[container.kind] + count,
                )
                offsets[container.kind] += count
            self.containers.append(container)

    def assemble(
        self, result: np.ndarray, extra: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """One observed copy per row of ``result`` (noisy leaves in leaf order), plus ``extra``."""
        layout, leaves, n_scalar = self.layout, self.leaves, self.n_scalar
        kinds = np.asarray(leaves.kinds, dtype=np.int8)
        floats, ints, bools, category_indices = _typed(result[:, :n_scalar], kinds[:n_scalar])
        plain_names = layout.scalar_names[: layout.n_plain]
        category_names = layout.scalar_names[layout.n_plain :]
        categories = leaves.categories[layout.n_plain : n_scalar]
        fixed = {name: self.variables[name] for name in layout.passthrough}
        fixed.update(dict.fromkeys(self.none_containers))
        fixed.update(extra or {})
        observed = []
        for f, i, b, c in zip(floats, ints, bools, category_indices, strict=True):
            seen = dict(zip(plain_names, f + i + b, strict=True))
            if categories:
                seen.update(zip(category_names, map(list.__getitem__, categories, c), strict=True))
            seen.update(fixed)
            observed.append(seen)
        if self.containers:
            self._add_containers(observed, result[:, n_scalar:], kinds[n_scalar:])
        return observed

    def _add_containers(
        self, observed: list[dict[str, Any]], result: np.ndarray, kinds: np.ndarray
    ) -> None:
        """Rebuild each container for all rows at once (a comprehension per container)."""
        by_kind = _typed(result, kinds)
        categories = [c for c, k in zip(self.leaves.categories[self.n_scalar :],
                                        self.leaves.kinds[self.n_scalar :], strict=True)
                      if k == _CATEGORY]  # fmt: skip
        if categories:
            by_kind[_CATEGORY] = [
                list(map(list.__getitem__, categories, row)) for row in by_kind[_CATEGORY]
            ]
        for container in self.containers:
            name = container.name
            if container.form == "walk":
                definition, value = self.definitions[name], self.variables[name]
                offsets = container.offsets
                rows = zip(*by_kind, strict=True)
                column = [
                    _rebuild(definition, value, {k: iter(row[k][offsets[k] :]) for k in _KINDS})
                    for row in rows
                ]
            else:
                a, b = container.start, container.stop
                chunks = [row[a:b] for row in by_kind[container.kind]]
                if container.form == "dict":
                    keys = container.keys
                    column = [dict(zip(keys, chunk, strict=True)) for chunk in chunks]
                elif container.form == "list":
                    column = chunks
                elif container.form == "tuple":
                    column = [tuple(chunk) for chunk in chunks]
                else:
                    w = container.width
                    column = [
                        [tuple(chunk[j : j + w]) for j in range(0, len(chunk), w)]
                        for chunk in chunks
                    ]
            for seen, value in zip(observed, column, strict=True):
                seen[name] = value


def _typed(matrix: np.ndarray, kinds: np.ndarray) -> list[list[list[Any]]]:
    """Per kind (float, int, bool, categorical index), the rows of that kind's columns as Python
    values of the right type."""
    return [
        matrix[:, kinds == _FLOAT].tolist(),
        matrix[:, kinds == _INT].astype(np.int64).tolist(),
        (matrix[:, kinds == _BOOL] >= 0.5).tolist(),
        matrix[:, kinds == _CATEGORY].astype(np.int64).tolist(),
    ]


def draw_noise(
    targets: Sequence[NoisyTarget],
    keys: Sequence[np.ndarray],
    noise: Sequence[np.ndarray],
    *,
    gaussian: bool = False,
) -> list[np.ndarray]:
    """Noisy leaf values for every (observer, leaf) of every target, in one vectorised pass.

    ``keys[g]`` and ``noise[g]`` hold one entry per observer of ``targets[g]``; the result for
    target g has one row per observer and one column per leaf.
    """
    leaf_counts = np.asarray([len(t.leaves.values) for t in targets], dtype=np.int64)
    observer_counts = np.asarray([len(k) for k in keys], dtype=np.int64)
    pair_counts = leaf_counts * observer_counts
    group = np.repeat(np.arange(len(targets)), pair_counts)
    first_pair = np.cumsum(pair_counts) - pair_counts
    position = np.arange(int(pair_counts.sum())) - first_pair[group]
    per_row = np.maximum(leaf_counts[group], 1)
    leaf = (np.cumsum(leaf_counts) - leaf_counts)[group] + position % per_row
    observer = (np.cumsum(observer_counts) - observer_counts)[group] + position // per_row
    flat = _noisy(
        _joined([t.leaves for t in targets]),
        leaf,
        np.concatenate(keys)[observer],
        np.concatenate(noise)[observer],
        gaussian,
    )
    parts = np.split(flat, np.cumsum(pair_counts)[:-1])
    return [
        part.reshape(int(rows), int(columns))
        for part, rows, columns in zip(parts, observer_counts, leaf_counts, strict=True)
    ]


def _joined(all_leaves: Sequence[_Leaves]) -> dict[str, np.ndarray]:
    def joined(name: str, dtype: Any) -> np.ndarray:
        return np.asarray([x for leaves in all_leaves for x in getattr(leaves, name)], dtype=dtype)

    return {
        "values": joined("values", np.float64),
        "kinds": joined("kinds", np.int8),
        "low": joined("low", np.float64),
        "high": joined("high", np.float64),
        "paths": joined("paths", np.uint64),
        "n_categories": np.asarray(
            [len(c) or 1 for leaves in all_leaves for c in leaves.categories], dtype=np.float64
        ),
    }


def _noisy(
    leaves: dict[str, np.ndarray],
    leaf: np.ndarray,
    keys: np.ndarray,
    level: np.ndarray,
    gaussian: bool,
) -> np.ndarray:
    values, kinds = leaves["values"][leaf], leaves["kinds"][leaf]
    n_categories = leaves["n_categories"][leaf]
    bits = _splitmix64(keys ^ leaves["paths"][leaf])
    first, second = _uniform(bits), _uniform(_splitmix64(bits))
    if gaussian:
        radius = np.sqrt(-2.0 * np.log1p(-first))
        factor = 1.0 + level * radius * np.cos(2.0 * np.pi * second)
    else:
        factor = 1.0 + level * (2.0 * first - 1.0)
    scaled = values * factor
    scaled = np.where(kinds == _INT, np.rint(scaled), scaled)
    scaled = np.clip(scaled, leaves["low"][leaf], leaves["high"][leaf])
    flip = first < level
    # Another category, uniformly: shift the index by 1..n-1 places.
    shift = 1.0 + np.floor(second * np.maximum(n_categories - 1.0, 1.0))
    category = np.where(flip, (values + shift) % n_categories, values)
    boolean = np.where(flip, 1.0 - values, values)
    return np.where(kinds == _BOOL, boolean, np.where(kinds == _CATEGORY, category, scaled))
