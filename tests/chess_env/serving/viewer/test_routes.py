"""The viewer's routes without a browser: replays of PGN files and games.jsonl (positions,
comments, evaluations, times), their refusals (422 naming the game, 413), the archive, a service
game ply by ply, the security headers and the static pages."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import httpx
import pytest
from fastapi.testclient import TestClient

from chess_env.arena.analysis import MoveEval
from chess_env.arena.pgn_export import game_to_pgn
from chess_env.arena.results import ArenaGame, MoveRecord
from chess_env.core.game import Game
from chess_env.serving.app import create_chess_app
from chess_env.serving.game_store import StateManager
from chess_env.serving.service.bodies import AgentSpec
from chess_env.serving.viewer import create_viewer_app
from chess_env.serving.viewer.app import STATIC_DIR
from chess_env.serving.viewer.bodies import MAX_REPLAY_BODY

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from live_server import live_command
from service_seats import create, move, resign

REPLAY = "/viewer/api/replay"
REMOTE = {"player": "remote", "name": "Ann"}
GREEDY = {"player": "greedy", "name": "Greedy"}
PAGES = ("index.html", "game.html", "replay.html", "play.html")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_chess_app(service=True, archive_dir=tmp_path / "archive", listing="all")
    with TestClient(app) as client:
        yield client


def fens_after(start: str, ucis: list[str]) -> list[str]:
    """python-chess's FEN after each move."""
    board, fens = chess.Board(start), []
    for uci in ucis:
        board.push_uci(uci)
        fens.append(board.fen())
    return fens


def replay(client: TestClient, text: str, format: str = "pgn", **window: int) -> Any:
    response = client.post(REPLAY, json={"text": text, "format": format, **window})
    assert response.status_code == 200, response.text
    return response.json()


def refusal(client: TestClient, text: str, format: str = "pgn") -> dict[str, Any]:
    response = client.post(REPLAY, json={"text": text, "format": format})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    return body


# -- PGN ---------------------------------------------------------------------------------------

COMMENTED_PGN = """[Event "Club"]
[White "Ann"]
[Black "Bob"]
[Result "1-0"]
[Termination "normal"]
[Opening "King's pawn"]

{ a short game } 1. e4 { [%eval 0.35] [%emt 0:00:02.5] the centre } 1... e5 { [%emt 0:00:01] }
2. Qh5 { [%eval #3] } 2... Nc6 { [%eval #-2] hmm } 3. Bc4 Nf6 4. Qxf7# 1-0

[White "Cy"]
[Black "Di"]
[FEN "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2"]
[SetUp "1"]
[Result "*"]

2. exd6 { en passant } *
"""


def test_a_pgn_replay_has_every_position_and_each_moves_comment_evaluation_and_time(
    client: TestClient,
) -> None:
    first, second = replay(client, COMMENTED_PGN)["games"]
    assert (first["white"], first["black"], first["result"]) == ("Ann", "Bob", "1-0")
    assert (first["termination"], first["opening"], first["event"]) == (
        "normal",
        "King's pawn",
        "Club",
    )
    assert first["comment"] == "a short game" and first["line"] == 1
    ucis = [ply["uci"] for ply in first["plies"]]
    assert ucis == ["e2e4", "e7e5", "d1h5", "b8c6", "f1c4", "g8f6", "h5f7"]
    assert [p["fen_after"] for p in first["plies"]] == fens_after(chess.STARTING_FEN, ucis)
    e4, e5, qh5, nc6 = first["plies"][:4]
    assert (e4["san"], e4["color"], e4["move_number"], e4["ply"]) == ("e4", "white", 1, 1)
    assert (e4["eval_cp"], e4["mate"], e4["seconds"], e4["comment"]) == (
        35,
        None,
        2.5,
        "the centre",
    )
    assert (e5["seconds"], e5["comment"], e5["eval_cp"]) == (1.0, "", None)
    assert (qh5["eval_cp"], qh5["mate"]) == (10_000, 3)  # White mates: +10000 from White's side
    assert (nc6["eval_cp"], nc6["mate"], nc6["comment"]) == (-10_000, -2, "hmm")
    assert first["plies"][-1]["san"] == "Qxf7#"
    # A game set up from a FEN (the 11th line of the file), its en-passant capture included.
    assert second["start_fen"] == "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2" and second["line"] == 11
    assert second["plies"][0]["fen_after"] == "4k3/8/3P4/8/8/8/8/4K3 b - - 0 2"
    assert (second["plies"][0]["move_number"], second["result"]) == (2, "*")


