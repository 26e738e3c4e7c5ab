"""The frames a spectator's WebSocket carries, each under 64 KB however long the game.

- ``snapshot_frames(game)``: the game as it is, in pages: a ``snapshot`` frame (the record
  without its moves, and the ply), then ``history`` frames of up to ``HISTORY_PAGE`` moves
- ``move_made_frame(game)``: the game's last move
- ``ended_frame(game)``: how the game ended, with its PGN when that is at most ``MAX_FRAME_PGN``
  characters (null otherwise: ``GET /games/{id}/pgn`` has it)
- ``aborted_frame(game)``: the creator stopped the game at this ply
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chess_env.core.game import Game

__all__ = [
    "HISTORY_PAGE",
    "MAX_FRAME_PGN",
    "aborted_frame",
    "ended_frame",
    "move_made_frame",
    "snapshot_frames",
]

HISTORY_PAGE = 100  # moves per history frame: a Move is at most about 330 bytes of JSON
MAX_FRAME_PGN = 32 * 1024  # characters of PGN a game_ended frame carries at most


def snapshot_frames(game: Game) -> Iterator[dict[str, Any]]:
    """The game as frames of bounded size: the record without its moves, then the moves in
    pages of ``HISTORY_PAGE``.

    Example:
        >>> from chess_env.serving.game_store import StateManager
        >>> from chess_env.serving.service.bodies import AgentSpec
        >>> games, client = StateManager(), AgentSpec(player="remote", name="Me")
        >>> game = games.create_game(client.config("white"), client.config("black"))
        >>> for move in ["e4", "e5", "Nf3"]:
        ...     game = games.apply_move(game.game_id, move)
        >>> [(frame["type"], frame["data"].get("from_ply")) for frame in snapshot_frames(game)]
        [('snapshot', None), ('history', 1)]
        >>> move_made_frame(game)["data"]["san"], move_made_frame(game)["data"]["ply"]
        ('Nf3', 3)
    """
    record = game.model_dump(mode="json", exclude={"move_history"})
    yield {"type": "snapshot", "data": {"game": record, "ply": len(game.move_history)}}
    for start in range(0, len(game.move_history), HISTORY_PAGE):
        page = game.move_history[start : start + HISTORY_PAGE]
        data = {
            "game_id": game.game_id,
            "from_ply": start + 1,
            "moves": [move.model_dump(mode="json") for move in page],
        }
        yield {"type": "history", "data": data}


def move_made_frame(game: Game) -> dict[str, Any]:
    """The last move of ``game``, and the position after it."""
    last = game.move_history[-1]
    data = {
        "game_id": game.game_id,
        "ply": len(game.move_history),
        "move": last.uci_notation,
        "san": last.san_notation,
        "player": last.player,
        "fen": game.board_state.fen,
    }
    return {"type": "move_made", "data": data}


def ended_frame(game: Game) -> dict[str, Any]:
    """How ``game`` ended, with its PGN only when that fits (``MAX_FRAME_PGN``)."""
    pgn = game.to_pgn()
    data = {
        "game_id": game.game_id,
        "status": game.status,
        "result": game.result,
        "termination": game.termination,
        "pgn": pgn if len(pgn) <= MAX_FRAME_PGN else None,
    }
    return {"type": "game_ended", "data": data}


def aborted_frame(game: Game) -> dict[str, Any]:
    """The creator stopped ``game`` at its current ply; no move follows."""
    return {
        "type": "game_aborted",
        "data": {"game_id": game.game_id, "ply": len(game.move_history)},
    }
