"""100 concurrent games on a live chess server over loopback, then the 101st session at capacity.

Bounded: at most STEP_CAP agent moves per game (many of the endgames finish well before) and a
deadline on the games and on every reply, so the module runs in a few seconds.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import httpx
import pytest
from fastapi import FastAPI
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from chess_env.serving.app import create_chess_app

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address

MAX_SESSIONS = 100
STEP_CAP = 40  # agent moves per game; the reset options have no ply cap of their own
DEADLINE = 25.0  # seconds for the 100 games together
REPLY_TIMEOUT = 10.0
# Standard start (reaches the cap), captures into insufficient material, castling rights, and
# pawn races (promotions in UCI: "g2g1q" must replay too).
START_FENS: list[str | None] = [
    None,
    "7k/8/8/8/8/8/6n1/R5K1 w - - 0 1",
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "8/P6k/8/8/8/8/6p1/K7 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 b - - 0 1",  # black to move: no mate before the agent moves
]


@dataclass
class Game:
    """What one session sent and saw: enough to replay it with python-chess."""

    index: int
    start_fen: str | None
    agent_color: str
    reset: dict[str, Any] = field(default_factory=dict)
    moves: list[str] = field(default_factory=list)
    replies: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def last(self) -> dict[str, Any]:
        return self.replies[-1] if self.replies else self.reset

    @property
    def done(self) -> bool:
        return bool(self.last.get("done"))


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[FastAPI, str]]:
    app = create_chess_app(max_sessions=MAX_SESSIONS)
    with live_address(app) as address:
        yield app, address


async def ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    return json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT))


async def play(ws: ClientConnection, game: Game, steps: int) -> None:
    """Random legal moves until done or ``steps`` more moves; error frames are kept, not raised,
    so one bad session cannot leave the other 99 connections dangling."""
    rng = random.Random(game.index * 7919 + len(game.moves))
    for _ in range(steps):
        if game.done:
            return
        move = rng.choice(game.last["observation"]["legal_moves"])
        game.moves.append(move)
        reply = await ask(ws, {"type": "step", "data": {"move": move}})
        if reply["type"] != "observation":
            game.errors.append(reply)
            return
        game.replies.append(reply["data"])


async def start(ws: ClientConnection, game: Game) -> None:
    """Reset, then play to the end or the cap; the caller keeps the connection (its slot) open."""
    data: dict[str, Any] = {"seed": game.index, "agent_color": game.agent_color}
    if game.start_fen is not None:
        data["fen"] = game.start_fen
    reply = await ask(ws, {"type": "reset", "data": data})
    if reply["type"] != "observation":
        game.errors.append(reply)
        return
    game.reset = reply["data"]
    await play(ws, game, STEP_CAP)


async def try_session(url: str) -> tuple[ClientConnection, dict[str, Any]]:
    """A fresh connection and its first frame: its reset's observation, or the refusal."""
    ws = await connect(url)
    try:
        return ws, await ask(ws, {"type": "reset", "data": {"seed": 1}})
    except ConnectionClosed:  # refused before the reset went out: the frame is queued
        return ws, json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT))


def replay(game: Game) -> chess.Board:
    """The game replayed with python-chess, checked against every observation on the way: the
    FEN, the legal moves, and the opponent's replies (a lost or doubled move shows here)."""
    board = chess.Board(game.start_fen) if game.start_fen else chess.Board()

    def check(result: dict[str, Any]) -> None:
        observation = result["observation"]
        if observation["opponent_move"] is not None:
            board.push_uci(observation["opponent_move"])
        assert observation["fen"] == board.fen(), (game.index, board.move_stack)
        assert observation["ply"] == board.ply()
        if result["done"]:
            assert observation["legal_moves"] == []
        else:
            assert sorted(observation["legal_moves"]) == sorted(m.uci() for m in board.legal_moves)

    check(game.reset)
    assert len(game.moves) == len(game.replies)
    for move, result in zip(game.moves, game.replies, strict=True):
        board.push_uci(move)
        check(result)
    return board


def test_100_concurrent_games_then_the_101st_session(live: tuple[FastAPI, str]) -> None:
    app, address = live
    store = app.state.env_service.store
    games = [
        Game(i, START_FENS[i % len(START_FENS)], ("white", "black")[i // len(START_FENS) % 2])
        for i in range(MAX_SESSIONS)
    ]

    async def scenario() -> None:
        url = f"ws://{address}/ws"
        sockets: dict[int, ClientConnection] = {}

        async def hold(game: Game) -> None:
            sockets[game.index] = await connect(url, max_size=None)
            await start(sockets[game.index], game)

        try:
            await asyncio.wait_for(asyncio.gather(*(hold(game) for game in games)), DEADLINE)
            await at_capacity(url, [sockets[game.index] for game in games])
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets.values()))

    async def at_capacity(url: str, sockets: list[ClientConnection]) -> None:
        """With every slot held the 101st session is refused, and the 100 go on as they were."""
        assert len(store) == MAX_SESSIONS
        async with connect(url) as extra:  # a frame, then 1013 "try again later"
            refusal = json.loads(await asyncio.wait_for(extra.recv(), REPLY_TIMEOUT))
            assert refusal["type"] == "error"
            assert refusal["data"]["code"] == "CAPACITY_REACHED"
            assert f"all {MAX_SESSIONS} sessions are in use" in refusal["data"]["message"]
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(extra.recv(), REPLY_TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        # The store refuses over HTTP too: it never evicts an open session to make room.
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=10) as http:
            full = await http.post("/reset", json={})
            assert full.status_code == 503 and full.json()["code"] == "CAPACITY_REACHED"
        assert len(store) == MAX_SESSIONS

        for ws, game in zip(sockets, games, strict=True):
            state = await ask(ws, {"type": "state"})
            assert state["type"] == "state", state
            assert state["data"]["step_count"] == len(game.moves)
            assert state["data"]["fen"] == game.last["observation"]["fen"]
        await asyncio.gather(*(play(ws, game, 1) for ws, game in zip(sockets, games, strict=True)))

        # Closing one frees one slot (released just after the close, hence the retries) ...
        await sockets[0].close()
        deadline = time.monotonic() + 5
        newcomer, reply = await try_session(url)
        while reply["type"] != "observation":
            assert reply["data"]["code"] == "CAPACITY_REACHED", reply
            assert time.monotonic() < deadline, "closing a WebSocket did not free its slot"
            await newcomer.close()
            await asyncio.sleep(0.02)
            newcomer, reply = await try_session(url)
        # ... and only one: with the newcomer in it, the next session is refused again.
        try:
            refused, reply = await try_session(url)
            await refused.close()
            assert reply["data"]["code"] == "CAPACITY_REACHED", reply
        finally:
            await newcomer.close()

    asyncio.run(scenario())

    assert [game.errors for game in games] == [[]] * MAX_SESSIONS
    for game in games:
        board = replay(game)
        assert game.done or len(game.moves) == STEP_CAP + 1, game.index
        if game.done and not game.last.get("metadata", {}).get("truncated"):
            outcome = board.outcome(claim_draw=True)
            assert outcome is not None and outcome.result() == game.last["observation"]["result"]
    finished = sum(game.done for game in games)  # both ends exercised: a result and the cap
    assert MAX_SESSIONS // 5 <= finished < MAX_SESSIONS
    deadline = time.monotonic() + 5
    while len(store):
        assert time.monotonic() < deadline, f"{len(store)} sessions outlived their connections"
        time.sleep(0.02)
