"""LLM players on a board: the prompt condition they carry, and what each move cost them
(``MoveDecision``), over real HTTP to a scripted endpoint."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import chess
import pytest

from chess_env.core.players import check_player, make_player, parse_player
from chess_env.errors import MoveRetriesExhaustedError, PlayerFailedError, PlayerSpecError
from chess_env.text.agents import ScriptedTextAgent, make_text_agent
from chess_env.text.evaluation import evaluate_agent
from chess_env.text.llm_player import (
    REASONING_EXCERPT_CHARS,
    ChessLLMAgent,
    MoveDecision,
    TextBackendOpponent,
    llm_settings,
)
from chess_env.text.prompt_conditions import PRESETS
from envkit.llm import ChatClient, ChatError, LLMAgent, LLMSettings

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from chat_server import ChatServer, HttpError, Slow, WithUsage

KEY_ENV = "POLYARENA_TEST_NO_KEY"


class Sleeps(list):
    """``ChatClient``'s sleep, recording the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def player(
    server: ChatServer, *, retries: int = 2, endpoint_retries: int = 3, **settings: Any
) -> tuple[TextBackendOpponent, Sleeps]:
    """An LLM player on ``server`` whose client records its waits."""
    values = {"name": "m", "model_name": "m", "base_url": server.base_url, "api_key_env": KEY_ENV}
    llm = LLMSettings(**{**values, "endpoint_retries": endpoint_retries, **settings})
    sleeps = Sleeps()
    agent = LLMAgent(llm, client=ChatClient(llm, sleep=sleeps))
    return TextBackendOpponent(agent, retries=retries), sleeps


def spec(server: ChatServer, options: str = "") -> str:
    return f"openai:m?base_url={server.base_url}&api_key_env={KEY_ENV}{options}"


# -- MoveDecision --------------------------------------------------------------------------------


def test_two_refused_answers_then_a_legal_one_are_counted_exactly() -> None:
    script = [
        WithUsage("I play Ke2.", 100, 20),  # the king cannot move
        WithUsage("Then e5!", 130, 25),  # a pawn on e2 cannot reach e5
        WithUsage("Fine: [e4], the centre.", 160, 30),
    ]
    with ChatServer(script) as server:
        llm, sleeps = player(server)
        move = llm(chess.Board())
    assert move.uci() == "e2e4" and sleeps == []
    decision = llm.last_decision
    assert isinstance(decision, MoveDecision)
    assert decision.rejected == ("cannot_move_there", "cannot_move_there")
    assert (decision.requests, decision.tokens_in, decision.tokens_out) == (3, 390, 75)
    assert decision.endpoint_retries == 0 and decision.seconds > 0
    assert decision.reasoning == "Fine: [e4], the centre."
    second = server.messages(1)[-1]["content"]  # the refusal and its reason went back
    assert "rejected (cannot_move_there): the king on e1 cannot move to e2" in second


def test_a_reply_without_usage_makes_the_tokens_unknown() -> None:
    with ChatServer([WithUsage("Ke2", 100, 20), "e4"]) as server:
        llm, _ = player(server)
        llm(chess.Board())
    decision = llm.last_decision
    assert decision is not None and decision.requests == 2
    assert decision.tokens_in is None and decision.tokens_out is None


def test_a_429_is_retried_after_its_retry_after_and_counted() -> None:
    script = [HttpError(429, "rate limited", {"Retry-After": "7"}), WithUsage("e4", 50, 5)]
    with ChatServer(script) as server:
        llm, sleeps = player(server)
        assert llm(chess.Board()).uci() == "e2e4"
    assert sleeps == [7.0] and len(server.requests) == 2
    decision = llm.last_decision
    assert decision is not None
    assert (decision.requests, decision.endpoint_retries, decision.tokens_in) == (1, 1, 50)
    assert decision.rejected == ()


def test_5xx_until_the_retries_run_out_passes_through_as_a_chat_error() -> None:
    with ChatServer(lambda request: HttpError(500, "down")) as server:
        llm, sleeps = player(server, endpoint_retries=2)
        with pytest.raises(ChatError, match="HTTP 500") as failure:
            llm(chess.Board())
    assert not isinstance(failure.value, PlayerFailedError)  # not a chess result
    assert sleeps == [0.5, 1.0] and len(server.requests) == 3
    decision = llm.last_decision  # set although the move raised: the arena records it
    assert decision is not None
    assert (decision.requests, decision.endpoint_retries, decision.tokens_in) == (1, 2, None)


def test_running_out_of_retries_forfeits_and_still_reports_the_move() -> None:
    with ChatServer(lambda request: WithUsage("I resign.", 10, 2)) as server:
        llm, _ = player(server, retries=2)
        with pytest.raises(MoveRetriesExhaustedError, match="no legal move in 3 tries"):
            llm(chess.Board())
    decision = llm.last_decision
    assert decision is not None and decision.rejected == ("unreadable",) * 3
    assert (decision.requests, decision.tokens_in, decision.tokens_out) == (3, 30, 6)
    assert decision.reasoning == "I resign."


