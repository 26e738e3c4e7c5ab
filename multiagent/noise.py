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

How it is fast: a target's visible variables are flattened once per turn into one row of leaves
(``NoisyTarget``: scalars first, by kind, then uniform containers -- a dict of floats, a list of
(float, float) tuples -- in bulk). ``noisy_views`` takes the targets of one shape together (the
same variables, dict keys and list lengths, whose leaf facts are kept in a ``NoiseCache``): one
matrix with a row per (target, observer) pair, noised in one numpy pass, then turned back into
Python values a variable at a time (``tolist``, ``dict_builder``, slices) for all its rows. The
matrix's arrays are reused from turn to turn (``_Scratch``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, count, repeat
from operator import getitem, itemgetter
from typing import Any

import numpy as np

from multiagent.dict_builders import dict_builder
from multiagent.portable_math import cos_of_turns, log_of_one_minus
from multiagent.variables import VariableDefinition

__all__ = [
    "NoiseCache",
    "NoiseLayout",
    "NoisyTarget",
    "items_getter",
    "noisy_views",
    "pair_keys",
    "stable_hash",
]

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


_MIX_STEPS = ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None))


def _splitmix64(
    x: np.ndarray, out: np.ndarray | None = None, scratch: np.ndarray | None = None
) -> np.ndarray:
    """The splitmix64 finaliser: a good 64-bit mix, vectorised (wrapping uint64 arithmetic).

    Written into ``out`` (may be ``x``; a fresh array when None), with ``scratch`` (``x``'s
    shape) for the shifted copies when given.
    """
    with np.errstate(over="ignore"):
        x = np.add(x, np.uint64(0x9E3779B97F4A7C15), out=out)
        shifted = np.empty_like(x) if scratch is None else scratch
        for shift, multiplier in _MIX_STEPS:
            np.right_shift(x, np.uint64(shift), out=shifted)
            x ^= shifted
            if multiplier is not None:
                x *= np.uint64(multiplier)
        return x


def _uniform(
    bits: np.ndarray, out: np.ndarray | None = None, scratch: np.ndarray | None = None
) -> np.ndarray:
    """Floats in [0, 1) from the top 53 bits (into ``out``, with ``scratch`` as for
    ``_splitmix64``)."""
    top = np.right_shift(bits, np.uint64(11), out=scratch)
    return np.multiply(top, 1.0 / (1 << 53), out=out, dtype=np.float64)


class _Scratch(threading.local):
    """Arrays a thread reuses from turn to turn for the noise of its largest batches.

    A turn's noise makes a handful of arrays of a few hundred kilobytes. Fresh each turn, glibc
    hands them out from memory it has just returned to the kernel: a page fault every 4 KiB,
    about half of the noise's time. Kept here, they are made once per thread and size.
    """

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, name: str, shape: tuple[int, int], dtype: type) -> np.ndarray:
        size = shape[0] * shape[1]
        flat = self.arrays.get(name)
        if flat is None or flat.size < size:
            flat = self.arrays[name] = np.empty(size, dtype=dtype)
        return flat[:size].reshape(shape)


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
        if _KIND_OF[defn.type] == _CATEGORY:
            categories = defn.values or []
            self.values += [float(categories.index(v)) for v in values]
        else:
            self.values += [float(v) for v in values]
        self.add_facts(defn, paths)

    def add_facts(self, defn: VariableDefinition, paths: list[int]) -> None:
        """What the noise needs to know about leaves of ``defn`` at ``paths`` (not their values)."""
        count = len(paths)
        kind = _KIND_OF[defn.type]
        self.categories += [(defn.values or []) if kind == _CATEGORY else ()] * count
        self.kinds += [kind] * count
        self.low += [-np.inf if defn.min is None else defn.min] * count
        self.high += [np.inf if defn.max is None else defn.max] * count
        self.paths += paths

    def extend(self, other: _Leaves) -> None:
        """``other``'s facts after these (its values are not needed where this is used)."""
        self.kinds += other.kinds
        self.low += other.low
        self.high += other.high
        self.categories += other.categories
        self.paths += other.paths


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


