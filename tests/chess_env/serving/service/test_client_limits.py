"""One client cannot spoil another's games: the attacks of the second hardening round, small.

Live servers on 127.0.0.1 with clients bound to 127.0.0.2 (the attacker) and 127.0.0.3 (the
victim): the server counts clients by address. "held" players think until the test lets them go,
standing for long engine searches; every wait is bounded, so a bug fails and never hangs.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from chess_env.serving.app import create_chess_app
from chess_env.serving.game_store import StateManager
from chess_env.serving.service import ChessService, CreateGameRequest
from chess_env.serving.thinking import ThinkingLimits
from envkit.server.errors import CapacityError
from envkit.server.sessions import current_client

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from held_player import GUARD, Held
from live_server import live_address

ATTACKER, VICTIM = "127.0.0.2", "127.0.0.3"
REMOTE = {"player": "remote", "name": "Me"}


def client_at(address: str, server: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=f"http://{server}", transport=transport, timeout=GUARD)


def create(client: httpx.Client, white: dict[str, Any], black: dict[str, Any]) -> httpx.Response:
    return client.post("/service/games", json={"white": white, "black": black})


def test_one_clients_long_searches_do_not_make_anothers_server_player_lose_on_time(
    held: type[Held],
) -> None:
    """Eight games of searching players, then a victim's ``random`` opponent with a 1 s
    timeout: it answers at once (it used to queue behind the searches and lose on time)."""
    app = create_chess_app(service=True)
    with (
        live_address(app) as server,
        client_at(ATTACKER, server) as attacker,
        client_at(VICTIM, server) as victim,
    ):
        for n in range(8):
            hog = {"player": "held", "name": f"Hog {n}"}
            assert create(attacker, hog, hog).status_code == 201
        quick = {"player": "random", "name": "R", "timeout_seconds": 1.0}
        created = create(victim, REMOTE, quick).json()
        token = created["tokens"]["white"]
        game_id = created["game"]["game_id"]
        headers = {"X-Seat-Token": token}
        moved = victim.post(f"/service/games/{game_id}/moves", json={"move": "e4"}, headers=headers)
        held.release.set()
    game = moved.json()
    assert moved.status_code == 200, moved.text
    assert (game["status"], len(game["move_history"])) == ("in_progress", 2)


def test_a_burst_of_games_from_one_client_stops_at_its_limit_and_evicts_nobody() -> None:
    """The victim's live game survives 100 creations from another address on a 20-game server
    (it used to be evicted: 404 unknown_game); the attacker gets its 4, then 503."""
    app = create_chess_app(service=True, max_games=20, max_live_games_per_client=4)
    with live_address(app) as server:
        with client_at(VICTIM, server) as victim:
            created = create(victim, REMOTE, {"player": "random", "name": "R"}).json()
            game_id, token = created["game"]["game_id"], created["tokens"]["white"]

        async def burst() -> list[httpx.Response]:
            transport = httpx.AsyncHTTPTransport(local_address=ATTACKER)
            async with httpx.AsyncClient(
                base_url=f"http://{server}", transport=transport, timeout=GUARD
            ) as attacker:
                body = {"white": REMOTE, "black": {"player": "random", "name": "R"}}
                return await asyncio.gather(
                    *(attacker.post("/service/games", json=body) for _ in range(100))
                )

        replies = asyncio.run(burst())
        with client_at(VICTIM, server) as victim:
            moved = victim.post(
                f"/service/games/{game_id}/moves",
                json={"move": "d4"},
                headers={"X-Seat-Token": token},
            )
    statuses = [reply.status_code for reply in replies]
    assert statuses.count(201) == 4 and statuses.count(503) == 96
    refused = next(reply for reply in replies if reply.status_code == 503).json()
    assert (refused["code"], refused["reason"]) == ("CAPACITY_REACHED", "client_game_limit")
    assert moved.status_code == 200, moved.text


@pytest.mark.parametrize(
    ("player", "limit"),
    [
        ("stockfish?movetime=60", "think at most 5 s a move, not 60"),
        ("stockfish?depth=30", "search at most 20 plies deep, not 30"),
    ],
)
def test_an_engine_beyond_the_servers_effort_is_refused_naming_the_side(
    player: str, limit: str, fake_stockfish: Path
) -> None:
    with TestClient(create_chess_app(service=True)) as client:
        reply = client.post(
            "/service/games", json={"white": REMOTE, "black": {"player": player, "name": "SF"}}
        )
    assert reply.status_code == 422
    assert reply.json()["reason"] == "invalid_player"
    assert reply.json()["detail"].startswith("black.player:") and limit in reply.json()["detail"]


def test_engine_games_past_the_servers_engines_are_503_with_retry_after(
    fake_stockfish: Path,
) -> None:
    limits = ThinkingLimits(max_engines=2, max_engines_per_client=2)
    engine = {"player": "stockfish:1", "name": "SF"}
    with TestClient(create_chess_app(service=True, thinking=limits)) as client:
        first = client.post("/service/games", json={"white": REMOTE, "black": engine})
        second = client.post("/service/games", json={"white": engine, "black": engine})
        assert (first.status_code, second.status_code) == (201, 503)
        assert second.json()["reason"] == "engine_limit"
        assert int(second.headers["Retry-After"]) > 0
        game_id = first.json()["game"]["game_id"]
        aborted = client.post(
            f"/service/games/{game_id}/abort",
            headers={"X-Seat-Token": first.json()["tokens"]["creator"]},
        )
        assert aborted.status_code == 200  # its engine is released with it
        third = client.post("/service/games", json={"white": engine, "black": engine})
        assert third.status_code == 201, third.text


def test_sessions_past_the_servers_engines_are_503_and_an_engine_that_cannot_start_loses(
    fake_stockfish: Path,
) -> None:
    """Sessions with a Stockfish opponent: past the cap 503 (never 500); an engine that does not
    start is its side's loss (it used to be a 500)."""
    app = create_chess_app(thinking=ThinkingLimits(max_engines=2))
    with TestClient(app) as client:
        sessions = []
        for _ in range(2):
            reset = client.post("/reset", json={"opponent": "stockfish:1"})
            assert reset.status_code == 200, reset.text
            sessions.append(reset.json()["session_id"])
        over = client.post("/reset", json={"opponent": "stockfish:1"})
        assert over.status_code == 503 and over.json()["reason"] == "engine_limit"
        assert "Retry-After" in over.headers
        again = client.post(
            "/reset", json={"opponent": "stockfish:2", "session_id": sessions[0]}
        )  # a session's next episode takes over its own engine slot
        assert again.status_code == 200, again.text
        step = client.post("/step", json={"action": {"move": "e4"}, "session_id": sessions[0]})
        assert step.status_code == 200, step.text
        reply = step.json()
        assert (reply["done"], reply["reward"]) == (True, 1.0)
        assert reply["observation"]["outcome"] == "opponent_failed"
        assert reply["observation"]["result"] == "1-0"
        as_black = client.post(
            "/reset",
            json={"opponent": "random", "agent_color": "black", "session_id": sessions[1]},
        )
        assert as_black.status_code == 200  # a player without an engine: the slot is freed
        engine_first = client.post(
            "/reset", json={"opponent": "stockfish:1", "agent_color": "black"}
        )
        assert engine_first.status_code == 503, engine_first.text
        assert engine_first.json()["reason"] == "engine_unavailable"


