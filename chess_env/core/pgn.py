"""PGN tag values that cannot break out of their tag: every PGN the package writes uses these.

- ``tag_value(text)``: ``text`` made safe inside ``[Tag "..."]``.
- ``set_tags(game, **tags)``: ``game.headers.update`` with every value passed through it.

Player names, failure messages and the like come from users and engines. python-chess writes a
tag value as it is (no escaping) and reads a tag line by line, and other readers end the value
at the first unescaped quote; so a name holding a newline, a quote or a backslash could end its
tag and start another game with a forged result. Rather than escape (which python-chess would
not undo on reading), the value is sanitised, so that every reader reads back the same text:

- each line break, control or format character (and a lone surrogate, which UTF-8 cannot
  write) becomes a space;
- ``"`` becomes ``'`` and ``\\`` becomes ``/``.
"""

from __future__ import annotations

import unicodedata

import chess.pgn

__all__ = ["set_tags", "tag_value"]

_SPACED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_REPLACED = {'"': "'", "\\": "/"}


def tag_value(text: str) -> str:
    """``text`` with nothing that could end a PGN tag or line: see the module docstring.

    Example:
        >>> tag_value('Eve"]\\n[Result "1-0"]')
        "Eve'] [Result '1-0']"
        >>> tag_value("Magnus Carlsen")
        'Magnus Carlsen'
    """
    return "".join(_safe(char) for char in text)


def _safe(char: str) -> str:
    if char in _REPLACED:
        return _REPLACED[char]
    return " " if unicodedata.category(char) in _SPACED_CATEGORIES else char


def set_tags(game: chess.pgn.Game, **tags: str) -> None:
    """Set ``game``'s tags, each value through ``tag_value``.

    Example:
        >>> game = chess.pgn.Game()
        >>> set_tags(game, White="A\\\\B", Termination="white failed:\\nno reply")
        >>> game.headers["White"], game.headers["Termination"]
        ('A/B', 'white failed: no reply')
    """
    game.headers.update({name: tag_value(value) for name, value in tags.items()})