def items_getter(keys: Sequence[Any]) -> Callable[[Any], tuple[Any, ...]]:
    """The items of ``keys`` in a dict or list, as a tuple whatever their number."""
    if len(keys) > 1:
        return itemgetter(*keys)
    if keys:
        (key,) = keys
        return lambda container: (container[key],)
    return lambda container: ()


def _label_index(labels: Sequence[str]) -> dict[str, float]:
    """Each label's (first) index, as the float a leaf holds."""
    index: dict[str, float] = {}
    for position, label in enumerate(labels):
        index.setdefault(label, float(position))
    return index


_Form = tuple[str, VariableDefinition, int]  # see _uniform_leaf
_SERIALS = count()


@dataclass
class NoiseLayout:
    """The turn-independent part of a target's visible variables (one per definitions and names)."""

    scalar_names: tuple[str, ...]  # float, int, bool, then categorical variables
    kind_counts: tuple[int, int, int, int]  # scalar leaves per kind, in kind order
    plain: Callable[[dict[str, Any]], Sequence[Any]]  # the float, int and bool scalars' values
    labels: Callable[[dict[str, Any]], Sequence[Any]]  # the categorical scalars' values
    label_index: tuple[dict[str, float], ...]  # per categorical scalar
    label_array: np.ndarray  # every categorical scalar's labels end to end (object array)
    label_offsets: np.ndarray  # where each categorical scalar's labels start in label_array
    serial: int  # tells layouts apart in a target's signature (cheaper to hash than names)
    passthrough: tuple[str, ...]  # str variables: never noised
    # Per container variable: its definition, its uniform form (see _uniform_leaf) and, for a
    # uniform categorical container, its labels' indices.
    containers: tuple[tuple[str, VariableDefinition, _Form | None, dict[str, float] | None], ...]
    leaves: _Leaves  # the scalar leaves' facts


def _layout(definitions: dict[str, VariableDefinition], names: tuple[str, ...]) -> NoiseLayout:
    by_kind: dict[int, list[str]] = {kind: [] for kind in _KINDS}
    passthrough, containers = [], []
    for name in names:
        defn = definitions[name]
        if defn.type in _KIND_OF:
            by_kind[_KIND_OF[defn.type]].append(name)
        elif defn.type == "str":
            passthrough.append(name)
        else:
            form = _uniform_leaf(defn)
            index = None
            if form is not None and form[1].type == "categorical":
                index = _label_index(form[1].values or [])
            containers.append((name, defn, form, index))
    leaves = _Leaves()
    for name in (scalar_names := [name for kind in _KINDS for name in by_kind[kind]]):
        leaves.add_facts(definitions[name], [_path_hash(name)])
    categories = [definitions[name].values or [] for name in by_kind[_CATEGORY]]
    return NoiseLayout(
        scalar_names=tuple(scalar_names),
        kind_counts=tuple(len(by_kind[kind]) for kind in _KINDS),  # type: ignore[arg-type]
        plain=items_getter(scalar_names[: len(scalar_names) - len(categories)]),
        labels=items_getter(by_kind[_CATEGORY]),
        label_index=tuple(_label_index(labels) for labels in categories),
        label_array=np.array([label for labels in categories for label in labels], dtype=object),
        label_offsets=np.cumsum([0, *map(len, categories)])[:-1].astype(np.intp),
        serial=next(_SERIALS),
        passthrough=tuple(passthrough),
        containers=tuple(containers),
        leaves=leaves,
    )


