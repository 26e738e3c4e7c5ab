"""``tools/call`` fuzzed for every tool of every adapter: no -32603, and nothing logged as a bug.

Arbitrary JSON for ``name`` and ``arguments`` (positional lists, nulls, huge numbers, nested
objects, near-misses of the real parameters), in a fresh env and in a session, through
``mcp.handle`` (what ``POST /mcp`` and the WebSocket ``mcp`` message both call). A run with many
examples: ``MCP_FUZZ_EXAMPLES=2000 pytest tests/envkit/server/test_mcp_fuzz.py``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chess_env.serving.app import ChessAdapter, create_chess_app
from envkit.server import EnvAdapter, SessionStore
from envkit.server.mcp import JsonRpcCode, handle
from envkit.server.service import EnvService
from multiagent.server import WorldAdapter

EXAMPLES = int(os.environ.get("MCP_FUZZ_EXAMPLES", "150"))
ADAPTERS: dict[str, Callable[[], EnvAdapter]] = {
    "chess": ChessAdapter,
    "trade": partial(WorldAdapter, "trade"),
    "forage": partial(WorldAdapter, "forage"),
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(["e4", "e2e4", "Nf3", "O-O", "move", "buy", "sell", "rest", "produce"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _arguments(names: list[str]) -> st.SearchStrategy[Any]:
    """Anything, and objects keyed by the tools' own parameter names (to get past the schema)."""
    keyed = st.dictionaries(st.sampled_from(names), json_values, max_size=len(names))
    return st.one_of(json_values, keyed)


def _service(adapter: str) -> EnvService:
    return EnvService(SessionStore(ADAPTERS[adapter], max_sessions=4))


def _parameter_names(service: EnvService) -> list[str]:
    names = ["move", "action", "target", "amount", "item", "price", "agent", "session_id"]
    for tool in service.info.tools.values():
        names.extend(tool.listing()["inputSchema"].get("properties", {}))
    return sorted(set(names))


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_tools_call_never_answers_an_internal_error(
    adapter: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = _service(adapter)
    created = handle(service, {"jsonrpc": "2.0", "id": 0, "method": "openenv/session/create"})
    assert created is not None and "result" in created, created
    session = created["result"]["session_id"]
    tools = sorted(service.info.tools)
    names = st.one_of(st.sampled_from(tools), json_values)

    @settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
    @given(name=names, arguments=_arguments(_parameter_names(service)), in_session=st.booleans())
    def call(name: Any, arguments: Any, in_session: bool) -> None:
        params = {"name": name, "arguments": arguments}
        if in_session:
            params["session_id"] = session
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            reply = handle(service, request)
        assert reply is not None
        error = reply.get("error")
        assert error is None or error["code"] != JsonRpcCode.INTERNAL_ERROR, error
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
        if isinstance(arguments, list):
            assert error is not None and error["code"] == JsonRpcCode.INVALID_PARAMS

    try:
        call()
    finally:
        service.store.close_all()


@pytest.mark.parametrize("arguments", [["e4"], "e4", 7, True, [{"move": "e4"}]])
def test_arguments_that_are_not_an_object_are_invalid_params(arguments: Any) -> None:
    """Over HTTP and the WebSocket alike; the session's game is untouched."""
    client = TestClient(create_chess_app())
    opened = client.post("/reset", json={}).json()["session_id"]
    call = {"name": "move", "arguments": arguments, "session_id": opened}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    error = client.post("/mcp", json=request).json()["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("arguments must be a JSON object of move's parameters")
    with client.websocket_connect("/ws") as socket:
        socket.send_json({"type": "mcp", "data": request | {"params": call | {"session_id": None}}})
        frame = socket.receive_json()
    assert frame["type"] == "mcp" and frame["data"]["error"]["code"] == -32602
    state = client.get("/state", params={"session_id": opened}).json()
    assert state["step_count"] == 0


def test_null_arguments_are_no_arguments() -> None:
    client = TestClient(create_chess_app())
    call = {"name": "move", "arguments": None}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    error = client.post("/mcp", json=request).json()["error"]
    assert error["code"] == -32602 and "move: missing required key" in error["message"]
