"""Structured errors: ``InvalidInputError(errors=...)`` reaches HTTP bodies, WebSocket error
frames and MCP replies as ``errors: [{loc, msg, type}]``, and Malli-lite issues become them."""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

import pydantic
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from envkit.schema import parse, validate
from envkit.schema.issues import Issue
from envkit.server import AdapterResult, EpisodeState, InvalidInputError, ToolSpec, create_app
from envkit.server.errors import (
    MAX_ERRORS,
    MAX_MESSAGE_CHARS,
    ErrorDetail,
    error_payload,
    issue_details,
)
from multiagent.server import create_world_app

SIGNATURE = "(name :string, size [:and :int [:>= 0] [:<= 9]], tags [:set :string]) -> :any"


class Order(BaseModel):
    model_config = ConfigDict(extra="allow")  # the signature checks it, as a world's does


class Count(BaseModel):
    orders: int = Field(description="Orders taken")


class Shop:
    """Takes orders that its Malli-lite signature accepts; refuses the rest by path."""

    name, description, version = "shop", "Takes orders", "1.0"
    action_model, observation_model, state_model = Order, Count, EpisodeState
    signature = parse(SIGNATURE)

    def __init__(self) -> None:
        self.orders = 0

    def reset(self, *, seed: int | None = None, **options: Any) -> AdapterResult:
        self.orders = 0
        return AdapterResult(Count(orders=0))

    def step(self, action: Order) -> AdapterResult:
        checked = validate(self.signature, action.model_extra, mode="strict", direction="input")
        if not checked.ok:
            raise InvalidInputError(
                "bad order", reason="bad_order", errors=issue_details(checked.errors)
            )
        self.orders += 1
        return AdapterResult(Count(orders=self.orders))

    def state(self) -> dict[str, Any]:
        return {}

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec("order", "Place an order", self.signature)]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> AdapterResult:
        return self.step(Order(**arguments))

    def close(self) -> None:
        pass


BAD = {"name": 5, "size": 12, "tags": ["a", "a"], "colour": "red"}
FOUND = [  # what BAD gets: every failing place, in the order the signature finds them
    {"loc": ["name"], "msg": "expected string, got int 5", "type": "type"},
    {"loc": ["size"], "msg": "expected a number <= 9, got 12", "type": "bound"},
    {"loc": ["tags", 1], "msg": 'duplicate item "a" in a set', "type": "duplicate"},
    {"loc": ["colour"], "msg": "unexpected key", "type": "unexpected"},
]


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(Shop), raise_server_exceptions=False)


def test_http_lists_every_failing_place_and_the_session_goes_on(client: TestClient) -> None:
    session = client.post("/reset", json={}).json()["session_id"]
    reply = client.post("/step", json={"action": BAD, "session_id": session})
    assert reply.status_code == 422
    assert reply.json() == {
        "detail": "bad order",
        "code": "VALIDATION_ERROR",
        "reason": "bad_order",
        "errors": FOUND,
    }
    good = {"name": "tea", "size": 2, "tags": []}
    taken = client.post("/step", json={"action": good, "session_id": session}).json()
    assert taken["observation"] == {"orders": 1}  # the refused order counted for nothing


def test_a_websocket_error_frame_lists_them_too(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {}}))
        ws.receive_json()
        ws.send_text(json.dumps({"type": "step", "data": BAD}))
        frame = ws.receive_json()
        assert frame == {
            "type": "error",
            "data": {
                "code": "VALIDATION_ERROR",
                "message": "bad order",
                "reason": "bad_order",
                "errors": FOUND,
            },
        }


def test_mcp_refuses_bad_arguments_with_the_same_errors(client: TestClient) -> None:
    call = {"name": "order", "arguments": BAD}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    error = client.post("/mcp", json=request).json()["error"]
    assert error["code"] == -32602 and error["message"].startswith("invalid arguments for order: ")
    assert error["data"]["reason"] == "invalid_arguments"
    assert error["data"]["errors"] == FOUND


MANY_UNKNOWN = {f"key{n:05d}": n for n in range(3000)}  # ~50 KB: 3,000 unexpected keys


def capped(body: dict[str, Any], sent: bytes) -> None:
    """The first MAX_ERRORS places and the count of the rest; no bigger than the request."""
    assert len(body["errors"]) == MAX_ERRORS and body["errors_truncated"] >= 3000 - MAX_ERRORS
    assert body["errors"][0] == {"loc": ["key00000"], "msg": "unexpected key", "type": "unexpected"}
    assert len(json.dumps(body)) < len(sent) / 5
    assert len(body.get("message", body.get("detail", ""))) < MAX_MESSAGE_CHARS + 50