def test_a_timeout_fails_the_player_and_is_reported() -> None:
    with ChatServer([Slow(5.0, "e4")]) as server:
        llm, sleeps = player(server, timeout_seconds=0.5)
        with pytest.raises(PlayerFailedError, match="did not answer in time") as failure:
            llm(chess.Board())
    assert not isinstance(failure.value, MoveRetriesExhaustedError) and sleeps == []
    decision = llm.last_decision
    assert decision is not None and decision.requests == 1 and decision.tokens_in is None


def test_the_reasoning_is_an_excerpt_of_what_the_model_wrote() -> None:
    long_answer = "Let me think. " * 100 + "[e4]"
    with ChatServer([long_answer]) as server:
        llm, _ = player(server)
        assert llm(chess.Board()).uci() == "e2e4"
    reasoning = llm.last_decision.reasoning if llm.last_decision else ""
    assert len(reasoning) == REASONING_EXCERPT_CHARS and reasoning.startswith("Let me think.")
    assert reasoning.endswith("...")


def test_a_backend_without_reasoning_counts_its_answers_and_no_tokens() -> None:
    scripted = TextBackendOpponent(ScriptedTextAgent(["Qh5", "e4"]), retries=1)
    scripted.reset(seed=0)
    scripted(chess.Board())
    assert scripted.last_decision is not None
    assert dataclasses.replace(scripted.last_decision, seconds=0.0) == MoveDecision(
        rejected=("cannot_move_there",),
        requests=2,
        tokens_in=None,
        tokens_out=None,
        endpoint_retries=0,
        reasoning="e4",
        seconds=0.0,
    )


# -- the condition a spec names --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "label"),
    [
        ("", "board=ascii&legal=true&history=last"),
        ("&prompt=game_arena", "board=fen&legal=false&history=pgn"),
        ("&legal=false&board=none&history=pgn", "board=none&legal=false&history=pgn"),
        ("&prompt=llm_chess&history=pgn", "board=unicode&legal=true&history=pgn"),
    ],
)
def test_a_spec_carries_its_condition_into_the_players_prompt(options: str, label: str) -> None:
    with ChatServer(lambda request: "e4") as server:
        made = make_player(spec(server, options))
        assert isinstance(made, TextBackendOpponent) and made.condition.label == label
        made(chess.Board())
        made.close()
    prompt = server.messages()[1]["content"]
    condition = made.condition
    assert ("Legal moves (UCI): " in prompt) == condition.legal
    assert ("FEN: " in prompt) == (condition.board != "none")
    assert ("Moves so far (PGN): none." in prompt) == (condition.history == "pgn")
    assert ("Last move: none." in prompt) == (condition.history == "last")
    assert ("♜" in prompt) == (condition.board == "unicode")


def test_the_endpoint_retries_option_reaches_the_client() -> None:
    settings, _ = llm_settings(parse_player("openai:m?endpoint_retries=0"))
    assert settings.endpoint_retries == 0
    assert llm_settings(parse_player("openai:m"))[0].endpoint_retries == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("board=svg", "board must be one of ['ascii', 'unicode', 'fen', 'none'], got 'svg'"),
        ("legal=maybe", "legal must be true or false, got 'maybe'"),
        ("history=all", "history must be one of ['none', 'last', 'pgn'], got 'all'"),
        ("prompt=kaggle", "prompt must be one of ['default', 'game_arena'"),
        ("board=none&history=none", "board=none needs history=pgn"),
        ("prompt=textarena_blind&history=last", "board=none needs history=pgn"),
        ("endpoint_retries=11", "endpoint_retries must be in 0..10, got 11"),
        ("endpoint_retries=few", "endpoint_retries must be a whole number"),
    ],
)
def test_bad_condition_options_name_the_key(options: str, message: str) -> None:
    for make in (check_player, make_player, make_text_agent):
        with pytest.raises(PlayerSpecError) as caught:
            make(f"openai:m?{options}")
        assert message in str(caught.value) and "'openai:m?" in str(caught.value)


def test_an_evaluated_llm_agent_is_shown_its_specs_condition() -> None:
    with ChatServer(lambda request: "e4" if "move 1)" in str(request) else "d4") as server:
        agent = make_text_agent(spec(server, "&prompt=game_arena"))
        assert isinstance(agent, ChessLLMAgent) and agent.condition == PRESETS["game_arena"]
        report = evaluate_agent(agent, "random", 1, max_plies=2, progress=False)
        agent.close()
    assert report.games[0].moves == 1
    prompt = server.messages(0)[1]["content"]
    assert "Moves so far (PGN): none." in prompt and "Legal moves" not in prompt
