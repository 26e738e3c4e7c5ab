"""``FlattenForSB3``: Dict observations and actions that Stable-Baselines3 accepts.

Observations become one level of ``Box`` / ``Discrete`` / ``MultiBinary`` / ``MultiDiscrete``
keyed by path, ``a/b/c`` (SB3's ``MultiInputPolicy`` names a torch module after each key, and
torch forbids "." in module names, so the separator is "/" unless you choose another):
- a list (``BoundedSequence``) is padded to its ``max_length``: ``key/mask`` (MultiBinary) marks
  the items present, and each leaf of the item becomes one stacked space (``Box`` with a leading
  ``max_length`` axis, ``MultiDiscrete`` for discrete leaves);
- a dynamic dict with declared keys is a Dict already (``present`` flag + ``value``); one without
  declared keys has no fixed shape and is dropped (declare its ``keys`` to keep it);
- strings are dropped (``strings="drop"``, default) or mapped to ``Discrete(string_buckets)`` by
  a stable hash (``strings="hash"``: equal strings share a bucket, different ones may collide).
Actions: the fields of a Dict action space (an object field's own fields too) become
``Discrete`` (one discrete field), ``Box`` (all float fields), ``MultiBinary`` (all bool fields)
or else ``MultiDiscrete``: a discrete field is one part, a bool one ``Discrete(2)`` part, and a
float one part of ``float_bins`` even steps of its bounds. A flat action decodes to an element
of the world's action space, so a bool field arrives as ``MultiBinary(1)`` and the world reads a
Python bool. A field of any other type (str, list, tuple, dict) is refused with its path and type:
a policy cannot sample it from a fixed-size space.
"""

from __future__ import annotations

import hashlib
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from multiagent.spaces import BoundedSequence, ordered_dict

__all__ = ["FlattenForSB3"]

Leaf = spaces.Box | spaces.Discrete | spaces.MultiBinary | spaces.MultiDiscrete
ActionLeaf = spaces.Box | spaces.Discrete | spaces.MultiBinary
ActionField = tuple[tuple[str, ...], ActionLeaf]  # (path of names, space)


def _stable_bucket(text: str, buckets: int) -> int:
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


