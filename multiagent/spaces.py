"""Gymnasium spaces generated from variable definitions, and values to and from their elements.

- ``space_for``: the space of a ``VariableDefinition`` (one fresh object per call: spaces hold the
  RNG the env seeds, so they are never shared between callers).
- ``to_space_value``: a valid value -> an element of that space, with the dtypes Gymnasium checks.
- ``from_space_value``: an element (an encoded value, a ``space.sample()``) -> a value of the
  definition.
- ``zero_value``: the zero-filled element of any space built here (a target not visible now).

Mapping: float -> ``Box((1,), float32)``; int -> ``Discrete(max - min + 1)`` holding ``v - min``
when both bounds are given and span at most 64 values, else ``Box((1,), int64)``; bool ->
``MultiBinary(1)``; categorical -> ``Discrete`` (the index into ``values``); str -> ``Text`` over
``string.printable``; list -> ``Sequence``; tuple -> ``Tuple``; object and fixed-schema dict ->
``Dict`` in field order; dynamic dict -> ``Sequence`` of ``(key, value)`` ``Tuple``s, or, when
its ``keys`` are declared, ``Dict({key: Dict(present=MultiBinary(1), value=...)})``.

Encoding is lossy in documented places only: floats round to float32 and saturate at its largest
finite magnitude; ints in a Box saturate at ``[-2**63, 2**63 - 2]`` (``Box.sample`` computes
``high + 1``, which wraps around at int64's max); a str that is None encodes (and decodes) as
``""``; characters outside ``string.printable`` become ``"?"`` (``Text`` rejects them); dict keys
longer than ``MAX_STR_LENGTH`` are cut. A str ``pattern`` has no space counterpart, so a sampled
string need not match it. Decoding clips floats into the definition's bounds (float32 rounding can
step just outside them) and keeps the first ``max_length`` items of a list (``MAX_DICT_ITEMS``
pairs of a dict), since ``Sequence.sample()`` draws lengths without a bound.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from multiagent.variables import (
    MAX_DICT_ITEMS,
    MAX_LIST_ITEMS,
    MAX_STR_LENGTH,
    VariableDefinition,
)

__all__ = [
    "CHARSET",
    "MAX_DISCRETE_INT",
    "BoundedSequence",
    "from_space_value",
    "ordered_dict",
    "seed_space",
    "space_for",
    "to_space_value",
    "zero_value",
]

CHARSET = string.printable
MAX_DISCRETE_INT = 64  # the widest int range that becomes a Discrete rather than a Box
_ALLOWED = frozenset(CHARSET)
_F32_MAX = float(np.finfo(np.float32).max)
# Box.sample() draws below high + 1, which wraps around at int64's max: stop one short of it.
_INT_LOW, _INT_HIGH = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max) - 1


class BoundedSequence(spaces.Sequence):
    """A ``Sequence`` that remembers the most items its values may hold (``max_length``) and
    whether it encodes a dict as ``(key, value)`` pairs, so wrappers such as ``FlattenForSB3``
    can give it a fixed shape.

    Example:
        >>> space = space_for(VariableDefinition(type="list", item_type="bool", max_length=4))
        >>> isinstance(space, BoundedSequence), space.max_length, space.pairs
        (True, 4, False)
        >>> space_for(VariableDefinition(type="dict", key_type="str", value_type="float")).pairs
        True
    """

    def __init__(
        self, feature_space: spaces.Space[Any], max_length: int, *, pairs: bool = False
    ) -> None:
        super().__init__(feature_space, stack=False)
        self.max_length, self.pairs = max_length, pairs


def space_for(defn: VariableDefinition) -> spaces.Space[Any]:
    """The Gymnasium space whose elements encode the values of ``defn``.

    Example:
        >>> space_for(VariableDefinition(type="int", min=-3, max=3))
        Discrete(7)
        >>> space_for(VariableDefinition(type="list", item_type="bool", max_length=4))
        Sequence(MultiBinary(1), stack=False)
    """
    kind = defn.type
    if kind == "float":
        low = -np.inf if defn.min is None else _float32(defn.min)
        high = np.inf if defn.max is None else _float32(defn.max)
        return spaces.Box(low, high, (1,), np.float32)
    if kind == "int":
        size = _discrete_size(defn)
        if size is not None:
            return spaces.Discrete(size)
        low = _INT_LOW if defn.min is None else _int64(defn.min)
        high = _INT_HIGH if defn.max is None else _int64(defn.max)
        return spaces.Box(low, high, (1,), np.int64)
    if kind == "bool":
        return spaces.MultiBinary(1)
    if kind == "categorical":
        return spaces.Discrete(len(defn.values or ()))
    if kind == "str":
        return _text(defn.max_length or MAX_STR_LENGTH)
    if kind == "list":
        limit = defn.max_length or MAX_LIST_ITEMS
        return BoundedSequence(space_for(defn.item_definition), limit)
    if kind == "tuple":
        return spaces.Tuple(tuple(space_for(child) for child in defn.item_types or ()))
    if defn.schema_ is not None:
        return ordered_dict({name: space_for(child) for name, child in defn.schema_.items()})
    value_type = defn.value_definition
    if defn.keys is not None:
        # A space per key: one shared object would be seeded once per key and sample alike.
        return ordered_dict({key: _slot(space_for(value_type)) for key in defn.keys})
    key_space: spaces.Space[Any] = (
        _text(MAX_STR_LENGTH)
        if defn.key_type == "str"
        else spaces.Box(_INT_LOW, _INT_HIGH, (1,), np.int64)
    )
    pair = spaces.Tuple((key_space, space_for(value_type)))
    return BoundedSequence(pair, MAX_DICT_ITEMS, pairs=True)


def to_space_value(defn: VariableDefinition, value: Any) -> Any:
    """``value`` (valid for ``defn``) as an element of ``space_for(defn)``.

    Raises ``ValueError`` for a key a declared-keys dict does not list: the space has no slot for
    it, and dropping it would hide state.

    Example:
        >>> to_space_value(VariableDefinition(type="int", min=-3, max=3), -3)
        0
        >>> to_space_value(VariableDefinition(type="float"), 0.5)
        array([0.5], dtype=float32)
    """
    kind = defn.type
    if kind == "float":
        return np.array([_float32(value)], dtype=np.float32)
    if kind == "int":
        if _discrete_size(defn) is not None:
            return int(value) - int(defn.min)  # type: ignore[arg-type]
        return np.array([_int64(value)], dtype=np.int64)
    if kind == "bool":
        return np.array([int(bool(value))], dtype=np.int8)
    if kind == "categorical":
        return (defn.values or []).index(value)
    if kind == "str":
        return _printable(value or "", defn.max_length or MAX_STR_LENGTH)
    if kind == "list":
        return tuple(to_space_value(defn.item_definition, item) for item in value)
    if kind == "tuple":
        return tuple(
            to_space_value(child, item)
            for child, item in zip(defn.item_types or (), value, strict=True)
        )
    if defn.schema_ is not None:
        # A field whose default is null may be omitted: it reads as None.
        return {
            name: to_space_value(child, value.get(name)) for name, child in defn.schema_.items()
        }
    value_type = defn.value_definition
    if defn.keys is not None:
        undeclared = sorted(set(value) - set(defn.keys))
        if undeclared:
            raise ValueError(f"keys {undeclared} are not among the declared keys {defn.keys}")
        zero = zero_value(space_for(value_type))
        return {
            key: {
                "present": np.array([int(key in value)], dtype=np.int8),
                "value": to_space_value(value_type, value[key]) if key in value else zero,
            }
            for key in defn.keys
        }
    return tuple(
        (_encode_key(defn, key), to_space_value(value_type, item)) for key, item in value.items()
    )


def from_space_value(defn: VariableDefinition, sample: Any) -> Any:
    """The value of ``defn`` that ``sample`` (an element of ``space_for(defn)``) encodes.

    Example:
        >>> from_space_value(VariableDefinition(type="int", min=-3, max=3), 0)
        -3
    """
    kind = defn.type
    if kind == "float":
        number = float(_scalar(sample))
        if defn.min is not None:
            number = max(number, defn.min)
        return number if defn.max is None else min(number, defn.max)
    if kind == "int":
        if _discrete_size(defn) is not None:
            return int(sample) + int(defn.min)  # type: ignore[arg-type]
        return int(_scalar(sample))
    if kind == "bool":
        return bool(_scalar(sample))
    if kind == "categorical":
        return (defn.values or [])[int(sample)]
    if kind == "str":
        return str(sample)
    if kind == "list":
        items = tuple(sample)[: defn.max_length or MAX_LIST_ITEMS]
        return [from_space_value(defn.item_definition, item) for item in items]
    if kind == "tuple":
        return tuple(
            from_space_value(child, item)
            for child, item in zip(defn.item_types or (), sample, strict=True)
        )
    if defn.schema_ is not None:
        return {name: from_space_value(child, sample[name]) for name, child in defn.schema_.items()}
    value_type = defn.value_definition
    if defn.keys is not None:
        return {
            key: from_space_value(value_type, sample[key]["value"])
            for key in defn.keys
            if _scalar(sample[key]["present"])
        }
    pairs = tuple(sample)[:MAX_DICT_ITEMS]
    return {_decode_key(defn, key): from_space_value(value_type, item) for key, item in pairs}


def zero_value(space: spaces.Space[Any]) -> Any:
    """The zero-filled element of ``space``: what a slot shows when its target is not visible.

    Empty for ``Sequence`` and ``Text``; a ``Box`` whose bounds exclude 0 gives the bound nearest
    to it. ``TypeError`` for space types this module does not build.
    """
    if isinstance(space, spaces.Box):
        return np.clip(np.zeros(space.shape), space.low, space.high).astype(space.dtype)
    if isinstance(space, spaces.Discrete):
        return int(space.start)
    if isinstance(space, spaces.MultiBinary):
        return np.zeros(space.shape, dtype=space.dtype)
    if isinstance(space, spaces.Text):
        return ""
    if isinstance(space, spaces.Sequence):
        return ()
    if isinstance(space, spaces.Tuple):
        return tuple(zero_value(child) for child in space.spaces)
    if isinstance(space, spaces.Dict):
        return {key: zero_value(child) for key, child in space.spaces.items()}
    raise TypeError(f"no zero value for {space!r}: not a space that space_for builds")


# -- helpers ------------------------------------------------------------------------------------


def _discrete_size(defn: VariableDefinition) -> int | None:
    """How many values an int with a small closed range takes, or None (it becomes a Box)."""
    if defn.min is None or defn.max is None:
        return None
    size = int(defn.max) - int(defn.min) + 1
    return size if size <= MAX_DISCRETE_INT else None


def _float32(number: float) -> np.float32:
    """``number`` in float32, saturated at the largest finite magnitude instead of overflowing."""
    return np.float32(min(max(float(number), -_F32_MAX), _F32_MAX))


def _int64(number: float) -> int:
    """``number`` as an int saturated at the Box int range (Python ints are unbounded)."""
    return min(max(int(number), _INT_LOW), _INT_HIGH)


def _scalar(element: Any) -> Any:
    """The one number in a shape-(1,) array (or a list, or a NumPy scalar)."""
    return np.asarray(element).item()


def _text(max_length: int) -> spaces.Text:
    return spaces.Text(max_length, min_length=0, charset=CHARSET)


def _printable(text: str, max_length: int) -> str:
    """``text`` in ``Text``'s charset (others become ``"?"``), at most ``max_length`` long."""
    if not _ALLOWED.issuperset(text):
        text = "".join(char if char in _ALLOWED else "?" for char in text)
    return text[:max_length]


