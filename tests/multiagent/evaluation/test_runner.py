"""``multiagent.evaluation.evaluate`` end to end, offline: scripted players and a scripted local
OpenAI-compatible endpoint. The scorecard must equal what the script did, field by field; a run
killed with SIGKILL and rerun gives the result an uninterrupted run gives (timings aside); LLM
seats are asked concurrently; one seat's failure never stops the others."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from envkit.llm import EndpointGate
from multiagent.evaluation import EvalConfigChangedError, evaluate
from multiagent.evaluation.records import EpisodeRecord
from multiagent.recording import load_episode_log
from multiagent.worlds import world_path

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from chat_server import ChatServer, Disconnect, HttpError, Slow, WithUsage

pytestmark = pytest.mark.filterwarnings("ignore::multiagent.errors.WorldConfigWarning")

FAST = {"Retry-After": "0"}  # the client's retries wait no longer than this
UP = '{"move": "up", "speed": 1}'


def forage_world(tmp_path: Path, **scenario: Any) -> Path:
    """Forage with a bounded ``speed`` field (for out-of-range answers) and one scenario,
    ``visitor``: Forager_1 focal, the others noop."""
    data = yaml.safe_load(world_path("forage").read_text())
    data["actions"]["speed"] = {"type": "int", "min": 0, "max": 3, "default": 0}
    data["scenarios"] = {
        "visitor": {
            "focal": ["Forager_1"],
            "background": {"forager": "noop"},
            "tags": ["visitor"],
            "baseline": "noop",
            **scenario,
        }
    }
    path = tmp_path / "forage-test.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def llm(server: ChatServer, **options: str) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"base_url": server.base_url,
                     "api_key_env": "NO_SUCH_KEY", **options}.items())  # fmt: skip
    return f"openai:test-model?{query}"


def records(out: Path) -> list[EpisodeRecord]:
    lines = (out / "episodes.jsonl").read_text().splitlines()
    return [EpisodeRecord.model_validate_json(line) for line in lines]


def test_the_seat_record_equals_what_the_scripted_endpoint_did(tmp_path: Path) -> None:
    script = [
        "I think I will go up this time.",  # turn 0: prose (no JSON) ...
        '{"move": "north", "speed": 1}',  # ... a bad enum: out of corrections, the world refuses
        HttpError(429, "slow down", FAST),  # turn 1: a rate limit, retried
        WithUsage('{"move": "up", "speed": 1}', 11, 3),
        HttpError(500, "boom", FAST),  # turn 2: a server error, retried ...
        '{"move": "up", "speed": 9}',  # ... an out-of-range number, corrected
        '{"move": "left", "speed": 0}',
        Disconnect(),  # turn 3: a dropped connection, retried
        WithUsage('```json\n{"move": "down", "speed": 2}\n```', 20, 4),
    ]
    with ChatServer(script) as server:
        result = evaluate(
            forage_world(tmp_path, episode_length=4),
            focal=[llm(server, retries="1")],
            episodes=1,
            baselines=False,
            out=tmp_path / "run",
            progress=False,
        )
        prompts = [request.json["messages"][1]["content"] for request in server.requests]
    (record,) = records(tmp_path / "run")
    seat = next(seat for seat in record.seats if seat.focal)
    assert (record.turns, record.end) == (4, "truncated")
    assert seat.model_dump(exclude={"latencies", "player"}) == {
        "schema_version": 1,
        "seat": "Forager_1",
        "role": "forager",
        "focal": True,
        "reward": seat.reward,
        "status": "truncated",
        "decisions": 4,
        "invalid_actions": 1,
        "invalid_reasons": {"bound": 1, "enum": 1, "env_refused": 1, "no_json": 1},
        "fallback_actions": 0,
        "requests": 6,
        "self_corrections": 2,
        "endpoint_retries": 3,
        "cached_requests": 0,
        "tokens_in": None,  # some replies reported no usage: unknown, never estimated
        "tokens_out": None,
        "leaks": 0,
        "failure": "",
    }
    assert len(seat.latencies) == 4
    assert "Your last action was refused" in prompts[2]
    assert "Your last action was refused" not in prompts[4]
    background = [s for s in record.seats if not s.focal]
    assert all(s.requests == 0 and s.decisions == 4 for s in background)
    (card,) = [card for card in result.players if card.player == seat.player]
    assert card.tokens_in == "unknown"
    log = load_episode_log(tmp_path / "run" / str(record.log))
    decided = [turn.decisions["Forager_1"] for turn in log.turns if turn.decisions]
    assert [step.requests for step in decided] == [2, 1, 2, 1]
    assert decided[0].error_kinds == ["no_json", "enum"] and not decided[0].valid
    assert log.players["Forager_1"] == seat.player and log.players["Forager_2"] == "noop"


def test_a_message_carrying_a_hidden_value_is_counted_as_its_senders_leak(
    tmp_path: Path,
) -> None:
    world = Path(__file__).parents[1] / "data" / "message_world.yaml"
    result = evaluate(world, focal=["scripted:message_players:leaky"], episodes=1,
                      baselines=False, out=tmp_path / "run", progress=False)  # fmt: skip
    (record,) = records(tmp_path / "run")
    leaks = {seat.seat: seat.leaks for seat in record.seats}
    assert leaks == {"A": record.turns, "B": 0, "C": 0, "D": 0}
    assert result.players[0].leaks == record.turns


def test_tokens_are_summed_when_every_reply_reports_usage(tmp_path: Path) -> None:
    script = [WithUsage('{"move": "up", "speed": 1}', 10 + turn, 2) for turn in range(3)]
    with ChatServer(script) as server:
        evaluate(forage_world(tmp_path, episode_length=3), focal=[llm(server)], episodes=1,
                 baselines=False, out=tmp_path / "run", progress=False)  # fmt: skip
    seat = next(seat for seat in records(tmp_path / "run")[0].seats if seat.focal)
    assert (seat.tokens_in, seat.tokens_out, seat.requests) == (33, 6, 3)


def test_an_endpoint_that_fails_costs_its_seat_the_turn_not_the_episode(tmp_path: Path) -> None:
    down = [HttpError(503, "down", FAST)] * 4  # the first request and its three retries
    with ChatServer([*down, *[UP] * 2]) as server:
        evaluate(forage_world(tmp_path, episode_length=3), focal=[llm(server)], episodes=1,
                 baselines=False, out=tmp_path / "run", progress=False)  # fmt: skip
    (record,) = records(tmp_path / "run")
    seat = next(seat for seat in record.seats if seat.focal)
    assert record.turns == 3
    assert (seat.status, seat.fallback_actions, seat.decisions) == ("endpoint_failure", 1, 3)
    assert "HTTP 503" in seat.failure
    assert seat.endpoint_retries == 3


def test_a_context_limit_stops_the_seat_for_the_episode(tmp_path: Path) -> None:
    too_long = HttpError(
        400, json.dumps({"code": "context_length_exceeded", "message": "maximum context length"})
    )
    with ChatServer([too_long]) as server:
        evaluate(forage_world(tmp_path, episode_length=5), focal=[llm(server)], episodes=1,
                 baselines=False, out=tmp_path / "run", progress=False)  # fmt: skip
        requests = len(server.requests)
    seat = next(seat for seat in records(tmp_path / "run")[0].seats if seat.focal)
    assert (seat.status, seat.fallback_actions, requests) == ("context_limit", 5, 1)


def test_a_seat_past_its_error_allowance_forfeits(tmp_path: Path) -> None:
    with ChatServer(['{"move": "fly", "speed": 1}'] * 3) as server:
        evaluate(forage_world(tmp_path, episode_length=6), focal=[llm(server, retries="0")],
                 episodes=1, baselines=False, error_allowance=2, out=tmp_path / "run",
                 progress=False)  # fmt: skip
    seat = next(seat for seat in records(tmp_path / "run")[0].seats if seat.focal)
    assert (seat.status, seat.invalid_actions, seat.decisions) == ("forfeit", 3, 3)
    assert seat.fallback_actions == 3


class PeakGate(EndpointGate):
    """The run's gate, noting the most requests it ever had in flight at once."""

    peak = 0

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self._count_lock = threading.Lock()
        self._inside = 0

    @contextmanager
    def hold(self, endpoint: str) -> Iterator[None]:
        with super().hold(endpoint):
            with self._count_lock:
                self._inside += 1
                PeakGate.peak = max(PeakGate.peak, self._inside)
            try:
                yield
            finally:
                with self._count_lock:
                    self._inside -= 1


