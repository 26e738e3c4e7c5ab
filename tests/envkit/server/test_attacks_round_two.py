"""Attacks on a server hosted for others, second round: each reproduced at a small scale and
refused, on every server that ``envkit.server`` builds.

- A WebSocket ping flood that never reads its pongs is closed, on any of uvicorn's protocols.
- Numbers JSON cannot hold (NaN, Infinity, 1e309) are refused on every HTTP route.
- Redirects are relative, whatever the Host header; every reply says ``nosniff`` and has a CSP.
- Session ids stay out of the access log, and an optional owner token guards each session.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.frames import Frame, Opcode

from chess_env.serving.app import create_chess_app

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address, live_process, rss_kib

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


def test_ping_floods_on_the_served_default_leave_the_memory_flat() -> None:
    with live_process("chess_env") as (server, address):
        with open_websocket(address, "/ws") as warm_up:  # what serving a socket loads
            warm_up.sendall(PING)
        before = rss_kib(server.pid)
        sockets = [open_websocket(address, "/ws") for _ in range(3)]
        for sock in sockets:  # each until it is dropped (unbounded, 26 MB of pongs were held)
            with sock:
                assert flood_with_pings(sock) < MOST_PINGS
        assert rss_kib(server.pid) - before < 8 * 1024, (before, rss_kib(server.pid))


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


# -- numbers JSON cannot hold: refused on every route, naming the field ------------------------

NON_FINITE = ["1e309", "-1e309", "Infinity", "-Infinity", "NaN"]
JSON = {"Content-Type": "application/json"}


def with_number(template: str, number: str) -> str:
    """``template``, a JSON text but for its ``@``, with ``number`` written there."""
    return template.replace("@", number)


def refused_naming(reply: httpx.Response, field: str, number: str) -> None:
    """``reply`` is a 400 INVALID_JSON whose detail names ``field`` and the number."""
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert body["code"] == "INVALID_JSON"
    assert body["detail"].startswith(f"{field}: {number} ")
    assert [".".join(map(str, error["loc"])) for error in body["errors"]] == [field]


@pytest.fixture(scope="module")
def chess_service() -> TestClient:
    return TestClient(create_chess_app(service=True, listing="all"))


@pytest.mark.parametrize("number", NON_FINITE)
def test_a_game_with_a_non_finite_timeout_is_not_created(
    chess_service: TestClient, number: str
) -> None:
    white = with_number('{"player": "random", "name": "A", "timeout_seconds": @}', number)
    body = f'{{"white": {white}, "black": {{"player": "random", "name": "B"}}}}'
    before = chess_service.get("/service/games").json()
    reply = chess_service.post("/service/games", content=body, headers=JSON)
    refused_naming(reply, "body.white.timeout_seconds", number)
    assert chess_service.get("/service/games").json() == before


@pytest.mark.parametrize("number", NON_FINITE)
def test_non_finite_numbers_are_refused_on_reset_and_step(number: str) -> None:
    client = TestClient(create_chess_app())
    store = client.app.state.env_service.store
    reset_body = with_number('{"seed": 1, "x": [0, @]}', number)
    reset = client.post("/reset", content=reset_body, headers=JSON)
    refused_naming(reset, "body.x.1", number)
    assert len(store) == 0
    session = client.post("/reset", json={"seed": 1}).json()["session_id"]
    step = with_number('{"action": {"move": "e4"}, "timeout_s": @, "session_id": "', number)
    step += f'{session}"}}'
    refused_naming(client.post("/step", content=step, headers=JSON), "body.timeout_s", number)
    assert client.get("/state", params={"session_id": session}).json()["step_count"] == 0


@pytest.mark.parametrize("number", NON_FINITE)
def test_non_finite_numbers_are_refused_by_the_viewer_and_the_world_server(number: str) -> None:
    from multiagent.server import create_world_app

    viewer = TestClient(create_chess_app(service=True))
    replay = with_number('{"text": "1. e4 *", "format": "pgn", "count": @}', number)
    reply = viewer.post("/viewer/api/replay", content=replay, headers=JSON)
    refused_naming(reply, "body.count", number)
    world = TestClient(create_world_app("forage"))
    reply = world.post("/reset", content=with_number('{"seed": @}', number), headers=JSON)
    refused_naming(reply, "body.seed", number)
    assert len(world.app.state.env_service.store) == 0


@pytest.mark.parametrize("number", NON_FINITE)
def test_non_finite_numbers_are_refused_over_websocket_and_mcp(number: str) -> None:
    client = TestClient(create_chess_app())
    with client.websocket_connect("/ws") as ws:
        ws.send_text(with_number('{"type": "step", "data": {"move": "e4", "x": @}}', number))
        refused = ws.receive_json()
    assert refused["data"]["code"] == "INVALID_JSON"
    assert refused["data"]["message"].startswith(f"data.x: {number} ")
    call = with_number('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": @}}', number)
    reply = client.post("/mcp", content=call, headers=JSON)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == -32700
    assert f"params.x: {number} " in reply.json()["error"]["message"]


def test_agent_settings_are_finite_from_python_too() -> None:
    from pydantic import ValidationError

    from chess_env.core.game import AgentConfig
    from chess_env.serving.service.bodies import AgentSpec

    for number in (float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="timeout_seconds"):
            AgentSpec(player="random", name="A", timeout_seconds=number)
        with pytest.raises(ValidationError, match="timeout_seconds"):
            AgentConfig(
                agent_id="white",
                name="A",
                personality="p",
                model_name="m",
                system_prompt="",
                timeout_seconds=number,
            )


# -- replies: relative redirects, nosniff and a Content-Security-Policy ------------------------

EVIL = {"Host": "evil.example"}
API_POLICY = "default-src 'none'; frame-ancestors 'none'"


def every_server() -> list[tuple[str, FastAPI]]:
    from multiagent.server import create_world_app

    return [
        ("chess", create_chess_app()),
        ("chess --service", create_chess_app(service=True, listing="all")),
        ("multiagent", create_world_app("forage")),
    ]


@pytest.fixture(scope="module", params=every_server(), ids=lambda named: named[0])
def server(request: pytest.FixtureRequest) -> TestClient:
    return TestClient(request.param[1], raise_server_exceptions=False)


@pytest.fixture(scope="module")
def served_game(chess_service: TestClient) -> str:
    game = {"white": {"player": "remote", "name": "Me"}, "black": {"player": "random", "name": "R"}}
    created = chess_service.post("/service/games", json=game)
    assert created.status_code == 201, created.text
    return str(created.json()["game"]["game_id"])


def redirect(client: TestClient, path: str) -> str:
    """Where a request for ``path``, sent to the server under another host's name, goes."""
    reply = client.get(path, headers=EVIL, follow_redirects=False)
    assert reply.status_code in (301, 302, 303, 307, 308), (path, reply.status_code)
    return reply.headers["location"]


