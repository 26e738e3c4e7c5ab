"""A game's steps at any length: ``with_move``, ``resign`` and ``timeout`` hand the live board on
and check only what changed, with the same records a full validation gives; and the ply limit
(``max_plies``, a draw with termination "max_plies")."""

from __future__ import annotations

import copy
import io
import os
import pickle
import random
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from types import FrameType
from typing import Any

import chess
import chess.pgn
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from chess_env.core.game import (
    AgentConfig,
    Color,
    Game,
    ResignTermination,
    validate_game_state,
)
from chess_env.core.game import records as game_records
from chess_env.core.rules import ChessGame
from chess_env.errors import GameOverError

T0 = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)
AGENT = {"personality": "balanced", "model_name": "m", "system_prompt": "Play well."}
WHITE = AgentConfig(agent_id="white", name="White", **AGENT)
BLACK = AgentConfig(agent_id="black", name="Black", **AGENT)
FOOLS_MATE = ["f3", "e5", "g4", "Qh4#"]
LOYD_STALEMATE = "e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 Qxb8 Qh7 Qxc8 Kg6 Qe6"
KNIGHT_SHUFFLE = ["Nf3", "Nf6", "Ng1", "Ng8"] * 2  # the start position a third time
# Start positions whose random games reach every ending a game can have. With claim_draws the
# 50-move rule (halfmove clock 100) and threefold repetition always come before the 75-move rule
# and fivefold repetition, so those two never end a game.
STARTS = [
    chess.STARTING_FEN,
    "7k/8/5K2/8/8/8/8/6Q1 w - - 0 1",  # mates, stalemates, repetitions
    "8/8/4k3/8/8/3K4/8/R7 w - - 90 60",  # the 50-move rule within ten plies
    "4k3/8/8/8/8/8/3p4/4K3 w - - 0 1",  # Kxd2: insufficient material; or a promotion
    "1n1n3k/2P5/8/8/8/8/5p2/K5N1 w - - 0 1",  # promotions and under-promotions
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",  # castling
]

Step = Callable[[Game], Game]
# Mostly moves, so that random games last long enough to reach the endings of the rules.
STEP_KINDS = ["move"] * 96 + ["text"] * 2 + ["resign", "timeout"]
COLORS: list[Color] = ["white", "black"]
RESIGNATIONS: list[ResignTermination] = ["resigned", "agent_error"]


def full(game: Game) -> Game:
    """``game`` as a record that is not known sound and has no board: its next step replays
    the moves and validates every field, as a record loaded from elsewhere does."""
    return Game.model_construct(**dict(game))


def assert_same(fast: Game, reference: Game) -> None:
    assert fast == reference
    assert fast.model_dump_json() == reference.model_dump_json()
    assert fast.model_fields_set == reference.model_fields_set


def outcome(step: Step, game: Game) -> Game | tuple[type[BaseException], str]:
    try:
        return step(game)
    except (ValueError, GameOverError) as error:  # MoveParseError and ValidationError too
        return type(error), str(error)


def playing(move: str, at: datetime) -> Step:
    return lambda game: game.with_move(move, 0.5, at=at)


def same_step(step: Step, fast: Game, reference: Game) -> tuple[Game, Game]:
    """The games after ``step`` on ``fast`` and on ``full(reference)``, checked to be the same;
    the games as they were when both refuse it with the same error."""
    after, expected = outcome(step, fast), outcome(step, full(reference))
    if not isinstance(after, Game):
        assert after == expected
        return fast, reference
    assert isinstance(expected, Game), expected
    assert_same(after, expected)
    return after, expected


def replays(monkeypatch: pytest.MonkeyPatch) -> list[Game]:
    """The games ``Game._replay`` is called on from now on (a replay is O(plies))."""
    calls: list[Game] = []
    replay = Game._replay

    def counted(self: Game) -> ChessGame:
        calls.append(self)
        return replay(self)

    monkeypatch.setattr(Game, "_replay", counted)
    return calls


# -- the fast path against a full validation -----------------------------------------------------


