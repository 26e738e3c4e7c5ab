"""The chess server under uvicorn on 127.0.0.1: whole games over a real WebSocket and real HTTP."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from chess_env.serving.app import create_chess_app
from envkit.server import MAX_MESSAGE_BYTES, make_server

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with live_address(create_chess_app()) as address:
        yield address


def finish(result: dict[str, Any], plies: int) -> None:
    """A finished game: a result, or truncation at the ply cap."""
    observation = result["observation"]
    assert result["done"] is True and result["reward"] in (-1.0, 0.0, 1.0)
    truncated = result.get("metadata", {}).get("truncated", False)
    assert observation["result"] != "*" or (truncated and plies >= 512)
    assert observation["legal_moves"] == []


def test_a_whole_game_over_a_websocket(base_url: str) -> None:
    rng = random.Random(0)
    with connect(f"ws://{base_url}/ws", max_size=None) as ws:  # it offers compression
        assert "Sec-WebSocket-Extensions" not in ws.response.headers  # make_server declines it

        def ask(message: dict[str, Any]) -> dict[str, Any]:
            ws.send(json.dumps(message))
            return json.loads(ws.recv(timeout=10))

        reply = ask({"type": "reset", "data": {"seed": 0, "opponent": "greedy"}})
        steps = 0
        while not reply["data"]["done"]:
            move = rng.choice(reply["data"]["observation"]["legal_moves"])
            reply = ask({"type": "step", "data": {"move": move}})
            assert reply["type"] == "observation", reply
            steps += 1
        finish(reply["data"], reply["data"]["observation"]["ply"])
        assert ask({"type": "state"})["data"]["step_count"] == steps
        over = ask({"type": "step", "data": {"move": "e4"}})
        assert over["data"]["code"] == "EXECUTION_ERROR"
        ws.send("x" * (MAX_MESSAGE_BYTES + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_make_server_takes_the_apps_message_limit_and_uvicorn_options() -> None:
    server = make_server(create_chess_app(max_message_bytes=1000), port=0, log_level="warning")
    assert server.config.ws_max_size == 1000 and server.config.log_level == "warning"
    assert server.config.ws_per_message_deflate is False
    assert make_server(FastAPI()).config.ws_max_size == MAX_MESSAGE_BYTES  # not our app


def test_a_whole_game_over_http(base_url: str) -> None:
    rng = random.Random(1)
    with httpx.Client(base_url=f"http://{base_url}", timeout=10) as http:
        assert http.get("/health").json() == {"status": "healthy"}
        reply = http.post("/reset", json={"seed": 1, "agent_color": "black"}).json()
        session = {"X-Session-Id": reply["session_id"]}
        while not reply["done"]:
            move = rng.choice(reply["observation"]["legal_moves"])
            reply = http.post("/step", json={"action": {"move": move}}, headers=session).json()
        finish(reply, reply["observation"]["ply"])
        assert http.get("/state", headers=session).json()["done"] is True
        too_big = http.post("/step", content=b" " * (MAX_MESSAGE_BYTES + 1), headers=session)
        assert too_big.status_code == 413
        assert http.delete(f"/sessions/{reply['session_id']}").status_code == 204


def test_python_m_chess_env_serve_plays_a_game_and_stops_cleanly() -> None:
    """The server as users run it: its event loop in the main thread, so it busy-polls."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "chess_env", "serve", "--port", str(port), "--rate-limit", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)
        assert health.json() == {"status": "healthy"}
        rng = random.Random(5)
        with connect(f"ws://127.0.0.1:{port}/ws", compression=None) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 5}}))
            reply = json.loads(ws.recv())["data"]
            while not reply["done"]:
                move = rng.choice(reply["observation"]["legal_moves"])
                ws.send(json.dumps({"type": "step", "data": {"move": move}}))
                reply = json.loads(ws.recv())["data"]
        finish(reply, reply["observation"]["ply"])
    finally:
        server.terminate()
        server.wait(timeout=10)
    errors = server.stderr.read().decode()  # type: ignore[union-attr]
    assert "Traceback" not in errors and "destroyed" not in errors, errors