def test_a_long_error_list_is_capped_over_http_websocket_and_mcp() -> None:
    client = TestClient(create_world_app("trade", client_seeds=True))
    session = client.post("/reset", json={"seed": 0}).json()["session_id"]
    sent = json.dumps({"action": MANY_UNKNOWN, "session_id": session}).encode()
    reply = client.post("/step", content=sent, headers={"Content-Type": "application/json"})
    assert reply.status_code == 422 and reply.json()["reason"] == "invalid_action"
    capped(reply.json(), sent)
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"seed": 0}}))
        ws.receive_json()
        ws.send_text(json.dumps({"type": "step", "data": MANY_UNKNOWN}))
        frame = ws.receive_json()
    assert frame["type"] == "error"
    capped(frame["data"], sent)
    call = {"name": "act", "arguments": MANY_UNKNOWN, "session_id": session}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    error = client.post("/mcp", json=request).json()["error"]
    more = error["data"]["errors_truncated"]  # the world's required keys are missing too
    assert error["code"] == -32602 and error["message"].endswith(f"... and {more} more")
    capped(error["data"], sent)
    state = client.get("/state", params={"session_id": session}).json()
    assert state["step_count"] == 0  # nothing was played


def test_pydantic_error_lists_are_capped_too() -> None:
    class Many(BaseModel):
        numbers: list[int]

    with pytest.raises(pydantic.ValidationError) as refused:
        Many.model_validate({"numbers": ["x"] * 3000})
    status, body = error_payload(refused.value)
    assert status == 422 and len(body["errors"]) == MAX_ERRORS
    assert body["errors_truncated"] == 3000 - MAX_ERRORS
    assert body["message"].endswith("; ... and 2980 more")


def test_a_long_message_is_cut() -> None:
    _, body = error_payload(InvalidInputError("x" * 100_000))
    assert body["message"] == "x" * MAX_MESSAGE_CHARS + "... (98000 more characters)"


def test_lone_surrogates_in_errors_are_escaped_not_a_500(client: TestClient) -> None:
    class Echo(Shop):
        def step(self, action: Order) -> AdapterResult:
            detail = ErrorDetail(loc=("\ud800", 0), msg="bad \udfff", type="odd\ud83e")
            raise InvalidInputError("bad \ud800", errors=[detail])

    echo = TestClient(create_app(Echo), raise_server_exceptions=False)
    reply = echo.post("/step", json={"action": {}})
    assert reply.status_code == 422
    assert reply.json()["detail"] == "bad \\ud800"
    assert reply.json()["errors"] == [
        {"loc": ["\\ud800", 0], "msg": "bad \\udfff", "type": "odd\\ud83e"}
    ]


def test_an_error_without_details_has_no_errors_key() -> None:
    status, body = error_payload(InvalidInputError("no", reason="why"))
    assert (status, body) == (422, {"code": "VALIDATION_ERROR", "message": "no", "reason": "why"})


def test_the_openapi_document_describes_the_errors(client: TestClient) -> None:
    components = client.get("/openapi.json").json()["components"]["schemas"]
    errors = components["ErrorResponse"]["properties"]["errors"]
    listed = {"type": "array", "items": {"$ref": "#/components/schemas/ErrorDetail"}}
    assert errors["anyOf"] == [listed, {"type": "null"}]
    detail = components["ErrorDetail"]
    assert set(detail["required"]) == {"loc", "msg", "type"}
    assert detail["properties"]["loc"]["items"]["anyOf"] == [
        {"type": "string"},
        {"type": "integer"},
    ]


@pytest.mark.parametrize(
    ("schema", "data", "kind"),
    [
        ("[:map [:a :int]]", {}, "missing"),
        ("[:map [:a :int]]", {"a": 1, "b": 2}, "unexpected"),
        ("[:set :int]", [1, 1], "duplicate"),
        ('[:enum "x" "y"]', "z", "enum"),
        ("[:enum 1 2]", None, "enum"),
        (":int", "seven", "type"),
        (":double", None, "type"),
        ("[:<= 9]", "ten", "type"),
        ("[:<= 9]", 10, "bound"),
        ("[:>= 0]", float("nan"), "bound"),
        ("[:map-of :int :int]", {"k": 1}, "type"),
        ("[:tuple :int :int]", [1], "size"),
        ('[:re "^a"]', "b", "pattern"),
        ('[:map-of [:enum "a"] :int]', {"b": 1}, "enum"),
    ],
)
def test_each_malli_lite_issue_gets_its_kind(schema: str, data: Any, kind: str) -> None:
    checked = validate(parse(schema), data, mode="strict")
    assert [detail.type for detail in issue_details(checked.errors)] == [kind]


keys = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)  # any key but a surrogate
paths = st.lists(keys | st.integers(min_value=0, max_value=10**6), max_size=5)


@given(paths)
def test_the_loc_is_the_issue_s_own(steps: list[str | int]) -> None:
    (detail,) = issue_details([Issue.at(tuple(steps), "missing required key", "missing")])
    assert (detail.loc, detail.msg, detail.type) == (
        tuple(steps),
        "missing required key",
        "missing",
    )


def test_a_key_that_is_neither_str_nor_int_is_its_json_in_the_loc() -> None:
    def loc(*steps: Hashable) -> tuple[str | int, ...]:
        return issue_details([Issue.at(steps, "x", "type")])[0].loc

    assert loc("a", 1.5) == ("a", "1.5")
    assert loc("a", True, "b") == ("a", "true", "b")
    assert loc(None, (1, "b")) == ("null", '[1, "b"]')
    assert loc("\ud800") == ("\\ud800",)


def test_an_issue_without_loc_or_kind_is_an_invalid_root() -> None:
    (detail,) = issue_details([Issue("a.b", "odd")])
    assert (detail.loc, detail.type) == ((), "invalid")