def test_slash_redirects_are_relative_whatever_the_host(server: TestClient) -> None:
    assert redirect(server, "/health/") == "/health"
    assert redirect(server, "/metadata/?x=1") == "/metadata?x=1"


def test_the_viewer_and_service_redirects_are_relative(chess_service: TestClient) -> None:
    assert redirect(chess_service, "/viewer") == "/viewer/"
    assert redirect(chess_service, "/service/games/") == "/service/games"


def test_api_replies_say_nosniff_and_allow_nothing(server: TestClient) -> None:
    replies = [
        server.get("/health"),
        server.get("/metadata", headers=EVIL),
        server.get("/nowhere"),  # 404
        server.delete("/health"),  # 405
        server.post("/reset", content=b"x", headers={"Content-Type": "text/plain"}),  # 415
        server.post("/reset", content=b"{" * 70_000, headers=JSON),  # 413
        server.get("/health/", follow_redirects=False),  # 307
        server.get("/openapi.json"),
    ]
    for reply in replies:
        assert reply.headers["x-content-type-options"] == "nosniff", reply.request.url
        assert reply.headers["content-security-policy"] == API_POLICY, reply.request.url


def test_the_service_s_replies_and_pgn_have_the_api_policy(
    chess_service: TestClient, served_game: str
) -> None:
    for path in ("/service/games", f"/service/games/{served_game}", "/service/openapi.json"):
        reply = chess_service.get(path)
        assert reply.status_code == 200, (path, reply.text)
        assert reply.headers["x-content-type-options"] == "nosniff", path
        assert reply.headers["content-security-policy"] == API_POLICY, path
    pgn = chess_service.get(f"/service/games/{served_game}/pgn")
    assert pgn.status_code == 200 and pgn.text.startswith("[Event ")
    assert pgn.headers["x-content-type-options"] == "nosniff"
    assert pgn.headers["content-security-policy"] == API_POLICY


