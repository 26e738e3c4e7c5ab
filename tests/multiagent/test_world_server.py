"""A world served over OpenEnv's HTTP, WebSocket and MCP: one seat per session, the others by
policy, actions checked against the world's Malli-lite signature."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from fastapi.testclient import TestClient

from multiagent.server import create_world_app
from multiagent.worlds import load_world

BUY = {"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": 2.5}


@pytest.fixture(scope="module")
def trade() -> TestClient:
    return TestClient(create_world_app("trade"))


@pytest.fixture(scope="module")
def forage() -> TestClient:
    return TestClient(create_world_app(load_world("forage")))


def reset(client: TestClient, **options: Any) -> dict[str, Any]:
    reply = client.post("/reset", json=options)
    assert reply.status_code == 200, reply.text
    return reply.json()


def step(client: TestClient, session_id: str, action: dict[str, Any]) -> dict[str, Any]:
    reply = client.post("/step", json={"action": action, "session_id": session_id})
    assert reply.status_code == 200, reply.text
    return reply.json()


def turn_of(client: TestClient, session_id: str) -> int:
    state = client.get("/state", params={"session_id": session_id}).json()
    return int(state["turn"])


def test_reset_as_a_seat_shows_only_what_that_seat_observes(trade: TestClient) -> None:
    first = reset(trade, agent="Trader_1", seed=3, include_text=True)
    observation = first["observation"]
    envelope = observation["envelope"]
    assert observation["agent"] == envelope["observer"] == "Trader_1"
    assert observation["turn"] == 0 and observation["done"] is False
    assert first["reward"] is None and first["done"] is False
    assert set(envelope["agents"]) == {"Trader_1", "Trader_2", "Trader_3"}  # unaware of Trader_4
    assert envelope["agents"]["Trader_1"]["level"] == "insider"
    assert "gold" not in envelope["agents"]["Trader_2"]["variables"]  # internal: hidden
    assert envelope["agents"]["Trader_2"]["noise"] == pytest.approx(0.1)
    assert observation["text"].startswith("Turn 0, observer Trader_1")
    assert "text" not in reset(trade, agent="Trader_1", seed=3)["observation"]
    default = reset(trade, seed=3)["observation"]
    assert default["agent"] == "Trader_1"  # the first agent by default
    fourth = reset(trade, agent="Trader_4", seed=3)["observation"]["envelope"]
    assert set(fourth["agents"]) == {"Trader_2", "Trader_3", "Trader_4"}


def test_unknown_seats_and_policies_are_refused_with_the_valid_names(trade: TestClient) -> None:
    reply = trade.post("/reset", json={"agent": "Trader_9"})
    assert reply.status_code == 422
    body = reply.json()
    assert body["code"] == "VALIDATION_ERROR" and body["reason"] == "unknown_agent"
    assert "Trader_1, Trader_2, Trader_3, Trader_4" in body["detail"]
    own = trade.post("/reset", json={"agent": "Trader_1", "policies": {"Trader_1": "random"}})
    assert own.status_code == 422 and own.json()["reason"] == "unknown_agent"
    bad_policy = trade.post("/reset", json={"policies": {"Trader_2": "genius"}})
    assert bad_policy.status_code == 422
    assert trade.post("/reset", json={"policies": {"Trader_2": "random"}}).status_code == 200


def test_a_valid_action_advances_the_turn_and_returns_the_seats_reward(trade: TestClient) -> None:
    session = reset(trade, agent="Trader_1", seed=3)["session_id"]
    moved = step(trade, session, BUY)
    assert moved["observation"]["turn"] == 1 and moved["done"] is False
    assert isinstance(moved["reward"], float)
    assert moved["metadata"]["info"]["verb"] == "buy"
    assert "coerced" not in moved["metadata"]
    assert moved["observation"]["envelope"]["agents"]["Trader_1"]["variables"]["action_history"]
    assert turn_of(trade, session) == 1


@pytest.mark.parametrize(
    ("action", "paths"),
    [
        ({**BUY, "verb": "fly"}, ["verb: expected one of"]),
        ({**BUY, "amount": 11}, ["amount: expected a number <= 10.0"]),
        ({**BUY, "amount": -1}, ["amount: expected a number >= 0.0"]),
        ({k: v for k, v in BUY.items() if k != "good"}, ["good: missing required key"]),
        ({**BUY, "amout": 1}, ["amout: unexpected key"]),
        ({"verb": "fly"}, ["verb:", "good:", "target_town:", "amount:"]),  # every issue at once
    ],
)
def test_an_invalid_action_lists_its_issues_and_changes_nothing(
    trade: TestClient, action: dict[str, Any], paths: list[str]
) -> None:
    session = reset(trade, agent="Trader_2", seed=5)["session_id"]
    before = trade.get("/state", params={"session_id": session}).json()
    reply = trade.post("/step", json={"action": action, "session_id": session})
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert body["code"] == "VALIDATION_ERROR" and body["reason"] == "invalid_action"
    assert body["detail"].startswith("invalid action: ")
    for path in paths:
        assert path in body["detail"]
    assert trade.get("/state", params={"session_id": session}).json() == before
    assert turn_of(trade, session) == 0
    assert step(trade, session, BUY)["observation"]["turn"] == 1  # the seat may try again


def test_quoted_numbers_are_coerced_and_reported(trade: TestClient) -> None:
    session = reset(trade, agent="Trader_1", seed=3)["session_id"]
    quoted = step(trade, session, {**BUY, "amount": "2.5"})
    assert quoted["metadata"]["coerced"] == ['amount: coerced string "2.5" to double']
    plain = step(trade, reset(trade, agent="Trader_1", seed=3)["session_id"], BUY)
    assert quoted["observation"] == plain["observation"] and quoted["reward"] == plain["reward"]


def test_the_same_seed_gives_the_same_trajectory(trade: TestClient) -> None:
    def play(seed: int) -> list[Any]:
        first = reset(trade, agent="Trader_3", seed=seed)
        replies = [first] + [step(trade, first["session_id"], BUY) for _ in range(5)]
        return [{k: v for k, v in r.items() if k != "session_id"} for r in replies]

    assert play(11) == play(11)
    assert play(11) != play(12)  # the others' policies and the noise follow the seed


def test_forage_to_max_turns_then_the_episode_is_over(forage: TestClient) -> None:
    max_turns = load_world("forage").simulation.max_turns
    with forage.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"agent": "Forager_2", "seed": 0}}))
        assert ws.receive_json()["data"]["observation"]["agent"] == "Forager_2"
        moves = ["up", "left", "down", "right", "stay"]
        for turn in range(1, max_turns + 1):
            ws.send_text(json.dumps({"type": "step", "data": {"move": moves[turn % 5]}}))
            data = ws.receive_json()["data"]
            assert data["observation"]["turn"] == turn
            assert data["done"] is (turn == max_turns)
        assert data["observation"]["done"] is True and data["metadata"]["truncated"] is True
        ws.send_text(json.dumps({"type": "step", "data": {"move": "stay"}}))
        over = ws.receive_json()
        assert over["type"] == "error" and over["data"]["reason"] == "episode_over"


def test_websocket_reset_step_state_and_an_invalid_action(trade: TestClient) -> None:
    with trade.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"agent": "Trader_2", "seed": 1}}))
        first = ws.receive_json()
        assert first["type"] == "observation"
        assert first["data"]["observation"]["envelope"]["observer"] == "Trader_2"
        ws.send_text(json.dumps({"type": "step", "data": {**BUY, "amount": 99}}))
        refused = ws.receive_json()
        assert refused["type"] == "error" and refused["data"]["code"] == "VALIDATION_ERROR"
        assert "amount: expected a number <= 10.0" in refused["data"]["message"]
        ws.send_text(json.dumps({"type": "step", "data": {**BUY, "metadata": {}}}))
        moved = ws.receive_json()
        assert moved["type"] == "observation" and moved["data"]["observation"]["turn"] == 1
        ws.send_text(json.dumps({"type": "state"}))
        state = ws.receive_json()["data"]
        assert state["agent"] == "Trader_2" and state["turn"] == 1 and state["step_count"] == 1


def rpc(client: TestClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply = client.post("/mcp", json=request)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_mcp_lists_the_act_tool_with_its_json_schema_and_calls_it(trade: TestClient) -> None:
    tools = rpc(trade, "tools/list", {})["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["act"]
    schema = tools[0]["inputSchema"]
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"verb", "good", "target_town", "amount"}
    assert schema["properties"]["amount"] == {"type": "number", "minimum": 0.0, "maximum": 10.0}
    assert "act(verb [:enum" in tools[0]["description"]
    session = reset(trade, agent="Trader_1", seed=2)["session_id"]
    call = {"name": "act", "arguments": {**BUY, "amount": "1"}, "session_id": session}
    result = rpc(trade, "tools/call", call)["result"]
    assert result["isError"] is False and result["structuredContent"]["observation"]["turn"] == 1
    wrong = rpc(trade, "tools/call", {"name": "act", "arguments": {"verb": "fly"}})
    assert "verb: expected one of" in wrong["error"]["message"]


def test_schema_and_metadata_describe_the_world(trade: TestClient) -> None:
    schema = trade.get("/schema").json()
    assert schema["action"]["properties"]["verb"]["enum"][0] == "move"
    assert "envelope" in schema["observation"]["properties"]
    assert trade.get("/metadata").json()["name"] == "trade"


def test_importing_multiagent_does_not_import_fastapi() -> None:
    code = "import sys, multiagent, multiagent.wrappers; print('fastapi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_serve_help_runs_without_starting_a_server() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "multiagent", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "--world" in result.stdout and "--port" in result.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "multiagent", "serve", "--world", "atlantis"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown world 'atlantis'" in bad.stderr