def test_llm_seats_of_a_turn_are_asked_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("multiagent.evaluation.runner.EndpointGate", PeakGate)
    world = forage_world(tmp_path, focal=["Forager_1", "Forager_2", "Forager_3"],
                         background={}, tags=[], episode_length=2)  # fmt: skip
    with ChatServer(lambda request: Slow(0.3, UP)) as server:
        evaluate(world, focal=[llm(server)], episodes=1, baselines=False, llm_concurrency=3,
                 out=tmp_path / "run", progress=False)  # fmt: skip
        assert len(server.requests) == 6
    assert PeakGate.peak == 3


def test_a_replay_cache_answers_a_rerun_without_calls(tmp_path: Path) -> None:
    script = [UP, '{"move": "left", "speed": 1}', "no idea", UP] * 2
    with ChatServer(script) as server:
        first = evaluate(forage_world(tmp_path, episode_length=3), focal=[llm(server)],
                         episodes=2, baselines=False, out=tmp_path / "one",
                         replay_cache=tmp_path / "cache", progress=False)  # fmt: skip
        asked = len(server.requests)
        second = evaluate(forage_world(tmp_path, episode_length=3), focal=[llm(server)],
                          episodes=2, baselines=False, out=tmp_path / "two",
                          replay_cache=tmp_path / "cache", progress=False)  # fmt: skip
        assert len(server.requests) == asked > 0
    one, two = records(tmp_path / "one"), records(tmp_path / "two")
    assert [r.seats[0].reward for r in one] == [r.seats[0].reward for r in two]
    assert all(r.seats[0].cached_requests == r.seats[0].requests for r in two)
    assert (
        without_timings(first.model_dump(mode="json"))["groups"]
        == without_timings(second.model_dump(mode="json"))["groups"]
    )