def test_the_viewer_keeps_its_own_policy(chess_service: TestClient) -> None:
    from chess_env.serving.viewer.security import content_security_policy

    for path in ("/viewer/", "/viewer/index.js", "/viewer/api/archive"):
        reply = chess_service.get(path)
        assert reply.status_code == 200, (path, reply.text)
        assert reply.headers["content-security-policy"] == content_security_policy("testserver")
        assert reply.headers["x-content-type-options"] == "nosniff"


def csp_allows(policy: str, directive: str, source: str) -> bool:
    """Whether ``policy`` lets a page load ``source`` (a URL, or ``'sha256-...'`` for an
    inline script) under ``directive``: an exact match, a path prefix ending in ``/``, or a
    host source; ``default-src`` when the directive is absent."""
    directives = dict(
        (name, values) for name, *values in (part.split() for part in policy.split(";"))
    )
    allowed = directives.get(directive, directives.get("default-src", []))
    return any(
        source == expression
        or (expression.endswith("/") and source.startswith(expression))
        or ("/" not in expression.split("://", 1)[-1] and source.startswith(expression + "/"))
        for expression in allowed
    )


@pytest.mark.parametrize("docs", ["/docs", "/service/docs", "/docs/oauth2-redirect", "/redoc"])
def test_the_docs_pages_may_load_what_they_need_and_nothing_else(
    chess_service: TestClient, docs: str
) -> None:
    import base64
    import hashlib
    import re

    reply = chess_service.get(docs)
    assert reply.status_code == 200
    policy = reply.headers["content-security-policy"]
    assert reply.headers["x-content-type-options"] == "nosniff"
    page = reply.text
    for src in re.findall(r'<script src="([^"]+)"', page):
        assert csp_allows(policy, "script-src", src), src
    for inline in re.findall(r"<script>(.*?)</script>", page, re.DOTALL):
        digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
        assert csp_allows(policy, "script-src", f"'sha256-{digest}'")
    for href in re.findall(r'<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"', page):
        assert csp_allows(policy, "style-src", href), href
    for href in re.findall(r'<link[^>]*type="text/css"[^>]*href="([^"]+)"', page):
        assert csp_allows(policy, "style-src", href), href
    assert csp_allows(policy, "connect-src", "'self'")  # the OpenAPI document
    assert "frame-ancestors 'none'" in policy
    assert not csp_allows(policy, "script-src", "https://cdn.jsdelivr.net/npm/evil/x.js")
    assert not csp_allows(policy, "script-src", "'unsafe-inline'")


def test_a_bug_s_500_and_an_oversized_header_s_431_carry_the_headers_too() -> None:
    from chess_env.serving.app import ChessAdapter
    from envkit.server import create_app

    class Broken(ChessAdapter):
        def state(self) -> dict[str, object]:
            raise RuntimeError("a bug")

    client = TestClient(create_app(Broken), raise_server_exceptions=False)
    session = client.post("/reset", json={}).json()["session_id"]
    reply = client.get("/state", params={"session_id": session})
    assert reply.status_code == 500
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["content-security-policy"] == API_POLICY
    with live_address(create_chess_app()) as address:
        host, port = address.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000)
            head = sock.recv(65536).split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 431 ")
    assert b"\r\nx-content-type-options: nosniff" in head
    assert b"\r\ncontent-security-policy: " + API_POLICY.encode() in head


def test_a_live_server_redirects_relatively() -> None:
    with live_address(create_chess_app(service=True)) as address:
        reply = httpx.get(f"http://{address}/viewer", headers=EVIL)
    assert reply.status_code == 307 and reply.headers["location"] == "/viewer/"


# -- session ids: out of the access log, and (optionally) of use to their owner only -----------


class Recorded(logging.Handler):
    """Every record its loggers pass on, as the log would print it."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_session_ids_stay_out_of_the_access_log() -> None:
    from websockets.sync.client import connect

    recorded = Recorded()
    loggers = [logging.getLogger(name) for name in ("uvicorn.access", "uvicorn.error")]
    with live_address(create_chess_app()) as address, httpx.Client() as http:
        for logger in loggers:  # once uvicorn has configured its logging, which drops handlers
            logger.addHandler(recorded)
        try:
            session = http.post(f"http://{address}/reset", json={}).json()["session_id"]
            assert http.get(f"http://{address}/state?session_id={session}").status_code == 200
            with connect(f"ws://{address}/ws?session_id={session}", open_timeout=10) as ws:
                ws.send('{"type": "state"}')
                assert json.loads(ws.recv(timeout=10))["type"] == "state"
        finally:
            for logger in loggers:
                logger.removeHandler(recorded)
    lines = "\n".join(recorded.lines)
    assert '"GET /state HTTP/1.1" 200' in lines and '"WebSocket /ws"' in lines, lines
    assert session not in lines


def owned_session(client: TestClient) -> tuple[str, dict[str, str]]:
    """A new session's id, and the header that proves its ownership."""
    reply = client.post("/reset", json={"seed": 1}).json()
    return reply["session_id"], {"X-Session-Token": reply["session_token"]}


