"""Evaluating text agents: LLM agents over real HTTP, scripted agents, stats, PGNs and the CLI."""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from pydantic import ValidationError

from chess_env.core.game import AgentConfig, AgentStats
from chess_env.text.agents import ScriptedTextAgent, board_from_text
from chess_env.text.evaluation import EvaluationReport, evaluate_agent
from chess_env.text.llm_player import MOVE_SIGNATURE
from envkit.llm import LLMAgent, LLMSettings
from envkit.ports import ScriptedBackend

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from chat_server import ChatServer, Slow, ToolCall

KEY_ENV = "POLYARENA_TEST_LLM_KEY"


def position(request: dict[str, Any]) -> chess.Board:
    """The board in the observation the agent was sent (the first user message)."""
    return board_from_text(request["messages"][1]["content"])


def san_player(seed: int = 0) -> Any:
    """A script answering a random legal move in SAN, but "[e2e5]" to each game's first prompt."""
    rng = random.Random(seed)

    def reply(request: dict[str, Any]) -> str:
        board = position(request)
        prompt = request["messages"][1]["content"]
        if board.fullmove_number == 1 and "rejected" not in prompt:
            return "I open with [e2e5]."  # illegal for both colours: one retry spent
        return board.san(rng.choice(list(board.legal_moves)))

    return reply


def llm(server: ChatServer, signature: str | None = None, **overrides: Any) -> LLMAgent:
    settings = {"name": "Tester", "model_name": "test-model", "base_url": server.base_url}
    settings = {"timeout_seconds": 5.0, **settings, **overrides}
    return LLMAgent(LLMSettings(**settings), signature=signature)


def read_pgns(text: str) -> list[chess.pgn.Game]:
    """Every game in ``text``, each checked to replay without an illegal move."""
    stream, games = io.StringIO(text), []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors
        games.append(game)
    return games


def read_pgn(text: str) -> chess.pgn.Game:
    (game,) = read_pgns(text)
    return game


def test_an_llm_agent_plays_games_and_the_stats_add_up() -> None:
    with ChatServer(san_player()) as server:
        report = evaluate_agent(llm(server), "random", 3, max_plies=12, progress=False)
    stats = report.stats
    assert stats.games_played == 3
    assert stats.games_won + stats.games_lost + stats.games_drawn == 3
    assert [game.agent_color for game in report.games] == ["white", "black", "white"]
    assert [game.illegal_attempts for game in report.games] == [1, 1, 1]
    assert stats.illegal_moves_attempted == 3 and stats.timeouts == 0
    assert stats.total_moves == sum(game.moves for game in report.games) > 0
    assert stats.average_thinking_time > 0
    requests = len(server.requests)
    assert requests == stats.total_moves + stats.illegal_moves_attempted
    for record, text in zip(report.games, report.pgns, strict=True):
        game = read_pgn(text)
        assert game.headers["Result"] == record.result
        assert game.headers["White" if record.agent_color == "white" else "Black"] == "Tester"
        assert len(list(game.mainline_moves())) == record.plies


def test_a_timeout_loses_the_game_and_is_counted() -> None:
    legal = san_player()
    calls = itertools.count()

    def reply(request: dict[str, Any]) -> Any:
        return Slow(5.0, "e4") if next(calls) == 0 else legal(request)

    with ChatServer(reply) as server:
        agent = llm(server, timeout_seconds=0.5)
        report = evaluate_agent(agent, "random", 2, max_plies=8, progress=False)
    timed_out, played = report.games
    assert (timed_out.outcome, timed_out.result, timed_out.score) == ("timeout", "0-1", "loss")
    assert timed_out.timed_out and timed_out.moves == 0 and timed_out.plies == 0
    assert not played.timed_out and played.moves > 0
    assert report.stats.timeouts == 1 and report.stats.games_lost >= 1
    pgn = read_pgn(report.pgns[0])
    assert pgn.headers["Termination"] == "time forfeit" and pgn.headers["Result"] == "0-1"
    assert agent.reasoning[0].timed_out


def test_any_backend_that_raises_timeout_error_times_out() -> None:
    def too_slow(observation: str) -> str:
        raise TimeoutError("no answer in time")

    report = evaluate_agent(ScriptedBackend(too_slow), "random", 2, progress=False)
    assert report.stats.timeouts == 2 and report.stats.games_lost == 2
    assert [game.result for game in report.games] == ["0-1", "1-0"]
    assert report.agent == "ScriptedBackend"


