"""Attacks on a server hosted for others, second round: each reproduced at a small scale and
refused, on every server that ``envkit.server`` builds.

- A WebSocket ping flood that never reads its pongs is closed, on any of uvicorn's protocols.
- Numbers JSON cannot hold (NaN, Infinity, 1e309) are refused on every HTTP route.
- Redirects are relative, whatever the Host header; every reply says ``nosniff`` and has a CSP.
- Session ids stay out of the access log, and an optional owner token guards each session.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from websockets.frames import Frame, Opcode

from chess_env.serving.app import create_chess_app

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address

PENDING_LIMIT = 64 * 1024
PINGS_PER_WRITE = 500
MOST_PINGS = 200_000  # 26 MB of pings: far past the limit and what the kernel buffers
PING = Frame(Opcode.PING, b"p" * 125).serialize(mask=True)  # the largest a control frame may be


def open_websocket(address: str, path: str) -> socket.socket:
    """A raw WebSocket on ``path`` that reads as little as the kernel lets it: the handshake's
    reply, then nothing."""
    host, port = address.split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: it sticks
    sock.settimeout(30)
    sock.connect((host, int(port)))
    sock.sendall(
        f"GET {path} HTTP/1.1\r\nHost: {address}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(1)  # byte by byte: leave any frame after the reply unread
        assert chunk, "the server closed the handshake"
        reply += chunk
    assert reply.startswith(b"HTTP/1.1 101 "), reply
    return sock


def flood_with_pings(sock: socket.socket) -> int:
    """Send pings, never reading a pong, until the server drops the connection; the pings
    sent (``MOST_PINGS`` if it never did)."""
    batch = PING * PINGS_PER_WRITE
    for sent in range(0, MOST_PINGS, PINGS_PER_WRITE):
        try:
            sock.sendall(batch)
        except (BrokenPipeError, ConnectionResetError):
            return sent
    return MOST_PINGS


def wait_until(condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` holds within 10 s (a bound against hanging, not a measure)."""
    deadline = time.monotonic() + 10
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- a ping flood: control frames are bounded too ----------------------------------------------


@pytest.mark.parametrize("ws", ["auto", "websockets-sansio", "wsproto"])
def test_a_ping_flood_that_never_reads_is_closed_and_frees_its_session(ws: str) -> None:
    app = create_chess_app()
    store = app.state.env_service.store
    with live_address(app, ws=ws, max_ws_pending_bytes=PENDING_LIMIT) as address:
        sock = open_websocket(address, "/ws")
        with sock:
            assert wait_until(lambda: len(store) == 1)
            assert flood_with_pings(sock) < MOST_PINGS
        assert wait_until(lambda: len(store) == 0)  # the session went with the connection
        with httpx.Client() as http:  # and the server serves on
            assert http.post(f"http://{address}/reset", json={}).status_code == 200


def test_a_spectator_s_ping_flood_is_closed_too() -> None:
    app = create_chess_app(service=True)
    game = {"white": {"player": "remote", "name": "Me"}, "black": {"player": "random", "name": "R"}}
    with live_address(app, max_ws_pending_bytes=PENDING_LIMIT) as address:
        created = httpx.post(f"http://{address}/service/games", json=game)
        assert created.status_code == 201, created.text
        game_id = created.json()["game"]["game_id"]
        with open_websocket(address, f"/service/games/{game_id}/events") as sock:
            assert flood_with_pings(sock) < MOST_PINGS
        assert httpx.get(f"http://{address}/service/games/{game_id}").status_code == 200


def test_a_client_that_reads_its_pongs_keeps_its_connection() -> None:
    with live_address(create_chess_app(), max_ws_pending_bytes=PENDING_LIMIT) as address:
        sock = open_websocket(address, "/ws")
        with sock:
            for _ in range(20):  # each batch's pongs (63.5 KB) are within the limit, and read
                sock.sendall(PING * PINGS_PER_WRITE)
                pongs = (len(PING) - 4) * PINGS_PER_WRITE  # a pong: the ping without its mask
                received = 0
                while received < pongs:
                    chunk = sock.recv(65536)
                    assert chunk, "the server closed a connection that read its pongs"
                    received += len(chunk)