def test_the_arenas_own_pgn_reads_back_with_evaluations_times_and_refused_answers(
    client: TestClient,
) -> None:
    record = ArenaGame(
        game_id="g0", index=0, white="openai:m", black="greedy", opening_id="e4",
        opening_name="King's pawn", root_fen=chess.STARTING_FEN, opening_moves=["e2e4"], seed=0,
        moves=[
            MoveRecord(uci="e7e5", san="e5", seconds=1.5, comment="I answer {e5}; [%eval 9]",
                       rejected=["cannot_move_there", "no_move_found"]),
            MoveRecord(uci="g1f3", san="Nf3", seconds=0.25),
        ],
        result="1/2-1/2", ending="max_plies", wall_seconds=2.0,
    )  # fmt: skip
    evals = [
        MoveEval(2, "e7e5", chess.BLACK, -30, -40, 0, 100.0, "ok"),
        MoveEval(3, "g1f3", chess.WHITE, 40, -260, 300, 20.0, "blunder"),  # the mover's side
    ]
    (game,) = replay(client, str(game_to_pgn(record, evals)))["games"]
    book, e5, nf3 = game["plies"]
    assert (book["san"], book["comment"], book["seconds"]) == ("e4", "book ends", None)
    assert e5["comment"] == "I answer (e5); [ %eval 9]"  # the answer's own text, kept as text
    assert e5["refused"] == ["cannot_move_there", "no_move_found"]
    assert (e5["seconds"], e5["eval_cp"]) == (1.5, 40)  # black's -40 is +40 from White's side
    assert (nf3["seconds"], nf3["eval_cp"], nf3["comment"]) == (0.25, -260, "blunder (-300 cp)")
    assert game["comment"] == "opening e4: King's pawn"


def test_a_window_of_a_large_file_is_replayed_and_the_rest_counted(client: TestClient) -> None:
    games = "".join(f'[Round "{n}"]\n\n1. e4 e5 2. Nf3 *\n\n' for n in range(1, 451))
    reply = replay(client, games, start=200, count=100)
    assert (reply["total"], reply["start"], len(reply["games"])) == (450, 200, 100)
    assert [g["index"] for g in reply["games"][:2]] == [200, 201]
    assert reply["games"][0]["line"] == 200 * 4 + 1  # each game: a tag, two blank lines, moves
    assert replay(client, "", start=0)["total"] == 0


@pytest.mark.parametrize(
    ("text", "reason", "named"),
    [
        ('[White "A"]\n\n1. e4 e5 *\n\n[White "B"]\n\n1. e4 e5 2. Ke3 *\n', "illegal_move",
         "game 2 (line 5), ply 3: illegal san: 'Ke3'"),
        ("this is not a chess game", "not_pgn", "game 1 (line 1): neither tags nor moves"),
        ('[FEN "8/8 w"]\n\n1. e4 *', "invalid_pgn", "game 1 (line 1): expected 8 rows"),
        ('\n\n{"game_id": "x"}\n', "not_pgn", "game 1 (line 3)"),
    ],
)  # fmt: skip
def test_a_pgn_that_cannot_be_read_is_refused_naming_the_game_line_and_ply(
    client: TestClient, text: str, reason: str, named: str
) -> None:
    body = refusal(client, text)
    assert body["reason"] == reason and body["detail"].startswith(named), body
    assert body["errors"][0]["loc"] == ["body", "text"] and body["errors"][0]["type"] == reason


# -- JSON lines: an arena run, the service's archive -------------------------------------------


