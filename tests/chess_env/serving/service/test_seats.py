"""Seats only their owners play: each attack, then its refusal, then proof nothing changed.

``POST /games`` returns a token per remote seat and one for the creator; moving and resigning
need the seat's token (``X-Seat-Token``), aborting the creator's. Tokens never leave the create
reply: not in listings, the game, its session, spectator frames, the PGN, the archive or logs.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from chess_env.__main__ import main
from chess_env.serving.app import SERVICE_PATH, create_chess_app
from chess_env.serving.service import ChessService, SeatTokens, create_chess_service_app
from chess_env.serving.service import tokens as service_tokens
from envkit.server import secret_tokens

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from live_server import live_server
from service_seats import HEADER, TOKENS, abort, create, move, resign, seat

REMOTE = {"player": "remote", "name": "Client"}
RANDOM = {"player": "random", "name": "Randy", "seed": 7}
URLSAFE = re.compile(r"^[A-Za-z0-9_-]+$")
SHORT = "4k3/8/8/8/8/8/8/R3K3 w - - 84 40"  # the fifty-move rule ends it within 16 plies


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_chess_service_app(listing="all")) as client:
        yield client


def record(client: Any, game_id: str, prefix: str = "") -> Any:
    response = client.get(f"{prefix}/games/{game_id}")
    assert response.status_code == 200, response.text
    return response.json()


def refused(response: Any, status: int, reason: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert (body["code"], body["reason"]) == ("UNAUTHORIZED", reason), body
    assert body["detail"]


# -- the tokens ----------------------------------------------------------------------------------


def test_create_returns_a_token_per_remote_seat_and_one_for_the_creator(
    client: TestClient,
) -> None:
    created = client.post("/games", json={"white": REMOTE, "black": RANDOM}).json()
    tokens = created["tokens"]
    assert set(created) == {"game", "tokens"} and tokens["black"] is None  # the server's side
    assert tokens["white"] != tokens["creator"]
    for token in (tokens["white"], tokens["creator"]):
        assert URLSAFE.match(token) and len(token) >= 43  # 32 random bytes: 256 bits
    both = client.post("/games", json={"white": REMOTE, "black": REMOTE}).json()["tokens"]
    assert len({*both.values(), *tokens.values()} - {None}) == 5  # all different


def test_tokens_are_compared_with_hmac_compare_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    compare = hmac.compare_digest

    def spy(given: bytes, secret: bytes) -> bool:
        calls.append((given, secret))
        return compare(given, secret)

    tokens = SeatTokens.new(remote=["white", "black"])
    monkeypatch.setattr(secret_tokens.hmac, "compare_digest", spy)
    assert tokens.holder(str(tokens.black)) == "black"
    assert len(calls) == 3  # every secret compared, whichever matched
    assert service_tokens.TOKEN_BYTES >= 16
    assert repr(tokens) == "SeatTokens()"  # a log line or traceback shows none


# -- moves and resignations ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("holder", "color", "status", "reason"),
    [
        (None, "white", 401, "seat_token_required"),  # no token at all
        ("black", "white", 403, "wrong_seat_token"),  # the other seat's
        ("creator", "white", 403, "wrong_seat_token"),  # the creator does not play
        ("creator", None, 403, "wrong_seat_token"),
        ("guess", "white", 403, "wrong_seat_token"),  # nobody's
        ("other game", "white", 403, "wrong_seat_token"),  # white's, of another game
    ],
)
def test_moving_for_a_seat_needs_its_token(
    client: TestClient, holder: str | None, color: str | None, status: int, reason: str
) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    other = create(client, REMOTE, REMOTE)["game_id"]
    headers = {
        None: {},
        "guess": {HEADER: "x" * 43},
        "other game": seat(other, "white"),
    }.get(holder, seat(game_id, str(holder)))
    before = record(client, game_id)
    body = {"move": "e4"} if color is None else {"move": "e4", "color": color}
    refused(client.post(f"/games/{game_id}/moves", json=body, headers=headers), status, reason)
    assert record(client, game_id) == before
    assert move(client, game_id, "e4", color="white").status_code == 200  # its owner still can


def test_a_seat_token_plays_its_own_side_only(client: TestClient) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    headers = seat(game_id, "black")
    before = record(client, game_id)
    early = client.post(f"/games/{game_id}/moves", json={"move": "e4"}, headers=headers)
    assert early.status_code == 409 and early.json()["reason"] == "not_your_turn"  # black's seat
    assert record(client, game_id) == before


def test_the_server_side_cannot_be_resigned_by_a_client(client: TestClient) -> None:
    game_id = create(client, REMOTE, RANDOM)["game_id"]
    move(client, game_id, "e4", color="white")
    before = record(client, game_id)
    url = f"/games/{game_id}/resign"
    refused(client.post(url, json={"color": "black"}), 401, "seat_token_required")
    for holder in ("white", "creator"):
        response = client.post(url, json={"color": "black"}, headers=seat(game_id, holder))
        refused(response, 403, "server_seat")
        assert "abort" in response.json()["detail"]
    assert record(client, game_id) == before


def test_a_seat_cannot_resign_the_other_side(client: TestClient) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    before = record(client, game_id)
    url = f"/games/{game_id}/resign"
    refused(
        client.post(url, json={"color": "black"}, headers=seat(game_id, "white")),
        403,
        "wrong_seat_token",
    )
    refused(client.post(url, json={}, headers=seat(game_id, "creator")), 403, "wrong_seat_token")
    assert record(client, game_id) == before
    own = client.post(url, json={}, headers=seat(game_id, "black"))  # the token says which side
    assert own.status_code == 200 and own.json()["result"] == "white_wins"


def test_a_spectator_socket_cannot_move(client: TestClient) -> None:
    game_id = create(client, REMOTE, REMOTE)["game_id"]
    with client.websocket_connect(f"/games/{game_id}/events") as ws:
        assert ws.receive_json()["type"] == "snapshot"
        for attempt in (
            {"type": "step", "data": {"move": "e2e4"}},
            {"move": "e4", "color": "white"},
            {"type": "resign", "color": "white", "token": TOKENS[game_id]["white"]},
            "e2e4",
        ):
            ws.send_text(json.dumps(attempt))
        assert move(client, game_id, "d4", color="white").status_code == 200  # the owner's
        frame = ws.receive_json()  # the next frame is the owner's move: nothing came between
        assert frame["type"] == "move_made" and frame["data"]["move"] == "d2d4"
    after = record(client, game_id)
    assert [m["uci_notation"] for m in after["move_history"]] == ["d2d4"]
    assert after["status"] == "in_progress"


# -- the creator's abort -------------------------------------------------------------------------


def test_only_the_creator_aborts_and_then_nobody_moves(client: TestClient) -> None:
    game_id = create(client, REMOTE, RANDOM)["game_id"]
    before = record(client, game_id)
    url = f"/games/{game_id}/abort"
    refused(client.post(url), 401, "seat_token_required")
    refused(client.post(url, headers=seat(game_id, "white")), 403, "not_creator")
    assert record(client, game_id) == before
    with client.websocket_connect(f"/games/{game_id}/events") as ws:
        assert ws.receive_json()["type"] == "snapshot"
        stopped = abort(client, game_id)
        assert stopped.status_code == 200 and stopped.json() == before
        assert ws.receive_json() == {"type": "game_aborted", "data": {"game_id": game_id, "ply": 0}}
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1000
    late = move(client, game_id, "e4", color="white")
    assert late.status_code == 409 and late.json()["reason"] == "aborted"
    assert abort(client, game_id).json()["reason"] == "aborted"
    assert record(client, game_id) == before  # the record stays as it was: unfinished
    [summary] = client.get("/games").json()
    assert summary["aborted"] is True
    service: ChessService = client.app.state.chess_service  # type: ignore[attr-defined]
    assert service._seats[game_id]["black"].opponent is None  # the server's agent is closed


# -- listing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("listing", "listed"),
    [
        ("all", {"remote", "server", "public remote", "private server"}),
        ("public", {"server", "public remote"}),
    ],
)
def test_listing_all_or_public_games(listing: str, listed: set[str]) -> None:
    with TestClient(create_chess_service_app(listing=listing)) as client:  # type: ignore[arg-type]
        names = {
            "remote": create(client, REMOTE, RANDOM)["game_id"],  # private by default
            "server": create(client, RANDOM, RANDOM, fen=SHORT)["game_id"],  # public
            "public remote": create(client, REMOTE, RANDOM, public=True)["game_id"],
        }
        private = create(client, RANDOM, RANDOM, fen=SHORT, public=False)
        names["private server"] = private["game_id"]
        shown = {summary["game_id"] for summary in client.get("/games").json()}
        assert shown == {names[name] for name in listed}
        assert record(client, names["remote"])["game_id"] == names["remote"]  # still by id


def test_listing_off_is_403_and_games_stay_readable_by_id() -> None:
    with TestClient(create_chess_service_app(listing="off")) as client:
        game_id = create(client, RANDOM, RANDOM, fen=SHORT, public=True)["game_id"]
        refused(client.get("/games"), 403, "listing_off")
        assert record(client, game_id)["game_id"] == game_id


def test_serve_flag_sets_the_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    import chess_env.serving.app

    served: list[FastAPI] = []
    monkeypatch.setattr(
        chess_env.serving.app, "make_server", lambda app, **_: served.append(app) or Mock()
    )
    main(["serve", "--service", "--list-games", "off"])
    (mount,) = [r for r in served[0].routes if getattr(r, "path", None) == SERVICE_PATH]
    assert mount.app.state.chess_service.listing == "off"  # type: ignore[attr-defined]
    with pytest.raises(SystemExit):
        main(["serve", "--list-games", "all"])  # a setting of --service


def test_an_unknown_listing_is_refused() -> None:
    with pytest.raises(ValueError, match="listing must be"):
        create_chess_service_app(listing="some")  # type: ignore[arg-type]


# -- where tokens never appear -------------------------------------------------------------------


def test_tokens_appear_in_no_reply_frame_pgn_archive_or_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    app = create_chess_service_app(archive_dir=tmp_path, listing="all")
    with TestClient(app) as client:
        game_id = create(client, REMOTE, REMOTE)["game_id"]
        server_game = create(client, REMOTE, RANDOM)["game_id"]
        with client.websocket_connect(f"/games/{game_id}/events") as ws:
            for text in ("f3", "e5", "g4"):
                assert move(client, game_id, text).status_code == 200
            refused(client.post(f"/games/{game_id}/resign", json={}), 401, "seat_token_required")
            assert resign(client, game_id, "white").status_code == 200
            seen += [ws.receive_text() for _ in range(5)]  # snapshot, 3 moves, the end
        refused(
            client.post(f"/games/{server_game}/resign", json={}, headers=seat(game_id, "white")),
            403,
            "wrong_seat_token",
        )
        abort(client, server_game)
        for url in ("/games", f"/games/{game_id}", f"/games/{game_id}/session"):
            seen.append(client.get(url).text)
        seen.append(client.get(f"/games/{game_id}/pgn").text)
        seen.append(client.get("/openapi.json").text)
    # The archive after shutdown: its database (bytes, whose text is UTF-8) and its exports.
    seen += [path.read_bytes().decode(errors="replace") for path in tmp_path.iterdir()]
    assert len(list(tmp_path.iterdir())) == 3 and game_id in "".join(seen[-3:])
    seen.append(caplog.text)
    secrets = [t for game in (game_id, server_game) for t in TOKENS[game].values() if t]
    assert len(secrets) == 5
    assert not [secret for secret in secrets for text in seen if secret in text]


def test_live_server_refuses_what_the_issue_reproduced(tmp_path: Path) -> None:
    """The attack of issue 19 on 127.0.0.1: move and resign for seats that are not yours."""
    access = logging.getLogger("uvicorn.access")
    app = create_chess_app(service=True, archive_dir=tmp_path)
    with live_server(app) as (_, address), httpx.Client(base_url=f"http://{address}") as http:
        lines: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda entry: lines.append(entry.getMessage())  # type: ignore[method-assign]
        access.addHandler(handler)
        try:
            game_id = create(http, REMOTE, RANDOM, prefix=SERVICE_PATH)["game_id"]
            before = record(http, game_id, SERVICE_PATH)
            url = f"{SERVICE_PATH}/games/{game_id}"
            bare = http.post(f"{url}/moves", json={"move": "f2f3", "color": "white"})
            refused(bare, 401, "seat_token_required")
            refused(http.post(f"{url}/resign", json={"color": "black"}), 401, "seat_token_required")
            wrong = seat(game_id, "creator")
            refused(http.post(f"{url}/moves", json={"move": "f3"}, headers=wrong), 403,
                    "wrong_seat_token")  # fmt: skip
            refused(http.post(f"{url}/resign", json={"color": "black"}, headers=wrong), 403,
                    "server_seat")  # fmt: skip
            assert http.get(f"{SERVICE_PATH}/games").json() == []  # private: a client plays it
            assert record(http, game_id, SERVICE_PATH) == before
            assert move(http, game_id, "f3", color="white", prefix=SERVICE_PATH).status_code == 200
        finally:
            access.removeHandler(handler)
    assert lines and all(t not in line for t in TOKENS[game_id].values() if t for line in lines)
