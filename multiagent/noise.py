"""Deterministic, bounded observation noise, vectorised over every (observer, value) of a turn.

Each noisy number is a function of (env seed, turn, observer, target, variable path) alone: names
and paths are hashed with hashlib and mixed with splitmix64 in numpy, so the same seed gives the
same noise in every process, whatever else was observed first.

Per leaf value, with noise level ``n`` (in [0, 1]: ``load_config`` refuses any other):
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
from itertools import chain, repeat
from operator import itemgetter
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


def pair_keys(seed: int, turn: int, observers: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """One 64-bit key per (observer, target) pair at ``turn`` (names given as stable hashes)."""
    mixed_turn = (seed ^ (turn * 0x9E3779B97F4A7C15)) & 0xFFFFFFFFFFFFFFFF
    base = _splitmix64(np.asarray([mixed_turn], dtype=np.uint64))
    return _splitmix64(_splitmix64(base ^ observers) ^ targets)


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
    """One container variable this turn: its leaves are columns ``start``..``stop`` of the leaf
    order; a uniform ``form`` is rebuilt from those columns at once, "walk" leaf by leaf."""

    name: str
    form: str  # "dict" | "list" | "tuple" | "rows" | "walk"
    kind: int = -1
    keys: tuple[Any, ...] = ()
    width: int = 0
    start: int = 0
    stop: int = 0
    categories: Sequence[str] = ()  # the values of a uniform categorical container


def _add_container(
    name: str,
    defn: VariableDefinition,
    value: Any,
    leaves: _Leaves,
    uniform: tuple[str, VariableDefinition, int] | None,
    paths_cache: dict[tuple[Any, ...], list[int]],
    offset: int,
) -> _Container:
    """Flatten one container into ``leaves`` (in bulk when ``uniform``, see ``_uniform_leaf``)
    and say how to rebuild it. Path hashes of uniform containers are cached by their shape;
    ``offset`` is the column of ``leaves``' first leaf in the target's leaf order."""
    start = offset + len(leaves.values)
    if uniform is not None:
        form, leaf, width = uniform
        keys: tuple[Any, ...] = tuple(value) if form == "dict" else ()
        shape = (name, form, keys or len(value))
        paths = paths_cache.get(shape)
        if paths is None:
            if form == "dict":
                names = [f"{name}[{key}]" for key in keys]
            elif form == "rows":
                names = [f"{name}[{i}][{j}]" for i in range(len(value)) for j in range(width)]
            else:
                names = [f"{name}[{i}]" for i in range(len(value))]
            paths = paths_cache[shape] = [_path_hash(path) for path in names]
        if form == "dict":
            items = list(value.values())
        elif form == "rows":
            items = [x for item in value for x in item]
        else:
            items = list(value)
        leaves.add_many(leaf, items, paths)
        stop = offset + len(leaves.values)
        return _Container(name, form, _KIND_OF[leaf.type], keys, width, start, stop,
                          leaf.values or ())  # fmt: skip
    _collect(defn, value, name, leaves)
    return _Container(name, "walk", start=start, stop=offset + len(leaves.values))


def _uniform_leaf(defn: VariableDefinition) -> tuple[str, VariableDefinition, int] | None:
    """(form, the one leaf definition, row width) when every leaf of ``defn`` shares a definition:
    a dict or list of scalars, a tuple of equal scalars, or a list of such tuples."""
    if defn.schema_ is not None:
        return None
    if defn.type == "dict" and _scalar_kind(defn.value_type) is not None:
        return "dict", defn.value_type, 0  # type: ignore[return-value]
    if defn.type == "list" and _scalar_kind(defn.item_type) is not None:
        return "list", defn.item_type, 0  # type: ignore[return-value]
    items = defn.item_types or []
    if (
        defn.type == "tuple"
        and _scalar_kind(items[0]) is not None
        and all(c == items[0] for c in items)
    ):
        return "tuple", items[0], 0
    row = defn.item_type
    if defn.type == "list" and row is not None and row.type == "tuple" and row.item_types:
        first = row.item_types[0]
        if _scalar_kind(first) is not None and all(c == first for c in row.item_types):
            return "rows", first, len(row.item_types)
    return None


@dataclass
class _Layout:
    """The turn-independent part of a target's visible variables: scalar leaves by kind."""

    names: tuple[str, ...]
    scalar_names: list[str]  # float, int, bool, then categorical variables
    n_plain: int  # how many of them are not categorical
    passthrough: list[str]  # str variables: never noised
    containers: list[str]
    uniform: dict[str, tuple[str, VariableDefinition, int] | None]  # per container
    paths: dict[tuple[Any, ...], list[int]]  # container path hashes by (name, form, keys or size)
    leaves: _Leaves  # the scalar leaves' kinds, bounds, categories and path hashes
    kind_counts: tuple[int, int, int, int]  # scalar leaves per kind, in kind order


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
        counts = tuple(len(by_kind[kind]) for kind in _KINDS)
        uniform = {name: _uniform_leaf(definitions[name]) for name in containers}
        cache[key] = _Layout(
            names=names,
            scalar_names=scalar_names,
            n_plain=n_plain,
            passthrough=passthrough,
            containers=containers,
            uniform=uniform,
            paths={},
            leaves=leaves,
            kind_counts=counts,  # type: ignore[arg-type]
        )
    return cache[key]