class NoiseCache:
    """What the noise keeps between turns for one set of definitions: each visible set's
    ``NoiseLayout`` and each target shape's ``_Facts`` (shapes change rarely; bounded)."""

    def __init__(self) -> None:
        self.layouts: dict[tuple[Any, ...], NoiseLayout] = {}
        self.facts: dict[tuple[Any, ...], _Facts] = {}
        self.scratch = _Scratch()

    def layout(
        self, definitions: dict[str, VariableDefinition], names: Sequence[str], key: tuple = ()
    ) -> NoiseLayout:
        """The layout of ``names`` (kept under ``key`` and the names: the caller's ``key`` tells
        apart the sets of definitions it uses)."""
        names = tuple(names)
        layout = self.layouts.get((*key, names))
        if layout is None:
            layout = self.layouts[(*key, names)] = _layout(definitions, names)
        return layout

    def facts_of(self, target: NoisyTarget) -> _Facts:
        if target.signature is None:  # a container walked leaf by leaf: its own shape
            return _facts(target)
        facts = self.facts.get(target.signature)
        if facts is None:
            if len(self.facts) >= 256:
                self.facts.clear()
            facts = self.facts[target.signature] = _facts(target)
        return facts


class NoisyTarget:
    """One target's visible variables this turn, flattened into one row of leaf values.

    The row holds the scalars (by kind) then each container's leaves. Targets of one
    ``signature`` (the same visible variables and the same container shapes: dict keys, list
    lengths) share their leaves' facts and are noised and rebuilt together by ``noisy_views``.

    Args:
        variables: the target's values by variable name (only the visible ones are read).
        layout: its visible variables' layout, from ``NoiseCache.layout``.
        extra: fixed entries every observed copy ends with (an agent's ``name``).

    Example:
        >>> gold, flag = VariableDefinition(type="float", min=0), VariableDefinition(type="bool")
        >>> layout = NoiseCache().layout({"gold": gold, "open": flag}, ["gold", "open"])
        >>> target = NoisyTarget({"gold": 100.0, "open": True}, layout)
        >>> observers = np.array([stable_hash("A"), stable_hash("B")], dtype=np.uint64)
        >>> keys = pair_keys(0, 1, observers, np.full(2, stable_hash("T"), dtype=np.uint64))
        >>> noisy_views([target], keys, np.array([0.0, 0.1]), observer_counts=[2])
        [{'gold': 100.0, 'open': True}, {'gold': 103.40773547867272, 'open': True}]
    """

    __slots__ = ("fixed", "layout", "row", "shapes", "signature", "walks")

    def __init__(
        self, variables: dict[str, Any], layout: NoiseLayout, extra: dict[str, Any] | None = None
    ) -> None:
        self.layout = layout
        row = [*layout.plain(variables), *map(dict.__getitem__, layout.label_index,
                                              layout.labels(variables))]  # fmt: skip
        fixed = {name: variables[name] for name in layout.passthrough}
        shapes: list[Any] = []
        walks: list[tuple[str, VariableDefinition, Any, _Leaves]] = []
        for name, defn, form, index in layout.containers:
            value = variables[name]
            if value is None:
                fixed[name] = None
                shapes.append(None)
            elif form is None:
                leaves = _Leaves()
                _collect(defn, value, name, leaves)
                row += leaves.values
                walks.append((name, defn, value, leaves))
                shapes.append("walk")
            else:
                if form[0] == "dict":
                    shapes.append(tuple(value))
                    items = value.values()
                elif form[0] == "rows":
                    shapes.append(len(value))
                    items = [x for item in value for x in item]
                else:
                    shapes.append(len(value))
                    items = value
                row += items if index is None else map(index.__getitem__, items)
        if extra:
            fixed.update(extra)
        self.row, self.fixed, self.shapes, self.walks = row, fixed, shapes, walks
        self.signature = None if walks else (layout.serial, tuple(shapes), tuple(fixed))


@dataclass
class _Container:
    """One container's columns ``start``..``stop`` in its targets' rows, and how to rebuild it:
    a uniform ``form`` from those columns at once, "walk" leaf by leaf."""

    name: str
    form: str  # "dict" | "list" | "tuple" | "rows" | "walk"
    kind: int = -1
    keys: tuple[Any, ...] = ()
    width: int = 0
    start: int = 0
    stop: int = 0
    labels: np.ndarray | None = None  # a uniform categorical container's labels (object array)
    walk: tuple[str, VariableDefinition, Any, _Leaves] | None = None


