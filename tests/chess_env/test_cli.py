"""``python -m chess_env``: the demo a new user runs first, and the flags of ``serve``."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest.mock import Mock

import chess.pgn
import pytest

from chess_env.__main__ import main

if TYPE_CHECKING:
    from fastapi import FastAPI


def run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "chess_env", *args], capture_output=True, text=True, check=True
    )
    return result.stdout


def test_demo_prints_a_board_a_replayable_pgn_and_the_outcome() -> None:
    out = run("demo", "--seed", "3", "--max-plies", "60")
    assert out.startswith("  a b c d e f g h")
    game = chess.pgn.read_game(io.StringIO(out[out.index("[Event") :]))
    assert game is not None and game.headers["White"] == "greedy"
    assert not game.errors  # every move in the PGN is legal when replayed
    board = game.end().board()
    assert "Outcome: " in out
    if board.outcome() is None:
        assert "unfinished after 60 plies" in out
    assert out == run("demo", "--seed", "3", "--max-plies", "60")  # seeded: the same game


def test_no_arguments_means_demo_and_bad_names_are_rejected() -> None:
    assert '[Event "polyarena demo"]' in run()
    bad = subprocess.run(
        [sys.executable, "-m", "chess_env", "demo", "--white", "magnus"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "unknown player 'magnus'" in bad.stderr
    assert bad.stderr.startswith("python -m chess_env demo: error:") and not bad.stdout


# -- python -m chess_env serve ------------------------------------------------------------------


def serve_app(monkeypatch: pytest.MonkeyPatch, *argv: str) -> FastAPI:
    """The app ``python -m chess_env serve ...`` would run, without running it."""
    pytest.importorskip("fastapi")  # the server extra
    import chess_env.serving.app  # serve() calls the make_server it imported

    served: list[FastAPI] = []

    def make_server(app: FastAPI, **_: Any) -> Mock:
        served.append(app)
        return Mock()

    monkeypatch.setattr(chess_env.serving.app, "make_server", make_server)
    main(["serve", *argv])
    return served[0]


def game_service(app: FastAPI) -> Any:
    mounted = next(route.app for route in app.routes if getattr(route, "path", "") == "/service")
    return mounted.state.chess_service


def test_serve_passes_session_and_game_settings_through(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--max-sessions", "3", "--idle-timeout", "90", "--service"]
    app = serve_app(monkeypatch, *argv, "--max-games", "5", "--cleanup-interval", "2.5")
    store = app.state.env_service.store
    assert (store.max_sessions, store.idle_timeout) == (3, 90.0)
    service = game_service(app)
    assert service.cleanup_interval == 2.5
    assert service.games.max_games == 5
    assert service.games.idle_timeout == timedelta(seconds=90)


def busy_poll_window(app: FastAPI) -> float:
    from envkit.server.busy_poll import BusyPoll

    (window,) = [m.kwargs["window"] for m in app.user_middleware if m.cls is BusyPoll]
    return float(window)


@pytest.mark.parametrize(("argv", "window"), [([], 0.5e-3), (["--busy-poll-ms", "2"], 2e-3),
                                              (["--busy-poll-ms", "0"], 0.0)])  # fmt: skip
def test_serve_busy_polls_for_the_given_milliseconds(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], window: float
) -> None:
    assert busy_poll_window(serve_app(monkeypatch, *argv)) == pytest.approx(window)


def test_serve_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    app = serve_app(monkeypatch)
    store = app.state.env_service.store
    assert (store.max_sessions, store.idle_timeout) == (64, 600.0)
    assert not any(getattr(route, "path", "") == "/service" for route in app.routes)
    service = game_service(serve_app(monkeypatch, "--service"))
    assert service.cleanup_interval == 60.0
    assert (service.games.max_games, service.games.idle_timeout) == (100, timedelta(minutes=30))


def test_serve_passes_the_player_and_client_limits_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    players = ["--max-engines", "3", "--max-searches-per-client", "2", "--max-think-seconds", "1.5"]
    clients = ["--max-live-games-per-client", "4", "--max-spectators-per-game", "9"]
    service = game_service(serve_app(monkeypatch, "--service", *players, *clients))
    limits = service.budget.limits
    assert (limits.max_engines, limits.max_searches_per_client) == (3, 2)
    assert (limits.max_think_seconds, limits.max_depth) == (1.5, 20)  # unset: the default
    assert (service.max_live_games_per_client, service.max_spectators_per_game) == (4, 9)
    assert service.max_spectators_per_client == 16


def test_serve_gives_the_websocket_output_limit_to_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chess_env.serving.app

    options: list[dict[str, Any]] = []
    monkeypatch.setattr(
        chess_env.serving.app, "make_server", lambda app, **kw: options.append(kw) or Mock()
    )
    main(["serve", "--max-ws-pending-bytes", "65536"])
    main(["serve"])
    assert [kw["max_ws_pending_bytes"] for kw in options] == [65536, 1 << 20]


def test_serve_passes_the_archive_and_game_length_settings_through(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv = ["--archive", str(tmp_path), "--max-archive-bytes", "5000000", "--no-resume"]
    app = serve_app(monkeypatch, *argv, "--max-plies", "300", "--session-owner-check")
    games = game_service(app).games
    assert (games.max_archive_bytes, games.resume, games.max_plies) == (5_000_000, False, 300)
    assert app.state.env_service.store.owner_check
    games = game_service(serve_app(monkeypatch, "--service")).games
    assert (games.max_plies, games.archive_dir) == (1000, None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-engine-depth", "40"], "max_depth must be in 1..30, got 40"),
        (["--max-engines", "0"], "argument --max-engines: must be a positive number"),
        (["--max-live-games-per-client", "2"], "--max-live-games-per-client is a setting of"),
        (["--service", "--no-resume"], "--no-resume is a setting of --archive"),
        (["--max-plies", "0", "--service"], "argument --max-plies: must be a positive number"),
        (["--idle-timeout", "0"], "argument --idle-timeout: must be a positive number, got '0'"),
        (["--idle-timeout", "-5"], "argument --idle-timeout: must be a positive number, got '-5'"),
        (["--idle-timeout", "soon"], "argument --idle-timeout: not a number: 'soon'"),
        (
            ["--service", "--cleanup-interval", "inf"],
            "argument --cleanup-interval: must be a positive number, got 'inf'",
        ),
        (
            ["--service", "--cleanup-interval", "nan"],
            "argument --cleanup-interval: must be a positive number, got 'nan'",
        ),
        (["--max-sessions", "0"], "argument --max-sessions: must be a positive number"),
        (["--service", "--max-games", "2.5"], "argument --max-games: not a whole number: '2.5'"),
        (["--max-games", "5"], "--max-games is a setting of --service (or --archive)"),
        (["--cleanup-interval", "5"], "--cleanup-interval is a setting of --service"),
        (["--rate-limit", "-1"], "--rate-limit must be 0 (no limit) or more"),
        (["--busy-poll-ms", "-0.5"], "--busy-poll-ms must be 0 (off) or a finite number above"),
        (["--busy-poll-ms", "nan"], "--busy-poll-ms must be 0 (off) or a finite number above"),
        (["--busy-poll-ms", "inf"], "--busy-poll-ms must be 0 (off) or a finite number above"),
        (["--busy-poll-ms", "fast"], "argument --busy-poll-ms: invalid float value: 'fast'"),
    ],
)
def test_serve_refuses_bad_settings_with_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *argv])
    assert exited.value.code == 2
    assert f"python -m chess_env serve: error: {message}" in capsys.readouterr().err


# -- python -m chess_env play -------------------------------------------------------------------


def test_play_shows_every_move_and_writes_the_pgn_and_svg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pgn, svg = tmp_path / "game.pgn", tmp_path / "board.svg"
    argv = ["play", "--white", "alphabeta:1", "--black", "random", "--max-plies", "6"]
    assert main([*argv, "--render", "svg", "--svg", str(svg), "--pgn", str(pgn)]) == 0
    out = capsys.readouterr().out
    game = chess.pgn.read_game(io.StringIO(pgn.read_text()))
    assert game is not None and not game.errors
    assert (game.headers["White"], game.headers["Black"]) == ("alphabeta:1", "random")
    moves = list(game.mainline_moves())
    assert len(moves) == 6 and out.splitlines()[0].startswith("1. ")
    assert out.splitlines()[1].startswith("1... ")  # one line a move, in SAN
    assert svg.read_text().startswith("<svg") and "unfinished after 6 plies" in out
    assert main([*argv, "--render", "ansi"]) == 0
    assert capsys.readouterr().out.count("  a b c d e f g h") == 12  # a board after each move


def test_play_lets_a_person_type_moves(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter(["e5", "e4", "resign"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert main(["play", "--white", "human", "--black", "greedy"]) == 0
    out = capsys.readouterr().out
    assert "not played (" in out and "1. e4" in out
    assert "Result: 0-1 (white failed: white resigned)" in out
