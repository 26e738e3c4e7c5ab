"""The leak check: messages that carry the exact value of a variable their recipient may not see.

``find_leaks(config, turns)`` reads the turns of an episode log (each turn's ground truth and the
messages sent on it) and flags, per message and recipient, every value of a variable the
recipient cannot observe on that turn under the configured observability: any variable of a
target it is unaware of, an internal variable of a target it sees only externally, and the
global variables likewise. The sender's own variables count as any other target's. Compound
values (lists, tuples, dicts, objects) are checked leaf by leaf, each leaf named by its path
(``agents.Fisher_2.total``, ``global.stock``, ``agents.A.position[1]``).

Matching rule, chosen so a flag means the text names that value and not a look-alike:

- strings and categories match as whole words, case-sensitive (``"oak"`` is in "the oak
  stands", not in "oaken");
- ints match whole numeric tokens (``42`` is in "I have 42." but not in "420", "4.2" or
  "Fisher_42"), floats the same with ``repr(value)`` or ``f"{value:g}"`` (``12.0`` is flagged by
  "12.0" and by "12");
- booleans, and any form shorter than 2 characters (``7``, ``"a"``), are never flagged: too
  common to mean anything;
- a value the recipient itself observes exactly somewhere in its own view on that turn (the same
  number, or the same string, in a variable it sees without noise) is not a leak.

``find_leaks_in_log(log, config=None)`` runs the check on an ``EpisodeLog``: with the world's
config, by its configured observability; without, by the matrix the log holds (a log recorded
on the bare env, with ``observability: false``, has every variable exact and so finds nothing).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from multiagent.config import SimulationConfig
from multiagent.observability import ObservabilityPlan
from multiagent.recording import EpisodeLog, TurnRecord, ViewCell, observability_cells

__all__ = ["Leak", "find_leaks", "find_leaks_in_log"]

GLOBAL_TARGET = "global"
MIN_LENGTH = 2  # forms shorter than this are never flagged
EXCERPT = 30  # characters of context either side of a match
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)")


@dataclass(frozen=True)
class Leak:
    """One flagged value: who said it to whom, on which turn and channel, and whose it was.

    Example:
        >>> Leak(3, "A", "B", "whisper", "agents.C.gold", 42, "C has 42 gold").variable
        'agents.C.gold'
    """

    turn: int
    sender: str
    recipient: str
    channel: str
    variable: str
    value: Any
    excerpt: str


def find_leaks(config: SimulationConfig, turns: Sequence[TurnRecord]) -> list[Leak]:
    """Every leak in ``turns`` (an episode log's turns) under ``config``'s observability, in
    message order, then recipient order, then variable order.

    Example:
        >>> from multiagent import load_config
        >>> config = load_config({
        ...     "simulation": {"name": "demo", "max_turns": 3}, "engine": {"dynamics": None},
        ...     "agents": [{"name": "A"}, {"name": "B"}],
        ...     "state_variables": {"agent_vars": {"gold": {"type": "int", "default": 0}}},
        ...     "observability": {"variable_visibility": {"internal": ["gold"]},
        ...                       "default": {"level": "external"}}})
        >>> turn = TurnRecord.model_validate({
        ...     "turn": 0, "observations": {},
        ...     "state": {"agents": {"A": {"gold": 42}, "B": {"gold": 7}}, "global_state": {}},
        ...     "messages": [{"turn": 0, "sender": "A", "channel": "talk",
        ...                   "text": "I hold 42 gold", "recipients": ["B"]}]})
        >>> [(leak.recipient, leak.variable, leak.value) for leak in find_leaks(config, [turn])]
        [('B', 'agents.A.gold', 42)]
    """
    return _leaks(observability_cells(ObservabilityPlan(config)), turns)


def find_leaks_in_log(log: EpisodeLog, config: SimulationConfig | None = None) -> list[Leak]:
    """``find_leaks`` on a log: by ``config``'s observability when given (it must be the
    log's world), else by the matrix recorded in the log."""
    if config is None:
        return _leaks(log.cells, log.turns)
    if config.config_hash != log.config_hash:
        raise ValueError(
            f"the log is of config {log.config_hash}, not {config.config_hash} "
            f"({config.simulation.name!r})"
        )
    return find_leaks(config, log.turns)


def _leaks(cells: Sequence[ViewCell], turns: Sequence[TurnRecord]) -> list[Leak]:
    by_pair = {(cell.observer, cell.target): cell for cell in cells}
    leaks = []
    for turn in turns:
        for message in turn.messages:
            for recipient in message.recipients:
                hidden, exact = _split(by_pair, recipient, turn)
                for path, value in hidden:
                    forms = _forms(value)
                    if not forms or _key(value) in exact:
                        continue
                    match = _first_match(message.text, forms)
                    if match is not None:
                        leaks.append(Leak(turn.turn, message.sender, recipient, message.channel,
                                          path, value, _excerpt(message.text, match)))  # fmt: skip
    return leaks


def _split(
    cells: Mapping[tuple[str, str], ViewCell], observer: str, turn: TurnRecord
) -> tuple[list[tuple[str, Any]], set[Any]]:
    """The leaves ``observer`` cannot see on ``turn`` (path, value), and the keys of those it
    sees exactly."""
    hidden: list[tuple[str, Any]] = []
    exact: set[Any] = set()
    targets = [(f"agents.{name}", name, values) for name, values in turn.state.agents.items()]
    targets.append((GLOBAL_TARGET, GLOBAL_TARGET, turn.state.global_state))
    for prefix, target, values in targets:
        cell = cells.get((observer, target))
        for name, value in values.items():
            mark = cell.variables.get(name, "hidden") if cell is not None else "hidden"
            leaves = _leaves(f"{prefix}.{name}", value)
            if mark == "hidden":
                hidden += leaves
            elif mark == "exact":
                exact.update(_key(leaf) for _, leaf in leaves)
    return hidden, exact


def _leaves(path: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [leaf for key, item in value.items() for leaf in _leaves(f"{path}.{key}", item)]
    if isinstance(value, (list, tuple)):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(f"{path}[{i}]", item)]
    return [(path, value)]


def _key(value: Any) -> Any:
    """Values a text cannot tell apart share a key: 12 and 12.0 are both "12"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("number", float(value))
    return (type(value).__name__, value)


def _forms(value: Any) -> tuple[str, ...]:
    """The texts that carry ``value`` (none for booleans, None and non-finite floats)."""
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, int):
        forms: tuple[str, ...] = (str(value),)
    elif isinstance(value, float):
        forms = (repr(value), f"{value:g}") if math.isfinite(value) else ()
    elif isinstance(value, str):
        forms = (value,)
    else:
        return ()
    return tuple(dict.fromkeys(form for form in forms if len(form) >= MIN_LENGTH))


def _first_match(text: str, forms: tuple[str, ...]) -> re.Match[str] | None:
    """The first place ``text`` carries one of ``forms``, by the module's matching rule."""
    if _numeric(forms[0]):
        return next((m for m in _NUMBER.finditer(text) if m.group() in forms), None)
    return _word(forms[0]).search(text)


def _numeric(form: str) -> bool:
    return _NUMBER.fullmatch(form) is not None


@lru_cache(maxsize=4096)
def _word(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")


def _excerpt(text: str, match: re.Match[str]) -> str:
    start, end = max(match.start() - EXCERPT, 0), min(match.end() + EXCERPT, len(text))
    return ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
