"""100 concurrent service games on a live server over loopback, each watched over WebSocket to its
end, then the 101st game evicts exactly the least recently updated finished one.

A third of the games are played by the server's random agents alone, a third by a client (white,
over REST) against a random agent, a third by a client moving both sides (UCI and SAN). Bounded:
the server-only games start from endgames whose halfmove clock ends them within 16 plies (a
capture leaves bare kings), and clients resign after PLY_CAP plies. The deadline only keeps a hung
server from hanging the suite; nothing here times anything.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from chess_env.core.game import Game, validate_game_state
from chess_env.serving.game_store import StateManager
from chess_env.serving.service import create_chess_service_app

sys.path.insert(0, str(Path(__file__).parents[3] / "support"))
from live_server import live_address

MAX_GAMES = 100
PLY_CAP = 12  # plies a client plays before it resigns
DEADLINE = 90.0  # seconds for the 100 games together: a hang guard, not a measurement
REPLY_TIMEOUT = 30.0
FRAME_LIMIT = 64 * 1024
# One side has a single piece, so a capture ends the game too (insufficient material).
SERVER_FENS = [
    "4k3/8/8/8/8/8/8/R3K3 w - - 84 40",
    "4k3/8/8/8/8/8/8/3QK3 w - - 86 40",
    "4k3/8/8/8/8/8/8/4K2R w K - 84 40",  # castling too
    "3qk3/8/8/8/8/8/8/4K3 b - - 86 40",
]
KINDS = ("server", "half", "remote")


@dataclass
class Record:
    """What the client sent and what its spectator saw of one game."""

    index: int
    kind: str
    game_id: str = ""
    tokens: dict[str, str | None] = field(default_factory=dict)  # POST /games gave them
    sent: list[str] = field(default_factory=list)  # the client's moves, in UCI
    snapshot_moves: list[str] = field(default_factory=list)
    streamed: list[dict[str, Any]] = field(default_factory=list)  # move_made data
    ended: dict[str, Any] = field(default_factory=dict)
    frame_sizes: list[int] = field(default_factory=list)

    def request(self) -> dict[str, Any]:
        remote = {"player": "remote", "name": f"Client {self.index}"}
        if self.kind == "server":
            fen = SERVER_FENS[self.index // len(KINDS) % len(SERVER_FENS)]
            return {
                "white": {"player": "random", "name": "W", "seed": self.index},
                "black": {"player": "random", "name": "B", "seed": self.index + 1000},
                "fen": fen,
            }
        black = remote if self.kind == "remote" else {"player": "random", "name": "R", "seed": 5}
        return {"white": remote, "black": black}

    @property
    def seen(self) -> list[str]:
        """Every move as the spectator learnt it: the snapshot's, then the move_made frames."""
        return self.snapshot_moves + [data["move"] for data in self.streamed]


async def receive(ws: ClientConnection, record: Record) -> dict[str, Any]:
    text = await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
    assert isinstance(text, str)
    record.frame_sizes.append(len(text.encode()))
    return dict(json.loads(text))


async def read_snapshot(ws: ClientConnection, record: Record) -> None:
    snapshot = await receive(ws, record)
    assert snapshot["type"] == "snapshot", snapshot
    while len(record.snapshot_moves) < snapshot["data"]["ply"]:
        page = await receive(ws, record)
        assert page["type"] == "history", page
        record.snapshot_moves += [move["uci_notation"] for move in page["data"]["moves"]]


async def spectate(ws: ClientConnection, record: Record) -> None:
    """The move_made frames up to game_ended; then the server closes the socket (1000)."""
    while not record.ended:
        frame = await receive(ws, record)
        if frame["type"] == "move_made":
            record.streamed.append(frame["data"])
        else:
            assert frame["type"] == "game_ended", frame
            record.ended = frame["data"]
    with pytest.raises(ConnectionClosed) as closed:
        await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


async def play(http: httpx.AsyncClient, record: Record, game: dict[str, Any]) -> None:
    """Random legal moves for the client's side(s), every other one in SAN, until the game ends
    or PLY_CAP plies, when the side to move resigns."""
    rng = random.Random(record.index)
    while game["status"] == "in_progress":
        url = f"/games/{record.game_id}"
        headers = {"X-Seat-Token": str(record.tokens[game["current_turn"]])}
        if len(game["move_history"]) >= PLY_CAP:
            response = await http.post(f"{url}/resign", json={}, headers=headers)
        else:
            uci = rng.choice(game["board_state"]["legal_moves"])
            board = chess.Board(game["board_state"]["fen"])
            text = uci if len(record.sent) % 2 else board.san(chess.Move.from_uci(uci))
            record.sent.append(uci)
            response = await http.post(f"{url}/moves", json={"move": text}, headers=headers)
        assert response.status_code == 200, response.text
        game = response.json()


def client(address: str) -> httpx.AsyncClient:
    """A client of its own for each game: httpx's pool checks every pooled connection on every
    request, which with 100 connections in one pool costs more than the server's work."""
    return httpx.AsyncClient(base_url=f"http://{address}", timeout=REPLY_TIMEOUT, verify=False)