class FlattenForSB3(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Flattens Dict observations and actions for SB3 (see the module doc).

    Args:
        env: a Gymnasium env with a Dict observation space (e.g. ``SingleAgentEnv``).
        strings: "drop" (default) or "hash".
        string_buckets: the ``Discrete`` size of hashed strings (default 64).
        float_bins: bins per float action field when mixed with discrete ones (default 11).
        separator: joins the path of a key (default "/"; "." breaks SB3's MultiInputPolicy).

    Example:
        >>> from multiagent import parallel_env
        >>> from multiagent.wrappers import SingleAgentEnv
        >>> env = FlattenForSB3(SingleAgentEnv(parallel_env("forage"), "Forager_1"))
        >>> list(env.observation_space)[:3], env.action_space, env.action(2)
        (['self/position/0', 'self/position/1', 'self/energy'], Discrete(5), {'move': 2})
        >>> obs, _ = env.reset(seed=0); env.observation_space.contains(obs)
        True
    """

    def __init__(
        self,
        env: gym.Env,
        strings: str = "drop",
        string_buckets: int = 64,
        float_bins: int = 11,
        separator: str = "/",
    ) -> None:
        if strings not in ("drop", "hash"):
            raise ValueError(f"strings must be 'drop' or 'hash', got {strings!r}")
        gym.utils.RecordConstructorArgs.__init__(
            self,
            strings=strings,
            string_buckets=string_buckets,
            float_bins=float_bins,
            separator=separator,
        )
        gym.Wrapper.__init__(self, env)
        self.strings, self.string_buckets, self.float_bins = strings, string_buckets, float_bins
        self.separator = separator
        self._leaves: dict[str, Leaf] = {}
        self._flatten_space(env.observation_space, "")
        self.observation_space = ordered_dict(self._leaves)
        self._action_fields, self.action_space = self._flat_action_space(env.action_space)

    # -- observations -----------------------------------------------------------------------

    def _join(self, key: str, part: object) -> str:
        return f"{key}{self.separator}{part}" if key else str(part)

    def _flatten_space(self, space: spaces.Space[Any], key: str, stack: int = 0) -> None:
        """Record the leaf spaces under ``key``; ``stack`` > 0 inside a padded list."""
        if isinstance(space, spaces.Dict):
            for name, child in space.spaces.items():
                self._flatten_space(child, self._join(key, name), stack)
        elif isinstance(space, spaces.Tuple):
            for index, child in enumerate(space.spaces):
                self._flatten_space(child, self._join(key, index), stack)
        elif isinstance(space, BoundedSequence) and not stack and not space.pairs:
            self._leaves[self._join(key, "mask")] = spaces.MultiBinary(space.max_length)
            self._flatten_space(space.feature_space, key, space.max_length)
        elif isinstance(space, (spaces.Sequence, spaces.Graph)):
            return  # no fixed shape (a dict without declared keys, a list of lists): dropped
        elif isinstance(space, spaces.Text):
            if self.strings == "hash":
                self._leaves[key] = (
                    spaces.MultiDiscrete([self.string_buckets] * stack)
                    if stack else spaces.Discrete(self.string_buckets)
                )  # fmt: skip
        elif stack:
            self._leaves[key] = _stacked(space, stack)
        else:
            self._leaves[key] = space  # type: ignore[assignment]

    def observation(self, observation: Any) -> dict[str, Any]:
        flat: dict[str, Any] = {}
        self._flatten_value(self.env.observation_space, observation, "", flat)
        return flat

    def _flatten_value(self, space: spaces.Space[Any], value: Any, key: str, flat: dict) -> None:
        if isinstance(space, spaces.Dict):
            for name, child in space.spaces.items():
                self._flatten_value(child, value[name], self._join(key, name), flat)
        elif isinstance(space, spaces.Tuple):
            for index, child in enumerate(space.spaces):
                self._flatten_value(child, value[index], self._join(key, index), flat)
        elif self._join(key, "mask") in self._leaves and isinstance(space, BoundedSequence):
            items = list(value)[: space.max_length]
            mask = np.zeros(space.max_length, dtype=np.int8)
            mask[: len(items)] = 1
            flat[self._join(key, "mask")] = mask
            self._flatten_items(space.feature_space, items, key, space.max_length, flat)
        elif key in self._leaves:
            flat[key] = _leaf_value(self._leaves[key], value, self)

    def _flatten_items(
        self, space: spaces.Space[Any], items: list[Any], key: str, length: int, flat: dict
    ) -> None:
        """A padded list: each leaf of the item space stacked over ``length`` positions."""
        if isinstance(space, spaces.Dict):
            for name, child in space.spaces.items():
                self._flatten_items(
                    child, [i[name] for i in items], self._join(key, name), length, flat
                )
        elif isinstance(space, spaces.Tuple):
            for index, child in enumerate(space.spaces):
                self._flatten_items(
                    child, [i[index] for i in items], self._join(key, index), length, flat
                )
        elif key in self._leaves:
            leaf = self._leaves[key]
            assert leaf.shape is not None  # never None; gymnasium types Discrete's as optional
            stacked = np.zeros(leaf.shape, dtype=leaf.dtype)
            for position, item in enumerate(items):
                stacked[position] = _leaf_value(_unstacked(space, self), item, self)
            flat[key] = stacked

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        observation, info = self.env.reset(seed=seed, options=options)
        return self.observation(observation), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(self.action(action))
        return self.observation(observation), reward, terminated, truncated, info

    # -- actions ----------------------------------------------------------------------------

    def _flat_action_space(self, space: spaces.Space[Any]) -> tuple[list[ActionField], Any]:
        """The action fields in order and the one SB3 space they flatten into."""
        if not isinstance(space, spaces.Dict):
            return [], space
        fields = _action_fields(space, ())
        leaves = [leaf for _, leaf in fields]
        if len(leaves) == 1 and isinstance(leaves[0], spaces.Discrete):
            return fields, spaces.Discrete(leaves[0].n)
        if all(isinstance(leaf, spaces.Box) for leaf in leaves):
            low = np.concatenate([leaf.low.ravel() for leaf in leaves])  # type: ignore[union-attr]
            high = np.concatenate([leaf.high.ravel() for leaf in leaves])  # type: ignore[union-attr]
            return fields, spaces.Box(low.astype(np.float32), high.astype(np.float32))
        if all(isinstance(leaf, spaces.MultiBinary) for leaf in leaves):
            return fields, spaces.MultiBinary(sum(_width(leaf) for leaf in leaves))
        return fields, spaces.MultiDiscrete([n for leaf in leaves for n in self._parts(leaf)])

    def _parts(self, leaf: ActionLeaf) -> list[int]:
        """A field's MultiDiscrete sizes: its choices, 2 per bool, ``float_bins`` per float."""
        if isinstance(leaf, spaces.Discrete):
            return [int(leaf.n)]
        return [2 if isinstance(leaf, spaces.MultiBinary) else self.float_bins] * _width(leaf)

    def action(self, action: Any) -> Any:
        """The wrapped env's Dict action (an element of its action space) for a flat one."""
        fields = self._action_fields
        if not fields:
            return action
        if isinstance(self.action_space, spaces.Discrete):
            ((path, leaf),) = fields
            return _nested([(path, int(leaf.start) + int(action))])  # type: ignore[union-attr]
        values = np.asarray(action, dtype=np.float64).ravel()
        decoded: list[tuple[tuple[str, ...], Any]] = []
        offset = 0
        for path, leaf in fields:
            chunk = values[offset : offset + _width(leaf)]
            offset += _width(leaf)
            decoded.append((path, self._field_value(leaf, chunk)))
        return _nested(decoded)

    def _field_value(self, leaf: ActionLeaf, chunk: np.ndarray) -> Any:
        """One field's element from its slice of the flat action."""
        if isinstance(leaf, spaces.Discrete):
            return int(leaf.start) + int(chunk[0])
        if isinstance(leaf, spaces.MultiBinary):
            return (chunk != 0).astype(leaf.dtype).reshape(leaf.shape)
        if isinstance(self.action_space, spaces.MultiDiscrete):
            chunk = leaf.low.ravel() + chunk / max(self.float_bins - 1, 1) * (
                leaf.high.ravel() - leaf.low.ravel()
            )
        return np.clip(chunk.reshape(leaf.shape), leaf.low, leaf.high).astype(leaf.dtype)


def _action_fields(space: spaces.Space[Any], path: tuple[str, ...]) -> list[ActionField]:
    """The leaves of a Dict action space, or ``ValueError`` naming the first unsupported one."""
    if isinstance(space, spaces.Dict):
        return [
            field
            for name, child in space.spaces.items()
            for field in _action_fields(child, (*path, name))
        ]
    if isinstance(space, (spaces.Discrete, spaces.Box, spaces.MultiBinary)):
        return [(path, space)]
    raise ValueError(
        f"action field {'.'.join(path)!r}: {_kind(space)} cannot be flattened for SB3; "
        "FlattenForSB3 takes categorical, int, float and bool action fields (and objects of them)"
    )


def _kind(space: spaces.Space[Any]) -> str:
    """The world type behind an action field's space, as a refusal names it."""
    if isinstance(space, spaces.Text):
        return "a str (Text)"
    if isinstance(space, BoundedSequence) and space.pairs:
        return "a dict (Sequence of key-value pairs)"
    if isinstance(space, spaces.Sequence):
        return "a list (Sequence)"
    if isinstance(space, spaces.Tuple):
        return "a tuple (Tuple)"
    return f"a {type(space).__name__} space"


def _width(leaf: ActionLeaf) -> int:
    """How many entries of the flat action one field takes."""
    return 1 if isinstance(leaf, spaces.Discrete) else int(np.prod(leaf.shape))


def _nested(values: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    """A Dict element from (path, value) pairs: an object field becomes a nested dict."""
    result: dict[str, Any] = {}
    for path, value in values:
        target = result
        for name in path[:-1]:
            target = target.setdefault(name, {})
        target[path[-1]] = value
    return result


def _stacked(space: spaces.Space[Any], length: int) -> Leaf:
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, (length, *space.shape))
        high = np.broadcast_to(space.high, (length, *space.shape))
        return spaces.Box(low, high, dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete([space.n] * length)
    if isinstance(space, spaces.MultiBinary):
        return spaces.MultiBinary((length, *space.shape))
    raise ValueError(f"FlattenForSB3 cannot stack {space} inside a list")


def _unstacked(space: spaces.Space[Any], wrapper: FlattenForSB3) -> Leaf:
    """The per-item leaf space inside a padded list (Text hashed as a Discrete)."""
    if isinstance(space, spaces.Text):
        return spaces.Discrete(wrapper.string_buckets)
    return space  # type: ignore[return-value]


def _leaf_value(leaf: Leaf, value: Any, wrapper: FlattenForSB3) -> Any:
    if isinstance(value, str):
        return _stable_bucket(value, wrapper.string_buckets)
    if isinstance(leaf, spaces.Discrete):
        return int(value)
    return np.asarray(value, dtype=leaf.dtype)