class NoisyTarget:
    """One target's visible variables this turn, flattened for ``draw_noise``.

    Args:
        variables: the target's values by variable name (only the visible ones are read).
        definitions: the definitions of all the target's variables.
        names: the visible variable names.
        cache: where the turn-independent layout is kept between turns (one per plan: its
            keys assume the same definitions), keyed by ``cache_key``.

    Example:
        >>> gold, flag = VariableDefinition(type="float", min=0), VariableDefinition(type="bool")
        >>> target = NoisyTarget({"gold": 100.0, "open": True}, {"gold": gold, "open": flag},
        ...                      names=["gold", "open"])
        >>> observers = np.array([stable_hash("A"), stable_hash("B")], dtype=np.uint64)
        >>> keys = pair_keys(0, 1, observers, np.full(2, stable_hash("T"), dtype=np.uint64))
        >>> [rows] = draw_noise([target], keys, np.array([0.0, 0.1]), observer_counts=[2])
        >>> target.assemble(rows)  # A sees it exactly, B with 10% noise
        [{'gold': 100.0, 'open': True}, {'gold': 103.40773547867272, 'open': True}]
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
        scalar_values = [variables[name] for name in layout.scalar_names]
        plain, labels = scalar_values[: layout.n_plain], scalar_values[layout.n_plain :]
        categories = layout.leaves.categories[layout.n_plain :]
        # Scalar leaves: this turn's values; their kinds, bounds and paths are the layout's.
        self.scalar_values = [float(v) for v in plain] + [
            float(c.index(v)) for c, v in zip(categories, labels, strict=True)
        ]
        self.n_scalar = len(self.scalar_values)
        # Container leaves follow the scalar ones; their column indices count from n_scalar.
        self.extra = _Leaves()
        self.none_containers = [name for name in layout.containers if variables[name] is None]
        self.containers = [
            _add_container(
                name,
                definitions[name],
                variables[name],
                self.extra,
                layout.uniform[name],
                layout.paths,
                self.n_scalar,
            )
            for name in layout.containers
            if variables[name] is not None
        ]

    @property
    def n_leaves(self) -> int:
        return self.n_scalar + len(self.extra.values)

    def assemble(
        self, result: np.ndarray, extra: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """One observed copy per row of ``result`` (noisy leaves in leaf order), plus ``extra``.

        Each copy is one ``dict(zip(names, values))``: the values of a row are its scalars (by
        kind), its categories, its containers (rebuilt column-wise) and the fixed values, in the
        order of ``names`` by construction (so the zips skip the strict length check).
        """
        layout = self.layout
        floats, ints, bools, category_indices = _typed_ranges(result, layout.kind_counts)
        categories = layout.leaves.categories[layout.n_plain :]
        if categories:
            labels = [list(map(list.__getitem__, categories, row)) for row in category_indices]
        else:
            labels = category_indices  # empty rows
        fixed = {name: self.variables[name] for name in layout.passthrough}
        fixed.update(dict.fromkeys(self.none_containers))
        fixed.update(extra or {})
        names = [
            *layout.scalar_names,
            *(container.name for container in self.containers),
            *fixed,
        ]
        fixed_values = list(fixed.values())
        if self.containers:
            columns = [
                self._column(container, result[:, container.start : container.stop])
                for container in self.containers
            ]
            rows = map(chain, floats, ints, bools, labels, zip(*columns, strict=True),
                       repeat(fixed_values))  # fmt: skip
        else:
            rows = map(chain, floats, ints, bools, labels, repeat(fixed_values, len(floats)))
        # map(zip, ...) rather than zip(..., strict=False): a keyword argument costs each call.
        return list(map(dict, map(zip, repeat(names), rows)))

    def _column(self, container: _Container, block: np.ndarray) -> list[Any]:
        """One container rebuilt for every observer from its columns of noisy leaves."""
        if container.form == "walk":
            definition, value = self.definitions[container.name], self.variables[container.name]
            first, last = container.start - self.n_scalar, container.stop - self.n_scalar
            kinds = np.asarray(self.extra.kinds[first:last], dtype=np.int8)
            by_kind = _typed(block, kinds)
            labels = [c for c, k in zip(self.extra.categories[first:last], kinds.tolist(),
                                        strict=True) if k == _CATEGORY]  # fmt: skip
            by_kind[_CATEGORY] = [
                list(map(list.__getitem__, labels, r)) for r in by_kind[_CATEGORY]
            ]
            return [
                _rebuild(definition, value, {k: iter(row[k]) for k in _KINDS})
                for row in zip(*by_kind, strict=True)
            ]
        rows = _converted(block, container.kind)
        if container.kind == _CATEGORY:
            labels = container.categories
            rows = [[labels[i] for i in row] for row in rows]
        # The hot loops below zip sequences whose lengths match by construction (the leaves
        # were collected from these very keys and items); map(zip, ...) passes no keyword.
        if container.form == "dict":
            return list(map(dict, map(zip, repeat(container.keys), rows)))
        if container.form == "list":
            return rows
        if container.form == "tuple":
            return list(map(tuple, rows))
        w = container.width
        fields = [map(itemgetter(slice(i, None, w)), rows) for i in range(w)]
        return list(map(list, map(zip, *fields)))


def _converted(block: np.ndarray, kind: int) -> list[list[Any]]:
    """Rows of one kind's noisy values as Python values of that kind."""
    if kind == _FLOAT:
        return block.tolist()
    if kind == _BOOL:
        return (block >= 0.5).tolist()
    return block.astype(np.int64).tolist()