async def run(address: str, record: Record) -> None:
    async with client(address) as http:
        created = await http.post("/games", json=record.request())
        assert created.status_code == 201, created.text
        record.game_id = created.json()["game"]["game_id"]
        record.tokens = created.json()["tokens"]
        url = f"ws://{address}/games/{record.game_id}/events"
        async with connect(url, compression=None) as ws:  # deflate: CPU on both sides
            await read_snapshot(ws, record)
            watching = asyncio.ensure_future(spectate(ws, record))
            if record.kind != "server":
                await play(http, record, created.json()["game"])
            await watching


def replays(game: Game) -> bool:
    """Every move is legal in turn from the start position and they reach the final position."""
    board = chess.Board(game.start_fen)
    for move in game.move_history:
        if chess.Move.from_uci(move.uci_notation) not in board.legal_moves:
            return False
        board.push_uci(move.uci_notation)
    return board.fen() == game.board_state.fen


def read_pgns(path: Path) -> dict[str, chess.pgn.Game]:
    stream, games = io.StringIO(path.read_text()), {}
    while (pgn := chess.pgn.read_game(stream)) is not None:
        games[pgn.headers["GameId"]] = pgn
    return games


def check_game(record: Record, game: Game) -> None:
    """The spectator's view, the client's moves and the server's record agree, and replay."""
    assert game.is_over, (record.kind, game.status)
    history = [move.uci_notation for move in game.move_history]
    assert record.seen == history, record.index  # no move lost, doubled or reordered
    plies = [data["ply"] for data in record.streamed]
    assert plies == list(range(len(record.snapshot_moves) + 1, len(history) + 1))
    if record.streamed:
        assert record.streamed[-1]["fen"] == game.board_state.fen
    if record.kind != "server":
        assert record.snapshot_moves == []  # the spectator saw every move as it was made
        assert record.sent == (history if record.kind == "remote" else history[::2])
    ended = (record.ended["status"], record.ended["result"], record.ended["termination"])
    assert ended == (game.status, game.result, game.termination)
    assert replays(game) and validate_game_state(game) == []
    assert max(record.frame_sizes) < FRAME_LIMIT


def test_100_concurrent_games_to_the_end_then_the_101st_evicts_one(tmp_path: Path) -> None:
    manager = StateManager(max_games=MAX_GAMES, archive_dir=tmp_path)
    # One client plays them all here: its limits are the server's.
    app = create_chess_service_app(
        manager,
        listing="all",
        max_live_games_per_client=MAX_GAMES,
        max_spectators_per_client=MAX_GAMES,
    )
    records = [Record(index, KINDS[index % len(KINDS)]) for index in range(MAX_GAMES)]
    # uvicorn closes a keep-alive connection idle for 5 s; on a loaded machine a client's next
    # request can cross that close and fail with a read error, so none is closed mid-test.
    with live_address(app, timeout_keep_alive=int(DEADLINE)) as address:

        async def scenario() -> tuple[dict[str, Game], list[dict[str, Any]], Any, list[str]]:
            games = asyncio.gather(*(run(address, record) for record in records))
            await asyncio.wait_for(games, DEADLINE)
            async with client(address) as http:
                finals = {}
                for record in records:
                    response = await http.get(f"/games/{record.game_id}")
                    finals[record.game_id] = Game.model_validate(response.json())
                listing = (await http.get("/games")).json()
                extra = await http.post("/games", json=Record(MAX_GAMES, "remote").request())
                assert extra.status_code == 201, extra.text
                after = [summary["game_id"] for summary in (await http.get("/games")).json()]
                gone = [
                    game_id
                    for game_id in finals
                    if (await http.get(f"/games/{game_id}")).status_code == 404
                ]
                return finals, listing, (extra.json()["game"]["game_id"], after), gone

        finals, listing, (extra_id, after), gone = asyncio.run(scenario())
        lines = (tmp_path / "games.jsonl").read_text().splitlines()  # before shutdown adds more

    for record in records:
        check_game(record, finals[record.game_id])
    ids = [summary["game_id"] for summary in listing]  # in creation order
    assert sorted(ids) == sorted(record.game_id for record in records)
    assert all(summary["status"] != "in_progress" for summary in listing)
    kinds_ended = {(r.kind, finals[r.game_id].termination) for r in records}
    assert ("half", "resigned") in kinds_ended and ("server", "fifty_moves") in kinds_ended

    # The 101st game took the place of the least recently updated game (all are finished).
    victim = min(listing, key=lambda summary: _when(summary["last_updated"]))["game_id"]
    assert gone == [victim]
    assert after == [game_id for game_id in ids if game_id != victim] + [extra_id]

    # Each game was archived once, as it finished (leaving memory added nothing); the victim's
    # record is whole.
    archived = [Game.model_validate_json(line) for line in lines]
    assert sorted(game.game_id for game in archived) == sorted(ids)
    (record,) = [game for game in archived if game.game_id == victim]
    assert record == finals[victim] and validate_game_state(record) == []
    pgns = read_pgns(tmp_path / "games.pgn")
    assert sorted(pgns) == sorted([*ids, extra_id])  # the 101st was archived at shutdown
    pgn = pgns[victim]
    assert not pgn.errors and pgn.end().board().fen() == record.board_state.fen
    assert [move.uci() for move in pgn.mainline_moves()] == [
        move.uci_notation for move in record.move_history
    ]


def _when(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))  # 3.10 reads no "Z"
