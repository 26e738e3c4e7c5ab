"""MCP's JSON-RPC on ``POST /mcp``: the move tool from its Malli-lite signature, and errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from chess_env.serving.app import create_chess_app
from envkit.schema import parse, to_json_schema

JSON = {"content-type": "application/json"}


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_chess_app())


def rpc(
    client: TestClient, method: str, params: dict[str, Any] | None = None, **headers: str
) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    reply = client.post("/mcp", json=request, headers=headers)
    assert reply.status_code == 200, reply.text
    assert reply.json()["jsonrpc"] == "2.0" and reply.json()["id"] == 1
    return reply.json()


def test_initialize_and_ping(client: TestClient) -> None:
    result = rpc(client, "initialize", {"protocolVersion": "2025-03-26"})["result"]
    assert result["protocolVersion"] == "2025-03-26"
    assert result["serverInfo"] == {"name": "chess", "version": "0.1.0"}
    assert "tools" in result["capabilities"]
    unknown = rpc(client, "initialize", {"protocolVersion": "1999-01-01"})["result"]
    assert unknown["protocolVersion"] == "2025-06-18"  # the newest this server speaks
    assert rpc(client, "ping")["result"] == {}


def test_tools_list_shows_the_move_tool_with_a_json_schema(client: TestClient) -> None:
    (tool,) = rpc(client, "tools/list")["result"]["tools"]
    assert tool["name"] == "move" and "UCI" in tool["description"]
    assert tool["description"].endswith(
        "Signature: move(move :string) -> {observation :map, reward :double?, done :boolean}"
    )
    schema = tool["inputSchema"]
    Draft202012Validator.check_schema(schema)
    assert schema == {
        "type": "object",
        "properties": {"move": {"type": "string"}},
        "required": ["move"],
        "additionalProperties": False,
    }
    signature = parse("(move :string) -> :any")
    assert {**schema, "$schema": to_json_schema(signature)["$schema"]} == to_json_schema(signature)


def test_tools_call_plays_a_move_in_a_fresh_env(client: TestClient) -> None:
    result = rpc(client, "tools/call", {"name": "move", "arguments": {"move": "e4"}})["result"]
    assert result["isError"] is False
    played = result["structuredContent"]
    assert played["observation"]["ply"] == 2 and played["done"] is False
    assert json.loads(result["content"][0]["text"]) == played
    assert len(client.app.state.env_service.store) == 0


def test_tools_call_in_a_session(client: TestClient) -> None:
    created = rpc(client, "openenv/session/create", {"seed": 8, "agent_color": "black"})
    session = created["result"]["session_id"]
    assert created["result"]["observation"]["ply"] == 1  # the opponent opened
    by_param = {"name": "move", "arguments": {"move": "e5"}, "session_id": session}
    assert rpc(client, "tools/call", by_param)["result"]["isError"] is False
    by_header = {"name": "move", "arguments": {"move": "Nc6"}}
    after = rpc(client, "tools/call", by_header, **{"X-Session-Id": session})["result"]
    assert after["structuredContent"]["observation"]["ply"] == 5
    state = client.get("/state", headers={"X-Session-Id": session}).json()
    assert state["step_count"] == 2 and state["agent_color"] == "black"
    closed = rpc(client, "openenv/session/close", {"session_id": session})["result"]
    assert closed == {"session_id": session, "closed": True}
    assert rpc(client, "openenv/session/close", {"session_id": session})["error"]["code"] == -32602


def test_an_illegal_move_is_a_tool_error_the_agent_can_read(client: TestClient) -> None:
    session = rpc(client, "openenv/session/create")["result"]["session_id"]
    call = {"name": "move", "arguments": {"move": "Ke2"}, "session_id": session}
    result = rpc(client, "tools/call", call)["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == "the king on e1 cannot move to e2"
    assert result["structuredContent"]["reason"] == "cannot_move_there"
    call["arguments"] = {"move": "e4"}
    assert rpc(client, "tools/call", call)["result"]["isError"] is False


@pytest.mark.parametrize(
    ("body", "code", "said"),
    [
        (b"{not json", -32700, "parse error"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": NaN}', -32700, "NaN"),
        (b"[]", -32600, "batch requests are not supported"),
        (b'"ping"', -32600, "invalid request"),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, "jsonrpc: Input should be"),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600, "method: Field required"),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, "id.int:"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}', -32600, "params:"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}', -32601, "unknown method"),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fly"}}',
            -32602,
            "unknown tool 'fly'; the tools are move",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call",'
            b' "params": {"name": "move", "arguments": {"move": 42}}}',
            -32602,
            "move: expected string, got int 42",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call",'
            b' "params": {"name": "move", "arguments": {"move": "e4", "why": "x"}}}',
            -32602,
            "why: unexpected key",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call",'
            b' "params": {"name": "move", "arguments": {"move": "e4"}, "session_id": "nope"}}',
            -32602,
            "no session nope",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call",'
            b' "params": {"name": "move", "arguments": {"move": "e4"}, "session_id": 3}}',
            -32602,
            "session_id must be a string",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create",'
            b' "params": {"opponent": "magnus"}}',
            -32602,
            "opponent: Value error, unknown player 'magnus'",
        ),
    ],
)
def test_bad_requests_get_json_rpc_errors(
    client: TestClient, body: bytes, code: int, said: str
) -> None:
    reply = client.post("/mcp", content=body, headers=JSON)
    # No JSON object at all: 400; an invalid request in an object: 200, as OpenEnv's server says.
    assert reply.status_code == (400 if code == -32700 or not body.startswith(b"{") else 200)
    payload = reply.json()
    assert payload["jsonrpc"] == "2.0" and "result" not in payload
    assert payload["error"]["code"] == code and said in payload["error"]["message"]
    assert len(client.app.state.env_service.store) == 0


def test_the_id_is_echoed_even_with_an_error(client: TestClient) -> None:
    reply = client.post("/mcp", json={"jsonrpc": "2.0", "id": "abc", "method": "nope"}).json()
    assert reply["id"] == "abc" and reply["error"]["code"] == -32601
    invalid = client.post("/mcp", json={"jsonrpc": "1.0", "id": 7, "method": "ping"}).json()
    assert invalid["id"] == 7


def test_a_notification_gets_no_reply(client: TestClient) -> None:
    reply = client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert reply.status_code == 202 and reply.content == b""


def test_capacity_is_a_server_error() -> None:
    client = TestClient(create_chess_app(max_sessions=1))
    rpc(client, "openenv/session/create")
    error = rpc(client, "openenv/session/create")["error"]
    assert error["code"] == -32000 and error["data"]["code"] == "CAPACITY_REACHED"
