"""``envkit.client.sync_socket.SyncWebSocket`` against real servers on 127.0.0.1: the chess server,
and websockets' own server where a test needs what uvicorn does not do (fragmented messages,
pings every few milliseconds, TLS)."""

from __future__ import annotations

import gc
import json
import math
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra: pip install -e .[server]")

from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.sync.server import Server, ServerConnection, serve

from chess_env.serving.app import create_chess_app
from envkit.client import sync_socket
from envkit.client.sync_socket import SyncWebSocket

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from live_server import live_address


@pytest.fixture(scope="module")
def chess_url() -> Iterator[str]:
    with live_address(create_chess_app()) as address:
        yield f"ws://{address}/ws"


@contextmanager
def websockets_server(
    handler: Callable[[ServerConnection], None], **options: Any
) -> Iterator[tuple[Server, str]]:
    """websockets' sync server on a free port, in a thread; yields it and its ``ws://`` URL."""
    server = serve(handler, "127.0.0.1", 0, compression=None, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "wss" if options.get("ssl") else "ws"
    try:
        yield server, f"{scheme}://127.0.0.1:{server.socket.getsockname()[1]}/"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def echo(connection: ServerConnection) -> None:
    """Echoes each message; ``frag:a,b,c`` comes back as one message sent in three fragments,
    ``slow:<seconds>`` after that long, ``close:<code>`` is a close with that code."""
    for message in connection:
        if isinstance(message, str) and ":" in message:
            verb, _, argument = message.partition(":")
            if verb == "frag":
                connection.send(argument.split(","))
                continue
            if verb == "slow":
                time.sleep(float(argument))
            elif verb == "close":
                connection.close(int(argument), "as asked")
                return
        connection.send(message)


def exchange(connection: Any, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    connection.send(json.dumps({"type": kind, "data": data}))
    frame: dict[str, Any] = json.loads(connection.recv(10))  # both clients take a timeout
    return frame


def game(connection: Any, seed: int, plies: int) -> list[dict[str, Any]]:
    """Every frame of a game that plays the ``ply % n``-th legal move, then one refused move."""
    frames = [exchange(connection, "reset", {"seed": seed})]
    for ply in range(plies):
        legal = frames[-1]["data"]["observation"]["legal_moves"]
        frames.append(exchange(connection, "step", {"move": legal[ply % len(legal)]}))
        if frames[-1]["data"]["done"]:
            break
    frames.append(exchange(connection, "step", {"move": "a1a1"}))
    frames.append(exchange(connection, "state", {}))
    return frames


def without_ids(frame: dict[str, Any]) -> dict[str, Any]:
    if frame["type"] == "state":
        return {**frame, "data": {**frame["data"], "episode_id": None}}
    return frame


def pinger_threads(url: str) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == f"ws-pings {url}"]


@pytest.mark.parametrize("spin", [0.0, sync_socket.SPIN_S, math.inf])
def test_it_sees_what_websockets_own_client_sees(chess_url: str, spin: float) -> None:
    with connect(chess_url, compression=None) as blocking:
        theirs = game(blocking, 5, 40)
    ours_connection = SyncWebSocket(chess_url, spin=spin)
    try:
        ours = game(ours_connection, 5, 40)
    finally:
        ours_connection.close()
    assert [without_ids(f) for f in ours] == [without_ids(f) for f in theirs]
    assert ours[-2]["type"] == "error" and "cannot move to a1" in ours[-2]["data"]["message"]
    assert ours[-1]["data"]["step_count"] == len(ours) - 3  # the refused move did not count


def test_a_reply_read_in_many_pieces_arrives_whole(
    chess_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync_socket, "READ_SIZE", 7)
    connection = SyncWebSocket(chess_url)
    try:
        frame = exchange(connection, "reset", {"seed": 1, "include_tensor": True})
    finally:
        connection.close()
    assert len(frame["data"]["observation"]["board_tensor"]) == 8


def test_fragmented_and_binary_messages_arrive_whole() -> None:
    with websockets_server(echo) as (_, url):
        connection = SyncWebSocket(url)
        connection.send("frag:ab,cd,ef")
        assert connection.recv(5) == "abcdef"
        connection.send("frag:solo")
        assert connection.recv(5) == "solo"
        connection.close()
        with connect(url) as peer:  # binary replies come back as bytes: check the echo server
            peer.send(b"\x00\xff")
            assert peer.recv() == b"\x00\xff"


def test_a_reply_slower_than_the_spin_window_is_waited_for_and_a_late_one_kept() -> None:
    with websockets_server(echo) as (_, url):
        connection = SyncWebSocket(url, spin=1e-4)
        connection.send("slow:0.05")
        assert connection.recv(5) == "slow:0.05"
        connection.send("slow:0.3")
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="timed out"):
            connection.recv(0.05)
        assert time.monotonic() - started < 0.25
        assert connection.recv(5) == "slow:0.3"  # it came later: nothing was lost
        connection.close()