@pytest.fixture(scope="module")
def arena_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from chess_env import arena

    out = tmp_path_factory.mktemp("arena")
    arena.run(["greedy", "random"], anchors=[], openings="startpos", games_per_pair=2, out=out,
              progress=False, bootstrap=0)  # fmt: skip
    return out / "games.jsonl"


def test_an_arena_runs_games_jsonl_replays_with_each_moves_time(
    client: TestClient, arena_games: Path
) -> None:
    text = arena_games.read_text()
    records = [ArenaGame.model_validate_json(line) for line in text.splitlines()]
    reply = replay(client, text, "jsonl")
    assert reply["total"] == len(records) == 2
    for record, game in zip(records, reply["games"], strict=True):
        assert (game["game_id"], game["white"], game["black"]) == (
            record.game_id,
            record.white,
            record.black,
        )
        assert (game["result"], game["termination"]) == (record.result, record.ending)
        ucis = [move.uci for move in record.moves]
        assert [p["uci"] for p in game["plies"]] == ucis
        assert [p["fen_after"] for p in game["plies"]] == fens_after(record.root_fen, ucis)
        assert [p["seconds"] for p in game["plies"]] == [move.seconds for move in record.moves]
        assert [p["san"] for p in game["plies"]] == [move.san for move in record.moves]


def test_the_service_archives_game_lines_replay_with_their_thinking_times(
    client: TestClient, tmp_path: Path
) -> None:
    with StateManager(archive_dir=tmp_path / "kept") as games:
        white, black = AgentSpec(**REMOTE).config("white"), AgentSpec(**GREEDY).config("black")
        game = games.create_game(white, black)
        for text, seconds in (("e4", 1.25), ("e5", 0.5), ("Qh5", 3.0)):
            game = games.apply_move(game.game_id, text, seconds)
    (archived,) = replay(client, (tmp_path / "kept" / "games.jsonl").read_text(), "jsonl")["games"]
    assert (archived["game_id"], archived["white"], archived["black_player"]) == (
        game.game_id,
        "Ann",
        "greedy",
    )
    assert [(p["san"], p["seconds"]) for p in archived["plies"]] == [
        ("e4", 1.25),
        ("e5", 0.5),
        ("Qh5", 3.0),
    ]
    assert archived["result"] == "*" and archived["status"] is None


@pytest.mark.parametrize(
    ("lines", "reason", "named"),
    [
        (["", "", "{not json"], "not_json", "game 1 (line 3): not JSON"),
        (['{"moves": []}'], "unknown_record", "game 1 (line 1): neither an arena game"),
        (['{"opening_moves": []}'], "invalid_record", "game 1 (line 1): not a valid ArenaGame"),
    ],
)
def test_a_json_line_that_is_no_game_is_refused_naming_its_line(
    client: TestClient, lines: list[str], reason: str, named: str
) -> None:
    body = refusal(client, "\n".join(lines), "jsonl")
    assert body["reason"] == reason and body["detail"].startswith(named), body


def test_an_illegal_move_in_an_arena_line_is_refused_naming_the_ply(
    client: TestClient, arena_games: Path
) -> None:
    lines = arena_games.read_text().splitlines()
    record = json.loads(lines[1])
    record["moves"][4]["uci"] = "e1e8"
    body = refusal(client, "\n".join([lines[0], json.dumps(record)]), "jsonl")
    assert body["reason"] == "illegal_move"
    assert body["detail"].startswith(f"game 2 (line 2, {record['game_id']}), ply 5: "), body


def test_a_file_over_the_limit_is_refused_unread_and_others_keep_the_servers_limit(
    client: TestClient,
) -> None:
    large = "1. e4 e5 *\n\n" * 100_000  # 1.2 MB: far over the server's 64 KB, within the replay's
    assert replay(client, large, count=1)["total"] == 100_000
    over = client.post(REPLAY, json={"text": "x" * MAX_REPLAY_BODY, "format": "pgn"})
    assert over.status_code == 413 and over.json()["code"] == "VALIDATION_ERROR"
    other = client.post("/reset", json={"seed": 1, "opponent": "x" * 100_000})
    assert other.status_code == 413  # the OpenEnv routes keep the server's 64 KB
    service = client.post("/service/games", json={"white": REMOTE, "black": REMOTE, "x": large})
    assert service.status_code == 413


