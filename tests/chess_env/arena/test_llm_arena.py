"""An LLM player in the arena against a scripted OpenAI-compatible endpoint: the scorecard counts
exactly what the script did (legal, illegal and unreadable answers, a 429, tokens), a forfeit is
counted as one, and an endpoint outage is no chess result and is replayed by the next run."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest

from chess_env.arena.results import ArenaGame
from chess_env.arena.runner import run
from chess_env.arena.store import GAMES_FILE

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from chat_server import ChatServer, HttpError, Slow, WithUsage

PROMPT_TOKENS, COMPLETION_TOKENS = 120, 7


class ScriptedPlayer:
    """Answers each request from the FEN in its prompt, and keeps count of what it sent.

    Request k (1-based): every 7th answer names a move from an empty square (``no_piece``),
    every 11th is prose with no move (``unreadable``), request ``throttle_at`` is refused with a
    429 (the client retries it), and from request ``forfeit_from`` on every answer is illegal.
    Other answers are the first legal move in UCI order, in brackets, with reasoning.
    """

    def __init__(self, forfeit_from: int | None = None, throttle_at: int | None = 5) -> None:
        self.forfeit_from, self.throttle_at = forfeit_from, throttle_at
        self.requests = 0
        self.sent: Counter[str] = Counter()

    def __call__(self, request: dict[str, Any]) -> Any:
        self.requests += 1
        k = self.requests
        prompt = request["messages"][-1]["content"]
        board = chess.Board(prompt.split("FEN: ")[1].splitlines()[0])
        if k == self.throttle_at:
            self.sent["429"] += 1
            return HttpError(429, "slow down", headers={"Retry-After": "0"})
        if (self.forfeit_from is not None and k >= self.forfeit_from) or k % 7 == 0:
            empty = next(s for s in chess.SQUARES if board.piece_at(s) is None)
            self.sent["no_piece"] += 1
            answer = f"[{chess.square_name(empty)}{chess.square_name((empty + 8) % 64)}]"
        elif k % 11 == 0:
            self.sent["unreadable"] += 1
            answer = "Let me think about the position for a while."
        else:
            self.sent["legal"] += 1
            move = min(board.legal_moves, key=lambda m: m.uci())
            answer = f"I develop and keep the king safe. [{move.uci()}]"
        return WithUsage(answer, PROMPT_TOKENS, COMPLETION_TOKENS)


def _games(out: Path) -> list[ArenaGame]:
    return [ArenaGame.model_validate_json(line) for line in (out / GAMES_FILE).open()]


def test_the_scorecard_counts_exactly_what_the_endpoint_did(tmp_path: Path) -> None:
    script = ScriptedPlayer()
    with ChatServer(script) as server:
        llm = f"openai:scripted?base_url={server.base_url}&retries=2&temperature=0"
        result = run([llm], anchors=["random@0"], openings="startpos", games_per_pair=2,
                     llm_concurrency=1, max_plies=60, out=tmp_path, progress=False,
                     prices={"scripted": (1.0, 2.0)}, bootstrap=0)  # fmt: skip
    card = next(card for card in result.players if card.name == llm)
    answers = script.sent["legal"] + script.sent["no_piece"] + script.sent["unreadable"]
    assert script.sent["429"] == 1 and script.requests == answers + 1

    assert card.kind == "openai" and card.condition == "board=ascii&legal=true&history=last"
    assert card.text is not None and card.llm is not None
    assert card.text.moves == script.sent["legal"]
    assert card.text.illegal_attempts == script.sent["no_piece"] + script.sent["unreadable"]
    assert card.text.reasons == {
        reason: count
        for reason, count in (("no_piece", script.sent["no_piece"]),
                              ("unreadable", script.sent["unreadable"]))
        if count
    }  # fmt: skip
    assert card.text.retries_used == card.text.illegal_attempts and card.text.forfeits == 0
    assert card.text.illegal_per_1000_moves == pytest.approx(
        1000 * card.text.illegal_attempts / card.text.moves
    )
    assert card.llm.requests == answers
    assert card.llm.tokens_in == PROMPT_TOKENS * answers
    assert card.llm.tokens_out == COMPLETION_TOKENS * answers
    assert card.llm.endpoint_retries == 1 and card.llm.endpoint_failures == 0
    assert card.llm.tokens_in_per_game == pytest.approx(PROMPT_TOKENS * answers / 2)
    cost = (PROMPT_TOKENS * 1.0 + COMPLETION_TOKENS * 2.0) * answers / 1e6 / 2
    assert card.llm.cost_per_game == pytest.approx(cost)
    assert card.llm.latency_p50 is not None and card.llm.latency_p50 <= card.llm.latency_p95
    assert [c.condition for c in result.conditions] == ["board=ascii&legal=true&history=last"]

    games = _games(tmp_path)
    assert all(game.conditions for game in games)
    with open(tmp_path / "games.pgn", encoding="utf-8") as handle:
        pgn = chess.pgn.read_game(handle)
    comments = [node.comment for node in pgn.mainline()]
    assert any("I develop and keep the king safe." in comment for comment in comments)
    assert any("no_piece" in comment for comment in comments)


def test_running_out_of_retries_is_a_forfeit(tmp_path: Path) -> None:
    script = ScriptedPlayer(forfeit_from=9)
    with ChatServer(script) as server:
        llm = f"openai:scripted?base_url={server.base_url}&retries=1"
        result = run([llm], anchors=["random@0"], openings="startpos", games_per_pair=2,
                     llm_concurrency=1, out=tmp_path, progress=False, bootstrap=0)  # fmt: skip
    card = next(card for card in result.players if card.name == llm)
    assert card.text.forfeits == 2 and card.endings == {"illegal_move": 2}
    assert card.points == 0 and card.games == 2
    games = _games(tmp_path)
    assert all(game.ending == "illegal_move" and game.unplayed is not None for game in games)
    # the forfeited moves' refused answers count too: 2 tries each
    assert card.text.illegal_attempts == script.sent["no_piece"] + script.sent["unreadable"]
    assert card.llm.requests == script.requests - script.sent["429"]


def test_an_endpoint_outage_is_no_result_and_is_replayed(tmp_path: Path) -> None:
    healthy = ScriptedPlayer(throttle_at=None)  # no retries here: a 429 would be an outage too
    down = {"on": True}

    def endpoint(request: dict[str, Any]) -> Any:
        return HttpError(503, "down for maintenance") if down["on"] else healthy(request)

    with ChatServer(endpoint) as server:
        llm = f"openai:scripted?base_url={server.base_url}&endpoint_retries=0&retries=2"
        options = dict(anchors=["random@0"], openings="startpos", games_per_pair=2,
                       llm_concurrency=1, max_plies=20, out=tmp_path, progress=False,
                       bootstrap=0)  # fmt: skip
        first = run([llm], **options)
        assert first.games == 0 and first.endpoint_failures == 2
        assert all(g.result is None and g.ending == "endpoint_failure" for g in _games(tmp_path))
        card = next(card for card in first.players if card.name == llm)
        assert card.rating is None and card.llm.endpoint_failures == 2

        down["on"] = False
        second = run([llm], **options)
    assert second.games == 2 and second.endpoint_failures == 2
    records = _games(tmp_path)
    assert len(records) == 4 and sum(record.rated for record in records) == 2
    assert {r.game_id for r in records if r.rated} == {r.game_id for r in records if not r.rated}


def test_llm_games_run_at_most_llm_concurrency_at_a_time_per_endpoint(tmp_path: Path) -> None:
    import time

    delay, arrivals = 0.05, []

    def endpoint(request: dict[str, Any]) -> Any:
        arrivals.append(time.monotonic())  # the server holds each reply for ``delay`` seconds
        prompt = request["messages"][-1]["content"]
        board = chess.Board(prompt.split("FEN: ")[1].splitlines()[0])
        return Slow(delay, f"[{min(board.legal_moves, key=lambda m: m.uci()).uci()}]")

    with ChatServer(endpoint) as server:
        llm = f"openai:scripted?base_url={server.base_url}"
        result = run([llm], anchors=["random@0"], openings="default", games_per_pair=6,
                     llm_concurrency=2, max_plies=12, out=tmp_path, progress=False,
                     bootstrap=0)  # fmt: skip
    assert result.games == 6
    # requests in flight at once: arrivals less than one reply's delay apart
    in_flight = max(sum(t <= u < t + delay * 0.9 for u in arrivals) for t in arrivals)
    assert in_flight == 2