def without_timings(data: Any) -> Any:
    """``data`` without wall and CPU times and latencies: what may differ between two runs."""
    if isinstance(data, dict):
        return {key: without_timings(value) for key, value in data.items()
                if "seconds" not in key and "latenc" not in key}  # fmt: skip
    if isinstance(data, list):
        return [without_timings(value) for value in data]
    return data


def test_the_same_seed_gives_the_same_episodes(tmp_path: Path) -> None:
    world = forage_world(tmp_path, background={"forager": "random"}, episode_length=[5, 9])
    runs = [
        evaluate(world, focal=["random"], episodes=4, seed=5, out=tmp_path / name, progress=False)
        for name in ("a", "b")
    ]
    a, b = records(tmp_path / "a"), records(tmp_path / "b")
    assert [without_timings(r.model_dump()) for r in a] == [
        without_timings(r.model_dump()) for r in b
    ]
    assert len({r.length for r in a}) > 1  # lengths are drawn per episode
    assert without_timings(runs[0].model_dump(mode="json")) == without_timings(
        runs[1].model_dump(mode="json")
    )


def test_a_changed_configuration_is_refused_unless_fresh(tmp_path: Path) -> None:
    world = forage_world(tmp_path, episode_length=2)
    evaluate(world, focal=["noop"], episodes=1, out=tmp_path / "run", progress=False)
    with pytest.raises(EvalConfigChangedError, match="changed: episodes"):
        evaluate(world, focal=["noop"], episodes=2, out=tmp_path / "run", progress=False)
    evaluate(world, focal=["noop"], episodes=2, out=tmp_path / "run", progress=False, fresh=True)
    assert len(records(tmp_path / "run")) == 2 * 2  # noop and the random baseline