def ordered_dict(children: Mapping[str, spaces.Space[Any]]) -> spaces.Dict:
    """A ``Dict`` space that keeps the declared order: Gymnasium sorts a mapping's keys, and
    only recent releases take ``sort_keys=False`` (1.2.2, which Ray pins, reads it as a
    subspace), while pairs keep their order in every 1.x.

    Example:
        >>> list(ordered_dict({"b": spaces.Discrete(2), "a": spaces.Discrete(3)}))
        ['b', 'a']
    """
    return spaces.Dict(list(children.items()))


def _slot(value_space: spaces.Space[Any]) -> spaces.Dict:
    """One declared key of a dict: whether it is present, and its value (zeros when absent)."""
    return ordered_dict({"present": spaces.MultiBinary(1), "value": value_space})


def _encode_key(defn: VariableDefinition, key: Any) -> Any:
    if defn.key_type == "str":
        return _printable(key, MAX_STR_LENGTH)
    return np.array([_int64(key)], dtype=np.int64)


def _decode_key(defn: VariableDefinition, key: Any) -> str | int:
    return str(key) if defn.key_type == "str" else int(_scalar(key))


def seed_space(space: spaces.Space[Any], source: np.random.Generator) -> None:
    """Seed ``space`` and each of its parts with a 63-bit seed drawn from ``source``.

    Gymnasium seeds the parts of a ``Dict`` or ``Tuple`` with 31-bit seeds of their own: few
    enough to search from the samples a client sees (another agent's random actions), which
    would let it predict the next ones. Seeded here, a part's samples follow from ``source``.

    Example:
        >>> space = spaces.Dict({"move": spaces.Discrete(4), "amount": spaces.Discrete(9)})
        >>> seed_space(space, np.random.default_rng(0)); first = space.sample()
        >>> seed_space(space, np.random.default_rng(0)); first == space.sample()
        True
    """
    space.seed(int(source.integers(2**63)))
    if isinstance(space, spaces.Dict):
        for part in space.spaces.values():
            seed_space(part, source)
    elif isinstance(space, spaces.Tuple):
        for part in space.spaces:
            seed_space(part, source)
    elif isinstance(space, spaces.Sequence | spaces.OneOf):
        parts = space.spaces if isinstance(space, spaces.OneOf) else (space.feature_space,)
        for part in parts:
            seed_space(part, source)
