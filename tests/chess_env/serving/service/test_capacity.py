"""A full service: a flood of new games is refused (503 with Retry-After), never made room for by
evicting someone's live game."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from chess_env.core.game import Game
from chess_env.serving.game_store import MAX_RETRY_AFTER
from chess_env.serving.service import create_chess_service_app

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from service_seats import create, move

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
