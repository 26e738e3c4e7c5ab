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
    Figures,
    bare_app,
    floor_line,
    live_server,
    unpolled_line,
    verdicts,
    zero_work_app,
    zero_work_line,
)
from chess_env.server import create_chess_app


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
    results = {"a": rows(5000, 0.2), "e": rows(2000, 0.45), "f": rows(1000, 0.8)}
    results["i"] = rows(2500, 0.4)
    line = floor_line(results, "polling")
    assert "the floor (i) has overhead +0.200 ms and (i)/(f) steps/s 2.50x" in line
    del results["f"]  # no OpenEnv: no ratio
    assert "the floor (i) has overhead +0.200 ms; (e)'s p50" in floor_line(results, "polling")
    assert line.endswith("(e)'s p50 is +0.050 ms over the floor's")


def test_the_unpolled_line_compares_ours_with_and_without_busy_polling() -> None:
    results = {"a": rows(5000, 0.2), "b": rows(2000, 0.45), "d": rows(1000, 0.8)}
    results["j"] = rows(1600, 0.5)
    line = unpolled_line(results, "blocking")
    assert "busy polling off, (j) has overhead +0.300 ms and (j)/(d) steps/s 1.60x" in line
    assert line.endswith("busy polling takes 0.050 ms off (b)'s p50")


def test_the_zero_work_line_reads_its_clients_row() -> None:
    results = {"p": [Figures(5000, 0.15, 0.5), Figures(5000, 0.18, 0.5), Figures(5000, 0.12, 0.5)]}
    line = zero_work_line(results, "blocking")
    assert line.startswith("blocking client: with a server that does no work (p), a round trip")
    assert "takes 0.150 ms p50" in line and line.endswith("(50% of the 0.3 ms target)")


def test_the_verdicts_judge_the_targets_with_the_packages_own_client_first() -> None:
    """Ours (t) meets both targets against OpenEnv's (u); without OpenEnv only (t) is judged."""
    results = {"a": rows(5000, 0.2), "t": rows(2000, 0.45), "u": rows(1000, 0.8)}
    results.update({key: rows(1500, 0.5) for key in "bdefhijkpqv"})
    lines = verdicts(results)
    assert (
        lines[0]
        == "Targets judged with the envkit WSEnvClient client; the other clients for comparison:"
    )
    assert lines[1].startswith("envkit WSEnvClient client: (t) WS overhead p50 over the in-process")
    assert lines[1].endswith(
        "= +0.250 ms (rounds: +0.250 ms .. +0.250 ms; 2/2 rounds meet <= 0.3 ms): PASS"
    )
    assert lines[2].endswith(
        "(t)/(u) steps/s = 2.00x (rounds: 2.00x .. 2.00x; 2/2 rounds meet >= 1.5): PASS"
    )
    assert "GenericEnvClient .sync() client: (l), (m): n/a, no OpenEnv" in lines
    results["t"] = rows(600, 0.55)
    assert verdicts(results)[1].endswith("0/2 rounds meet <= 0.3 ms): MISSED")
    assert verdicts(results)[2].endswith("0/2 rounds meet >= 1.5): MISSED")
