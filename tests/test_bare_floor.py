"""``benchmarks.server_throughput``'s reference servers: the floor (``bare_app``) must do a served
step's work, so its frames for a game are our server's; the zero-work server answers every message
with one frame; and their verdict lines read the right rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra: pip install -e .[server]")

from websockets.sync.client import connect

from benchmarks.server_throughput import (
    BASELINE,
    BLOCKING,
    ENVKIT,
    FLOOR,
    HTTP,
    OPENENV,
    POLLING,
    SETUPS,
    UNPOLLED,
    WSENV,
    ZERO_WORK,
    Figures,
    Setup,
    bare_app,
    contender,
    floor_line,
    live_server,
    table,
    unpolled_line,
    verdicts,
    zero_work_app,
    zero_work_line,
)
from chess_env.serving.app import create_chess_app


def frames_of_a_game(address: str, seed: int, plies: int) -> list[dict[str, Any]]:
    frames = []
    with connect(f"ws://{address}/ws", compression=None) as connection:
        connection.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        frames.append(json.loads(connection.recv()))
        for ply in range(plies):
            legal = frames[-1]["data"]["observation"]["legal_moves"]
            connection.send(json.dumps({"type": "step", "data": {"move": legal[ply % len(legal)]}}))
            frames.append(json.loads(connection.recv()))
            if frames[-1]["data"]["done"]:
                break
    return frames


def test_the_floor_answers_what_our_server_answers() -> None:
    with (
        live_server(create_chess_app, same_process=True) as ours,
        live_server(bare_app, same_process=True) as bare,
    ):
        for seed in (0, 7):
            expected = frames_of_a_game(ours, seed, 60)
            assert frames_of_a_game(bare, seed, 60) == expected
            assert len(expected) > 20 and expected[-1]["type"] == "observation"


def test_the_zero_work_server_answers_every_message_with_a_games_first_observation() -> None:
    with live_server(zero_work_app, same_process=True) as address:
        frames = frames_of_a_game(address, 3, 5)
    first = frames[0]["data"]["observation"]
    assert first["ply"] == 0 and len(first["legal_moves"]) == 20
    assert len(frames) == 6 and all(frame == frames[0] for frame in frames)


def rows(rate: float, p50: float) -> list[Figures]:
    """Two rounds alike."""
    return [Figures(rate, p50, 2 * p50), Figures(rate, p50, 2 * p50)]


def test_the_floor_line_compares_the_floors_rows_with_ours_and_openenvs() -> None:
    results = {
        BASELINE: rows(5000, 0.2),
        Setup(ENVKIT, POLLING): rows(2000, 0.45),
        Setup(OPENENV, POLLING): rows(1000, 0.8),
        Setup(FLOOR, POLLING): rows(2500, 0.4),
    }
    line = floor_line(results, POLLING)
    assert line.startswith("polling socket client: floor (bare ASGI app) has overhead +0.200 ms")
    assert "+0.200 ms and 2.50x OpenEnv create_app's steps/s;" in line
    assert line.endswith("envkit's p50 is +0.050 ms over the floor's")
    del results[Setup(OPENENV, POLLING)]  # no OpenEnv: no ratio
    assert "has overhead +0.200 ms; envkit's p50" in floor_line(results, POLLING)


def test_the_unpolled_line_compares_ours_with_and_without_busy_polling() -> None:
    results = {
        BASELINE: rows(5000, 0.2),
        Setup(ENVKIT, BLOCKING): rows(2000, 0.45),
        Setup(OPENENV, BLOCKING): rows(1000, 0.8),
        Setup(UNPOLLED, BLOCKING): rows(1600, 0.5),
    }
    line = unpolled_line(results, BLOCKING)
    assert "envkit, busy polling off has overhead +0.300 ms and 1.60x OpenEnv create_app's" in line
    assert line.endswith("busy polling takes 0.050 ms off envkit's p50")


def test_the_zero_work_line_reads_its_clients_row() -> None:
    results = {
        Setup(ZERO_WORK, BLOCKING): [
            Figures(5000, 0.15, 0.5), Figures(5000, 0.18, 0.5), Figures(5000, 0.12, 0.5)
        ],
        Setup(ZERO_WORK, POLLING): rows(9000, 0.05),
    }  # fmt: skip
    line = zero_work_line(results, BLOCKING)
    assert line.startswith("websockets (blocking) client: with a server that does no work, a round")
    assert "takes 0.150 ms p50" in line and line.endswith("(50% of the 0.3 ms target)")


def test_the_verdicts_judge_the_targets_with_the_packages_own_client_first() -> None:
    """Ours meets both targets against OpenEnv's with WSEnvClient; without OpenEnv, the clients
    that need it are n/a."""
    results = {
        BASELINE: rows(5000, 0.2),
        Setup(ENVKIT, WSENV): rows(2000, 0.45),
        Setup(OPENENV, WSENV): rows(1000, 0.8),
    }
    for client in (BLOCKING, POLLING):
        for server in (ENVKIT, FLOOR, UNPOLLED):
            results[Setup(server, client)] = rows(1500, 0.5)
    for client in (WSENV, BLOCKING, POLLING):
        results[Setup(ZERO_WORK, client)] = rows(1500, 0.5)
    lines = verdicts(results)
    assert (
        lines[0]
        == "Targets judged with the envkit WSEnvClient client; the other clients for comparison:"
    )
    assert lines[1].startswith(
        "envkit WSEnvClient client: envkit's p50 overhead over the in-process step"
    )
    assert lines[1].endswith(
        "= +0.250 ms (rounds: +0.250 ms .. +0.250 ms; 2/2 rounds meet <= 0.3 ms): PASS"
    )
    assert lines[2].endswith(
        "envkit / OpenEnv create_app steps/s = 2.00x (rounds: 2.00x .. 2.00x; "
        "2/2 rounds meet >= 1.5): PASS"
    )
    assert "GenericEnvClient .sync() client: n/a, no OpenEnv" in lines
    assert "websockets (blocking) client: envkit / OpenEnv create_app steps/s: n/a, no OpenEnv" in (
        lines
    )
    results[Setup(ENVKIT, WSENV)] = rows(600, 0.55)
    assert verdicts(results)[1].endswith("0/2 rounds meet <= 0.3 ms): MISSED")
    assert verdicts(results)[2].endswith("0/2 rounds meet >= 1.5): MISSED")


def test_every_setup_has_a_client_that_can_drive_it() -> None:
    """The grid names only clients ``contender`` knows, and the table lists set-ups in its order."""
    for setup in SETUPS:
        if setup.server != BASELINE.server:
            assert callable(contender(setup.client, "127.0.0.1:1"))
    with pytest.raises(ValueError, match="no such client: carrier pigeon"):
        contender("carrier pigeon", "127.0.0.1:1")
    results = {BASELINE: rows(5000, 0.2), Setup(ENVKIT, HTTP): rows(700, 1.4)}
    assert [line.split(" | ")[:2] for line in table(results)[2:]] == [
        ["| in process", "ChessAdapter.step"],
        ["| envkit", "HTTP /reset + /step (keep-alive)"],
    ]
