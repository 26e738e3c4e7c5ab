"""Access limits of the server: the rate limit per client IP, the session cap per client, the
bearer token, the serve flags, and shutdown. Live attacks are in ``test_server_attacks``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from chess_env.__main__ import main
from chess_env.serving.app import create_chess_app
from envkit.server import make_server
from envkit.server.access import RateLimit, RateLimiter
from envkit.server.http_limits import HEADER_TIMEOUT_S, MAX_HEADER_BYTES

TOKEN = "s3cret-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# -- rate limit ---------------------------------------------------------------------------------


def test_a_request_over_the_limit_gets_429_with_retry_after(clock: FakeClock) -> None:
    client = TestClient(create_chess_app(rate_limit=3, clock=clock))
    assert [client.get("/metadata").status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get("/metadata")
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "20"  # 3 per minute: one more every 20 s
    assert refused.json()["code"] == "RATE_LIMITED"
    assert "3 requests per 60 s" in refused.json()["detail"]
    assert client.post("/reset", json={}).status_code == 429  # every route shares the budget


def test_the_budget_refills_with_time(clock: FakeClock) -> None:
    client = TestClient(create_chess_app(rate_limit=3, clock=clock))
    for _ in range(3):
        client.get("/metadata")
    clock.now += 19
    assert client.get("/metadata").headers["Retry-After"] == "1"
    clock.now += 1
    assert client.get("/metadata").status_code == 200
    assert client.get("/metadata").status_code == 429
    clock.now += 60  # a whole minute: the full burst again
    assert [client.get("/metadata").status_code for _ in range(4)] == [200, 200, 200, 429]


def test_each_client_ip_has_its_own_budget(clock: FakeClock) -> None:
    app = create_chess_app(rate_limit=2, clock=clock)
    first = TestClient(app, client=("1.2.3.4", 123))
    second = TestClient(app, client=("5.6.7.8", 123))
    assert [first.get("/metadata").status_code for _ in range(3)] == [200, 200, 429]
    assert [second.get("/metadata").status_code for _ in range(3)] == [200, 200, 429]
    same_ip_other_port = TestClient(app, client=("1.2.3.4", 999))
    assert same_ip_other_port.get("/metadata").status_code == 429


def test_health_is_exempt_and_costs_nothing(clock: FakeClock) -> None:
    client = TestClient(create_chess_app(rate_limit=1, clock=clock))
    assert all(client.get("/health").status_code == 200 for _ in range(20))
    assert client.get("/metadata").status_code == 200
    assert client.get("/metadata").status_code == 429
    assert client.get("/health").status_code == 200


def test_no_rate_limit_by_default() -> None:
    client = TestClient(create_chess_app())
    assert all(client.get("/metadata").status_code == 200 for _ in range(150))


def test_websocket_messages_over_the_limit_get_an_error_frame(clock: FakeClock) -> None:
    client = TestClient(create_chess_app(rate_limit=3, clock=clock))
    with client.websocket_connect("/ws") as ws:  # the handshake is one of the 3
        ws.send_text(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert ws.receive_json()["type"] == "observation"
        ws.send_text(json.dumps({"type": "step", "data": {"move": "e2e4"}}))
        assert ws.receive_json()["type"] == "observation"
        ws.send_text(json.dumps({"type": "step", "data": {"move": "e7e5"}}))
        refused = ws.receive_json()
        assert refused["type"] == "error"
        assert refused["data"]["code"] == "RATE_LIMITED"
        assert refused["data"]["retry_after"] == 20
        clock.now += 20  # the connection stayed open, and the refused move was not played
        ws.send_text(json.dumps({"type": "state"}))
        assert ws.receive_json()["data"]["step_count"] == 1


def test_websocket_messages_and_http_requests_share_the_budget(clock: FakeClock) -> None:
    client = TestClient(create_chess_app(rate_limit=3, clock=clock))
    client.get("/metadata")
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "state"}))
        assert ws.receive_json()["type"] == "state"
        ws.send_text(json.dumps({"type": "state"}))
        assert ws.receive_json()["data"]["code"] == "RATE_LIMITED"


def test_a_websocket_handshake_over_the_budget_gets_429(clock: FakeClock) -> None:
    app = create_chess_app(rate_limit=2, clock=clock)
    client = TestClient(app)
    client.get("/metadata")
    with client.websocket_connect("/ws"):
        pass
    # The first socket's session may outlive it here: TestClient stops its event loop when the
    # socket closes, sometimes before the server's handler has removed the session.
    store = app.state.env_service.store
    before = len(store)
    with pytest.raises(WebSocketDenialResponse) as refused, client.websocket_connect("/ws"):
        pass
    assert refused.value.status_code == 429 and refused.value.headers["Retry-After"] == "30"
    assert refused.value.json()["code"] == "RATE_LIMITED"
    assert len(store) <= before  # the refused handshake opened no session


def test_the_limiter_forgets_clients_whose_bucket_refilled(clock: FakeClock) -> None:
    limiter = RateLimiter(10, period=60.0, clock=clock, max_clients=1000)
    for number in range(500):
        assert limiter.acquire(f"10.0.{number // 256}.{number % 256}") == 0
    assert len(limiter) == 500
    clock.now += 60
    assert limiter.acquire("192.0.2.1") == 0
    assert len(limiter) == 1  # the 500 stale ones are gone


def test_the_limiter_keeps_at_most_max_clients(clock: FakeClock) -> None:
    limiter = RateLimiter(1, clock=clock, max_clients=3)
    for number in range(10):
        limiter.acquire(f"10.0.0.{number}")
    assert len(limiter) == 3
    assert limiter.acquire("10.0.0.9") == 60  # the most recent ones are kept


def test_the_limiter_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="rate >= 1"):
        RateLimiter(0)
    with pytest.raises(ValueError, match="period > 0"):
        RateLimiter(5, period=0)


# -- sessions per client -----------------------------------------------------------------------


def capped(**settings: Any) -> FastAPI:
    return create_chess_app(max_sessions=6, max_sessions_per_client=2, **settings)


def test_http_and_websocket_sessions_share_a_client_s_cap() -> None:
    app = capped()
    client = TestClient(app, client=("10.0.0.1", 1))
    assert client.post("/reset", json={}).status_code == 200
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {}}))
        assert ws.receive_json()["type"] == "observation"
        refused = client.post("/reset", json={})
        assert refused.status_code == 503
        assert refused.json()["reason"] == "client_session_limit"
    assert client.post("/reset", json={}).status_code == 200  # the closed WebSocket freed one
    other = TestClient(app, client=("10.0.0.2", 1))
    assert [other.post("/reset", json={}).status_code for _ in range(3)] == [200, 200, 503]
    assert app.state.env_service.store.owned("10.0.0.1") == 2


def test_expired_sessions_free_their_client_s_slots(clock: FakeClock) -> None:
    app = capped(idle_timeout=60, clock=clock)
    client = TestClient(app)
    assert [client.post("/reset", json={}).status_code for _ in range(3)] == [200, 200, 503]
    clock.now += 61
    assert [client.post("/reset", json={}).status_code for _ in range(3)] == [200, 200, 503]


def test_a_full_server_still_says_so() -> None:
    app = create_chess_app(max_sessions=2, max_sessions_per_client=2)
    TestClient(app, client=("10.0.0.1", 1)).post("/reset", json={})
    full = TestClient(app, client=("10.0.0.2", 1))
    full.post("/reset", json={})
    refused = full.post("/reset", json={})
    assert refused.json()["code"] == "CAPACITY_REACHED" and "reason" not in refused.json()
    assert "all 2 sessions are in use" in refused.json()["detail"]


def test_the_cap_counts_the_client_a_named_proxy_names() -> None:
    app = capped(forwarded_allow_ips="10.0.0.9")
    proxy = TestClient(app, client=("10.0.0.9", 1))
    for n in range(3):
        forwarded = {"X-Forwarded-For": f"192.0.2.{n}"}
        assert proxy.post("/reset", json={}, headers=forwarded).status_code == 200
    assert app.state.env_service.store.owned("192.0.2.0") == 1


# -- bearer token -------------------------------------------------------------------------------


@pytest.fixture
def guarded() -> TestClient:
    return TestClient(create_chess_app(token=TOKEN))


@pytest.mark.parametrize("path", ["/metadata", "/schema", "/docs", "/openapi.json"])
def test_routes_need_the_token(guarded: TestClient, path: str) -> None:
    missing = guarded.get(path)
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert missing.json()["code"] == "UNAUTHORIZED"
    for wrong in (f"Bearer {TOKEN}x", "Bearer ", f"Basic {TOKEN}", TOKEN):
        refused = guarded.get(path, headers={"Authorization": wrong})
        assert refused.status_code == 401, wrong
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert guarded.get(path, headers=AUTH).status_code == 200
    assert guarded.get(path, headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_posts_need_the_token_before_the_body_is_read(guarded: TestClient) -> None:
    assert guarded.post("/reset", json={}).status_code == 401
    assert guarded.post("/reset", json={}, headers=AUTH).status_code == 200
    assert guarded.post("/mcp", json={"jsonrpc": "2.0", "id": 1}).status_code == 401


def test_health_needs_no_token(guarded: TestClient) -> None:
    assert guarded.get("/health").status_code == 200


def test_a_websocket_handshake_without_the_token_is_refused(guarded: TestClient) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}):
        with (
            pytest.raises(WebSocketDisconnect) as refused,
            guarded.websocket_connect("/ws", headers=headers),
        ):
            pass
        assert refused.value.code == 1008
    with guarded.websocket_connect("/ws", headers=AUTH) as ws:
        ws.send_text(json.dumps({"type": "state"}))
        assert ws.receive_json()["type"] == "state"


def test_an_empty_token_is_a_mistake() -> None:
    with pytest.raises(ValueError, match="token must not be empty"):
        create_chess_app(token="")


def test_wrong_tokens_count_towards_the_rate_limit(clock: FakeClock) -> None:
    client = TestClient(create_chess_app(token=TOKEN, rate_limit=2, clock=clock))
    guesses = [client.get("/metadata", headers={"Authorization": f"Bearer {n}"}) for n in range(3)]
    assert [guess.status_code for guess in guesses] == [401, 401, 429]
    assert client.get("/metadata", headers=AUTH).status_code == 429


def test_the_openapi_document_lists_the_new_refusals() -> None:
    app = create_chess_app(token=TOKEN, rate_limit=5)
    responses = app.openapi()["paths"]["/reset"]["post"]["responses"]
    assert {"401", "429"} <= set(responses)
    plain = create_chess_app().openapi()["paths"]["/reset"]["post"]["responses"]
    assert not {"401", "429"} & set(plain)


# -- shutdown -----------------------------------------------------------------------------------


def test_the_shutdown_hook_runs_once_after_the_envs_are_closed() -> None:
    calls: list[int] = []
    app = create_chess_app(on_shutdown=lambda: calls.append(len(app.state.env_service.store)))
    with TestClient(app) as client:
        client.post("/reset", json={})
        assert calls == []
    assert calls == [0]  # called once, with every session already closed


# -- python -m chess_env serve ------------------------------------------------------------------


def serve_app(monkeypatch: pytest.MonkeyPatch, *argv: str) -> FastAPI:
    """The app ``python -m chess_env serve ...`` would run, without running it."""
    served: list[FastAPI] = []

    class NoServer:
        def run(self) -> None:
            pass

    def make_server(app: FastAPI, **kwargs: Any) -> NoServer:
        served.append(app)
        return NoServer()

    import chess_env.serving.app  # the CLI runs its serve, which calls make_server there

    monkeypatch.setattr(chess_env.serving.app, "make_server", make_server)
    main(["serve", *argv])
    return served[0]


def test_serve_reads_the_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYARENA_TOKEN", TOKEN)
    client = TestClient(serve_app(monkeypatch))
    assert client.get("/metadata").status_code == 401
    assert client.get("/metadata", headers=AUTH).status_code == 200
    other = "another-token-of-16+"
    flag = TestClient(serve_app(monkeypatch, "--token", other))
    assert flag.get("/metadata", headers={"Authorization": f"Bearer {other}"}).status_code == 200


@pytest.mark.parametrize("token", ["short", "x" * 15])
def test_serve_refuses_a_short_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], token: str
) -> None:
    monkeypatch.delenv("POLYARENA_TOKEN", raising=False)
    with pytest.raises(SystemExit) as flag:
        serve_app(monkeypatch, "--token", token)
    assert flag.value.code == 2
    assert "--token must be at least 16 characters" in capsys.readouterr().err
    monkeypatch.setenv("POLYARENA_TOKEN", token)
    with pytest.raises(SystemExit) as variable:
        serve_app(monkeypatch)
    assert variable.value.code == 2
    assert "$POLYARENA_TOKEN must be at least 16" in capsys.readouterr().err


def test_serve_can_generate_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client = TestClient(serve_app(monkeypatch, "--token", "generate"))
    token = capsys.readouterr().err.split("bearer token: ")[1].strip()
    assert len(token) >= 40  # 32 random bytes
    assert client.get("/metadata").status_code == 401
    auth = {"Authorization": f"Bearer {token}"}
    assert client.get("/metadata", headers=auth).status_code == 200


def test_serve_caps_a_client_at_half_the_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLYARENA_TOKEN", raising=False)
    store = serve_app(monkeypatch).state.env_service.store
    assert (store.max_sessions, store.max_sessions_per_client) == (64, 32)
    store = serve_app(monkeypatch, "--max-sessions-per-client", "5").state.env_service.store
    assert store.max_sessions_per_client == 5


def test_serve_believes_forwarded_headers_only_from_named_proxies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POLYARENA_TOKEN", raising=False)
    assert not proxies_of(serve_app(monkeypatch))
    named = serve_app(monkeypatch, "--forwarded-allow-ips", "10.0.0.9,10.1.0.0/16")
    assert proxies_of(named) == ["10.0.0.9,10.1.0.0/16"]


def proxies_of(app: FastAPI) -> list[Any]:
    return [
        m.kwargs["trusted_hosts"] for m in app.user_middleware if m.cls is ProxyHeadersMiddleware
    ]


def test_make_server_trusts_no_proxy_and_limits_headers() -> None:
    config = make_server(create_chess_app(), port=0).config
    assert config.proxy_headers is False
    assert config.http.max_header_bytes == MAX_HEADER_BYTES == 32 * 1024
    assert config.http.header_timeout == HEADER_TIMEOUT_S == 10.0
    config = make_server(create_chess_app(), port=0, max_header_bytes=100, header_timeout=1).config
    assert (config.http.max_header_bytes, config.http.header_timeout) == (100, 1)


def test_serve_has_no_rate_limit_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLYARENA_TOKEN", raising=False)
    for argv in ((), ("--rate-limit", "0")):  # as create_app: no budget to end a game
        with pytest.raises(LookupError):
            limiter_of(serve_app(monkeypatch, *argv))
    assert limiter_of(serve_app(monkeypatch, "--rate-limit", "7")).rate == 7


def limiter_of(app: FastAPI) -> RateLimiter:
    for middleware in app.user_middleware:
        if middleware.cls is RateLimit:
            return middleware.kwargs["limiter"]
    raise LookupError("no rate limit")
