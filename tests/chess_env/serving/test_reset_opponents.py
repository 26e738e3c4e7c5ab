"""The chess server's ``opponent`` reset option takes the player registry's specs.

Every kind a server makes is accepted and plays; the others (and malformed specs) are a 4xx that
names the field and carries the registry's message, and the session's previous episode stays as
it was.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chess_env.core import opponents
from chess_env.errors import PlayerSpecError, StockfishNotFoundError
from chess_env.serving.app import ChessAdapter, create_chess_app

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from registered_player import REFUSED_BY_SERVERS, registered
from stockfish_binary import needs_stockfish

STOCKFISH = (pytest.mark.stockfish, needs_stockfish)


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_chess_app(), raise_server_exceptions=False)


@pytest.fixture
def session(client: TestClient) -> str:
    """A session one move into a game against the random opponent."""
    session_id = client.post("/reset", json={"seed": 5}).json()["session_id"]
    step = client.post("/step", json={"action": {"move": "e4"}, "session_id": session_id})
    assert step.status_code == 200, step.text
    return str(session_id)


def assert_still_the_first_episode(client: TestClient, session: str) -> None:
    state = client.get("/state", params={"session_id": session}).json()
    assert (state["opponent"], state["step_count"], state["ply"]) == ("random", 1, 2), state
    step = client.post("/step", json={"action": {"move": "d4"}, "session_id": session})
    assert step.status_code == 200, step.text


@pytest.mark.parametrize(
    ("spec", "blocking"),
    [
        pytest.param("stockfish:2", True, marks=STOCKFISH),
        pytest.param("stockfish?depth=2&skill=3", True, marks=STOCKFISH),
        ("alphabeta:1", True),
        ("greedy", False),  # the control: accepted before the registry too
    ],
)
def test_reset_takes_a_served_spec_and_plays_it(
    client: TestClient, session: str, spec: str, blocking: bool
) -> None:
    reply = client.post(
        "/reset", json={"opponent": spec, "agent_color": "black", "seed": 1, "session_id": session}
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["observation"]["opponent_move"]  # it opened as white
    step = client.post("/step", json={"action": {"move": "e6"}, "session_id": session})
    assert step.status_code == 200, step.text
    assert step.json()["observation"]["opponent_move"]
    state = client.get("/state", params={"session_id": session}).json()
    assert (state["opponent"], state["step_count"]) == (spec, 1)
    adapter = ChessAdapter()
    adapter.reset(seed=0, opponent=spec)
    assert adapter.blocking is blocking  # a step off the event loop unless it cannot wait
    adapter.close()


@pytest.mark.parametrize(
    ("spec", "said"),
    REFUSED_BY_SERVERS,
)
def test_reset_refuses_other_specs_naming_the_field(
    client: TestClient, session: str, spec: str, said: str
) -> None:
    reply = client.post("/reset", json={"opponent": spec, "session_id": session})
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert body["code"] == "VALIDATION_ERROR" and body["errors"][0]["loc"] == ["opponent"]
    assert body["detail"].startswith("opponent: ") and said in body["detail"]
    assert_still_the_first_episode(client, session)


def test_a_missing_stockfish_is_opponent_unavailable(
    client: TestClient, session: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_engine(path: object = None) -> str:
        raise StockfishNotFoundError("no Stockfish binary found on PATH")

    monkeypatch.setattr(opponents, "find_stockfish", no_engine)
    reply = client.post("/reset", json={"opponent": "stockfish:2", "session_id": session})
    assert reply.status_code == 422 and reply.json()["reason"] == "opponent_unavailable"
    assert "no Stockfish binary" in reply.json()["detail"]
    assert_still_the_first_episode(client, session)


def test_a_player_refusing_its_settings_as_it_is_made_is_a_422(
    client: TestClient, session: str
) -> None:
    def picky(spec: object) -> None:
        raise PlayerSpecError("player 'picky': elo=100 is outside this engine's range")

    with registered("picky", picky):
        reply = client.post("/reset", json={"opponent": "picky", "session_id": session})
    assert reply.status_code == 422 and reply.json()["reason"] == "invalid_opponent"
    assert "elo=100" in reply.json()["detail"]
    assert_still_the_first_episode(client, session)