def _typed_ranges(matrix: np.ndarray, counts: tuple[int, int, int, int]) -> list[list[list[Any]]]:
    """``_typed`` for the scalar leaves, which come first and grouped by kind: column ranges."""
    f, i, b, c = counts
    return [
        matrix[:, :f].tolist(),
        matrix[:, f : f + i].astype(np.int64).tolist(),
        (matrix[:, f + i : f + i + b] >= 0.5).tolist(),
        matrix[:, f + i + b : f + i + b + c].astype(np.int64).tolist(),
    ]


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
    keys: np.ndarray,
    noise: np.ndarray,
    observer_counts: Sequence[int],
    *,
    gaussian: bool = False,
) -> list[np.ndarray]:
    """Noisy leaf values for every (observer, leaf) of every target, in one vectorised pass.

    ``keys`` and ``noise`` hold one entry per (target, observer), targets in order, with
    ``observer_counts[g]`` observers for ``targets[g]``; the result for target g has one row per
    observer and one column per leaf.
    """
    leaf_counts = tuple(t.n_leaves for t in targets)
    observer_counts = tuple(int(count) for count in observer_counts)
    leaf, observer, pair_counts = _pair_index(leaf_counts, observer_counts)
    flat = _noisy(
        _joined(targets),
        leaf,
        keys[observer],
        noise[observer],
        gaussian,
    )
    parts = np.split(flat, np.cumsum(pair_counts)[:-1])
    return [
        part.reshape(int(rows), int(columns))
        for part, rows, columns in zip(parts, observer_counts, leaf_counts, strict=True)
    ]


_PAIR_INDICES: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[np.ndarray, ...]] = {}


