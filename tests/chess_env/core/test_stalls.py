"""``StallWatch`` sees a process stopped with SIGSTOP, and a Stockfish search cut short by such a
stop is made again instead of losing the game: the process under test is a real subprocess,
stopped and continued by the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from live_server import live_process
from stockfish_binary import needs_stockfish

from chess_env.core.stalls import STALLS

STALL_SECONDS = STALLS.stall
STOP_SECONDS = 8.0  # over the watch's 1 s stall, the guard's 1.5 s and the 6 s timeout below

WATCHED = textwrap.dedent(
    """
    import sys, time
    from chess_env.core.stalls import StallWatch
    watch = StallWatch()
    watch.watch()
    started = time.monotonic()
    print("ready", flush=True)
    sys.stdin.readline()  # the test stops and continues this process meanwhile
    print(watch.stalled_since(started), watch.stalled_since(time.monotonic()), flush=True)
    """
)


def test_a_stopped_process_sees_its_stall_and_only_that_one() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", WATCHED], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(3 * STALL_SECONDS)
        os.kill(child.pid, signal.SIGCONT)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().split() == ["True", "False"]
    finally:
        child.kill()
        child.wait(10)


@needs_stockfish
def test_an_engine_game_survives_the_server_being_stopped_mid_search() -> None:
    """The server is stopped for longer than its engine's timeout while the engine (a process of
    its own) thinks; the game plays on. Before, the server's clock counted the stop and the engine
    lost on time; and whether python-chess's own guard or the engine's answer is seen first on
    waking is a race, which a stall makes the search again instead of losing it (agent_error)."""
    with live_process("chess_env", "--service", "--max-think-seconds", "1") as (server, address):
        base = f"http://{address}"
        created = httpx.post(
            f"{base}/service/games",
            json={
                "white": {"player": "remote", "name": "Me"},
                "black": {"player": "stockfish?movetime=0.5", "name": "SF", "timeout_seconds": 6},
            },
            timeout=30,
        ).json()
        game_id, token = created["game"]["game_id"], created["tokens"]["white"]
        replies: list[httpx.Response] = []
        moving = threading.Thread(
            target=lambda: replies.append(
                httpx.post(
                    f"{base}/service/games/{game_id}/moves",
                    json={"move": "e4"},
                    headers={"X-Seat-Token": token},
                    timeout=60,
                )
            )
        )
        moving.start()
        time.sleep(0.2)  # the engine is searching now
        os.kill(server.pid, signal.SIGSTOP)
        time.sleep(STOP_SECONDS)
        os.kill(server.pid, signal.SIGCONT)
        moving.join(60)
    (reply,) = replies
    game = reply.json()
    assert reply.status_code == 200, reply.text
    assert (game["status"], len(game["move_history"])) == ("in_progress", 2), game["termination"]
