"""The game service's seats take the player registry's specs: ``{"player": "alphabeta:1"}``.

A served spec plays its side and is recorded (``model_name`` the spec, ``personality`` its kind,
the listing's ``white_player``); any other spec is a 422 naming ``white.player`` (or
``black.player``), and no game is made.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chess_env.errors import PlayerSpecError
from chess_env.serving.service import create_chess_service_app

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from registered_player import REFUSED_BY_SERVERS, registered
from service_seats import create, move
from stockfish_binary import needs_stockfish

REMOTE = {"player": "remote", "name": "Client"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_chess_service_app(listing="all")) as client:
        yield client


def refused(client: TestClient, white: dict[str, Any], black: dict[str, Any]) -> Any:
    response = client.post("/games", json={"white": white, "black": black})
    assert response.status_code == 422, response.text
    assert client.get("/games").json() == []  # nothing made, nothing listed
    return response.json()


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("alphabeta:1", "alphabeta"),
        pytest.param("stockfish:1", "stockfish", marks=(pytest.mark.stockfish, needs_stockfish)),
    ],
)
def test_a_served_spec_plays_its_side(client: TestClient, spec: str, kind: str) -> None:
    server = {"player": spec, "name": "Server", "seed": 3}  # a seed for any server-made player
    game = create(client, server, REMOTE)
    assert len(game["move_history"]) == 1  # it opened at once
    assert (game["white"]["model_name"], game["white"]["personality"]) == (spec, kind)
    moved = move(client, game["game_id"], "e6", color="black")
    assert moved.status_code == 200, moved.text
    assert [m["player"] for m in moved.json()["move_history"]] == ["white", "black", "white"]
    [summary] = client.get("/games").json()
    assert (summary["white_player"], summary["black_player"]) == (spec, "remote")


@pytest.mark.parametrize(
    ("spec", "said"),
    REFUSED_BY_SERVERS,
)
def test_other_specs_are_422_naming_the_field(client: TestClient, spec: str, said: str) -> None:
    body = refused(client, {"player": spec, "name": "X"}, REMOTE)
    assert body["code"] == "VALIDATION_ERROR"
    assert body["errors"][0]["loc"] == ["body", "white", "player"]
    assert "white.player: " in body["detail"] and said in body["detail"]
    assert '"remote"' in body["detail"]  # the client's own choice is named too


def test_a_player_refusing_its_settings_as_it_is_made_is_a_422(client: TestClient) -> None:
    def picky(spec: object) -> None:
        raise PlayerSpecError("player 'picky': elo=100 is outside this engine's range")

    with registered("picky", picky):
        body = refused(client, REMOTE, {"player": "picky", "name": "P"})
    assert body["reason"] == "invalid_player" and "elo=100" in body["detail"]
    assert body["errors"][0]["loc"] == ["body", "black", "player"]


def test_a_seed_for_a_remote_side_is_refused(client: TestClient) -> None:
    body = refused(client, {**REMOTE, "seed": 1}, {"player": "greedy", "name": "G"})
    assert "seed is for players the server makes" in body["detail"]
