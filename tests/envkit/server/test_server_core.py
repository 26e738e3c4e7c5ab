"""The generic server core with a toy env: the adapter protocol, sessions and unexpected errors."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Field

from envkit.server import (
    AdapterResult,
    CapacityError,
    EpisodeState,
    EpisodeStateError,
    InvalidInputError,
    SessionStore,
    ToolSpec,
    UnknownSessionError,
    create_app,
)
from envkit.server.sessions import SessionBusyError


class Add(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delta: int = Field(ge=-20, le=20, strict=True, description="What to add")


class Total(BaseModel):
    total: int = Field(description="The running total")
    note: str | None = Field(None, description="Set only when there is something to say")


class CounterState(EpisodeState):
    total: int | None = Field(None, description="The running total")


class Counter:
    """Add numbers until the total reaches 3; 13 is unlucky (a bug); odd totals are refused."""

    name, description, version = "counter", "Adds numbers", "2.0"
    action_model, observation_model, state_model = Add, Total, CounterState
    closed: list[Counter] = []

    def __init__(self) -> None:
        self.total: int | None = None

    def reset(self, *, seed: int | None = None, **options: Any) -> AdapterResult:
        self.total = int(options.get("start", 0))
        return AdapterResult(Total(total=self.total, note=f"seed {seed}"))

    def step(self, action: Add) -> AdapterResult:
        if self.total is None:
            raise EpisodeStateError("reset first")
        if action.delta == 7:
            raise InvalidInputError("7 is not allowed", reason="seven")
        if action.delta == 13:
            raise RuntimeError("unlucky")
        self.total += action.delta
        return AdapterResult(Total(total=self.total), 1.0, self.total >= 3, {"delta": action.delta})

    def state(self) -> dict[str, Any]:
        return {} if self.total is None else {"total": self.total}

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec("add", "Add a number", "(delta :int) -> :any")]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> AdapterResult:
        return self.step(Add(**arguments))

    def close(self) -> None:
        Counter.closed.append(self)


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(Counter), raise_server_exceptions=False)


def test_any_adapter_is_served_with_its_own_schemas_and_tools(client: TestClient) -> None:
    assert client.get("/metadata").json() == {
        "name": "counter",
        "description": "Adds numbers",
        "version": "2.0",
    }
    schemas = client.get("/schema").json()
    assert schemas["action"]["properties"]["delta"]["maximum"] == 20
    assert set(schemas["state"]["properties"]) == {"episode_id", "step_count", "total"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    (tool,) = client.post("/mcp", json=listing).json()["result"]["tools"]
    assert tool["name"] == "add" and tool["inputSchema"]["properties"] == {
        "delta": {"type": "integer"}
    }


def test_unset_observation_fields_are_left_out_and_metadata_is_passed_on(
    client: TestClient,
) -> None:
    first = client.post("/reset", json={"seed": 3, "start": 1}).json()
    assert first["observation"] == {"total": 1, "note": "seed 3"}
    header = {"X-Session-Id": first["session_id"]}
    step = client.post("/step", json={"action": {"delta": 2}}, headers=header).json()
    assert step["observation"] == {"total": 3}  # note was not set: absent, not null
    assert step["metadata"] == {"delta": 2} and step["done"] is True and step["reward"] == 1.0
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"start": 2}})
        ws.receive_json()
        ws.send_json({"type": "step", "data": {"delta": 1}})
        assert ws.receive_json()["data"]["metadata"] == {"delta": 1}


def test_an_unexpected_error_is_an_execution_error_that_changes_nothing(
    client: TestClient,
) -> None:
    session = client.post("/reset", json={}).json()["session_id"]
    crashed = client.post("/step", json={"action": {"delta": 13}, "session_id": session})
    assert crashed.status_code == 500
    assert client.get("/state", params={"session_id": session}).json()["step_count"] == 0
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {}})
        ws.receive_json()
        ws.send_json({"type": "step", "data": {"delta": 13}})
        assert ws.receive_json()["data"] == {
            "code": "EXECUTION_ERROR",
            "message": "RuntimeError: unlucky",
        }
        ws.send_json({"type": "step", "data": {"delta": 1}})
        assert ws.receive_json()["data"]["observation"] == {"total": 1}
    call = {"name": "add", "arguments": {"delta": 13}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    error = client.post("/mcp", json=request).json()["error"]
    assert error["code"] == -32603 and error["message"] == "RuntimeError: unlucky"


def test_refusals_of_the_adapter_keep_their_reason(client: TestClient) -> None:
    session = client.post("/reset", json={}).json()["session_id"]
    refused = client.post("/step", json={"action": {"delta": 7}, "session_id": session}).json()
    assert refused == {"detail": "7 is not allowed", "code": "VALIDATION_ERROR", "reason": "seven"}


def test_the_server_closes_every_env_it_made() -> None:
    Counter.closed.clear()
    with TestClient(create_app(Counter)) as client:  # the lifespan closes sessions at shutdown
        assert len(Counter.closed) == 1  # the probe that read the name, schemas and tools
        client.post("/step", json={"action": {"delta": 1}})  # a fresh env, closed at once
        assert len(Counter.closed) == 2
        client.post("/reset", json={})
    assert len(Counter.closed) == 3


# -- SessionStore -------------------------------------------------------------------------------


def test_sessions_have_uuid4_ids_and_a_cap() -> None:
    store = SessionStore(Counter, max_sessions=2)
    ids = {store.create().id, store.create().id}
    assert len(ids) == 2 and all(uuid.UUID(i).version == 4 for i in ids)
    with pytest.raises(CapacityError, match="all 2 sessions are in use"):
        store.create()
    assert store.close(ids.pop()) and not store.close(str(uuid.uuid4()))
    store.create()
    with pytest.raises(UnknownSessionError), store.use("missing"):
        pass


def test_only_idle_unpinned_sessions_expire() -> None:
    now = [0.0]
    store = SessionStore(Counter, idle_timeout=10, clock=lambda: now[0])
    idle, pinned, busy = store.create(), store.create(pinned=True), store.create()
    now[0] = 5.0
    with store.use(busy.id):
        now[0] = 30.0
        assert store.expire_idle() == [idle.id]  # busy is in use: never closed under its caller
    assert idle.closed and not pinned.closed and not busy.closed
    now[0] = 41.0  # 11 s after busy's call ended
    assert store.expire_idle() == [busy.id] and len(store) == 1


def test_idle_sweeps_run_at_most_once_per_sweep_interval() -> None:
    now = [0.0]
    store = SessionStore(Counter, idle_timeout=10, clock=lambda: now[0])
    assert store.sweep_interval == 1.0  # a tenth of the timeout, at most 1 s
    idle = store.create()  # swept at 0
    now[0] = 9.5
    busy = store.create()  # swept at 9.5: idle is not idle enough yet
    now[0] = 10.2
    with store.use(busy.id):  # no sweep before 10.5: idle, though expired, is still held
        pass
    assert not idle.closed and len(store) == 2
    with pytest.raises(UnknownSessionError, match="expired after idling"), store.use(idle.id):
        pass  # but looking it up refuses it, and closes it
    assert idle.closed and len(store) == 1
    now[0] = 15.0
    late = store.create()
    now[0] = 20.3  # busy was last used at 10.2
    with store.use(late.id):  # a sweep is due: busy goes, though nobody looked it up
        assert busy.closed and len(store) == 1


def test_a_full_store_sweeps_before_refusing_and_attach_refuses_expired_sessions() -> None:
    now = [0.0]
    store = SessionStore(
        Counter, max_sessions=2, idle_timeout=10, sweep_interval=100, clock=lambda: now[0]
    )
    first, second = store.create(), store.create()
    now[0] = 11.0  # both expired, the next sweep due at 100
    with pytest.raises(UnknownSessionError, match="no session"):
        store.attach(second.id)
    assert not second.pinned
    store.create()  # full: it sweeps instead of refusing
    assert first.closed and second.closed and len(store) == 1


def test_a_session_closed_while_a_call_waits_is_unknown_to_it() -> None:
    store = SessionStore(Counter)
    session = store.create()
    outcome: list[str] = []
    with store.use(session.id):
        closer = threading.Thread(target=store.close, args=(session.id,))
        closer.start()
        outcome.append("still mine")  # close waits for this call to finish
    closer.join(timeout=5)
    assert outcome == ["still mine"] and session.closed
    with pytest.raises(UnknownSessionError), store.use(session.id):
        pass


def test_use_releases_the_session_when_its_body_or_its_entry_fails() -> None:
    now = [0.0]
    store = SessionStore(Counter, idle_timeout=10, sweep_interval=100, clock=lambda: now[0])
    session = store.create()
    now[0] = 5.0
    with pytest.raises(RuntimeError, match="the call failed"), store.use(session.id):
        raise RuntimeError("the call failed")
    assert session.last_used == 5.0 and session.lock.acquire(blocking=False)
    session.lock.release()
    session.closed = True  # as if closed between the lookup and the lock
    with pytest.raises(UnknownSessionError, match="was closed"), store.use(session.id):
        pass
    assert session.lock.acquire(blocking=False)  # the refused entry let go of the lock


def test_store_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        SessionStore(Counter, max_sessions=0)
    with pytest.raises(ValueError, match="idle_timeout"):
        SessionStore(Counter, idle_timeout=0)
    with pytest.raises(ValueError, match="sweep_interval"):
        SessionStore(Counter, sweep_interval=-1)


class NeverBlockingCounter(Counter):
    """A ``Counter`` that says its steps never block, and records whether one ran on the loop."""

    blocking = False
    on_loop: list[bool] = []

    def step(self, action: Add) -> AdapterResult:
        NeverBlockingCounter.on_loop.append(running_on_event_loop())
        return super().step(action)


def running_on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class BlockingCounter(NeverBlockingCounter):
    blocking = True


@pytest.mark.parametrize(
    ("adapter", "on_loop"),
    [(NeverBlockingCounter, [True, True, False]), (BlockingCounter, [False, False, False])],
)
def test_http_steps_run_on_the_event_loop_only_for_envs_that_never_block(
    adapter: type[Counter], on_loop: list[bool]
) -> None:
    """Session steps, refused ones too, of a never-blocking env; stateless ones build an env."""
    NeverBlockingCounter.on_loop.clear()
    client = TestClient(create_app(adapter))
    session_id = client.post("/reset", json={}).json()["session_id"]
    reply = client.post("/step", json={"action": {"delta": 2}, "session_id": session_id})
    assert reply.json()["observation"] == {"total": 2}
    refused = client.post("/step", json={"action": {"delta": 7}, "session_id": session_id})
    assert refused.status_code == 422 and refused.json()["reason"] == "seven"
    stateless = client.post("/step", json={"action": {"delta": 1}})
    assert stateless.json()["observation"] == {"total": 1}
    assert NeverBlockingCounter.on_loop == on_loop
    assert client.get("/state", params={"session_id": session_id}).json()["total"] == 2


def step_by(client: TestClient, route: str, session_id: str) -> dict[str, Any]:
    """One ``{"delta": 2}`` step over HTTP or over a WebSocket attached to the session."""
    if route == "http":
        body = {"action": {"delta": 2}, "session_id": session_id}
        observation: dict[str, Any] = client.post("/step", json=body).json()["observation"]
        return observation
    with client.websocket_connect(f"/ws?session_id={session_id}") as ws:
        ws.send_json({"type": "step", "data": {"delta": 2}})
        observation = ws.receive_json()["data"]["observation"]
        return observation


@pytest.mark.parametrize("route", ["http", "ws"])
def test_a_free_session_steps_on_the_event_loop(route: str) -> None:
    NeverBlockingCounter.on_loop.clear()
    client = TestClient(create_app(NeverBlockingCounter))
    session_id = client.post("/reset", json={}).json()["session_id"]
    assert step_by(client, route, session_id) == {"total": 2}
    assert NeverBlockingCounter.on_loop == [True]


@pytest.mark.parametrize("route", ["http", "ws"])
def test_a_step_on_a_busy_session_waits_on_a_worker_not_on_the_event_loop(
    route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    NeverBlockingCounter.on_loop.clear()
    client = TestClient(create_app(NeverBlockingCounter))
    session_id = client.post("/reset", json={}).json()["session_id"]
    store = client.app.state.env_service.store  # type: ignore[attr-defined]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.use(session_id):
            held.set()
            release.wait(timeout=10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=5)
    with pytest.raises(SessionBusyError), store.use(session_id, wait=False):
        pass
    waiting = threading.Event()
    use = store.use

    def use_and_tell(session_id: str, *, wait: bool = True) -> Any:
        if wait and threading.current_thread() is not holder:
            waiting.set()  # someone other than the holder is about to wait for the session
        return use(session_id, wait=wait)

    monkeypatch.setattr(store, "use", use_and_tell)
    replies: list[dict[str, Any]] = []
    stepper = threading.Thread(target=lambda: replies.append(step_by(client, route, session_id)))
    stepper.start()
    assert waiting.wait(timeout=5)
    # The step waits for the session; the loop still answers other requests meanwhile.
    health: list[Any] = []
    checker = threading.Thread(target=lambda: health.append(client.get("/health").json()))
    checker.start()
    checker.join(timeout=5)
    blocked_loop = checker.is_alive()
    release.set()
    assert not blocked_loop and health == [{"status": "healthy"}]
    holder.join(timeout=5)
    stepper.join(timeout=5)
    assert replies == [{"total": 2}]
    assert NeverBlockingCounter.on_loop == [False]


def test_the_event_loops_entry_never_sweeps_and_a_worker_call_does() -> None:
    now = [0.0]
    store = SessionStore(Counter, idle_timeout=10, clock=lambda: now[0])
    idle, busy = store.create(), store.create()
    now[0] = 12.0  # both expired, a sweep due
    with pytest.raises(UnknownSessionError, match="expired"), store.use(busy.id, wait=False):
        pass
    assert not idle.closed and not busy.closed and len(store) == 2  # refused, nothing closed
    with pytest.raises(UnknownSessionError), store.use("missing"):
        pass
    assert idle.closed and busy.closed and len(store) == 0  # a worker's call swept both


class LoopWatchingCounter(NeverBlockingCounter):
    """Records, for each env closed, whether the close ran on the event loop."""

    closed_on_loop: list[bool] = []

    def close(self) -> None:
        LoopWatchingCounter.closed_on_loop.append(running_on_event_loop())


def test_sweeps_close_envs_off_the_event_loop() -> None:
    """A sweep's closes may take milliseconds each (an engine quitting): never on the loop."""
    now = [0.0]
    client = TestClient(create_app(LoopWatchingCounter, idle_timeout=10, clock=lambda: now[0]))
    idle = client.post("/reset", json={}).json()["session_id"]
    active = client.post("/reset", json={}).json()["session_id"]
    now[0] = 5.0
    client.post("/step", json={"action": {"delta": 2}, "session_id": active})
    now[0] = 12.0  # idle expired, active not; a sweep is due
    NeverBlockingCounter.on_loop.clear()
    LoopWatchingCounter.closed_on_loop.clear()  # the probe env create_app closed at start-up
    client.post("/step", json={"action": {"delta": 0}, "session_id": active})
    assert NeverBlockingCounter.on_loop == [True] and LoopWatchingCounter.closed_on_loop == []
    with client.websocket_connect("/ws") as socket:  # opening its session sweeps, on a worker
        socket.send_json({"type": "reset", "data": {}})
        assert socket.receive_json()["type"] == "observation"
    assert LoopWatchingCounter.closed_on_loop[:1] == [False]  # idle's close, on a worker
    assert client.get("/state", params={"session_id": idle}).status_code == 404
