"""Players in server tests: ``registered(name, factory)``, a test's own player kind, forgotten
again when the block ends; ``REFUSED_BY_SERVERS``, specs a server must refuse and what it says.

Servers make players only through ``chess_env.core.players``, so a test that needs a slow, faulty or
recording player registers one under a name and asks for it by that name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from chess_env.core.players import PlayerSpec, register_player, unregister_player

REFUSED_BY_SERVERS = [
    ("human", "a server does not make human players"),
    ("model:x.zip", "a server does not make model players"),
    ("openai:gpt-4o", "a server does not make openai players"),
    ("stokfish", "did you mean 'stockfish'?"),
    ("stockfish:99", "depth must be in 1..30, got 99"),
]


@contextlib.contextmanager
def registered(name: str, factory: Callable[[PlayerSpec], Any]) -> Iterator[str]:
    """Within the block, the spec ``name`` makes ``factory(spec)``; the block gets ``name``."""
    register_player(name, factory)
    try:
        yield name
    finally:
        unregister_player(name)
