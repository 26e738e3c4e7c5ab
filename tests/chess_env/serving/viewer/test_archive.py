"""The viewer's ``GameArchive``: one game by its key and the newest games from the database's
indexes, never a scan of the exports; and the archive routes' filters."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from fastapi.testclient import TestClient

from chess_env.core.game import AgentConfig, Game
from chess_env.serving.app import create_chess_app
from chess_env.serving.game_store import StateManager
from chess_env.serving.viewer.archive import MAX_LISTED, GameArchive

AGENT = {"personality": "balanced", "system_prompt": "Play well."}
FOOLS_MATE = ("f3", "e5", "g4", "Qh4#")


def agent(color: str, player: str) -> AgentConfig:
    return AgentConfig(agent_id=color, name=color.title(), model_name=player, **AGENT)


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def archive_games(directory: Path) -> dict[str, list[str]]:
    """Archive, oldest first: two greedy-vs-remote mates, a random resignation, and a remote
    game left unfinished at close. Their ids by kind."""
    ids: dict[str, list[str]] = {"mate": [], "resigned": [], "unfinished": []}
    with StateManager(archive_dir=directory, clock=FakeClock()) as games:
        for _ in range(2):
            game_id = games.create_game(agent("white", "greedy"), agent("black", "remote")).game_id
            for move in FOOLS_MATE:
                games.apply_move(game_id, move)
            ids["mate"].append(game_id)
        game_id = games.create_game(agent("white", "random"), agent("black", "remote")).game_id
        games.resign(game_id, "white")
        ids["resigned"].append(game_id)
        game_id = games.create_game(agent("white", "remote"), agent("black", "remote")).game_id
        games.apply_move(game_id, "e4")
        ids["unfinished"].append(game_id)
    return ids


def test_a_game_is_found_by_its_key_with_the_exports_moved_away(tmp_path: Path) -> None:
    """The exports are for other tools: lookups and listings read the database alone."""
    ids = archive_games(tmp_path)
    (exported,) = (tmp_path / "games.jsonl").read_text().splitlines()[-1:]
    for name in ("games.jsonl", "games.pgn"):
        (tmp_path / name).rename(tmp_path / f"{name}.moved")
    archive = GameArchive(tmp_path)
    assert archive.find(ids["unfinished"][0]) == Game.model_validate_json(exported)
    assert archive.find(ids["mate"][0]).status == "checkmate"  # type: ignore[union-attr]
    assert archive.find("00000000-0000-4000-8000-000000000000") is None
    newest = [game.game_id for game in archive.latest()]
    assert newest == [*ids["unfinished"], *ids["resigned"], *ids["mate"][::-1]]


def test_the_newest_games_first_each_once_filtered_by_status_or_player(tmp_path: Path) -> None:
    ids = archive_games(tmp_path)
    archive = GameArchive(tmp_path)
    listed = archive.latest()
    assert [game.game_id for game in listed] == [
        *ids["unfinished"],
        *ids["resigned"],
        *ids["mate"][::-1],
    ]
    mate = listed[-1]
    assert (mate.white, mate.white_player, mate.black_player, mate.plies) == (
        "White",
        "greedy",
        "remote",
        4,
    )
    assert (mate.status, mate.result, mate.termination) == ("checkmate", "black_wins", "checkmate")
    assert mate.ended_at is not None and listed[0].ended_at is None
    assert [game.game_id for game in archive.latest(1)] == ids["unfinished"]
    by_status = archive.latest(status="checkmate")
    assert [game.game_id for game in by_status] == ids["mate"][::-1]
    assert [g.game_id for g in archive.latest(status="in_progress")] == ids["unfinished"]
    assert [g.game_id for g in archive.latest(player="random")] == ids["resigned"]
    greedy_mates = archive.latest(1, status="checkmate", player="greedy")
    assert [game.game_id for game in greedy_mates] == ids["mate"][1:]
    assert len(archive.latest(player="remote")) == 4  # either side
    assert archive.latest(status="stalemate") == [] and archive.latest(0) == []
    assert len(archive.latest(MAX_LISTED + 1)) == 4


def test_no_archive_or_no_database_has_no_games(tmp_path: Path) -> None:
    for archive in (GameArchive(None), GameArchive(tmp_path / "never_written")):
        assert archive.latest() == [] and archive.find("any") is None


def test_the_archive_route_filters_by_status_and_player(tmp_path: Path) -> None:
    ids = archive_games(tmp_path)
    with TestClient(create_chess_app(service=True, archive_dir=tmp_path)) as client:
        listed = client.get("/viewer/api/archive", params={"status": "checkmate"}).json()
        assert [game["game_id"] for game in listed] == ids["mate"][::-1]
        listed = client.get("/viewer/api/archive", params={"player": "random"}).json()
        assert [game["game_id"] for game in listed] == ids["resigned"]
        refused = client.get("/viewer/api/archive", params={"status": "won"})
        assert refused.status_code == 422 and refused.json()["code"] == "VALIDATION_ERROR"
        assert client.get("/viewer/api/archive", params={"player": "x" * 201}).status_code == 422
        found = client.get(f"/viewer/api/archive/{ids['resigned'][0]}").json()
        assert (found["status"], found["white"]["model_name"]) == ("resigned", "random")