def run_cli(*args: str, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "multiagent", "eval", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def test_a_run_killed_with_sigkill_resumes_to_the_same_result(tmp_path: Path) -> None:
    world = forage_world(tmp_path, background={"forager": "random"}, episode_length=[20, 40])
    args = ["--world", str(world), "--focal", "random", "noop", "--episodes", "12", "--quiet"]
    whole = run_cli(*args, "--out", str(tmp_path / "whole"))
    assert whole.wait(timeout=300) == 0, whole.stderr.read() if whole.stderr else ""
    killed = run_cli(*args, "--out", str(tmp_path / "killed"))
    episodes = tmp_path / "killed" / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and killed.poll() is None:
        if episodes.exists() and episodes.read_text().count("\n") >= 3:
            break
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    played = episodes.read_text().count("\n")
    assert 3 <= played < 24, "the kill came too late to test a resume"
    resumed = run_cli(*args, "--out", str(tmp_path / "killed"))
    assert resumed.wait(timeout=300) == 0
    read = {name: json.loads((tmp_path / name / "result.json").read_text())
            for name in ("whole", "killed")}  # fmt: skip
    assert without_timings(read["whole"]) == without_timings(read["killed"])
    assert len(records(tmp_path / "killed")) == 24  # random (also the baseline) and noop


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--focal", "rnadom"], "unknown player 'rnadom'"),
        (["--focal", "random", "--scenario", "resident"], "no such scenario"),
        (["--focal", "random", "--background-set", "lax"], "no such held-out set"),
        (["--focal", "random", "--background", "Wolf=noop"], "neither a seat, a role nor"),
        (["--focal", "random", "--episodes", "0"], "--episodes must be at least 1"),
        (["--focal", "random", "--price", "m=1"], "expected MODEL=IN/OUT"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    world = forage_world(tmp_path)
    process = run_cli("--world", str(world), *args, "--out", str(tmp_path / "run"))
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2
    assert message in stderr
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


def test_the_cli_prints_the_leaderboard_and_refuses_a_changed_rerun(tmp_path: Path) -> None:
    world = forage_world(tmp_path, episode_length=2)
    base = ["--world", str(world), "--focal", "noop", "--out", str(tmp_path / "run"), "--quiet"]
    process = run_cli(*base, "--episodes", "1")
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "noop" in stdout and f"wrote {tmp_path / 'run'}/result.json" in stderr
    process = run_cli(*base, "--episodes", "2")
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2 and "changed: episodes" in stderr
    assert os.path.exists(tmp_path / "run" / "leaderboard.html")


def test_max_cost_stops_starting_episodes_once_passed(tmp_path: Path) -> None:
    script = [WithUsage(UP, 500_000, 500_000)] * 8  # 1 USD a decision at 1/1 per million
    with ChatServer(script) as server:
        result = evaluate(forage_world(tmp_path, episode_length=2), focal=[llm(server)],
                          episodes=4, baselines=False, prices={"test-model": (1.0, 1.0)},
                          max_cost=1.5, out=tmp_path / "run", progress=False)  # fmt: skip
    assert len(records(tmp_path / "run")) == 1  # 2 USD after the first episode: no second
    (card,) = [card for card in result.players if card.focal]
    assert card.cost_usd == pytest.approx(2.0)


def test_held_out_sets_and_background_overrides_fill_the_background_seats(
    tmp_path: Path,
) -> None:
    world = forage_world(tmp_path, held_out={"walkers": {"forager": "random"}}, episode_length=2)
    evaluate(world, focal=["noop"], episodes=1, background_set="walkers", baselines=False,
             out=tmp_path / "held", progress=False)  # fmt: skip
    evaluate(world, focal=["noop"], episodes=1, background={"Forager_3": "random"},
             baselines=False, out=tmp_path / "override", progress=False)  # fmt: skip
    held, override = records(tmp_path / "held")[0], records(tmp_path / "override")[0]
    assert held.background_set == "walkers"
    assert {s.seat: s.player for s in held.seats} == {
        "Forager_1": "noop", "Forager_2": "random", "Forager_3": "random"}  # fmt: skip
    assert {s.seat: s.player for s in override.seats} == {
        "Forager_1": "noop", "Forager_2": "noop", "Forager_3": "random"}  # fmt: skip
