"""Attacks on a live server on 127.0.0.1 (a real uvicorn: the transport matters), each followed
by its refusal and by proof that nothing else changed.

A second client is a second source address on the loopback network (127.0.0.2): the server
keys its rate limit and session cap on the connection's peer address.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from chess_env.serving.app import create_chess_app

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address, live_process, rss_kib

OTHER = "127.0.0.2"  # a second client: the whole of 127.0.0.0/8 is loopback on Linux
MIB = 1024


def client(source: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10)


def socket_from(address: str, source: str = "127.0.0.1") -> ClientConnection:
    return connect(f"ws://{address}/ws", source_address=(source, 0), open_timeout=10)


def raw_socket(address: str) -> socket.socket:
    host, port = address.split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or resets) the connection."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


# -- proxies: X-Forwarded-For is believed only from the proxies named ------------------------


def test_a_rotating_x_forwarded_for_does_not_renew_the_budget() -> None:
    with live_address(create_chess_app(rate_limit=20)) as address, client() as http:
        codes = [
            http.get(f"http://{address}/metadata", headers={"X-Forwarded-For": f"10.0.0.{n}"})
            for n in range(40)
        ]
        assert [reply.status_code for reply in codes] == [200] * 20 + [429] * 20
        assert codes[-1].json()["code"] == "RATE_LIMITED"
        with client(OTHER) as other:  # the budget of another client is untouched
            assert other.get(f"http://{address}/metadata").status_code == 200


def test_a_named_proxy_s_x_forwarded_for_names_the_client() -> None:
    app = create_chess_app(rate_limit=2, forwarded_allow_ips="127.0.0.1")
    with live_address(app) as address, client() as http:
        for n in range(10):  # each forwarded client has its own budget
            forwarded = {"X-Forwarded-For": f"10.0.0.{n}"}
            assert http.get(f"http://{address}/metadata", headers=forwarded).status_code == 200
        same = {"X-Forwarded-For": "10.0.0.0"}
        assert http.get(f"http://{address}/metadata", headers=same).status_code == 200
        assert http.get(f"http://{address}/metadata", headers=same).status_code == 429
        with client(OTHER) as other:  # not a named proxy: its header is ignored
            rotated = [
                other.get(f"http://{address}/metadata", headers={"X-Forwarded-For": f"10.1.0.{n}"})
                for n in range(3)
            ]
            assert [reply.status_code for reply in rotated] == [200, 200, 429]


# -- WebSocket handshakes count towards the rate limit ------------------------------------------


def test_handshakes_over_the_budget_are_refused_before_a_session_opens() -> None:
    app = create_chess_app(rate_limit=5)
    store = app.state.env_service.store
    with live_address(app) as address, ExitStack() as opened:
        for _ in range(5):
            opened.enter_context(socket_from(address))
        for _ in range(10):
            with pytest.raises(InvalidStatus) as refused:
                socket_from(address)
            assert refused.value.response.status_code == 429
            assert "Retry-After" in refused.value.response.headers
            assert json.loads(refused.value.response.body)["code"] == "RATE_LIMITED"
        assert len(store) == 5  # no session for a refused handshake
        with socket_from(address, OTHER) as other:  # another client plays on
            other.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(other.recv(timeout=10))["type"] == "observation"


# -- one client cannot take every session slot ------------------------------------------------


def test_one_client_s_session_flood_stops_at_its_cap() -> None:
    app = create_chess_app(max_sessions=8, max_sessions_per_client=4)
    store = app.state.env_service.store
    with live_address(app) as address, client() as http:
        replies = [http.post(f"http://{address}/reset", json={}) for _ in range(20)]
        assert [reply.status_code for reply in replies] == [200] * 4 + [503] * 16
        refusal = replies[-1].json()
        assert (refusal["code"], refusal["reason"]) == ("CAPACITY_REACHED", "client_session_limit")
        assert "holds 4 sessions" in refusal["detail"]
        with socket_from(address) as ws:  # a WebSocket of the same client is refused too
            frame = json.loads(ws.recv(timeout=10))
            assert frame["data"]["reason"] == "client_session_limit"
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        with client(OTHER) as other, socket_from(address, OTHER) as ws:  # others still play
            assert other.post(f"http://{address}/reset", json={}).status_code == 200
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "observation"
            assert len(store) == 6
        first = replies[0].json()["session_id"]  # the flood's sessions still work ...
        step = {"action": {"move": "e2e4"}, "session_id": first}
        assert http.post(f"http://{address}/step", json=step).status_code == 200
        assert http.delete(f"http://{address}/sessions/{first}").status_code == 204
        assert http.post(f"http://{address}/reset", json={}).status_code == 200  # ... and free


# -- request headers: a size limit and a deadline ---------------------------------------------


def test_oversized_headers_get_431_and_cost_no_memory() -> None:
    with live_process("chess_env") as (server, address):
        with client() as http:  # warm up: the first requests load what serving needs
            for _ in range(20):
                http.post(f"http://{address}/reset", json={}).raise_for_status()
        before = rss_kib(server.pid)
        sockets = [raw_socket(address) for _ in range(10)]
        for sock in sockets:  # 1 MB of one header, never finished
            sock.sendall(b"GET /metadata HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000)
        replies = [read_all(sock) for sock in sockets]
        after = rss_kib(server.pid)
        for sock in sockets:
            sock.close()
        assert all(reply.startswith(b"HTTP/1.1 431 ") for reply in replies), replies[0][:100]
        assert b'"code": "VALIDATION_ERROR"' in replies[0]
        assert after - before < 4 * MIB, (before, after)  # 10 MB were sent
        assert httpx.get(f"http://{address}/metadata").status_code == 200


def test_a_header_within_the_limit_is_served() -> None:
    with live_address(create_chess_app()) as address:
        reply = httpx.get(f"http://{address}/metadata", headers={"X-Pad": "a" * 20_000})
        assert reply.status_code == 200


def test_slowloris_connections_are_closed_at_the_header_deadline() -> None:
    timeout = 2.0
    with live_address(create_chess_app(), header_timeout=timeout) as address:
        idle = [raw_socket(address) for _ in range(20)]  # nothing sent at all
        slow = [raw_socket(address) for _ in range(20)]
        for sock in slow:
            sock.sendall(b"GET /metadata HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        for _ in range(3):  # a header byte now and then does not renew the deadline
            time.sleep(timeout / 4)
            for sock in slow:
                sock.sendall(b"X")
        with client() as http:  # meanwhile others are served, kept alive past the deadline
            for _ in range(3):
                assert http.get(f"http://{address}/metadata").status_code == 200
                time.sleep(timeout / 2)
        for sock in idle + slow:
            sock.settimeout(timeout + 5)
            assert read_all(sock) == b""  # closed, without a reply
            sock.close()
        assert time.monotonic() - started < timeout + 5 + 5


def test_websockets_still_upgrade_through_the_header_limits() -> None:
    app = create_chess_app()
    with live_address(app, header_timeout=1.0) as address, socket_from(address) as ws:
        time.sleep(1.5)  # past the header deadline: a WebSocket is not an unfinished header
        ws.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"


# -- memory: sessions opened and closed leave nothing behind ----------------------------------


@pytest.fixture
def served_chess() -> Iterator[tuple[int, str]]:
    with live_process("chess_env") as (server, address):
        yield server.pid, address


def open_and_close(http: httpx.Client, address: str, count: int) -> None:
    for _ in range(count):
        session = http.post(f"http://{address}/reset", json={}).json()["session_id"]
        assert http.delete(f"http://{address}/sessions/{session}").status_code == 204


def test_two_thousand_sessions_leave_the_memory_flat(served_chess: tuple[int, str]) -> None:
    pid, address = served_chess
    with client() as http:
        open_and_close(http, address, 300)  # warm-up: caches, allocator arenas
        before = rss_kib(pid)
        open_and_close(http, address, 2000)
        after = rss_kib(pid)
    assert after - before < 4 * MIB, (before, after)
