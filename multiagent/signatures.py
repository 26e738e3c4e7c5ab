"""Tool signatures for world actions: variable definitions as Malli-lite schemas.

Every world's ``actions`` become the parameters of one tool, so an LLM agent is shown (and
validated against) exactly what the env accepts:

    >>> from multiagent.worlds import load_world
    >>> from envkit.schema import render
    >>> render(action_signature(load_world("forage").actions), name="act")
    'act(move [:enum "stay" "up" "down" "left" "right"]) -> :any'

Mapping: float -> ``:double`` and int -> ``:int`` (bounds as ``[:>= min]`` / ``[:<= max]``
refinements), bool -> ``:boolean``, categorical -> ``[:enum ...]``, str -> ``:string`` (a pattern
as ``[:re ...]``), list -> ``[:vector T]``, tuple -> ``[:tuple T...]``, object and fixed-schema
dict -> ``[:map ...]`` (fields whose default is null are optional), dynamic dict -> ``[:map-of K
V]`` (``[:enum ...]`` keys when declared).

A world's ``channels`` (``multiagent.messages``) follow the fields as optional, nullable
parameters: a broadcast channel takes a string, a direct one ``[:map [to ...] [text ...]]``. The
schema language has no length bound, so a text's ``max_length`` is a pattern,
``[:re "^[\\s\\S]{0,280}(?![\\s\\S])"]`` (any characters, up to 280, then the end: a form
Python and JSON Schema's ECMA regexes read alike). A message to oneself passes the schema and is
refused by the env.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from multiagent.messages import ChannelConfig
from multiagent.variables import VariableDefinition

if TYPE_CHECKING:
    from multiagent.config import SimulationConfig

__all__ = ["action_signature", "schema_data", "world_signature"]

_SCALARS = {"float": ":double", "int": ":int", "bool": ":boolean", "str": ":string"}


def schema_data(defn: VariableDefinition) -> Any:
    """Malli-lite schema data (keyword strings and lists) for one definition."""
    kind = defn.type
    if kind in ("float", "int"):
        refinements = [[":>=", defn.min]] if defn.min is not None else []
        refinements += [[":<=", defn.max]] if defn.max is not None else []
        base = _SCALARS[kind]
        return [":and", base, *refinements] if refinements else base
    if kind == "str":
        text: Any = ":string"
        if defn.pattern is not None:
            text = [":and", ":string", [":re", defn.pattern]]
        return [":maybe", text] if defn.default is None else text
    if kind == "bool":
        return ":boolean"
    if kind == "categorical":
        return [":enum", *(defn.values or [])]
    if defn.schema_ is not None:
        return _map(defn.schema_)
    if kind == "dict":
        key: Any = ":string" if defn.key_type == "str" else ":int"
        if defn.keys is not None:
            key = [":enum", *defn.keys]
        return [":map-of", key, schema_data(defn.value_definition)]
    if kind == "list":
        return [":vector", schema_data(defn.item_definition)]
    return [":tuple", *(schema_data(child) for child in defn.item_types or [])]


def _map(fields: Mapping[str, VariableDefinition]) -> list[Any]:
    entries: list[Any] = [":map"]
    for name, child in fields.items():
        optional = child.derived_default() is None
        entries.append([name, {"optional": True}, schema_data(child)] if optional
                       else [name, schema_data(child)])  # fmt: skip
    return entries


def action_signature(
    actions: Mapping[str, VariableDefinition],
    channels: Mapping[str, ChannelConfig] | None = None,
    *,
    agents: Sequence[str] | None = None,
) -> Any:
    """The world's action as a Malli-lite function schema: one named parameter per field, then
    one optional parameter per channel (``agents``, when given, are the only addressees a
    direct message may name).

    Example:
        >>> from envkit.schema import render
        >>> talk = {"talk": ChannelConfig(kind="broadcast", max_length=9)}
        >>> print(render(action_signature({}, talk), name="act"))
        act(talk [:and :string [:re "^[\\\\s\\\\S]{0,9}(?![\\\\s\\\\S])"]]?) -> :any
    """
    from envkit.schema import parse

    params = [[name, schema_data(defn)] for name, defn in actions.items()]
    for name, channel in (channels or {}).items():
        params.append([name, {"optional": True}, [":maybe", _message(channel, agents)]])
    return parse([":=>", [":cat", *params], ":any"])


def _message(channel: ChannelConfig, agents: Sequence[str] | None) -> Any:
    text = [":and", ":string", [":re", f"^[\\s\\S]{{0,{channel.max_length}}}(?![\\s\\S])"]]
    if channel.kind == "broadcast":
        return text
    to = [":enum", *agents] if agents else ":string"
    return [":map", ["to", to], ["text", text]]


def world_signature(config: SimulationConfig) -> Any:
    """The signature of ``config``'s action as players and the server check it: its fields, its
    channels, and its agents as the only addressees of a direct message.

    Example:
        >>> from envkit.schema import render
        >>> from multiagent.worlds import load_world
        >>> render(world_signature(load_world("forage")), name="act")
        'act(move [:enum "stay" "up" "down" "left" "right"]) -> :any'
    """
    return action_signature(config.actions, config.channels, agents=config.agent_names)
