"""``benchmarks.polling_client``: the benchmark's polling WebSocket client says what the blocking
one says, and fails as clearly (refusals, a closed connection, no reply, a refused handshake)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra: pip install -e .[server]")

from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from benchmarks import polling_client
from benchmarks.polling_client import PollingConnection
from benchmarks.server_throughput import live_server
from chess_env.server import create_chess_app


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with live_server(create_chess_app, same_process=True) as served:
        yield served


def exchange(connection: Any, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    connection.send(json.dumps({"type": kind, "data": data}))
    frame: dict[str, Any] = json.loads(connection.recv())
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


def test_it_sees_what_the_blocking_client_sees(address: str) -> None:
    url = f"ws://{address}/ws"
    with PollingConnection(url) as polling, connect(url, compression=None) as blocking:
        theirs, ours = game(blocking, 5, 40), game(polling, 5, 40)
    assert [without_ids(f) for f in ours] == [without_ids(f) for f in theirs]
    assert ours[-2]["type"] == "error" and "cannot move to a1" in ours[-2]["data"]["message"]
    assert ours[-1]["data"]["step_count"] == len(ours) - 3  # the refused move did not count


def test_a_reply_read_in_many_pieces_arrives_whole(
    address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(polling_client, "READ_SIZE", 7)
    with PollingConnection(f"ws://{address}/ws") as connection:
        frame = exchange(connection, "reset", {"seed": 1, "include_tensor": True})
    assert len(frame["data"]["observation"]["board_tensor"]) == 8


def test_a_closed_connection_is_an_error_not_a_hang(address: str) -> None:
    connection = PollingConnection(f"ws://{address}/ws", timeout=10)
    connection.send(json.dumps({"type": "close"}))
    with pytest.raises(ConnectionError, match="closed the connection"):
        connection.recv()
    connection.close()


def test_no_reply_times_out(address: str) -> None:
    notification = {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "notifications/x"}}
    with PollingConnection(f"ws://{address}/ws", timeout=0.3) as connection:
        connection.send(json.dumps(notification))  # a JSON-RPC notification gets no answer
        with pytest.raises(TimeoutError, match=r"no reply within 0\.3 s"):
            connection.recv()


def test_a_refused_handshake_and_tls_are_refused(address: str) -> None:
    with pytest.raises(InvalidStatus, match=r"403|404"):
        PollingConnection(f"ws://{address}/no-such-socket")
    with pytest.raises(ValueError, match="plain ws:// only"):
        PollingConnection("wss://127.0.0.1:1/ws")
