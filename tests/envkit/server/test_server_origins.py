"""Cross-site refusals against a live server on 127.0.0.1: the attack, the refusal, and proof
that nothing changed (``envkit.server.origins``).

A page on another origin may open a WebSocket to 127.0.0.1 and POST to it without a preflight
when the body is ``text/plain``; a server without a token would play for it.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess.pgn
import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from chess_env.core.pgn import tag_value
from chess_env.serving.app import create_chess_app
from envkit.server.origins import normalize_origin

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_address, live_command

EVIL = "http://evil.example"
VIEWER = "http://viewer.example:8080"
MCP_LIST = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[FastAPI, str]]:
    app = create_chess_app(service=True, allow_origins=[VIEWER])
    with live_address(app) as address:
        yield app, address


def sessions(app: FastAPI) -> int:
    return len(app.state.env_service.store)


def open_session(address: str) -> str:
    reply = httpx.post(f"http://{address}/reset", json={"seed": 1})
    assert reply.status_code == 200, reply.text
    return reply.json()["session_id"]


def step_count(address: str, session: str) -> int:
    reply = httpx.get(f"http://{address}/state", params={"session_id": session})
    return reply.json()["step_count"]


def test_a_websocket_from_another_origin_is_refused_before_it_opens(
    served: tuple[FastAPI, str],
) -> None:
    app, address = served
    before = sessions(app)
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://{address}/ws", origin=EVIL).close()
    assert refused.value.response.status_code == 403
    assert b"FORBIDDEN_ORIGIN" in refused.value.response.body
    with pytest.raises(InvalidStatus):
        connect(f"ws://{address}/ws", origin="null").close()  # a sandboxed frame, a file: page
    assert sessions(app) == before


@pytest.mark.parametrize("origin", [None, "own", VIEWER])
def test_websockets_without_an_origin_from_the_server_s_own_or_an_allowed_one_open(
    served: tuple[FastAPI, str], origin: str | None
) -> None:
    _, address = served
    sent = f"http://{address}" if origin == "own" else origin
    with connect(f"ws://{address}/ws", origin=sent) as socket:  # type: ignore[arg-type]
        socket.send('{"type": "reset", "data": {"seed": 0}}')
        assert '"type":"observation"' in str(socket.recv(timeout=10)).replace(" ", "")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/reset", b"{}"),
        ("POST", "/step", b'{"action": {"move": "e2e4"}}'),
        ("POST", "/mcp", MCP_LIST),
        ("DELETE", "/sessions/{session}", b""),
        ("POST", "/service/games", b"{}"),
    ],
)
def test_state_changing_requests_from_another_origin_get_403(
    served: tuple[FastAPI, str], method: str, path: str, body: bytes
) -> None:
    app, address = served
    session = open_session(address)
    before = sessions(app)
    headers = {"Origin": EVIL, "Content-Type": "application/json", "X-Session-Id": session}
    url = f"http://{address}{path.format(session=session)}"
    reply = httpx.request(method, url, content=body, headers=headers)
    assert reply.status_code == 403
    assert reply.json()["code"] == "FORBIDDEN_ORIGIN"
    assert sessions(app) == before and step_count(address, session) == 0


def test_reads_from_any_origin_are_answered(served: tuple[FastAPI, str]) -> None:
    """A page cannot read them: no reply carries CORS headers."""
    _, address = served
    reply = httpx.get(f"http://{address}/health", headers={"Origin": EVIL})
    assert reply.status_code == 200 and "access-control-allow-origin" not in reply.headers


def test_the_server_s_own_and_allowed_origins_may_post(served: tuple[FastAPI, str]) -> None:
    _, address = served
    for origin in (f"http://{address}", VIEWER, VIEWER.upper()):
        reply = httpx.post(f"http://{address}/reset", json={}, headers={"Origin": origin})
        assert reply.status_code == 200, (origin, reply.text)


@pytest.mark.parametrize("path", ["/mcp", "/reset", "/step", "/service/games"])
@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_post_body_that_is_not_declared_json_gets_415(
    served: tuple[FastAPI, str], path: str, content_type: str | None
) -> None:
    """The content types a page may send without a preflight, and none; no Origin needed."""
    app, address = served
    session = open_session(address)
    before = sessions(app)
    headers = {"X-Session-Id": session} | ({"Content-Type": content_type} if content_type else {})
    body = MCP_LIST if path == "/mcp" else b'{"action": {"move": "e2e4"}}'
    reply = httpx.post(f"http://{address}{path}", content=body, headers=headers)
    assert reply.status_code == 415 and reply.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert sessions(app) == before and step_count(address, session) == 0


def test_an_empty_post_without_a_content_type_is_the_route_s_to_judge(
    served: tuple[FastAPI, str],
) -> None:
    """``curl -X POST /reset`` opens a session, as before; JSON with a charset is JSON."""
    _, address = served
    assert httpx.post(f"http://{address}/reset").status_code == 200
    typed = {"Content-Type": "Application/JSON; charset=utf-8"}
    assert httpx.post(f"http://{address}/reset", content=b"{}", headers=typed).status_code == 200
    step = httpx.post(f"http://{address}/step")
    assert step.status_code == 422 and step.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("GET", "/nowhere", None, 404, "NOT_FOUND"),
        ("PUT", "/reset", None, 405, "METHOD_NOT_ALLOWED"),
        ("GET", "/service/nowhere", None, 404, "NOT_FOUND"),
        ("GET", "/service/games/0/pgn/x", None, 404, "NOT_FOUND"),
        ("POST", "/service/games", b"[" * 10_000 + b"]" * 10_000, 400, "INVALID_JSON"),
        ("POST", "/reset", b"[" * 10_000 + b"]" * 10_000, 400, "INVALID_JSON"),
        ("POST", "/service/games", b"\xff\xfe", 400, "INVALID_JSON"),
    ],
)
def test_every_error_reply_is_json_with_a_code(
    served: tuple[FastAPI, str],
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    code: str,
) -> None:
    _, address = served
    headers = {"Content-Type": "application/json"}
    reply = httpx.request(method, f"http://{address}{path}", content=body, headers=headers)
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["code"] == code and reply.json()["detail"]


def test_a_forged_name_reads_back_as_one_game_from_the_service_pgn(
    served: tuple[FastAPI, str],
) -> None:
    _, address = served
    forged = 'Eve"]\n[Result "1-0"]\n\n1. e4 1-0\n\n[Event "x'
    spec: dict[str, Any] = {
        "white": {"player": "remote", "name": forged},
        "black": {"player": "remote", "name": "Bob"},
    }
    created = httpx.post(f"http://{address}/service/games", json=spec)
    assert created.status_code == 201, created.text
    game_id = created.json().get("game", created.json())["game_id"]
    text = httpx.get(f"http://{address}/service/games/{game_id}/pgn").text
    stream = io.StringIO(text)
    parsed = chess.pgn.read_game(stream)
    assert parsed is not None and chess.pgn.read_game(stream) is None
    assert parsed.headers["White"] == tag_value(forged) and parsed.headers["Result"] == "*"


def test_origins_are_checked_when_the_app_is_made() -> None:
    with pytest.raises(ValueError, match="not an origin"):
        create_chess_app(allow_origins=["http://a.example/page"])
    assert normalize_origin("https://[::1]:443") == "https://[::1]"
    client = TestClient(create_chess_app(allow_origins=["*"]))
    assert client.post("/reset", json={}, headers={"Origin": EVIL}).status_code == 200


def test_serve_allow_origin_names_the_origins_pages_may_post_from() -> None:
    with live_command("multiagent", "--allow-origin", VIEWER) as address:
        url = f"http://{address}/reset"
        assert httpx.post(url, json={}, headers={"Origin": VIEWER}).status_code == 200
        assert httpx.post(url, json={}, headers={"Origin": EVIL}).status_code == 403


def test_the_standalone_service_app_checks_origins_bodies_and_codes_too() -> None:
    """Served on its own (not under serve --service), the chess service refuses the same."""
    from fastapi.testclient import TestClient

    from chess_env.serving.service import create_chess_service_app

    body = {"white": {"player": "remote", "name": "A"}, "black": {"player": "random", "name": "R"}}
    allowed = "http://viewer.example"
    app = create_chess_service_app(allow_origins=[allowed], listing="all")
    with TestClient(app) as client:
        hostile = client.post("/games", json=body, headers={"Origin": "http://evil.example"})
        assert (hostile.status_code, hostile.json()["code"]) == (403, "FORBIDDEN_ORIGIN")
        plain = client.post("/games", content="{}", headers={"Content-Type": "text/plain"})
        assert (plain.status_code, plain.json()["code"]) == (415, "UNSUPPORTED_MEDIA_TYPE")
        missing = client.get("/nowhere")
        assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")
        assert client.get("/games").json() == []  # nothing refused was created
        created = client.post("/games", json=body, headers={"Origin": allowed})
        assert created.status_code == 201, created.text
        assert len(client.get("/games").json()) == 1
