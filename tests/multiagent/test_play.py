"""``play_episode`` hands every seat the messages it heard, as the evaluation harness does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from multiagent import load_config
from multiagent.play import play_episode
from multiagent.players import ScriptedPlayer, SeatTurn

HARBOUR = Path(__file__).parent / "data" / "message_world.yaml"


def test_each_seat_reads_the_messages_it_heard_in_its_next_envelope() -> None:
    heard: dict[str, list[list[tuple[int, str, str]]]] = {}

    def talker(turn: SeatTurn) -> dict[str, Any]:
        heard.setdefault(turn.agent, []).append(
            [(m.turn, m.sender, m.text) for m in turn.envelope.messages]
        )
        return {"take": 0, "leave": False, "talk": f"{turn.agent} at {turn.turn}"}

    world = load_config(HARBOUR)
    players = {seat: ScriptedPlayer(talker) for seat in world.agent_names}
    play_episode(world, players, seed=0, max_turns=3)
    assert heard["B"] == [[], [(0, "A", "A at 0"), (0, "C", "C at 0"), (0, "D", "D at 0")],
                          [(1, "A", "A at 1"), (1, "C", "C at 1"), (1, "D", "D at 1")]]  # fmt: skip
    assert all(sender != "A" for turn in heard["C"] for _, sender, _ in turn)  # C cannot hear A