def test_spectators_are_capped_per_game_and_per_client() -> None:
    async def scenario() -> list[str | None]:
        service = ChessService(
            StateManager(max_games=10), max_spectators_per_game=3, max_spectators_per_client=2
        )
        request = CreateGameRequest.model_validate({"white": REMOTE, "black": REMOTE})
        game_id = (await service.create(request)).game.game_id
        reasons: list[str | None] = []
        for client in ("10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3"):
            current_client.set(client)
            try:
                service.subscribe(game_id)
                reasons.append(None)
            except CapacityError as error:
                reasons.append(error.reason)
        await service.close()
        return reasons

    assert asyncio.run(scenario()) == [None, None, "spectator_limit", None, "spectator_limit"]


def test_a_spectator_past_the_limit_is_told_and_closed_try_again_later() -> None:
    app = create_chess_app(service=True, max_spectators_per_client=1)
    with TestClient(app) as client:
        game_id = client.post("/service/games", json={"white": REMOTE, "black": REMOTE}).json()[
            "game"
        ]["game_id"]
        with client.websocket_connect(f"/service/games/{game_id}/events") as first:
            assert first.receive_json()["type"] == "snapshot"
            with client.websocket_connect(f"/service/games/{game_id}/events") as second:
                frame = second.receive_json()
                assert frame["type"] == "error"
                assert frame["data"]["reason"] == "spectator_limit"
                closed = second.receive()
        assert closed["type"] == "websocket.close" and closed["code"] == 1013
        with client.websocket_connect(f"/service/games/{game_id}/events") as third:
            assert third.receive_json()["type"] == "snapshot"  # the first one's slot is free


def test_an_abort_does_not_wait_for_an_agent_thinking(held: type[Held]) -> None:
    """The creator aborts a game of two searching agents while one thinks: the abort is
    answered at once (it used to wait for the search), the thought is dropped, the engine slot
    and the search slot come back when the thread is done."""

    async def scenario() -> tuple[int, str, int]:
        service = ChessService(StateManager(max_games=10))
        hog = {"player": "held", "name": "H"}
        request = CreateGameRequest.model_validate({"white": hog, "black": hog})
        created = await service.create(request)
        game_id = created.game.game_id
        while not held.thinking:
            await asyncio.sleep(0.01)
        game = await asyncio.wait_for(service.abort(game_id, created.tokens.creator), 5.0)
        still_thinking = held.thinking
        held.release.set()
        await service.close()
        return still_thinking, game.status, len(game.move_history)

    assert asyncio.run(scenario()) == (1, "in_progress", 0)
