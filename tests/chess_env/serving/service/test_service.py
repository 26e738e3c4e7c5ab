"""The multi-game chess service: games over REST, server agents, spectators, storage."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from chess_env.core import opponents
from chess_env.core.game import Game
from chess_env.core.opponents import RandomOpponent
from chess_env.errors import StockfishNotFoundError
from chess_env.serving.game_store import StateManager
from chess_env.serving.service import create_chess_service_app

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from registered_player import registered
from service_seats import abort, create, move, resign, seat

REMOTE = {"player": "remote", "name": "Client"}
RANDOM = {"player": "random", "name": "Randy", "seed": 7}
FOOLS_MATE = ("f3", "e7e5", "g2g4", "Qh4#")
HAS_STOCKFISH = bool(shutil.which("stockfish") or shutil.which("/usr/games/stockfish"))


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_chess_service_app(listing="all")) as client:
        yield client


def receive_game(ws: WebSocketTestSession) -> Game:
    """The game as the snapshot and history frames give it, every frame under 64 KB."""
    frames = [ws.receive_text()]
    snapshot = json.loads(frames[0])
    assert snapshot["type"] == "snapshot"
    moves: list[dict[str, Any]] = []
    while len(moves) < snapshot["data"]["ply"]:
        frames.append(ws.receive_text())
        page = json.loads(frames[-1])
        assert page["type"] == "history" and page["data"]["from_ply"] == len(moves) + 1
        moves += page["data"]["moves"]
    assert all(len(frame.encode()) < 64 * 1024 for frame in frames)
    return Game.model_validate({**snapshot["data"]["game"], "move_history": moves})


def events_until_end(ws: WebSocketTestSession) -> list[dict[str, Any]]:
    """Every frame up to game_ended, then check that the server closes the socket."""
    frames = [ws.receive_json()]
    while frames[-1]["type"] != "game_ended":
        frames.append(ws.receive_json())
    with pytest.raises(WebSocketDisconnect) as closed:
        ws.receive_json()
    assert closed.value.code == 1000
    return frames


def wait_until_over(client: TestClient, game_id: str, seconds: float = 20) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        game = client.get(f"/games/{game_id}").json()
        if game["status"] != "in_progress":
            return game
        time.sleep(0.05)
    raise AssertionError(f"game {game_id} still in progress after {seconds} s")


def test_importing_chess_env_does_not_import_fastapi() -> None:
    code = "import sys, chess_env, chess_env.serving.game_store; print('fastapi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_remote_moves_by_uci_and_san_and_random_replies(client: TestClient) -> None:
    game = create(client, REMOTE, RANDOM)
    assert game["move_history"] == [] and game["current_turn"] == "white"
    assert game["white"]["agent_id"] == "white" and game["black"]["model_name"] == "random"
    game_id = game["game_id"]

    after_uci = move(client, game_id, "e2e4")
    assert after_uci.status_code == 200, after_uci.text
    history = after_uci.json()["move_history"]
    assert [m["uci_notation"] for m in history][:1] == ["e2e4"]
    assert len(history) == 2 and history[1]["player"] == "black"  # the random agent replied
    assert after_uci.json()["current_turn"] == "white"

    after_san = move(client, game_id, "Nf3", color="white").json()
    assert after_san["move_history"][2]["uci_notation"] == "g1f3"
    assert len(after_san["move_history"]) == 4
    assert client.get(f"/games/{game_id}").json() == after_san


def test_server_agent_playing_white_moves_right_after_creation(client: TestClient) -> None:
    game = create(client, {"player": "greedy", "name": "G", "seed": 1}, REMOTE)
    assert len(game["move_history"]) == 1 and game["current_turn"] == "black"
    assert move(client, game["game_id"], "e7e5", color="black").status_code == 200


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("e2e5", "cannot_move_there"),
        ("Nf6", "cannot_move_there"),
        ("e7e5", "not_your_piece"),
        ("a1a1", "cannot_move_there"),  # UCI-shaped, onto its own square: once a 500
    ],
)
def test_illegal_move_is_422_with_reason(client: TestClient, text: str, reason: str) -> None:
    game_id = create(client, REMOTE, RANDOM)["game_id"]
    response = move(client, game_id, text)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR" and body["reason"] == reason, body
    assert text in body["detail"]
    assert client.get(f"/games/{game_id}").json()["move_history"] == []


@pytest.mark.parametrize("text", ["hello", "e2e4e5", "z9z9", "", "e2-e4 please"])
def test_text_that_is_neither_uci_nor_san_is_422(client: TestClient, text: str) -> None:
    game_id = create(client, REMOTE, RANDOM)["game_id"]
    response = move(client, game_id, text)
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert response.json()["errors"][0]["loc"] == ["body", "move"]


def test_wrong_turn_and_server_side_and_game_over_are_refused(client: TestClient) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    wrong = move(client, game_id, "e7e5", color="black")
    assert wrong.status_code == 409 and wrong.json()["reason"] == "not_your_turn"

    greedy_white = create(client, {"player": "greedy", "name": "G"}, REMOTE)["game_id"]
    # Nobody may move for the server's white agent, even black's owner naming white.
    headers = seat(greedy_white, "black")
    body = {"move": "e7e5", "color": "white"}
    server_side = client.post(f"/games/{greedy_white}/moves", json=body, headers=headers)
    assert server_side.status_code == 403 and server_side.json()["reason"] == "server_seat"

    assert resign(client, game_id, "white").status_code == 200
    over = move(client, game_id, "e2e4", color="white")
    assert over.status_code == 409 and over.json()["reason"] == "game_over"


def test_a_game_the_server_plays_has_only_a_creator_token(client: TestClient) -> None:
    created = client.post("/games", json={"white": RANDOM, "black": {**RANDOM, "name": "B"}})
    tokens = created.json()["tokens"]
    assert tokens["white"] is None and tokens["black"] is None and tokens["creator"]
    game_id = created.json()["game"]["game_id"]
    headers = {"X-Seat-Token": tokens["creator"]}
    response = client.post(f"/games/{game_id}/moves", json={"move": "e2e4"}, headers=headers)
    assert response.status_code == 403  # the creator does not play
    stopped = client.post(f"/games/{game_id}/abort", headers=headers)
    assert stopped.status_code in (200, 409)  # 409: the game was over already


def test_unknown_game_is_404_naming_it(client: TestClient) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    for response in (
        client.get(f"/games/{missing}"),
        client.get(f"/games/{missing}/pgn"),
        move(client, missing, "e2e4", color="white"),
        resign(client, missing, "white"),
        abort(client, missing),
    ):
        assert response.status_code == 404
        assert missing in response.json()["detail"] and response.json()["reason"] == "unknown_game"


def test_bad_requests_to_create_are_422(client: TestClient) -> None:
    bad_fen = client.post("/games", json={"white": REMOTE, "black": RANDOM, "fen": "8/8/8 w"})
    assert bad_fen.status_code == 422 and bad_fen.json()["reason"] == "invalid_position"
    seed_on_remote = client.post("/games", json={"white": {**REMOTE, "seed": 3}, "black": RANDOM})
    assert seed_on_remote.status_code == 422 and "seed" in seed_on_remote.json()["detail"]
    depth_field = client.post("/games", json={"white": REMOTE, "black": {**RANDOM, "depth": 3}})
    assert depth_field.status_code == 422  # the depth is in the spec now: "stockfish:3"
    no_player = client.post("/games", json={"white": REMOTE, "black": {"name": "X"}})
    assert no_player.status_code == 422
    assert client.get("/games").json() == []


def test_agent_config_fields_are_recorded(client: TestClient) -> None:
    spec = {**REMOTE, "model_name": "Qwen/Qwen2.5-32B-Instruct", "temperature": 0.2}
    game = create(client, spec, RANDOM, fen="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    assert game["white"]["model_name"] == "Qwen/Qwen2.5-32B-Instruct"
    assert game["white"]["temperature"] == 0.2 and game["white"]["personality"] == "remote"
    mated = move(client, game["game_id"], "Ra8#").json()
    assert (mated["status"], mated["result"]) == ("checkmate", "white_wins")


def test_list_and_filter_by_status(client: TestClient) -> None:
    first = create(client, REMOTE, RANDOM)["game_id"]
    second = create(client, REMOTE, REMOTE)["game_id"]
    resign(client, second, "black")
    listed = client.get("/games").json()
    assert [g["game_id"] for g in listed] == [first, second]
    assert listed[0]["white_player"] == "remote" and listed[0]["black_player"] == "random"
    playing = client.get("/games", params={"status": "in_progress"}).json()
    assert [g["game_id"] for g in playing] == [first]
    resigned = client.get("/games", params={"status": "resigned"}).json()
    assert [(g["game_id"], g["result"]) for g in resigned] == [(second, "white_wins")]
    assert client.get("/games", params={"status": "nonsense"}).status_code == 422


def test_pgn_export_parses_and_replays(client: TestClient) -> None:
    game_id = create(client, REMOTE, RANDOM)["game_id"]
    for text in ("e4", "d2d4", "Nc3"):
        game = move(client, game_id, text).json()
    response = client.get(f"/games/{game_id}/pgn")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    pgn = chess.pgn.read_game(io.StringIO(response.text))
    assert pgn is not None and not pgn.errors
    assert pgn.headers["GameId"] == game_id and pgn.headers["White"] == "Client"
    played = [m.uci() for m in pgn.mainline_moves()]
    assert played == [m["uci_notation"] for m in game["move_history"]]
    assert pgn.end().board().fen() == game["board_state"]["fen"]


@pytest.mark.parametrize(("color", "result"), [("white", "black_wins"), ("black", "white_wins")])
def test_resign_ends_the_game(client: TestClient, color: str, result: str) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    move(client, game_id, "e4")
    game = resign(client, game_id, color).json()
    assert (game["status"], game["result"], game["termination"]) == ("resigned", result, "resigned")
    again = resign(client, game_id, color)
    assert again.status_code == 409 and again.json()["reason"] == "game_over"
    red = client.post(
        f"/games/{game_id}/resign", json={"color": "red"}, headers=seat(game_id, color)
    )
    assert red.status_code == 422
    header = "0-1" if result == "black_wins" else "1-0"
    assert f'[Result "{header}"]' in client.get(f"/games/{game_id}/pgn").text


def test_spectators_see_snapshot_moves_of_both_sides_and_the_end(client: TestClient) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    with (
        client.websocket_connect(f"/games/{game_id}/events") as first,
        client.websocket_connect(f"/games/{game_id}/events") as second,
    ):
        for ws in (first, second):
            assert receive_game(ws).game_id == game_id
        for text in FOOLS_MATE:
            assert move(client, game_id, text).status_code == 200
        for ws in (first, second):
            frames = events_until_end(ws)
            moves = [f["data"] for f in frames if f["type"] == "move_made"]
            assert [m["move"] for m in moves] == ["f2f3", "e7e5", "g2g4", "d8h4"]
            assert [m["ply"] for m in moves] == [1, 2, 3, 4]
            assert [m["player"] for m in moves] == ["white", "black"] * 2
            assert all(m["game_id"] == game_id for m in moves)
            assert (
                moves[-1]["fen"]
                == chess.Board(
                    "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
                ).fen()
            )
            ended = frames[-1]["data"]
            assert (ended["status"], ended["result"], ended["termination"]) == (
                "checkmate",
                "black_wins",
                "checkmate",
            )
            pgn = chess.pgn.read_game(io.StringIO(ended["pgn"]))
            assert pgn is not None and pgn.end().board().is_checkmate()
            assert all(len(json.dumps(frame)) < 64 * 1024 for frame in frames)


def test_spectators_see_server_agents_moves(client: TestClient) -> None:
    game_id = create(client, REMOTE, RANDOM)["game_id"]
    with client.websocket_connect(f"/games/{game_id}/events") as ws:
        assert receive_game(ws).move_history == ()
        move(client, game_id, "e4")
        frames = [ws.receive_json(), ws.receive_json()]
        assert [f["data"]["player"] for f in frames] == ["white", "black"]
        resign(client, game_id, "white")
        ended = ws.receive_json()
        assert ended["type"] == "game_ended" and ended["data"]["result"] == "black_wins"


def test_spectating_a_finished_or_unknown_game(client: TestClient) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    resign(client, game_id, "black")
    with client.websocket_connect(f"/games/{game_id}/events") as ws:
        assert receive_game(ws).status == "resigned"
        assert [f["type"] for f in events_until_end(ws)] == ["game_ended"]
    missing = "00000000-0000-4000-8000-000000000000"
    with client.websocket_connect(f"/games/{missing}/events") as ws:
        error = ws.receive_json()
        assert error["type"] == "error" and missing in error["data"]["message"]
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1008


def test_engine_missing_is_503(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_engine(path: object = None) -> str:
        raise StockfishNotFoundError("no Stockfish binary found on PATH")

    monkeypatch.setattr(opponents, "find_stockfish", no_engine)
    response = client.post(
        "/games", json={"white": {"player": "stockfish:3", "name": "SF"}, "black": REMOTE}
    )
    assert response.status_code == 503 and response.json()["reason"] == "engine_unavailable"
    assert client.get("/games").json() == []


@pytest.mark.stockfish
@pytest.mark.skipif(not HAS_STOCKFISH, reason="needs the Stockfish binary")
def test_engine_against_random_finishes_in_the_server(client: TestClient) -> None:
    engine = {"player": "stockfish:2", "name": "Stockfish"}
    game_id = create(client, engine, RANDOM)["game_id"]
    with client.websocket_connect(f"/games/{game_id}/events") as ws:
        if receive_game(ws).status == "in_progress":
            frames = events_until_end(ws)
            assert frames[-1]["type"] == "game_ended"
    game = wait_until_over(client, game_id)
    assert game["white"]["model_name"] == "stockfish:2"
    assert game["white"]["personality"] == "stockfish"
    assert game["result"] in ("white_wins", "draw")  # Stockfish does not lose to random moves
    pgn = chess.pgn.read_game(io.StringIO(client.get(f"/games/{game_id}/pgn").text))
    assert pgn is not None and len(list(pgn.mainline_moves())) == len(game["move_history"])


def archived_ids(directory: Path) -> list[str]:
    lines = (directory / "games.jsonl").read_text().splitlines()
    return [json.loads(line)["game_id"] for line in lines]


def test_games_are_archived_on_shutdown(tmp_path: Path) -> None:
    with TestClient(create_chess_service_app(archive_dir=tmp_path)) as client:
        game_id = create(client, REMOTE, RANDOM)["game_id"]
        move(client, game_id, "e4")
        assert not (tmp_path / "games.jsonl").exists()
    assert archived_ids(tmp_path) == [game_id]
    record = Game.model_validate_json((tmp_path / "games.jsonl").read_text())
    assert len(record.move_history) == 2 and record.status == "in_progress"
    assert game_id in (tmp_path / "games.pgn").read_text()


def test_eviction_drops_the_least_recently_updated_finished_game(tmp_path: Path) -> None:
    app = create_chess_service_app(archive_dir=tmp_path, max_games=2, listing="all")
    with TestClient(app) as client:
        first, second = (create(client, REMOTE, RANDOM)["game_id"] for _ in range(2))
        resign(client, second, "white")  # archived as it ends
        resign(client, first, "white")
        third = create(client, REMOTE, RANDOM)["game_id"]
        assert [g["game_id"] for g in client.get("/games").json()] == [first, third]
        assert client.get(f"/games/{second}").status_code == 404
        assert archived_ids(tmp_path) == [second, first]  # each once, as it ended
        assert second not in app.state.chess_service._seats  # its agents are released


def test_eviction_prefers_finished_games(tmp_path: Path) -> None:
    app = create_chess_service_app(archive_dir=tmp_path, max_games=2, listing="all")
    with TestClient(app) as client:
        first = create(client, REMOTE, RANDOM)["game_id"]
        second = create(client, REMOTE, REMOTE)["game_id"]
        resign(client, second, "white")  # archived as it ends
        with client.websocket_connect(f"/games/{first}/events") as ws:
            assert receive_game(ws).game_id == first
            third = create(client, REMOTE, RANDOM)["game_id"]
            assert [g["game_id"] for g in client.get("/games").json()] == [first, third]
        assert archived_ids(tmp_path) == [second]


def test_spectators_of_an_evicted_game_are_told(tmp_path: Path) -> None:
    now = [datetime(2025, 10, 25, tzinfo=timezone.utc)]
    games = StateManager(max_games=1, idle_timeout=60, clock=lambda: now[0])
    with TestClient(create_chess_service_app(games)) as client:
        first = create(client, REMOTE, RANDOM)["game_id"]
        with client.websocket_connect(f"/games/{first}/events") as ws:
            assert receive_game(ws).game_id == first
            now[0] += timedelta(seconds=61)  # idle: the new game takes its place
            create(client, REMOTE, RANDOM)
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_json()
            assert closed.value.code == 1001


def test_archive_dir_conflicts_with_a_given_state_manager(tmp_path: Path) -> None:
    from chess_env.serving.game_store import StateManager

    with pytest.raises(ValueError, match="archive_dir"):
        create_chess_service_app(StateManager(), archive_dir=tmp_path)


def test_a_server_agent_that_thinks_too_long_loses_on_time(client: TestClient) -> None:
    class Slow(RandomOpponent):
        def choose_move(self, board: chess.Board, legal_moves: Any) -> chess.Move:
            time.sleep(0.5)
            return super().choose_move(board, legal_moves)

    with registered("slow", lambda spec: Slow()):
        slow = {**RANDOM, "player": "slow", "timeout_seconds": 0.05}
        game_id = create(client, REMOTE, slow)["game_id"]
    started = time.monotonic()
    game = move(client, game_id, "e4").json()
    assert time.monotonic() - started < 0.4  # the late thread is abandoned, not waited for
    assert (game["status"], game["result"]) == ("timeout", "white_wins")