def _pair_index(
    leaf_counts: tuple[int, ...], observer_counts: tuple[int, ...]
) -> tuple[np.ndarray, ...]:
    """Per (observer, leaf) pair, targets in order: its leaf and observer index, and the pairs per
    target. Only the counts decide them, and these rarely change between turns: kept (read-only)."""
    key = (leaf_counts, observer_counts)
    if key not in _PAIR_INDICES:
        if len(_PAIR_INDICES) >= 64:
            _PAIR_INDICES.clear()
        leaves = np.asarray(leaf_counts, dtype=np.int64)
        observers = np.asarray(observer_counts, dtype=np.int64)
        pair_counts = leaves * observers
        group = np.repeat(np.arange(len(leaf_counts)), pair_counts)
        first_pair = np.cumsum(pair_counts) - pair_counts
        position = np.arange(int(pair_counts.sum())) - first_pair[group]
        per_row = np.maximum(leaves[group], 1)
        leaf = (np.cumsum(leaves) - leaves)[group] + position % per_row
        observer = (np.cumsum(observers) - observers)[group] + position // per_row
        for array in (leaf, observer, pair_counts):
            array.setflags(write=False)
        _PAIR_INDICES[key] = (leaf, observer, pair_counts)
    return _PAIR_INDICES[key]


def _joined(targets: Sequence[NoisyTarget]) -> dict[str, np.ndarray]:
    """Every target's leaf facts end to end: each target's scalars (facts of its layout) then its
    containers' leaves."""
    values = [x for t in targets for x in chain(t.scalar_values, t.extra.values)]
    joined = {"values": np.asarray(values, dtype=np.float64)}
    for name, dtype in _FACTS:
        # One conversion of one list: far cheaper than an array per target and a concatenate.
        facts = [_fact(leaves, name) for t in targets for leaves in (t.layout.leaves, t.extra)]
        joined[name] = np.asarray(list(chain.from_iterable(facts)), dtype=dtype)
    return joined


_FACTS = (
    ("kinds", np.int8),
    ("low", np.float64),
    ("high", np.float64),
    ("paths", np.uint64),
    ("n_categories", np.float64),
)


def _fact(leaves: _Leaves, name: str) -> list[Any]:
    if name == "n_categories":
        return [len(c) or 1 for c in leaves.categories]
    return getattr(leaves, name)


def _noisy(
    leaves: dict[str, np.ndarray],
    leaf: np.ndarray,
    keys: np.ndarray,
    level: np.ndarray,
    gaussian: bool,
) -> np.ndarray:
    """The noisy value of every (observer, leaf) pair; each kind's rule runs on its own pairs."""
    values, kinds = leaves["values"][leaf], leaves["kinds"][leaf]
    bits = _splitmix64(keys ^ leaves["paths"][leaf])
    first = _uniform(bits)
    numeric = kinds <= _INT
    if gaussian:
        # Box-Muller needs a second uniform for every numeric pair.
        second = _uniform(_splitmix64(bits[numeric]))
        radius = np.sqrt(-2.0 * np.log1p(-first[numeric]))
        error = radius * np.cos(2.0 * np.pi * second)
        result = values.copy()
        scaled = values[numeric] * (1.0 + level[numeric] * error)
        integer = kinds[numeric] == _INT
        scaled[integer] = np.rint(scaled[integer])
        numeric_leaf = leaf[numeric]
        low, high = leaves["low"][numeric_leaf], leaves["high"][numeric_leaf]
        result[numeric] = np.clip(scaled, low, high)
    else:
        # The rule runs on every pair and is kept on the numeric ones: the same elementwise
        # arithmetic as on the numeric pairs alone, without gathering and scattering them.
        scaled = values * (1.0 + level * (2.0 * first - 1.0))
        scaled = np.where(kinds == _INT, np.rint(scaled), scaled)
        clipped = np.clip(scaled, leaves["low"][leaf], leaves["high"][leaf])
        result = np.where(numeric, clipped, values)
    flip = first < level
    boolean = (kinds == _BOOL) & flip
    result[boolean] = 1.0 - values[boolean]
    category = (kinds == _CATEGORY) & flip
    if category.any():
        # Another category, uniformly: shift the index by 1..n-1 places.
        count = leaves["n_categories"][leaf[category]]
        shift = 1.0 + np.floor(_uniform(_splitmix64(bits[category])) * np.maximum(count - 1, 1))
        result[category] = (values[category] + shift) % count
    return result