def test_self_correction_spends_none_of_the_env_retries() -> None:
    pytest.importorskip("envkit.schema")
    script = [ToolCall({"mv": "e2e4"}), ToolCall({"move": "e2e4"}), ToolCall({"move": "Nf3"})]
    with ChatServer(script) as server:
        agent = llm(server, MOVE_SIGNATURE, tool_calling=True)
        report = evaluate_agent(agent, "random", 1, max_plies=4, progress=False)
    assert report.stats.illegal_moves_attempted == 0 and report.games[0].moves == 2
    assert "Your action was invalid" in server.messages(1)[-1]["content"]
    assert agent.reasoning[0].errors and agent.reasoning[0].valid


def test_illegal_answers_spend_the_env_retries_then_lose() -> None:
    agent = ScriptedTextAgent(["e2e5", "castle queenside now"])
    report = evaluate_agent(agent, "random", 2, colors="white", retries=1, progress=False)
    for game in report.games:
        assert (game.outcome, game.result, game.score) == ("illegal_move", "0-1", "loss")
        assert game.illegal_attempts == 2 and game.moves == 0
    assert report.stats.games_lost == 2 and report.stats.illegal_moves_attempted == 4
    assert read_pgn(report.pgns[0]).headers["Termination"] == "rules infraction"


def test_the_same_seed_replays_the_same_games() -> None:
    def run(seed: int) -> EvaluationReport:
        agent = ScriptedTextAgent(["Nf6"])
        return evaluate_agent(agent, "greedy", 2, colors="black", seed=seed, max_plies=40,
                              progress=False)  # fmt: skip

    first, again, other = run(5), run(5), run(6)
    assert first.pgns == again.pgns and first.pgns != other.pgns
    assert {game.agent_color for game in first.games} == {"black"}
    assert [game.seed for game in first.games] == [5, 6]


def test_bad_arguments_are_refused() -> None:
    agent = ScriptedTextAgent([])
    with pytest.raises(ValueError, match="colors must be one of"):
        evaluate_agent(agent, colors="purple", progress=False)
    with pytest.raises(ValueError, match="depth must be a whole number"):
        evaluate_agent(agent, "stockfish:deep", progress=False)


def test_agent_stats_must_add_up_and_configs_are_checked() -> None:
    with pytest.raises(ValidationError, match="games_played = 3"):
        AgentStats(games_played=3, games_won=1, games_lost=1)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        AgentStats(games_played=1, games_won=1, average_thinking_time=-1.0)
    config = {"agent_id": "white", "personality": "calm", "model_name": "m", "system_prompt": ""}
    with pytest.raises(ValidationError, match="at most 50 characters"):
        AgentConfig(name="x" * 51, **config)
    with pytest.raises(ValidationError, match="less than or equal to 2"):
        AgentConfig(name="x", temperature=2.1, **config)
    assert AgentConfig(name="x", **config).stats == AgentStats()


# -- the command line --------------------------------------------------------------------------


def cli(*args: str, key: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, KEY_ENV: key}
    return subprocess.run(
        [sys.executable, "-m", "chess_env", "eval", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_cli_evaluates_an_llm_endpoint_and_writes_the_report(tmp_path: Path) -> None:
    with ChatServer(san_player()) as server:
        result = cli(
            "--agent", "openai:test", "--base-url", server.base_url, "--api-key-env", KEY_ENV,
            "--opponent", "random", "--games", "2", "--max-plies", "10",
            "--out", str(tmp_path / "out"), key="sk-cli-test",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Agent stats" in result.stdout and "games_played" in result.stdout
    report = EvaluationReport.model_validate_json((tmp_path / "out" / "report.json").read_text())
    assert report.agent == "test" and report.stats.games_played == 2
    assert report.stats.illegal_moves_attempted == 2
    games = read_pgns((tmp_path / "out" / "games.pgn").read_text())
    assert [game.headers["White"] for game in games] == ["test", "random"]
    assert {request.json["model"] for request in server.requests} == {"test"}
    assert server.requests[0].headers["authorization"] == "Bearer sk-cli-test"


def test_cli_random_agent_needs_no_server_and_bad_specs_fail_cleanly(tmp_path: Path) -> None:
    result = cli("--agent", "random", "--games", "2", "--max-plies", "10", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["agent"] == "random" and report["stats"]["games_played"] == 2
    bad = cli("--agent", "random", "--opponent", "magnus", "--games", "1")
    assert bad.returncode == 2 and "unknown player 'magnus'" in bad.stderr