@pytest.mark.parametrize(("keepalive", "survives"), [(0.02, True), (60.0, False)])
def test_pings_between_calls_are_answered_by_the_pinger_thread(
    keepalive: float, survives: bool
) -> None:
    """The server pings every 50 ms and closes after 100 ms without a pong; the caller is away
    for 0.6 s. Without a pinger (keepalive 60 s) the connection is lost."""
    with websockets_server(echo, ping_interval=0.05, ping_timeout=0.1) as (_, url):
        connection = SyncWebSocket(url, keepalive=keepalive)
        connection.send("first")
        assert connection.recv(5) == "first"
        time.sleep(0.6)
        if survives:
            connection.send("after a while")
            assert connection.recv(5) == "after a while"
        else:
            with pytest.raises(ConnectionClosed) as closed:
                connection.send("after a while")
                connection.recv(5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
        connection.close()


def test_the_server_closing_is_connection_closed_with_its_code() -> None:
    with websockets_server(echo) as (_, url):
        connection = SyncWebSocket(url)
        connection.send("close:4001")
        with pytest.raises(ConnectionClosed) as on_recv:
            connection.recv(5)
        assert on_recv.value.rcvd is not None and on_recv.value.rcvd.code == 4001
        with pytest.raises(ConnectionClosed) as on_send:
            connection.send("anyone there?")
        assert on_send.value.rcvd is not None and on_send.value.rcvd.code == 4001
        connection.close()


def test_close_is_a_clean_handshake_is_idempotent_and_stops_the_pinger() -> None:
    codes: list[int | None] = []

    def record(connection: ServerConnection) -> None:
        for _ in connection:
            pass
        codes.append(connection.close_code)

    with websockets_server(record) as (_, url):
        connection = SyncWebSocket(url, keepalive=0.01)
        assert len(pinger_threads(url)) == 1
        connection.close()
        connection.close()
        deadline = time.monotonic() + 5
        while (pinger_threads(url) or not codes) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert codes == [1000] and pinger_threads(url) == []


def test_a_connection_nobody_closed_still_stops_its_pinger() -> None:
    with websockets_server(echo) as (_, url):
        SyncWebSocket(url, keepalive=0.01)  # dropped at once
        gc.collect()
        deadline = time.monotonic() + 5
        while pinger_threads(url) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pinger_threads(url) == []


def test_handshake_failures_are_websockets_and_socket_errors(chess_url: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        SyncWebSocket(chess_url.removesuffix("/ws") + "/no-such-socket")
    assert refused.value.response.status_code in (403, 404)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="timed out"):
            SyncWebSocket(f"ws://127.0.0.1:{silent.getsockname()[1]}/ws", timeout=0.2)
        assert time.monotonic() - started < 2
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with pytest.raises(ConnectionRefusedError):
        SyncWebSocket(f"ws://127.0.0.1:{port}/ws")


def test_tls_with_a_trusted_authority_and_not_without() -> None:
    trustme = pytest.importorskip("trustme", reason="the dev extra: pip install -e .[dev]")
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    with websockets_server(echo, ssl=server_context) as (_, url):
        connection = SyncWebSocket(url, ssl_context=client_context)
        connection.send("frag:over,tls")
        assert connection.recv(5) == "overtls"
        connection.close()
        with pytest.raises(ssl.SSLCertVerificationError):
            SyncWebSocket(url)  # the system's authorities do not know this one


@pytest.mark.parametrize("size", [2_000, 8_000_000])
def test_a_message_too_big_for_the_server_is_connection_closed_1009(size: int) -> None:
    """The server closes over the frame's header, while a big one is still being written."""
    with websockets_server(echo, max_size=1_000) as (_, url):
        connection = SyncWebSocket(url)
        with pytest.raises(ConnectionClosed) as closed:
            connection.send("x" * size)
            connection.recv(5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        connection.close()
