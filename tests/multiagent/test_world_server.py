"""A world served over OpenEnv's HTTP, WebSocket and MCP: one seat per session, the others by
served players (several clients in one episode: test_world_server_seats.py), actions checked
against the world's Malli-lite signature and refused with every failing path (``errors``), never
with a 500 and never moving the episode. The seed of a served episode is the server's secret
unless the operator lets clients choose it (then: same seed, same trajectory)."""

from __future__ import annotations

import json
import logging
import secrets
import subprocess
import sys
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from multiagent.server import WorldAction, WorldAdapter, create_world_app
from multiagent.worlds import load_world

BUY = {"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": 2.5}
TRADE = load_world("trade")


@pytest.fixture(scope="module")
def trade() -> TestClient:
    """A server whose operator lets clients choose seeds (reproducible episodes)."""
    return TestClient(create_world_app("trade", client_seeds=True))


@pytest.fixture(scope="module")
def hosted() -> TestClient:
    """A server as ``python -m multiagent serve`` runs it by default: the seeds are its secret."""
    return TestClient(create_world_app("trade"))


@pytest.fixture(scope="module")
def forage() -> TestClient:
    return TestClient(create_world_app(load_world("forage"), client_seeds=True))


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


def test_unknown_seats_and_players_are_refused_with_the_valid_names(trade: TestClient) -> None:
    reply = trade.post("/reset", json={"agent": "Trader_9"})
    assert reply.status_code == 422
    body = reply.json()
    assert body["code"] == "VALIDATION_ERROR" and body["reason"] == "unknown_agent"
    assert "Trader_1, Trader_2, Trader_3, Trader_4" in body["detail"]
    own = trade.post("/reset", json={"agent": "Trader_1", "players": {"Trader_1": "random"}})
    assert own.status_code == 422 and own.json()["reason"] == "unknown_agent"
    assert "Trader_2, Trader_3, Trader_4" in own.json()["detail"]
    bad_player = trade.post("/reset", json={"players": {"Trader_2": "genius"}})
    assert bad_player.status_code == 422 and bad_player.json()["reason"] == "invalid_player"
    assert trade.post("/reset", json={"players": {"Trader_2": "random"}}).status_code == 200
    # "policies", the name before "players", is refused, not silently ignored
    assert trade.post("/reset", json={"policies": {"Trader_2": "random"}}).status_code == 422


def test_a_valid_action_advances_the_turn_and_returns_the_seats_reward(trade: TestClient) -> None:
    session = reset(trade, agent="Trader_1", seed=3)["session_id"]
    moved = step(trade, session, BUY)
    assert moved["observation"]["turn"] == 1 and moved["done"] is False
    assert isinstance(moved["reward"], float)
    assert moved["metadata"]["info"]["verb"] == "buy"
    assert "coerced" not in moved["metadata"]
    assert moved["observation"]["envelope"]["agents"]["Trader_1"]["variables"]["action_history"]
    assert turn_of(trade, session) == 1


VERBS = '["move", "buy", "sell", "produce", "rest"]'
GOODS = '["food", "wood", "metal"]'