def test_a_replay_request_of_another_form_is_refused(client: TestClient) -> None:
    assert client.post(REPLAY, json={"text": "1. e4 *", "format": "fen"}).status_code == 422
    assert (
        client.post(REPLAY, json={"text": "1. e4 *", "format": "pgn", "count": 0}).status_code
        == 422
    )
    as_text = client.post(REPLAY, content=b'{"text": "", "format": "pgn"}')
    assert as_text.status_code == 415 and as_text.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    elsewhere = client.post(
        REPLAY, json={"text": "", "format": "pgn"}, headers={"Origin": "http://evil.example"}
    )
    assert elsewhere.status_code == 403 and elsewhere.json()["code"] == "FORBIDDEN_ORIGIN"


# -- the archive and the service's games -------------------------------------------------------


def test_the_archive_lists_games_newest_first_and_gives_each_by_id(client: TestClient) -> None:
    assert client.get("/viewer/api/archive").json() == []
    ids = []
    for _ in range(3):
        game_id = create(client, REMOTE, GREEDY, prefix="/service")["game_id"]
        assert move(client, game_id, "e4", prefix="/service").status_code == 200
        assert resign(client, game_id, "white", prefix="/service").status_code == 200
        ids.append(game_id)  # finished: archived at once
    listed = client.get("/viewer/api/archive").json()
    assert [game["game_id"] for game in listed] == ids[::-1]
    newest = listed[0]
    assert (newest["white"], newest["white_player"], newest["black_player"]) == (
        "Ann",
        "remote",
        "greedy",
    )
    assert (newest["status"], newest["result"], newest["termination"], newest["plies"]) == (
        "resigned",
        "black_wins",
        "resigned",
        2,
    )
    assert newest["ended_at"] is not None
    assert [g["game_id"] for g in client.get("/viewer/api/archive?limit=1").json()] == [ids[-1]]
    record = client.get(f"/viewer/api/archive/{ids[0]}")
    assert record.status_code == 200
    assert Game.model_validate(record.json()) == Game.model_validate(
        client.get(f"/service/games/{ids[0]}").json()
    )
    missing = client.get("/viewer/api/archive/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404
    assert missing.json()["code"] == "SESSION_ERROR" and missing.json()["reason"] == "not_archived"
    assert client.get("/viewer/api/archive?limit=0").status_code == 422


def test_a_service_game_replays_from_memory_while_live_then_from_the_archive(
    tmp_path: Path,
) -> None:
    app = create_chess_app(service=True, archive_dir=tmp_path, max_games=1)
    with TestClient(app) as client:
        game_id = create(client, REMOTE, GREEDY, prefix="/service")["game_id"]
        move(client, game_id, "d4", prefix="/service")
        live = client.get(f"/viewer/api/games/{game_id}/replay").json()
        assert (live["status"], live["result"], live["white_player"]) == (
            "in_progress",
            "*",
            "remote",
        )
        ucis = [ply["uci"] for ply in live["plies"]]
        assert ucis[0] == "d2d4" and len(ucis) == 2  # greedy answered
        assert [p["fen_after"] for p in live["plies"]] == fens_after(chess.STARTING_FEN, ucis)
        resign(client, game_id, "white", prefix="/service")  # finished, archived
        create(client, REMOTE, REMOTE, prefix="/service")  # room for it: the first leaves
        archived = client.get(f"/viewer/api/games/{game_id}/replay").json()
        assert archived["status"] is None and archived["plies"] == live["plies"]
        unknown = client.get("/viewer/api/games/nobody/replay")
        assert unknown.status_code == 404 and unknown.json()["reason"] == "unknown_game"


def test_without_an_archive_the_archive_is_empty_and_files_still_replay() -> None:
    with TestClient(create_viewer_app()) as client:
        assert client.get("/api/archive").json() == []
        assert client.get("/api/archive/x").status_code == 404
        assert client.get("/api/games/x/replay").status_code == 404
        assert client.post("/api/replay", json={"text": "1. d4 *", "format": "pgn"}).is_success


# -- the pages and their headers ---------------------------------------------------------------


def test_every_reply_keeps_the_page_on_its_own_origin(client: TestClient) -> None:
    for path in ("/viewer/", "/viewer/board.js", "/viewer/api/archive", "/viewer/nowhere"):
        policy = client.get(path).headers["content-security-policy"]
        directives = dict(part.split(" ", 1) for part in policy.split("; "))
        assert directives["default-src"] == "'self'"
        assert directives["connect-src"] == "'self' ws://testserver wss://testserver"
        assert directives["img-src"] == "'self' data:"
        assert directives["frame-ancestors"] == "'none'"
    page = client.get("/viewer/")
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    forged = client.get("/viewer/", headers={"Host": "a.example; script-src *"})
    assert "script-src" not in forged.headers["content-security-policy"]


def test_the_pages_their_scripts_and_the_pieces_are_served(client: TestClient) -> None:
    assert client.get("/viewer", follow_redirects=False).headers["location"].endswith("/viewer/")
    index = client.get("/viewer/")
    assert index.status_code == 200 and "text/html" in index.headers["content-type"]
    for page in PAGES:
        html = client.get(f"/viewer/{page}")
        assert html.status_code == 200, page
        for script in re.findall(r'<script type="module" src="([^"]+)"', html.text):
            served = client.get(f"/viewer/{script}")
            assert served.status_code == 200
            assert "javascript" in served.headers["content-type"], script
    pieces = client.get("/viewer/pieces.svg")
    assert pieces.headers["content-type"].startswith("image/svg+xml")
    assert pieces.text.count("<g id=") == 12 and "style=" not in pieces.text
    missing = client.get("/viewer/nowhere.html")
    assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"


def test_the_pages_fetch_nothing_from_another_host_and_inline_no_script_or_style() -> None:
    namespaces = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    for path in sorted(STATIC_DIR.iterdir()):
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'`)]*", path.read_text()))
        assert urls <= namespaces, (path.name, urls - namespaces)
    for page in PAGES:  # the policy refuses inline scripts and styles: none is needed
        html = (STATIC_DIR / page).read_text()
        assert not re.search(r"<script(?![^>]*\ssrc=)|\sstyle=|<style|\son\w+=", html), page


def test_serve_with_the_service_serves_the_viewer_and_without_it_does_not() -> None:
    with live_command("chess_env", "--service") as address:
        page = httpx.get(f"http://{address}/viewer/")
        assert page.status_code == 200 and "Games on this server" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
    with TestClient(create_chess_app()) as client:
        assert client.get("/viewer/").status_code == 404


def test_the_routes_are_documented(client: TestClient) -> None:
    paths = client.get("/viewer/api/openapi.json").json()["paths"]
    expected = {
        "/api/archive": "get",
        "/api/archive/{game_id}": "get",
        "/api/games/{game_id}/replay": "get",
        "/api/replay": "post",
        "/pieces.svg": "get",
    }
    for path, method in expected.items():
        operation = paths[path][method]
        assert operation["summary"] and operation["description"], path


def test_a_pgn_read_back_by_python_chess_matches_the_replay(client: TestClient) -> None:
    """Any PGN the service writes replays to the positions python-chess reads from it."""
    game_id = create(client, REMOTE, GREEDY, prefix="/service")["game_id"]
    for text in ("e4", "Nf3", "Bc4"):
        move(client, game_id, text, prefix="/service")
    pgn = client.get(f"/service/games/{game_id}/pgn").text
    (game,) = replay(client, pgn)["games"]
    parsed = chess.pgn.read_game(io.StringIO(pgn))
    assert parsed is not None
    board, expected = parsed.board(), []
    for played in parsed.mainline_moves():
        board.push(played)
        expected.append(board.fen())
    assert [p["fen_after"] for p in game["plies"]] == expected
    assert game["game_id"] == game_id