@dataclass
class _Facts:
    """What targets of one signature share: per leaf column its kind, bounds, path hash and
    number of categories; how to rebuild the containers; the keys of an observed copy."""

    kinds: np.ndarray
    low: np.ndarray
    high: np.ndarray
    paths: np.ndarray
    n_categories: np.ndarray
    ints: slice | np.ndarray  # the columns of each kind (or kinds)
    others: slice | np.ndarray  # not numeric
    bools: slice | np.ndarray
    categories: slice | np.ndarray
    containers: list[_Container]
    names: tuple[str, ...]


def _facts(target: NoisyTarget) -> _Facts:
    layout = target.layout
    leaves = _Leaves()
    leaves.extend(layout.leaves)
    containers = []
    walks = iter(target.walks)
    start = len(leaves.kinds)
    for (name, _, form, _), shape in zip(layout.containers, target.shapes, strict=True):
        if shape is None:
            continue
        if form is None:
            walk = next(walks)
            leaves.extend(walk[3])
            containers.append(_Container(name, "walk", start=start, stop=len(leaves.kinds),
                                         walk=walk))  # fmt: skip
        else:
            kind, leaf, width = form
            keys = shape if kind == "dict" else ()
            if kind == "dict":
                paths = [f"{name}[{key}]" for key in keys]
            elif kind == "rows":
                paths = [f"{name}[{i}][{j}]" for i in range(shape) for j in range(width)]
            else:
                paths = [f"{name}[{i}]" for i in range(shape)]
            leaves.add_facts(leaf, [_path_hash(path) for path in paths])
            labels = np.array(leaf.values, dtype=object) if leaf.type == "categorical" else None
            containers.append(_Container(name, kind, _KIND_OF[leaf.type], keys, width, start,
                                         len(leaves.kinds), labels))  # fmt: skip
        start = len(leaves.kinds)
    kinds = np.asarray(leaves.kinds, dtype=np.int8)
    return _Facts(
        kinds=kinds,
        low=np.asarray(leaves.low, dtype=np.float64),
        high=np.asarray(leaves.high, dtype=np.float64),
        paths=np.asarray(leaves.paths, dtype=np.uint64),
        n_categories=np.asarray([len(c) or 1 for c in leaves.categories], dtype=np.float64),
        ints=_columns(kinds == _INT),
        others=_columns(kinds > _INT),
        bools=_columns(kinds == _BOOL),
        categories=_columns(kinds == _CATEGORY),
        containers=containers,
        names=(*layout.scalar_names, *(c.name for c in containers), *target.fixed),
    )


def _columns(mask: np.ndarray) -> slice | np.ndarray:
    """The columns where ``mask`` holds: a slice when they are one run (cheaper to index)."""
    (columns,) = np.nonzero(mask)
    if len(columns) == 0:
        return slice(0, 0)
    first, last = int(columns[0]), int(columns[-1])
    return slice(first, last + 1) if last - first + 1 == len(columns) else columns