@pytest.mark.parametrize(
    ("action", "errors"),
    [
        ({**BUY, "verb": "fly"}, [(["verb"], f'expected one of {VERBS}, got "fly"', "enum")]),
        ({**BUY, "good": 3}, [(["good"], f"expected one of {GOODS}, got 3", "enum")]),
        ({**BUY, "amount": 11}, [(["amount"], "expected a number <= 10.0, got 11.0", "bound")]),
        ({**BUY, "amount": -1}, [(["amount"], "expected a number >= 0.0, got -1.0", "bound")]),
        (
            {**BUY, "amount": "lots"},
            [
                (["amount"], 'expected double, got string "lots"', "type"),
                (["amount"], 'expected a number >= 0.0, got string "lots"', "type"),
                (["amount"], 'expected a number <= 10.0, got string "lots"', "type"),
            ],
        ),
        (
            {k: v for k, v in BUY.items() if k != "good"},
            [(["good"], "missing required key", "missing")],
        ),
        ({**BUY, "amout": 1}, [(["amout"], "unexpected key", "unexpected")]),
        (
            {"verb": "fly", "good": None, "amount": 10.5, "colour": "red"},  # every issue at once
            [
                (["verb"], f'expected one of {VERBS}, got "fly"', "enum"),
                (["good"], f"expected one of {GOODS}, got null", "enum"),
                (["amount"], "expected a number <= 10.0, got 10.5", "bound"),
                (["colour"], "unexpected key", "unexpected"),
                (["target_town"], "missing required key", "missing"),
            ],
        ),
    ],
)
def test_an_invalid_action_lists_every_failing_path_and_changes_nothing(
    trade: TestClient, action: dict[str, Any], errors: list[tuple[list[str], str, str]]
) -> None:
    session = reset(trade, agent="Trader_2", seed=5)["session_id"]
    before = trade.get("/state", params={"session_id": session}).json()
    reply = trade.post("/step", json={"action": action, "session_id": session})
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert body["code"] == "VALIDATION_ERROR" and body["reason"] == "invalid_action"
    assert body["errors"] == [{"loc": loc, "msg": msg, "type": kind} for loc, msg, kind in errors]
    lines = "; ".join(f"{loc[0]}: {msg}" for loc, msg, _ in errors)
    assert body["detail"] == f"invalid action: {lines}"  # the same issues, as one line
    assert trade.get("/state", params={"session_id": session}).json() == before
    retried = step(trade, session, BUY)  # the seat may try again, as if nothing had happened:
    fresh = step(trade, reset(trade, agent="Trader_2", seed=5)["session_id"], BUY)
    assert retried["observation"]["turn"] == 1
    assert (retried["observation"], retried["reward"]) == (fresh["observation"], fresh["reward"])


def test_websocket_error_frames_list_every_failing_path(trade: TestClient) -> None:
    with trade.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"agent": "Trader_3", "seed": 4}}))
        ws.receive_json()
        ws.send_text(json.dumps({"type": "state"}))
        before = ws.receive_json()["data"]
        wrong = {"verb": "sell", "good": "gold", "target_town": 7, "amount": True, "tip": 1}
        ws.send_text(json.dumps({"type": "step", "data": wrong}))
        frame = ws.receive_json()
        assert frame["type"] == "error"
        data = frame["data"]
        assert data["code"] == "VALIDATION_ERROR" and data["reason"] == "invalid_action"
        assert [(e["loc"], e["type"]) for e in data["errors"]] == [
            (["good"], "enum"),
            (["target_town"], "enum"),
            (["amount"], "type"),
            (["amount"], "type"),
            (["amount"], "type"),
            (["tip"], "unexpected"),
        ]
        assert data["errors"][2]["msg"] == "expected double, got boolean true"
        for error in data["errors"]:
            assert f"{error['loc'][0]}: {error['msg']}" in data["message"]
        ws.send_text(json.dumps({"type": "state"}))
        assert ws.receive_json()["data"] == before  # the refused action moved nothing
        ws.send_text(json.dumps({"type": "step", "data": BUY}))
        assert ws.receive_json()["data"]["observation"]["turn"] == 1


NON_FINITE = [  # not strict JSON, though Python's JSON reads them
    b'{"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": NaN}',
    b'{"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": -Infinity}',
    b'{"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": 1e400}',
    b'{"verb": NaN, "good": [NaN, {"x": Infinity}], "amount": {"NaN": NaN}}',
]
GARBAGE = [  # raw JSON actions: those, unicode of all kinds, wrong shapes
    *NON_FINITE,
    b'{"verb": "\\ud800", "good": "\\udfff", "target_town": "\\ud83e", "amount": 1}',
    b'{"\\ud800": 1, "verb": "buy", "good": "food", "target_town": "Farmstead", "amount": 1}',
    '{"v\u00e9rb": "b\u00fcy", "\u202egood": "\\u0000", "\U0001f916": "\u00ff" }'.encode(),
    '{"verb": "\u0431\u0443\u0439", "good": "food", "target_town": "Capital"}'.encode(),
    ('{"verb": "' + "\U0001f916" * 2000 + '", "amount": "\u0661\u0662"}').encode(),
    b'{"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": "NaN"}',
    b'{"verb": ["buy"], "good": {"food": null}, "target_town": [[[[[]]]]], "amount": []}',
]


