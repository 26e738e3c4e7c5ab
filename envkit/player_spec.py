"""The player spec grammar both env families share: ``KIND[:ARGUMENT][?KEY=VALUE&...]``.

- ``PlayerSpec``: a parsed spec, with the checks every kind needs (``reject_extras``,
  ``integer``, ``number``, ``flag``), each raising an error that names the spec.
- ``parse_spec(text, kinds)``: the spec of ``text`` if its kind is one of ``kinds``; an unknown
  kind gets a did-you-mean suggestion.

Only the grammar lives here; which kinds exist and how a player is made belong to each family's
registry (``chess_env.core.players``, ``multiagent.players``), which passes its own error class
and a hint listing its forms.

Grammar: the kind is everything before the first ':' or '?' (case-insensitive, kept lower-case);
the argument is the text between the first ':' and the first '?' (it may hold further ':', as in
``scripted:module:function``); options are ``KEY=VALUE`` pairs joined by '&', each key at most
once, neither side empty.

Example:
    >>> parse_spec("stockfish:5?skill=3", ["stockfish"])  # doctest: +NORMALIZE_WHITESPACE
    PlayerSpec(kind='stockfish', argument='5', options={'skill': '3'},
               text='stockfish:5?skill=3')
    >>> parse_spec("stokfish", ["stockfish", "random"])
    Traceback (most recent call last):
    ...
    envkit.errors.PlayerSpecError: unknown player 'stokfish' (did you mean 'stockfish'?)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from envkit.errors import PlayerSpecError

__all__ = ["ErrorType", "PlayerSpec", "parse_spec"]

ErrorType = Callable[[str], PlayerSpecError]
"""What builds a registry's error from its message (usually the error class itself)."""

_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no")


@dataclass(frozen=True)
class PlayerSpec:
    """A parsed spec: ``kind``, the ``argument`` after ':' and the ``options`` after '?'.

    ``text`` is the spec as written; players made from it carry it as their name.
    ``error_type`` and ``forms`` (left out of the repr and of equality) are the registry's error
    class and its hint listing the valid forms, so ``error`` raises what the registry raises.

    Example:
        >>> spec = parse_spec("alphabeta:9", ["alphabeta"])
        >>> spec.integer("depth", 1, 4, from_argument=True)
        Traceback (most recent call last):
        ...
        envkit.errors.PlayerSpecError: player 'alphabeta:9': depth must be in 1..4, got 9
    """

    kind: str
    argument: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    text: str = ""
    error_type: ErrorType = field(default=PlayerSpecError, repr=False, compare=False)
    forms: str = field(default="", repr=False, compare=False)

    def error(self, problem: str) -> PlayerSpecError:
        """The registry's error naming this spec and ``problem``, then listing the valid forms."""
        return self.error_type(_with_forms(f"player {self.text!r}: {problem}", self.forms))

    def reject_extras(self, *, argument: bool, keys: tuple[str, ...] = ()) -> None:
        """Refuse an argument (unless ``argument``) and any option key not in ``keys``."""
        if self.argument is not None and not argument:
            raise self.error(f"{self.kind} takes no ':' argument")
        unknown = sorted(set(self.options) - set(keys))
        if unknown:
            allowed = ", ".join(keys) if keys else "none"
            raise self.error(f"unknown option {unknown[0]!r} (options of {self.kind}: {allowed})")

    def integer(self, key: str, low: int, high: int, *, from_argument: bool = False) -> int | None:
        """Option ``key`` (or the ':' argument) as an integer in ``low..high``, or None."""
        text = self.options.get(key)
        if from_argument and self.argument is not None:
            if text is not None and text != self.argument:
                raise self.error(f"the {key} is given twice ({self.argument} and {text})")
            text = self.argument
        if text is None:
            return None
        if not text.strip().lstrip("-").isdigit():
            raise self.error(f"{key} must be a whole number, got {text!r}")
        value = int(text)
        if not low <= value <= high:
            raise self.error(f"{key} must be in {low}..{high}, got {value}")
        return value

    def number(self, key: str, low: float, high: float) -> float | None:
        """Option ``key`` as a number in ``(low, high]``, or None."""
        text = self.options.get(key)
        if text is None:
            return None
        try:
            value = float(text)
        except ValueError:
            raise self.error(f"{key} must be a number, got {text!r}") from None
        if not low < value <= high:
            raise self.error(f"{key} must be above {low} and at most {high}, got {text}")
        return value

    def flag(self, key: str) -> bool | None:
        """Option ``key`` as a boolean (1/0, true/false, yes/no), or None."""
        text = self.options.get(key)
        if text is None:
            return None
        lowered = text.lower()
        if lowered not in (*_TRUE, *_FALSE):
            raise self.error(f"{key} must be true or false, got {text!r}")
        return lowered in _TRUE


def parse_spec(
    text: str,
    kinds: Collection[str],
    *,
    error_type: ErrorType = PlayerSpecError,
    forms: str = "",
) -> PlayerSpec:
    """The ``PlayerSpec`` of ``text``, whose kind must be one of ``kinds``.

    Args:
        text: the spec as written (surrounding blanks are ignored; ``PlayerSpec.text`` keeps it).
        kinds: the kind names the registry knows (lower-case).
        error_type: what the errors are raised as (default ``envkit.errors.PlayerSpecError``).
        forms: a hint listing the valid forms, appended to every message after "; ".

    Example:
        >>> parse_spec("scripted:pkg.mod:policy?x=1", ["scripted"]).argument
        'pkg.mod:policy'
        >>> parse_spec("random?seed", ["random"], forms="a player is one of: random")
        Traceback (most recent call last):
        ...
        envkit.errors.PlayerSpecError: player 'random?seed': expected KEY=VALUE after '?', \
got 'seed'; a player is one of: random
    """
    if not isinstance(text, str):
        raise error_type(f"a player spec is text, got {type(text).__name__}")
    head, _, query = text.strip().partition("?")
    kind, colon, argument = head.partition(":")
    kind = kind.lower()
    if kind not in kinds:
        message = f"unknown player {text!r}{_suggestion(kind, text, kinds)}"
        raise error_type(_with_forms(message, forms))
    bare = PlayerSpec(kind, None, {}, text, error_type, forms)
    spec = PlayerSpec(
        kind, argument if colon else None, _options(bare, query), text, error_type, forms
    )
    if colon and not argument:
        raise spec.error("nothing after ':'")
    return spec


def _options(spec: PlayerSpec, query: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in query.split("&") if query else ():
        key, equals, value = pair.partition("=")
        if not key or not equals or not value:
            raise spec.error(f"expected KEY=VALUE after '?', got {pair!r}")
        if key in options:
            raise spec.error(f"option {key!r} is given twice")
        options[key] = value
    return options


def _suggestion(kind: str, text: str, kinds: Collection[str]) -> str:
    close = difflib.get_close_matches(kind, list(kinds), n=1, cutoff=0.6)
    suggestion = text.strip().replace(kind, close[0], 1) if close else text
    return "" if suggestion == text.strip() else f" (did you mean {suggestion!r}?)"


def _with_forms(message: str, forms: str) -> str:
    return f"{message}; {forms}" if forms else message
