"""``python -m multiagent serve``: the same session, token and rate-limit flags as chess, and
``--allow-client-seeds`` (off by default: each episode's seed is the server's secret)."""

from __future__ import annotations

from typing import Any
from unittest.mock import Mock

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from envkit.server.access import RateLimit
from multiagent.__main__ import main

TOKEN = "s3cret-token-0123456789"


def serve_app(monkeypatch: pytest.MonkeyPatch, *argv: str) -> FastAPI:
    """The app ``python -m multiagent serve ...`` would run, without running it."""
    import multiagent.server  # serve() calls the make_server it imported

    served: list[FastAPI] = []

    def make_server(app: FastAPI, **_: Any) -> Mock:
        served.append(app)
        return Mock()

    monkeypatch.setattr(multiagent.server, "make_server", make_server)
    main(["serve", *argv])
    return served[0]


def rate_of(app: FastAPI) -> int | None:
    limits = [m.kwargs["limiter"].rate for m in app.user_middleware if m.cls is RateLimit]
    return limits[0] if limits else None


def guarded(app: FastAPI, token: str) -> bool:
    """Whether ``app`` refuses requests without ``token`` and takes them with it."""
    client = TestClient(app)
    refused = client.get("/metadata").status_code == 401
    auth = {"Authorization": f"Bearer {token}"}
    return refused and client.get("/metadata", headers=auth).status_code == 200


def test_serve_passes_its_settings_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLYARENA_TOKEN", raising=False)
    argv = ["--world", "forage", "--max-sessions", "3", "--idle-timeout", "90"]
    app = serve_app(monkeypatch, *argv, "--token", TOKEN, "--rate-limit", "7")
    store = app.state.env_service.store
    assert (store.max_sessions, store.idle_timeout, rate_of(app)) == (3, 90.0, 7)
    assert app.state.env_service.info.name.startswith("forage")
    assert guarded(app, TOKEN)


def test_serve_defaults_match_chess(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYARENA_TOKEN", TOKEN)
    app = serve_app(monkeypatch)
    store = app.state.env_service.store
    assert (store.max_sessions, store.idle_timeout, rate_of(app)) == (64, 600.0, None)
    assert guarded(app, TOKEN)  # from the environment
    assert rate_of(serve_app(monkeypatch, "--rate-limit", "0")) is None


def test_client_seeds_are_refused_unless_the_operator_allows_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POLYARENA_TOKEN", raising=False)
    hosted = TestClient(serve_app(monkeypatch, "--world", "forage"))
    refused = hosted.post("/reset", json={"seed": 3})
    assert refused.status_code == 422 and refused.json()["reason"] == "seed_not_allowed"
    session = hosted.post("/reset", json={}).json()["session_id"]
    assert "seed" not in hosted.get("/state", params={"session_id": session}).json()
    allowed = TestClient(serve_app(monkeypatch, "--world", "forage", "--allow-client-seeds"))
    first, again = (allowed.post("/reset", json={"seed": 3}).json() for _ in range(2))
    assert first["observation"] == again["observation"]  # same seed, same episode
    state = allowed.get("/state", params={"session_id": first["session_id"]}).json()
    assert state["seed"] == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-sessions", "0"], "argument --max-sessions: must be a positive number, got '0'"),
        (["--max-sessions", "two"], "argument --max-sessions: not a whole number: 'two'"),
        (["--idle-timeout", "-1"], "argument --idle-timeout: must be a positive number, got '-1'"),
        (["--idle-timeout", "inf"], "argument --idle-timeout: must be a positive number"),
        (["--rate-limit", "-3"], "--rate-limit must be 0 (no limit) or more"),
    ],
)
def test_serve_refuses_bad_settings_with_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *argv])
    assert exited.value.code == 2
    assert f"python -m multiagent serve: error: {message}" in capsys.readouterr().err