def noisy_views(
    targets: Sequence[NoisyTarget],
    keys: np.ndarray,
    levels: np.ndarray,
    observer_counts: Sequence[int],
    *,
    gaussian: bool = False,
    cache: NoiseCache | None = None,
) -> list[dict[str, Any]]:
    """Every observer's noisy copy of every target: ``keys`` and ``levels`` hold one entry per
    (target, observer) pair, targets in order with ``observer_counts[g]`` observers for
    ``targets[g]``; the copies come back in that order.

    Targets of one signature are done together: one matrix of noisy leaves (a row per pair, a
    column per leaf) drawn in one numpy pass, then turned into Python values a column at a time.
    """
    cache = NoiseCache() if cache is None else cache
    counts = [int(count) for count in observer_counts]
    starts = np.cumsum([0, *counts]).tolist()
    batches: dict[Any, list[int]] = {}
    for index, target in enumerate(targets):
        batches.setdefault(target.signature or ("alone", index), []).append(index)
    views: list[Any] = [None] * starts[-1]
    for members in batches.values():
        first, last = members[0], members[-1]
        if last - first + 1 == len(members):  # contiguous: the usual case
            pairs: Any = slice(starts[first], starts[last + 1])
        else:
            pairs = np.concatenate([np.arange(starts[g], starts[g + 1]) for g in members])
        group = [targets[g] for g in members]
        group_counts = [counts[g] for g in members]
        facts = cache.facts_of(group[0])
        rows = np.array([target.row for target in group], dtype=np.float64)
        if len(group) > 1 or group_counts[0] != 1:
            each = np.repeat(np.arange(len(group)), group_counts)
            out = cache.scratch.array("values", (len(each), rows.shape[1]), np.float64)
            rows = np.take(rows, each, axis=0, out=out)
        noisy = _noisy(rows, facts, keys[pairs], levels[pairs], gaussian, cache.scratch)
        copies = _assemble(group, group_counts, noisy, facts)
        position = 0
        for g, size in zip(members, group_counts, strict=True):
            views[starts[g] : starts[g] + size] = copies[position : position + size]
            position += size
    return views


def _noisy(
    values: np.ndarray,
    facts: _Facts,
    keys: np.ndarray,
    level: np.ndarray,
    gaussian: bool,
    scratch: _Scratch,
) -> np.ndarray:
    """The noisy value of every (pair, leaf): ``values`` has a row per pair (with its ``keys``
    and ``level``) and a column per leaf (with its facts); each kind's rule runs on its own
    entries, elementwise, so the result does not depend on how pairs are grouped.

    The result is one of ``scratch``'s arrays: read it before the next call.
    """
    shape = values.shape
    bits = np.bitwise_xor(keys[:, None], facts.paths, out=scratch.array("bits", shape, np.uint64))
    shifted = scratch.array("shifted", shape, np.uint64)
    _splitmix64(bits, out=bits, scratch=shifted)
    first = _uniform(bits, out=scratch.array("first", shape, np.float64), scratch=shifted)
    level = level[:, None]
    if gaussian:
        # Box-Muller needs a second uniform for every numeric entry.
        numeric = np.broadcast_to(facts.kinds <= _INT, shape)
        second = _uniform(_splitmix64(bits[numeric]))
        # The same bits on every machine: numpy's own log1p and cos differ by CPU.
        radius = np.sqrt(-2.0 * log_of_one_minus(first[numeric]))
        error = radius * cos_of_turns(second)
        result = values.copy()
        scaled = values[numeric] * (1.0 + np.broadcast_to(level, shape)[numeric] * error)
        integer = np.broadcast_to(facts.kinds == _INT, shape)[numeric]
        scaled[integer] = np.rint(scaled[integer])
        low = np.broadcast_to(facts.low, shape)[numeric]
        high = np.broadcast_to(facts.high, shape)[numeric]
        result[numeric] = np.clip(scaled, low, high)
    else:
        # values * (1 + level * (2 * first - 1)) on every entry, step by step in place (each
        # step the same IEEE operation), then the non-numeric columns put back.
        result = np.multiply(first, 2.0, out=scratch.array("result", shape, np.float64))
        result -= 1.0
        result *= level
        result += 1.0
        result *= values
        result[:, facts.ints] = np.rint(result[:, facts.ints])
        np.clip(result, facts.low, facts.high, out=result)
        result[:, facts.others] = values[:, facts.others]
    seen = values[:, facts.bools]
    result[:, facts.bools] = np.where(first[:, facts.bools] < level, 1.0 - seen, seen)
    seen = values[:, facts.categories]
    change = first[:, facts.categories] < level
    if change.any():
        # Another category, uniformly: shift the index by 1..n-1 places.
        count = np.broadcast_to(facts.n_categories[facts.categories], seen.shape)[change]
        random = _uniform(_splitmix64(bits[:, facts.categories][change]))
        shift = 1.0 + np.floor(random * np.maximum(count - 1, 1))
        seen = seen.copy()
        seen[change] = (seen[change] + shift) % count
        result[:, facts.categories] = seen
    return result


