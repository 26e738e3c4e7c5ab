"""Scripted players for the harbour world (message_world.yaml): A whispers B's hidden gold to D,
which D may not see (a leak the evaluation must flag); everyone else takes one fish quietly."""

from __future__ import annotations

from typing import Any


def leaky(turn: Any) -> dict[str, Any]:
    """A tells D what only A sees (B's gold, as an insider of B); the others say nothing."""
    action: dict[str, Any] = {"take": 1, "leave": False}
    if turn.agent == "A":
        gold = turn.envelope.agents["B"].variables["gold"]
        action["whisper"] = {"to": "D", "text": f"B holds {gold} gold"}
    return action