@st.composite
def steps(draw: st.DrawFn, game: Game) -> Step:
    """A step a client could ask for: mostly a legal move (UCI or SAN), sometimes text that may
    be no legal move, a resignation or a timeout (of either side: the wrong one is refused)."""
    at = game.last_updated + timedelta(seconds=draw(st.floats(-5.0, 60.0)))  # may step back
    kind = draw(st.sampled_from(STEP_KINDS))
    if kind == "resign":
        color = draw(st.sampled_from(COLORS))
        why = draw(st.sampled_from(RESIGNATIONS))
        return lambda g: g.resign(color, termination=why, at=at)
    if kind == "timeout":
        color = draw(st.sampled_from(COLORS))
        return lambda g: g.timeout(color, at=at)
    if kind == "text":
        squares = st.sampled_from(chess.SQUARE_NAMES)
        text = draw(st.one_of(st.tuples(squares, squares).map("".join), st.text(max_size=6)))
    else:
        uci = draw(st.sampled_from(game.board_state.legal_moves))
        board = game.board_state.board()
        text = board.san(chess.Move.from_uci(uci)) if draw(st.booleans()) else uci
    thinking = draw(st.floats(0.0, 30.0))
    return lambda g: g.with_move(text, thinking, at=at)


@settings(max_examples=int(os.environ.get("GAME_STEP_EXAMPLES", "40")))
@given(data=st.data(), fen=st.sampled_from(STARTS), limit=st.none() | st.integers(1, 80))
def test_steps_give_the_records_a_full_validation_gives(
    data: st.DataObject, fen: str, limit: int | None
) -> None:
    fast = reference = Game.new(WHITE, BLACK, fen, at=T0, max_plies=limit)
    while not fast.is_over and len(fast.move_history) < 120:
        fast, reference = same_step(data.draw(steps(fast)), fast, reference)
    event(f"termination: {fast.termination}")
    assert validate_game_state(fast) == []
    assert_same(Game.model_validate_json(fast.model_dump_json()), fast)


@pytest.mark.parametrize(
    ("moves", "fen", "limit", "termination"),
    [
        (FOOLS_MATE, None, None, "checkmate"),
        (LOYD_STALEMATE.split(), None, None, "stalemate"),
        (KNIGHT_SHUFFLE, None, None, "threefold_repetition"),
        (["Ra2"], "4k3/8/8/8/8/8/8/R3K3 w - - 99 80", None, "fifty_moves"),
        (["Kxd2"], "4k3/8/8/8/8/8/3p4/4K3 w - - 0 1", None, "insufficient_material"),
        (["e4", "e5", "Nf3"], None, 3, "max_plies"),
        (FOOLS_MATE, None, 4, "checkmate"),  # the rules come before the limit
        (KNIGHT_SHUFFLE, None, 8, "threefold_repetition"),
        (["e4", "e5"], None, None, None),
    ],
)
def test_each_ending_is_the_one_a_full_validation_gives(
    moves: list[str], fen: str | None, limit: int | None, termination: str | None
) -> None:
    fast = reference = Game.new(WHITE, BLACK, fen, at=T0, max_plies=limit)
    for index, move in enumerate(moves):
        at = T0 + timedelta(seconds=index + 1)
        fast, reference = same_step(playing(move, at), fast, reference)
    assert fast.termination == termination and len(fast.move_history) == len(moves)
    at = T0 + timedelta(days=1)
    for end in (lambda g: g.resign("white", at=at), lambda g: g.timeout(g.current_turn, at=at)):
        same_step(end, fast, reference)


# -- the live board ------------------------------------------------------------------------------


def test_each_move_takes_the_board_over_and_replays_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = replays(monkeypatch)
    game = Game.new(WHITE, BLACK, at=T0)
    for move in [*KNIGHT_SHUFFLE[:-1], "e5", "e4"]:
        game = game.with_move(move)
    assert calls == []
    again = Game.new(WHITE, BLACK, at=T0)
    first, second = again.with_move("e4", at=T0), again.with_move("e4", at=T0)  # replays
    assert len(calls) == 1 and first == second


def test_a_refused_move_leaves_the_board_with_its_game(monkeypatch: pytest.MonkeyPatch) -> None:
    game = Game.new(WHITE, BLACK, at=T0).with_move("e4")
    calls = replays(monkeypatch)
    for refused in ("e7e4", "castle please", "Ke2"):
        with pytest.raises(ValueError, match="black cannot play"):
            game.with_move(refused)
    with pytest.raises(ValidationError, match="thinking_time"):
        game.with_move("e5", thinking_time=-1.0)
    with pytest.raises(ValueError, match="timezone-aware"):
        game.with_move("e5", at=datetime(2025, 10, 25, 11))
    after = game.with_move("e5", at=T0)
    assert calls == []
    assert_same(after, full(game).with_move("e5", at=T0))


