"""A full service: a flood of new games is refused (503 with Retry-After), never made room for by
evicting someone's live game; a full archive refuses them too, and loses no game."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from chess_env.core.game import Game
from chess_env.serving.game_store import MAX_RETRY_AFTER, StateManager
from chess_env.serving.service import create_chess_service_app
from chess_env.serving.service.app import ARCHIVE_RETRY_AFTER

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from service_seats import TOKENS, create, move, resign

REMOTE = {"player": "remote", "name": "Client"}


def test_a_flood_of_new_games_gets_503_and_the_players_game_plays_on(tmp_path: Path) -> None:
    app = create_chess_service_app(archive_dir=tmp_path, max_games=4, listing="all")
    with TestClient(app) as client:
        victim = create(client, REMOTE, REMOTE)["game_id"]
        assert move(client, victim, "e4").status_code == 200
        flood = [create(client, REMOTE, REMOTE)["game_id"] for _ in range(3)]
        for _ in range(5):
            refused = client.post("/games", json={"white": REMOTE, "black": REMOTE})
            assert refused.status_code == 503
            body = refused.json()
            assert (body["code"], body["reason"]) == ("CAPACITY_REACHED", "games_full")
            assert body["detail"].startswith("all 4 games in memory are live")
            assert 1 <= int(refused.headers["Retry-After"]) <= MAX_RETRY_AFTER
        answer = move(client, victim, "e5")  # the victim's next move
        assert answer.status_code == 200, answer.text
        assert len(Game.model_validate(answer.json()).move_history) == 2
        assert [g["game_id"] for g in client.get("/games").json()] == [victim, *flood]
        assert not (tmp_path / "games.jsonl").exists()  # no game left memory unfinished
    archived = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert [game["game_id"] for game in archived] == [victim, *flood]  # at shutdown, once each


def test_a_full_archive_refuses_new_games_with_503_and_keeps_the_waiting_ones(
    tmp_path: Path,
) -> None:
    limit = 100_000  # the empty database takes about half
    games = StateManager(max_games=2, archive_dir=tmp_path, max_archive_bytes=limit)
    with TestClient(create_chess_service_app(games, listing="all")) as client:
        for _ in range(50):
            reply = client.post("/games", json={"white": REMOTE, "black": REMOTE})
            if reply.status_code != 201:
                break
            created = reply.json()
            TOKENS[created["game"]["game_id"]] = created["tokens"]
            assert resign(client, created["game"]["game_id"], "white").status_code == 200
        assert reply.status_code == 503, "the archive never filled"
        body = reply.json()
        assert (body["code"], body["reason"]) == ("CAPACITY_REACHED", "archive_unavailable")
        assert f"(the archive is full (max_archive_bytes = {limit}))" in body["detail"]
        assert reply.headers["Retry-After"] == str(ARCHIVE_RETRY_AFTER)
        waiting = games.unarchived
        assert waiting and [g["game_id"] for g in client.get("/games").json()] == list(waiting)