def forbidden(reply: httpx.Response, token: str) -> bool:
    """Whether ``reply`` refuses a use of a session without its token, telling no secret."""
    body = reply.json()
    return (
        reply.status_code == 403
        and (body["code"], body["reason"]) == ("SESSION_ERROR", "session_token")
        and token not in reply.text
    )


@pytest.fixture
def guarded() -> TestClient:
    return TestClient(create_chess_app(session_owner_check=True))


def test_without_the_owner_check_a_session_has_no_token() -> None:
    client = TestClient(create_chess_app())
    reply = client.post("/reset", json={}).json()
    assert "session_token" not in reply
    step = {"action": {"move": "e4"}, "session_id": reply["session_id"]}
    assert client.post("/step", json=step).status_code == 200


@pytest.mark.parametrize("sent", [None, "wrong", "s" * 43])
def test_the_owner_check_refuses_http_uses_without_the_token(
    guarded: TestClient, sent: str | None
) -> None:
    session, owner = owned_session(guarded)
    token = owner["X-Session-Token"]
    other = {} if sent is None else {"X-Session-Token": sent}
    step = {"action": {"move": "e4"}, "session_id": session}
    uses: list[Callable[[dict[str, str]], httpx.Response]] = [
        lambda headers: guarded.post("/step", json=step, headers=headers),
        lambda headers: guarded.get("/state", params={"session_id": session}, headers=headers),
        lambda headers: guarded.get("/state", headers={"X-Session-Id": session, **headers}),
        lambda headers: guarded.post("/reset", json={"session_id": session}, headers=headers),
    ]
    for use in uses:
        assert forbidden(use(other), token)
    assert [use(owner).status_code for use in uses] == [200, 200, 200, 200]
    assert forbidden(guarded.delete(f"/sessions/{session}", headers=other), token)
    assert guarded.delete(f"/sessions/{session}", headers=owner).status_code == 204


def test_the_owner_check_guards_websocket_attach(guarded: TestClient) -> None:
    session, owner = owned_session(guarded)
    with guarded.websocket_connect(f"/ws?session_id={session}") as ws:
        refusal = ws.receive_json()
        assert refusal["data"]["code"] == "SESSION_ERROR"
        assert refusal["data"]["reason"] == "session_token"
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1008
    with guarded.websocket_connect(f"/ws?session_id={session}", headers=owner) as ws:
        ws.send_json({"type": "step", "data": {"move": "e4"}})
        assert ws.receive_json()["type"] == "observation"
    with guarded.websocket_connect("/ws") as ws:  # a socket's own session needs no token
        ws.send_json({"type": "reset", "data": {}})
        assert ws.receive_json()["type"] == "observation"
        ws.send_json({"type": "step", "data": {"move": "e4"}})
        assert ws.receive_json()["type"] == "observation"
        call = {"name": "move", "arguments": {"move": "d4"}}
        ws.send_json(
            {
                "type": "mcp",
                "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            }
        )
        assert ws.receive_json()["data"]["result"]["isError"] is False


def test_the_owner_check_guards_mcp_calls(guarded: TestClient) -> None:
    def rpc(method: str, params: dict[str, object], **headers: str) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = guarded.post("/mcp", json=request, headers=headers)
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    created = rpc("openenv/session/create", {"seed": 1})["result"]
    session, token = created["session_id"], created["session_token"]
    call = {"name": "move", "arguments": {"move": "e4"}, "session_id": session}
    refused = rpc("tools/call", call)["error"]
    assert refused["data"]["reason"] == "session_token" and token not in json.dumps(refused)
    assert rpc("tools/call", call, **{"X-Session-Token": token})["result"]["isError"] is False
    in_params = {**call, "arguments": {"move": "e5"}, "session_token": token}
    assert rpc("tools/call", in_params)["result"]["isError"] is False
    assert rpc("openenv/session/close", {"session_id": session})["error"]["data"]["reason"] == (
        "session_token"
    )
    closing = {"session_id": session, "session_token": token}
    assert rpc("openenv/session/close", closing)["result"]["closed"] is True