@pytest.mark.parametrize("action", GARBAGE)
def test_garbage_actions_are_refused_never_a_500(trade: TestClient, action: bytes) -> None:
    session = reset(trade, agent="Trader_1", seed=8)["session_id"]
    body = b'{"session_id": "' + session.encode() + b'", "action": ' + action + b"}"
    reply = trade.post("/step", content=body, headers={"content-type": "application/json"})
    refused = reply.json()
    if action in NON_FINITE:  # refused by every HTTP route before the world sees it
        assert (reply.status_code, refused["code"]) == (400, "INVALID_JSON"), reply.text
        assert refused["reason"] == "non_finite_number"
    else:
        assert (reply.status_code, refused["code"]) == (422, "VALIDATION_ERROR"), reply.text
    assert refused["errors"]
    for error in refused["errors"]:
        assert all(isinstance(part, (str, int)) for part in error["loc"])
        assert isinstance(error["msg"], str) and isinstance(error["type"], str)
    assert turn_of(trade, session) == 0
    assert step(trade, session, BUY)["observation"]["turn"] == 1
    with trade.websocket_connect("/ws") as ws:  # the WebSocket reads strict JSON too
        ws.send_text(json.dumps({"type": "reset", "data": {"seed": 8}}))
        ws.receive_json()
        ws.send_text(b'{"type": "step", "data": ' + action + b"}")
        frame = ws.receive_json()
        assert frame["type"] == "error"
        assert frame["data"]["code"] in ("VALIDATION_ERROR", "INVALID_JSON")
        ws.send_text(json.dumps({"type": "step", "data": BUY}))
        assert ws.receive_json()["data"]["observation"]["turn"] == 1


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


def test_with_client_seeds_the_state_shows_only_the_clients_own_seed(trade: TestClient) -> None:
    seeded = reset(trade, agent="Trader_1", seed=7)["session_id"]
    assert trade.get("/state", params={"session_id": seeded}).json()["seed"] == 7
    drawn = reset(trade, agent="Trader_1")["session_id"]  # no seed sent: the server's secret
    assert "seed" not in trade.get("/state", params={"session_id": drawn}).json()


SECRET = 0x5EED_C0DE_1234_5678  # what ``secrets`` draws when a test pins it