def test_the_board_at_a_threefold_repetition_counts_as_a_replay_would() -> None:
    # Taken over move by move, from a loaded game, or after a refused move: the same draw.
    game = Game.new(WHITE, BLACK, at=T0)
    for move in KNIGHT_SHUFFLE[:4]:
        game = game.with_move(move)
    loaded = Game.model_validate_json(game.model_dump_json())
    with pytest.raises(ValueError, match="cannot play"):
        game.with_move("e5")
    for start in (game, loaded):
        for move in KNIGHT_SHUFFLE[4:]:
            start = start.with_move(move, at=T0)
        assert start.termination == "threefold_repetition"


def test_copies_loads_and_pickles_are_equal_but_replay_and_validate_in_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    game = Game.new(WHITE, BLACK, at=T0).with_move("e4", at=T0)
    others = [
        Game.model_validate_json(game.model_dump_json()),
        game.model_copy(),
        copy.copy(game),
        copy.deepcopy(game),
        pickle.loads(pickle.dumps(game)),
    ]
    calls = replays(monkeypatch)
    for other in others:
        assert other == game and hash(other) == hash(game)
        assert other.model_dump_json() == game.model_dump_json()
        assert_same(other.with_move("e5", at=T0), full(game).with_move("e5", at=T0))
    assert len(calls) == 2 * len(others)
    assert len(pickle.dumps(game)) == len(pickle.dumps(copy.copy(game)))  # no board pickled
    # A copy changed without checks is not trusted: its next step validates the whole history.
    late = game.model_copy(update={"started_at": T0 + timedelta(hours=1)})
    with pytest.raises(ValidationError, match=r"move_history\[0\]\.timestamp .* is before"):
        late.with_move("e5", at=T0 + timedelta(hours=2))