def _assemble(
    targets: list[NoisyTarget], counts: list[int], noisy: np.ndarray, facts: _Facts
) -> list[dict[str, Any]]:
    """One observed copy per row of ``noisy``: ``dict(zip(names, values))``, the values of all
    rows built a column (a variable) at a time: scalars by kind, containers, fixed values."""
    layout = targets[0].layout
    f, i, b, c = layout.kind_counts
    by_variable = noisy.T
    columns: list[Any] = [
        *by_variable[:f].tolist(),
        *by_variable[f : f + i].astype(np.int64).tolist(),
        *(by_variable[f + i : f + i + b] >= 0.5).tolist(),
    ]
    if c:
        indices = by_variable[f + i + b : f + i + b + c].astype(np.intp)
        columns += layout.label_array[indices + layout.label_offsets[:, None]].tolist()
    for container in facts.containers:
        block = noisy[:, container.start : container.stop]
        columns.append(_column(container, block))
    if len(targets) == 1:
        columns += [repeat(value, counts[0]) for value in targets[0].fixed.values()]
    else:
        for name in targets[0].fixed:
            values = [target.fixed[name] for target in targets]
            columns.append(chain.from_iterable(map(repeat, values, counts)))
    if not columns:
        return [{} for _ in range(len(noisy))]
    # The columns' lengths match by construction: one value per row of ``noisy``.
    return list(map(dict_builder(facts.names), *columns))


def _column(container: _Container, block: np.ndarray) -> list[Any]:
    """One container variable for every row of ``block`` (its columns of noisy leaves)."""
    if container.walk is not None:
        return _walked(container.walk, block)
    values = _converted(block, container.kind, container.labels)
    # The maps and zips below pair sequences whose lengths match by construction (the leaves
    # were collected from these very keys and items).
    if container.form == "dict":
        if not container.keys:
            return [{} for _ in range(len(block))]
        return list(map(dict_builder(container.keys), *values.T.tolist()))
    if container.form == "list":
        return values.tolist()
    if container.form == "tuple":
        return list(map(tuple, values.tolist()))
    # A list of width-w tuples: every row's tuples made at once, then cut into lists.
    width = container.width
    size = (container.stop - container.start) // width
    if size == 0:
        return [[] for _ in range(len(block))]
    fields = [values[:, j::width].ravel().tolist() for j in range(width)]
    items = list(zip(*fields, strict=True))
    ends = range(size, len(items) + 1, size)
    return list(map(items.__getitem__, map(slice, range(0, len(items), size), ends)))


def _walked(walk: tuple[str, VariableDefinition, Any, _Leaves], block: np.ndarray) -> list[Any]:
    """A container without a uniform shape, rebuilt leaf by leaf for each row of ``block``."""
    _, definition, value, leaves = walk
    kinds = np.asarray(leaves.kinds, dtype=np.int8)
    by_kind = [
        block[:, kinds == _FLOAT].tolist(),
        block[:, kinds == _INT].astype(np.int64).tolist(),
        (block[:, kinds == _BOOL] >= 0.5).tolist(),
        block[:, kinds == _CATEGORY].astype(np.int64).tolist(),
    ]
    labels = [c for c, k in zip(leaves.categories, leaves.kinds, strict=True) if k == _CATEGORY]
    by_kind[_CATEGORY] = [list(map(getitem, labels, row)) for row in by_kind[_CATEGORY]]
    return [
        _rebuild(definition, value, {k: iter(row[k]) for k in _KINDS})
        for row in zip(*by_kind, strict=True)
    ]


def _converted(block: np.ndarray, kind: int, labels: np.ndarray | None) -> np.ndarray:
    """One kind's noisy leaves as an array whose ``tolist`` gives Python values of that kind."""
    if kind == _FLOAT:
        return block
    if kind == _BOOL:
        return block >= 0.5
    if kind == _CATEGORY:
        return labels[block.astype(np.intp)]  # type: ignore[index]
    return block.astype(np.int64)