def numbers_in(data: Any) -> set[int]:
    """Every whole number >= 0 in a JSON value, at any depth: the attacker's seed candidates."""
    found, stack = set(), [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif type(value) is int and value >= 0:
            found.add(value)
    return found


def offline(seed: int, agent: str, turns: int) -> list[dict[str, Any]]:
    """The observations a seeded episode gives offline, playing BUY every turn: the replay an
    attacker who knew the seed would run to read the others' hidden state and the true values."""
    adapter = WorldAdapter(TRADE, client_seeds=True)
    seen = [adapter.reset(seed=seed, agent=agent).observation]
    seen += [adapter.step(WorldAction(**BUY)).observation for _ in range(turns)]
    return [observation.model_dump(mode="json", exclude_unset=True) for observation in seen]


def served(client: TestClient, turns: int, **options: Any) -> list[dict[str, Any]]:
    """Every reply of an HTTP episode of ``turns`` BUYs: reset, the steps, then the state."""
    first = reset(client, **options)
    replies = [first] + [step(client, first["session_id"], BUY) for _ in range(turns)]
    state = client.get("/state", params={"session_id": first["session_id"]})
    return [*replies, state.json()]


def test_with_client_seeds_an_offline_replay_matches_the_server(trade: TestClient) -> None:
    # The determinism contract, and the proof that the attack below would work on a known seed.
    replies = served(trade, 3, agent="Trader_1", seed=7)
    assert [reply["observation"] for reply in replies[:-1]] == offline(7, "Trader_1", 3)


def test_the_replay_attack_finds_no_seed_on_a_hosted_server(hosted: TestClient) -> None:
    replies = served(hosted, 3, agent="Trader_1")
    observations = [reply["observation"] for reply in replies[:-1]]
    candidates = numbers_in(replies) | set(range(32)) | {TRADE.simulation.seed or 0}
    for candidate in sorted(candidates):  # every number it was sent, the world's, small ones
        assert offline(candidate, "Trader_1", 3) != observations, candidate


def test_hosted_episodes_reset_without_a_seed_differ(hosted: TestClient) -> None:
    first, second = (reset(hosted, agent="Trader_1")["observation"] for _ in range(2))
    assert first["envelope"] != second["envelope"]  # the others are seen through fresh noise


def test_nothing_a_hosted_server_sends_or_logs_holds_the_seed(
    hosted: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(secrets, "randbits", lambda bits: SECRET)
    caplog.set_level(logging.DEBUG)
    replies: list[Any] = served(hosted, 2, agent="Trader_2")
    with hosted.websocket_connect("/ws") as ws:
        for message in ({"type": "reset", "data": {}}, {"type": "step", "data": BUY}):
            ws.send_text(json.dumps(message))
            replies.append(ws.receive_json())
        ws.send_text(json.dumps({"type": "state"}))
        replies.append(ws.receive_json())
    created = rpc(hosted, "openenv/session/create", {"agent": "Trader_3"})["result"]
    call = {"name": "act", "arguments": BUY, "session_id": created["session_id"]}
    replies += [created, rpc(hosted, "tools/call", call)["result"], hosted.get("/metadata").json()]
    # The pinned draw was used, so the replies came from an episode seeded with SECRET ...
    assert [replies[0]["observation"], replies[1]["observation"]] == offline(SECRET, "Trader_2", 1)
    for reply in replies:  # ... and none of them, nor the log, holds it or names a seed
        text = json.dumps(reply)
        assert "seed" not in text and str(SECRET) not in text, text[:300]
    assert str(SECRET) not in caplog.text


def test_a_clients_seed_is_refused_unless_the_operator_allows_it(hosted: TestClient) -> None:
    reply = hosted.post("/reset", json={"agent": "Trader_1", "seed": 7})
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert body["code"] == "VALIDATION_ERROR" and body["reason"] == "seed_not_allowed"
    assert body["detail"].startswith("seed: this server draws a secret seed for every episode")
    assert "--allow-client-seeds" in body["detail"]
    assert [(error["loc"], error["type"]) for error in body["errors"]] == [(["seed"], "forbidden")]
    with hosted.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"seed": 7}}))
        frame = ws.receive_json()
        assert frame["type"] == "error" and frame["data"]["reason"] == "seed_not_allowed"
        ws.send_text(json.dumps({"type": "reset", "data": {}}))  # the connection goes on
        assert ws.receive_json()["type"] == "observation"
    refused = rpc(hosted, "openenv/session/create", {"seed": 7})["error"]
    assert refused["data"]["reason"] == "seed_not_allowed"
    assert hosted.post("/reset", json={"seed": None}).status_code == 200  # null: no seed


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
    wrong = rpc(trade, "tools/call", {"name": "act", "arguments": {"verb": "fly"}})["error"]
    assert "verb: expected one of" in wrong["message"]
    assert wrong["data"]["reason"] == "invalid_arguments"
    assert [(e["loc"], e["type"]) for e in wrong["data"]["errors"]] == [
        (["verb"], "enum"),
        (["good"], "missing"),
        (["target_town"], "missing"),
        (["amount"], "missing"),
    ]


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


world_schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_world_app("trade", max_sessions=100_000)
).include(path_regex="^/(reset|step|state)$")  # the routes whose replies are the world's own


@world_schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_fuzzed_world_requests_get_replies_that_match_the_openapi_document(
    case: schemathesis.Case,
) -> None:
    # Most generated actions are refused by the world's signature: their ErrorResponse, with
    # every failing path in "errors", is checked against the document like any other reply.
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