def test_threads_moving_from_one_game_share_no_board(monkeypatch: pytest.MonkeyPatch) -> None:
    game = Game.new(WHITE, BLACK, at=T0)
    for uci in KNIGHT_SHUFFLE[:6]:
        game = game.with_move(uci, at=T0)
    calls = replays(monkeypatch)
    threads, barrier = 8, threading.Barrier(8)
    results: list[Game] = []

    def shuffle_back() -> None:
        barrier.wait()
        results.append(game.with_move("Ng1", at=T0).with_move("Ng8", at=T0))

    workers = [threading.Thread(target=shuffle_back) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(calls) == threads - 1  # one thread took the board, the others replayed
    assert all(result.termination == "threefold_repetition" for result in results)
    assert all(result == results[0] for result in results)


def test_a_step_that_breaks_a_rule_is_refused_as_validation_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    game = Game.new(WHITE, BLACK, at=T0).with_move("e4", at=T0)
    monkeypatch.setattr(
        game_records, "_ending", lambda termination, result, at: {
            "status": "checkmate", "result": result, "termination": termination, "ended_at": at,
        },
    )  # fmt: skip
    errors = []
    for start in (game, full(game)):  # the step's check, and a full validation
        with pytest.raises(ValidationError) as caught:
            start.resign("white", at=T0)
        errors.append(
            caught.value.errors(include_url=False, include_context=False, include_input=False)
        )
    assert errors[0] == errors[1]
    assert "status 'checkmate' does not fit termination 'resigned'" in errors[0][0]["msg"]


# -- the cost of a step does not grow with the game ----------------------------------------------


def quiet_moves(plies: int, seed: int = 0) -> list[str]:
    """A legal game that no rule ends: random quiet moves, a pawn move before the 50-move rule."""
    rng, game, moves = random.Random(seed), ChessGame(max_plies=None), list[str]()
    while len(moves) < plies:
        board = game.board
        legal = rng.sample(game.legal_moves, len(game.legal_moves))
        pawn = [m for m in legal if board.piece_type_at(m.from_square) == chess.PAWN]
        quiet = [m for m in legal if not board.is_capture(m) and m not in pawn]
        for move in (pawn + quiet + legal) if board.halfmove_clock > 90 else (quiet + legal):
            game.play(move)
            if game.outcome is None:
                moves.append(move.uci())
                break
            game.undo()
    return moves


def python_lines(call: Callable[[], Any]) -> int:
    """How many lines of Python ``call()`` runs: work counted, not timed."""
    lines = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal lines
        lines += event == "line"
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(previous)
    return lines


def test_a_move_costs_the_same_at_ply_10_and_ply_1000() -> None:
    # Two games reach the same position, one in 10 plies (from the position 10 plies before it)
    # and one in 1,000, so the position's own work (its legal moves...) is the same in both.
    moves = quiet_moves(1001)
    board = chess.Board()
    for move in moves[:990]:
        board.push(chess.Move.from_uci(move))
    at, last = T0 + timedelta(days=1), moves[1000]

    def played(fen: str | None, plies: list[str]) -> Game:
        game = Game.new(WHITE, BLACK, fen, at=T0)
        for move in plies:
            game = game.with_move(move, at=T0)
        return game

    short, long = played(board.fen(), moves[990:1000]), played(None, moves[:1000])
    assert short.board_state == long.board_state and len(long.move_history) == 1000
    played(board.fen(), moves[990:1000]).with_move(last, at=at)  # the caches of this position
    cost = python_lines(lambda: short.with_move(last, at=at))
    assert python_lines(lambda: long.with_move(last, at=at)) == cost
    assert python_lines(lambda: long.resign("white", at=at)) == python_lines(
        lambda: short.resign("white", at=at)
    )
    # The count sees a replay and a validation of the whole history: a full step's count grows.
    assert python_lines(lambda: full(long).with_move(last, at=at)) > 10 * cost


# -- the ply limit -------------------------------------------------------------------------------


def test_the_move_that_reaches_max_plies_ends_the_game_in_a_draw() -> None:
    game = Game.new(WHITE, BLACK, at=T0, max_plies=3)
    for move in ("e4", "e5"):
        game = game.with_move(move, at=T0)
    assert not game.is_over
    ended = game.with_move("Nf3", at=T0 + timedelta(seconds=1))
    assert (ended.status, ended.result, ended.termination) == ("draw", "draw", "max_plies")
    assert ended.ended_at == ended.last_updated == T0 + timedelta(seconds=1)
    assert validate_game_state(ended) == []
    with pytest.raises(GameOverError):
        ended.with_move("Nc6")
    headers = chess.pgn.read_headers(io.StringIO(ended.to_pgn()))
    assert headers is not None and (headers["Result"], headers["Termination"]) == (
        "1/2-1/2", "adjudication",
    )  # fmt: skip
    assert Game.model_validate_json(ended.model_dump_json()) == ended


def test_max_plies_counts_from_the_start_position_and_travels_with_the_game() -> None:
    game = Game.new(WHITE, BLACK, "4k3/8/8/8/8/8/8/R3K3 b - - 0 70", max_plies=2)
    assert game.with_move("Kd7").with_move("Ra2").termination == "max_plies"
    assert Game.model_validate_json(game.model_dump_json()).max_plies == 2
    unlimited = Game.new(WHITE, BLACK).model_dump()
    del unlimited["max_plies"]  # a record from before the field: no limit
    assert Game.model_validate(unlimited).max_plies is None
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Game.new(WHITE, BLACK, max_plies=0)


def rebuild(game: Game, **changes: object) -> Game:
    return Game(**{**dict(game), **changes})


def test_the_record_checks_the_ply_limit() -> None:
    capped = Game.new(WHITE, BLACK, at=T0, max_plies=2).with_move("e4").with_move("e5")
    going = Game.new(WHITE, BLACK, at=T0).with_move("e4").with_move("e5")
    ended = {"status": "draw", "result": "draw", "ended_at": capped.last_updated}
    cases: dict[str, tuple[Game, dict[str, Any]]] = {
        "termination is 'max_plies' but the game has no max_plies": (going, {
            **ended, "termination": "max_plies"}),
        r"move_history holds 2 moves, more than max_plies \(1\)": (capped, {"max_plies": 1}),
        "termination is 'max_plies' but move_history holds 2 of 3 plies": (capped, {
            "max_plies": 3}),
        r"status is in_progress but move_history holds max_plies \(2\) moves": (going, {
            "max_plies": 2}),
        "status 'resigned' does not fit termination 'max_plies'": (capped, {
            "status": "resigned", "result": "white_wins"}),
        "termination is 'max_plies' but the position had ended the game already": (
            Game.new(WHITE, BLACK, at=T0, max_plies=5).with_move("f3").with_move("e5")
            .with_move("g4").with_move("Qh4#"),
            {"max_plies": 4, "status": "draw", "result": "draw", "termination": "max_plies"}),
    }  # fmt: skip
    for message, (game, changes) in cases.items():
        with pytest.raises(ValidationError, match=message):
            rebuild(game, **changes)


def test_validate_game_state_replays_the_ply_limit() -> None:
    mate = Game.new(WHITE, BLACK, at=T0, max_plies=4)
    for move in FOOLS_MATE:
        mate = mate.with_move(move)
    forged = Game.model_construct(
        **{**dict(mate), "status": "draw", "result": "draw", "termination": "max_plies"}
    )
    problems = validate_game_state(forged)
    assert "the moves end the game by checkmate but termination is 'max_plies'" in problems
    over = Game.model_construct(**{**dict(mate), "max_plies": 3})
    assert "move_history holds 4 moves, more than max_plies (3)" in validate_game_state(over)
