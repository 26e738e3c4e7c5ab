"""Play chess service games as their owners, for tests of ``chess_env.serving.service``.

``create`` remembers the seat tokens ``POST /games`` returns; ``move``, ``resign`` and ``abort``
send the right one in ``X-Seat-Token`` (a move without ``color`` as the side to move). They take
a ``TestClient`` or an ``httpx.Client`` and a ``prefix`` ("/service" for the mounted service).
A game the tests did not create gets a token that is nobody's.

pytest runs with ``--import-mode=importlib``, so a test module puts ``tests/support`` on
``sys.path`` before importing this.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEADER", "TOKENS", "abort", "create", "move", "resign", "seat"]

HEADER = "X-Seat-Token"
TOKENS: dict[str, dict[str, str | None]] = {}  # game id -> {"white", "black", "creator"}


def create(
    client: Any, white: dict[str, Any], black: dict[str, Any], prefix: str = "", **extra: Any
) -> Any:
    """The new game (201 asserted); its tokens are kept in ``TOKENS``."""
    body = {"white": white, "black": black, **extra}
    response = client.post(f"{prefix}/games", json=body)
    assert response.status_code == 201, response.text
    created = response.json()
    TOKENS[created["game"]["game_id"]] = created["tokens"]
    return created["game"]


def seat(game_id: str, holder: str) -> dict[str, str]:
    """The header that acts for ``holder`` ("white", "black" or "creator") in ``game_id``."""
    return {HEADER: TOKENS.get(game_id, {}).get(holder) or "nobody's token"}


def move(
    client: Any, game_id: str, text: str, color: str | None = None, prefix: str = "", **options: Any
) -> Any:
    """``text`` played by ``color``'s seat (default: the side to move); the response.
    ``options`` go to ``client.post`` (``timeout``)."""
    url = f"{prefix}/games/{game_id}"
    side = color or client.get(url).json().get("current_turn", "white")
    body = {"move": text} if color is None else {"move": text, "color": color}
    return client.post(f"{url}/moves", json=body, headers=seat(game_id, side), **options)


def resign(client: Any, game_id: str, color: str, prefix: str = "") -> Any:
    url = f"{prefix}/games/{game_id}/resign"
    return client.post(url, json={"color": color}, headers=seat(game_id, color))


def abort(client: Any, game_id: str, prefix: str = "") -> Any:
    return client.post(f"{prefix}/games/{game_id}/abort", headers=seat(game_id, "creator"))
