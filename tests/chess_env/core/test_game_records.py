"""The game models: every validation rule, moves read from python-chess, endings, JSON and PGN,
and ``validate_game_state`` on sound and corrupted games."""

from __future__ import annotations

import io
import os
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TypeVar

import chess
import chess.pgn
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from chess_env.core.encoding import board_to_tensor
from chess_env.core.game import (
    AgentConfig,
    AgentStats,
    BoardState,
    Game,
    GameSession,
    Move,
    validate_game_state,
)
from chess_env.core.move_parsing import MoveParseError
from chess_env.core.pgn import tag_value
from chess_env.errors import GameOverError, IllegalActionError, InvalidPositionError

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from forged_pgn import FORGED, read_games

T0 = datetime(2025, 10, 25, 10, 0, tzinfo=timezone.utc)
AGENT = {"personality": "balanced", "model_name": "m", "system_prompt": "Play well."}
WHITE = AgentConfig(agent_id="white", name="White", **AGENT)
BLACK = AgentConfig(agent_id="black", name="Black", **AGENT)
FOOLS_MATE = ["f3", "e5", "g4", "Qh4#"]
M = TypeVar("M", bound=BaseModel)
# Sam Loyd's ten-move stalemate.
LOYD_STALEMATE = "e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 Qxb8 Qh7 Qxc8 Kg6 Qe6"
KNIGHT_SHUFFLE = ["Nf3", "Nf6", "Ng1", "Ng8"] * 2  # the start position a third time


def play(moves: list[str], fen: str | None = None, step: float = 1.0) -> Game:
    """A game through ``moves``, one every ``step`` seconds after T0."""
    game = Game.new(WHITE, BLACK, fen, at=T0)
    for index, move in enumerate(moves):
        game = game.with_move(
            move, thinking_time=0.5, at=T0 + timedelta(seconds=step * (index + 1))
        )
    return game


def random_game(seed: int, plies: int) -> Game:
    rng = random.Random(seed)
    game = Game.new(WHITE, BLACK, at=T0)
    while len(game.move_history) < plies and not game.is_over:
        at = game.last_updated + timedelta(seconds=rng.random())
        game = game.with_move(rng.choice(game.board_state.legal_moves), rng.random(), at=at)
    return game


def rebuild(model: M, **changes: object) -> M:
    """``model`` with ``changes``, validated again."""
    return type(model)(**{**dict(model), **changes})


def corrupt(game: Game, **changes: object) -> Game:
    """``game`` with ``changes`` and no validation, as a buggy writer might leave it."""
    return Game.model_construct(**{**dict(game), **changes})


def corrupt_move(move: Move, **changes: object) -> Move:
    return Move.model_construct(**{**dict(move), **changes})


def record(fen: str, uci: str) -> Move:
    return Move.from_board(chess.Board(fen), chess.Move.from_uci(uci), 1.0, T0)


# -- AgentStats, BoardState ----------------------------------------------------------------------


def test_agent_stats_sums_must_add_up() -> None:
    assert AgentStats(games_played=3, games_won=1, games_lost=1, games_drawn=1).games_played == 3
    with pytest.raises(ValidationError, match=r"games_won \+ games_lost \+ games_drawn = 2"):
        AgentStats(games_played=3, games_won=1, games_lost=1)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        AgentStats(games_played=0, timeouts=-1)


def test_board_state_reads_every_field_from_the_fen() -> None:
    state = BoardState.from_fen("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNB1KBNR b KQkq g3 0 2")
    assert state.en_passant_square is None  # no black pawn can take on g3
    mate = BoardState.from_board(play(FOOLS_MATE).board_state.board())
    assert mate.is_check and mate.is_checkmate and mate.is_game_over and not mate.legal_moves
    stalemate = BoardState.from_fen("k7/2Q5/8/8/8/8/8/7K b - - 0 1")
    assert stalemate.is_stalemate and not stalemate.is_check and stalemate.is_game_over
    start = BoardState.from_board(chess.Board())
    assert (start.castling_rights, start.halfmove_clock, start.fullmove_number) == ("KQkq", 0, 1)
    assert list(start.legal_moves) == sorted(m.uci() for m in chess.Board().legal_moves)
    assert np.array_equal(start.board_tensor, board_to_tensor(chess.Board(), "white"))
    assert "board_tensor" not in start.model_dump_json()


def test_board_state_refuses_fields_the_fen_contradicts() -> None:
    mate = play(FOOLS_MATE).board_state
    with pytest.raises(ValidationError, match="is_check is False but the FEN gives True"):
        rebuild(mate, is_check=False)
    start = BoardState.from_board(chess.Board())
    with pytest.raises(ValidationError, match=r"legal_moves disagree.*missing \['a2a3'\]"):
        rebuild(start, legal_moves=start.legal_moves[1:])
    with pytest.raises(ValidationError, match="black has no king"):
        rebuild(start, fen="8/8/8/8/8/8/8/K7 w - - 0 1")
    with pytest.raises(InvalidPositionError, match="does not parse"):
        BoardState.from_fen("not a fen")
    with pytest.raises(ValidationError, match="less than or equal to 100"):
        BoardState.from_fen("4k3/8/8/8/8/8/8/R3K3 w - - 120 80")


# -- Move ----------------------------------------------------------------------------------------

CASTLING = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R {} KQkq - 0 1"
PROMOTIONS = "1n1n3k/2P5/8/8/8/8/5p2/K5N1 {} - - 0 1"


@pytest.mark.parametrize(
    ("fen", "uci", "san", "piece", "capture", "castling", "promotion", "check"),
    [
        ("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2", "e4d5", "exd5",
         "pawn", True, False, None, False),
        ("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "e5d6", "exd6", "pawn", True, False, None, False),
        ("4k3/8/8/8/3Pp3/8/8/4K3 b - d3 0 2", "e4d3", "exd3", "pawn", True, False, None, False),
        (CASTLING.format("w"), "e1g1", "O-O", "king", False, True, None, False),
        (CASTLING.format("w"), "e1c1", "O-O-O", "king", False, True, None, False),
        (CASTLING.format("b"), "e8g8", "O-O", "king", False, True, None, False),
        (CASTLING.format("b"), "e8c8", "O-O-O", "king", False, True, None, False),
        (PROMOTIONS.format("w"), "c7c8q", "c8=Q", "pawn", False, False, "queen", False),
        (PROMOTIONS.format("w"), "c7b8n", "cxb8=N", "pawn", True, False, "knight", False),
        (PROMOTIONS.format("w"), "c7d8r", "cxd8=R+", "pawn", True, False, "rook", True),
        (PROMOTIONS.format("w"), "c7c8b", "c8=B", "pawn", False, False, "bishop", False),
        (PROMOTIONS.format("b"), "f2g1q", "fxg1=Q+", "pawn", True, False, "queen", True),
        (PROMOTIONS.format("b"), "f2f1n", "f1=N", "pawn", False, False, "knight", False),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 0 1", "a1a8", "Ra8+", "rook", False, False, None, True),
        ("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", "d8h4", "Qh4#",
         "queen", False, False, None, True),
    ],
)  # fmt: skip
def test_move_from_board_reads_every_field_before_the_push(
    fen: str,
    uci: str,
    san: str,
    piece: str,
    capture: bool,
    castling: bool,
    promotion: str | None,
    check: bool,
) -> None:
    board = chess.Board(fen)
    move = Move.from_board(board, chess.Move.from_uci(uci), 2.5, T0)
    assert board.fen() == chess.Board(fen).fen()  # not pushed
    assert (move.uci_notation, move.san_notation, move.piece) == (uci, san, piece)
    assert (move.from_square, move.to_square) == (uci[:2], uci[2:4])
    assert move.player == ("white" if board.turn else "black")
    assert (move.is_capture, move.is_castling, move.is_check) == (capture, castling, check)
    assert (move.is_promotion, move.promotion_piece) == (promotion is not None, promotion)
    assert (move.timestamp, move.thinking_time) == (T0, 2.5)


def test_move_from_board_refuses_an_illegal_move() -> None:
    with pytest.raises(IllegalActionError, match="e2e5 is illegal in rnbqkbnr"):
        Move.from_board(chess.Board(), chess.Move.from_uci("e2e5"))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"thinking_time": -0.1}, "greater than or equal to 0"),
        ({"thinking_time": float("nan")}, "finite number"),
        ({"promotion_piece": "queen"}, "promotion_piece must be set if and only if is_promotion"),
        ({"is_promotion": True}, "promotion_piece must be set if and only if is_promotion"),
        ({"to_square": "e2"}, "from_square and to_square are both e2"),
        ({"uci_notation": "e2e3"}, "uci_notation is 'e2e3', but the squares and promotion give"),
        ({"is_castling": True}, "is_castling is True, but white's pawn e2e4 is not castling"),
        ({"san_notation": "Nf3"}, "san_notation 'Nf3' contradicts piece, to_square"),
        ({"san_notation": "e4+"}, "san_notation 'e4\\+' contradicts is_check"),
        ({"san_notation": "exd5"}, "contradicts to_square, is_capture"),
        ({"san_notation": "hello"}, "'hello' is not SAN"),
        ({"piece": "bishop"}, "contradicts piece"),
        ({"player": "purple"}, "Input should be 'white' or 'black'"),
        ({"from_square": "i9"}, "String should match pattern"),
        ({"timestamp": datetime(2025, 10, 25)}, "should have timezone info"),
    ],
)
def test_move_validation_rules(changes: dict[str, object], message: str) -> None:
    move = record(chess.STARTING_FEN, "e2e4")
    with pytest.raises(ValidationError, match=message):
        rebuild(move, **changes)


def test_move_promotion_and_castling_must_fit_the_piece_and_squares() -> None:
    promotion = record(PROMOTIONS.format("w"), "c7c8q")
    with pytest.raises(ValidationError, match="is_promotion is False, but a white pawn moving"):
        rebuild(
            promotion,
            is_promotion=False,
            promotion_piece=None,
            uci_notation="c7c8",
            san_notation="c8",
        )
    castle = record(CASTLING.format("b"), "e8c8")
    with pytest.raises(ValidationError, match="is_castling is False, but black's king e8c8 is"):
        rebuild(castle, is_castling=False)


# -- Game: rules on construction -----------------------------------------------------------------


def test_game_id_must_be_a_uuid4() -> None:
    game = Game.new(WHITE, BLACK)
    assert uuid.UUID(game.game_id).version == 4
    same = rebuild(game, game_id=game.game_id.upper())
    assert same.game_id == game.game_id  # canonical form
    with pytest.raises(ValidationError, match="'nope' is not a UUID"):
        rebuild(game, game_id="nope")
    with pytest.raises(ValidationError, match="is not a version 4 UUID"):
        rebuild(game, game_id=str(uuid.uuid1()))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"current_turn": "black"}, "current_turn is 'black' but board_state has white to move"),
        ({"result": "draw"}, "result is set while the game is in progress"),
        ({"ended_at": T0}, "ended_at is set while the game is in progress"),
        ({"status": "resigned"}, "status is 'resigned' but result, termination, ended_at not"),
        (
            {"status": "draw", "result": "draw", "termination": "checkmate", "ended_at": T0},
            "status 'draw' does not fit termination 'checkmate'",
        ),
        (
            {"status": "resigned", "result": "draw", "termination": "resigned", "ended_at": T0},
            "result is 'draw' but a resigned here gives white_wins or black_wins",
        ),
        (
            {"status": "stalemate", "result": "draw", "termination": "stalemate", "ended_at": T0},
            "termination is 'stalemate' but the position is not",
        ),
        (
            {
                "status": "resigned",
                "result": "white_wins",
                "termination": "resigned",
                "ended_at": T0 - timedelta(seconds=1),
            },
            r"ended_at \(2025-10-25T09:59:59\+00:00\) is before started_at",
        ),
        ({"last_updated": T0 - timedelta(seconds=1)}, r"last_updated .* is before started_at"),
        ({"black": WHITE}, "white and black have the same agent_id 'white'"),
        ({"move_history": (record(chess.STARTING_FEN, "e2e4"),)}, "move_history holds 1 moves"),
    ],
)
def test_game_validation_rules(changes: dict[str, object], message: str) -> None:
    game = Game.new(WHITE, BLACK, at=T0)
    with pytest.raises(ValidationError, match=message):
        rebuild(game, **changes)


def test_game_checks_the_players_and_times_of_its_moves() -> None:
    game = play(["e4", "e5"])
    first, second = game.move_history
    with pytest.raises(ValidationError, match=r"move_history\[1\] \(e7e5\) is played by white"):
        rebuild(game, move_history=(first, rebuild(second, player="white")))
    with pytest.raises(ValidationError, match=r"move_history\[1\]\.timestamp .* is before"):
        rebuild(game, move_history=(first, rebuild(second, timestamp=T0)))


def test_a_finished_position_needs_a_finished_status() -> None:
    mate = play(FOOLS_MATE)
    with pytest.raises(ValidationError, match="status is in_progress but the position is over"):
        rebuild(mate, status="in_progress", result=None, termination=None, ended_at=None)
    with pytest.raises(ValidationError, match="result is 'white_wins' but a checkmate here gives"):
        rebuild(mate, result="white_wins")


# -- Game: playing -------------------------------------------------------------------------------


def test_fools_mate_ends_in_checkmate() -> None:
    game = play(FOOLS_MATE)
    assert (game.status, game.result, game.termination) == ("checkmate", "black_wins", "checkmate")
    assert game.ended_at == game.last_updated == T0 + timedelta(seconds=4)
    assert [m.san_notation for m in game.move_history] == ["f3", "e5", "g4", "Qh4#"]
    assert [m.player for m in game.move_history] == ["white", "black"] * 2
    assert game.board_state.is_checkmate and game.current_turn == "white"
    assert validate_game_state(game) == []


def test_stalemate_threefold_fifty_moves_and_insufficient_material_are_draws() -> None:
    stalemate = play(LOYD_STALEMATE.split())
    assert (stalemate.status, stalemate.result) == ("stalemate", "draw")
    assert stalemate.board_state.is_stalemate
    threefold = play(KNIGHT_SHUFFLE)
    assert (threefold.status, threefold.result, threefold.termination) == (
        "draw", "draw", "threefold_repetition",
    )  # fmt: skip
    assert len(play(KNIGHT_SHUFFLE[:7]).move_history) == 7  # one ply earlier it goes on
    fifty = play(["Ra2"], fen="4k3/8/8/8/8/8/8/R3K3 w - - 99 80")
    assert (fifty.status, fifty.termination) == ("draw", "fifty_moves")
    bare = play(["Kxd2"], fen="4k3/8/8/8/8/8/3p4/4K3 w - - 0 1")
    assert (bare.status, bare.termination) == ("draw", "insufficient_material")
    for game in (stalemate, threefold, fifty, bare):
        assert validate_game_state(game) == []


def test_resign_and_timeout() -> None:
    game = play(["e4"])
    resigned = game.resign("white", at=T0 + timedelta(seconds=9))
    assert (resigned.status, resigned.result, resigned.termination) == (
        "resigned", "black_wins", "resigned",
    )  # fmt: skip
    assert resigned.ended_at == T0 + timedelta(seconds=9)
    timed_out = game.timeout("black")
    assert (timed_out.status, timed_out.result) == ("timeout", "white_wins")
    with pytest.raises(ValueError, match="only the side to move can run out of time"):
        game.timeout("white")
    with pytest.raises(ValueError, match="color must be 'white' or 'black', got 'red'"):
        game.resign("red")  # type: ignore[arg-type]
    assert validate_game_state(resigned) == validate_game_state(timed_out) == []


def test_a_failed_agent_resigns_with_termination_agent_error() -> None:
    game = play(["e4"])
    failed = game.resign("black", termination="agent_error", at=T0 + timedelta(seconds=3))
    assert (failed.status, failed.result, failed.termination) == (
        "resigned", "white_wins", "agent_error",
    )  # fmt: skip
    assert validate_game_state(failed) == []
    headers = chess.pgn.read_headers(io.StringIO(failed.to_pgn()))
    assert headers is not None and (headers["Result"], headers["Termination"]) == (
        "1-0", "abandoned",
    )  # fmt: skip
    with pytest.raises(ValueError, match="termination must be 'resigned' or 'agent_error'"):
        game.resign("black", termination="checkmate")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="status 'draw' does not fit termination"):
        rebuild(failed, status="draw", result="draw")
    over = corrupt(play(FOOLS_MATE), termination="agent_error", status="resigned")
    assert any("the moves end the game by checkmate" in p for p in validate_game_state(over))


def test_a_finished_game_takes_nothing_more() -> None:
    for game in (play(FOOLS_MATE), play(["e4"]).resign("black")):
        with pytest.raises(GameOverError, match=f"game {game.game_id} is over"):
            game.with_move("a3")
        with pytest.raises(GameOverError):
            game.resign("white")
        with pytest.raises(GameOverError):
            game.timeout(game.current_turn)


def test_with_move_returns_a_new_game_and_explains_illegal_moves() -> None:
    game = play(["e4"])
    after = game.with_move("e7e5")
    assert len(game.move_history) == 1 and len(after.move_history) == 2
    with pytest.raises(ValidationError, match="frozen"):
        game.status = "draw"  # type: ignore[misc]
    message = r"black cannot play 'e7e4' in game .*: the pawn on e7 cannot move to e4"
    with pytest.raises(MoveParseError, match=message) as caught:
        game.with_move("e7e4")
    assert caught.value.reason == "cannot_move_there"
    with pytest.raises(IllegalActionError, match=r"'castle please'.*no move found"):
        game.with_move("castle please")
    with pytest.raises(ValidationError, match="thinking_time"):
        game.with_move("e5", thinking_time=-1.0)


def test_times_stay_in_order_when_the_clock_steps_back() -> None:
    game = play(["e4"], step=10.0)
    after = game.with_move("e5", at=T0)  # earlier than the last move
    assert after.move_history[-1].timestamp == after.last_updated == T0 + timedelta(seconds=10)
    with pytest.raises(ValueError, match="timezone-aware"):
        game.with_move("e5", at=datetime(2025, 10, 25, 11))


def test_new_game_from_a_fen() -> None:
    fen = "4k3/8/8/8/8/8/4P3/4K3 b - - 3 40"
    game = Game.new(WHITE, BLACK, fen)
    assert game.start_fen == game.board_state.fen == fen and game.current_turn == "black"
    with pytest.raises(InvalidPositionError, match="black has no king"):
        Game.new(WHITE, BLACK, "8/8/8/8/8/8/8/K7 w - - 0 1")
    with pytest.raises(InvalidPositionError, match=r"already over \(stalemate\)"):
        Game.new(WHITE, BLACK, "k7/2Q5/8/8/8/8/8/7K b - - 0 1")


# -- JSON, PGN, sessions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "game",
    [
        play(FOOLS_MATE),
        play(["c8=Q", "fxg1=Q+"], fen=PROMOTIONS.format("w")),
        Game.new(WHITE, BLACK),
    ],
    ids=["checkmate", "promotion", "new"],
)
def test_json_round_trip(game: Game) -> None:
    text = game.model_dump_json()
    assert Game.model_validate_json(text) == game
    assert Game.model_validate_json(text).model_dump_json() == text


def test_pgn_parses_back_to_the_same_game() -> None:
    for game in (random_game(seed=4, plies=60), play(["c8=Q"], fen=PROMOTIONS.format("w"))):
        parsed = chess.pgn.read_game(io.StringIO(game.to_pgn()))
        assert parsed is not None and not parsed.errors
        assert parsed.end().board().fen() == game.board_state.fen
        assert [m.uci() for m in parsed.mainline_moves()] == [
            m.uci_notation for m in game.move_history
        ]
        assert (parsed.headers["White"], parsed.headers["Black"]) == ("White", "Black")
        assert parsed.headers["GameId"] == game.game_id
    setup = chess.pgn.read_game(io.StringIO(play(["c8=Q"], fen=PROMOTIONS.format("w")).to_pgn()))
    assert setup is not None and setup.headers["FEN"] == PROMOTIONS.format("w")
    headers = chess.pgn.read_headers(io.StringIO(play(FOOLS_MATE).to_pgn()))
    assert headers is not None and (headers["Result"], headers["Termination"]) == ("0-1", "normal")
    timeout = chess.pgn.read_headers(io.StringIO(play(["e4"]).timeout("black").to_pgn()))
    assert timeout is not None and timeout["Termination"] == "time forfeit"


# Text that ends PGN tags and lines, as an attacker would use it, mixed with any other text.
PGN_BREAKERS = st.sampled_from(
    ['"', "\\", "]", "[", "\n", "\r", "\u2028", "\x85", "\x0b", "\ud800", "%"]
)
NAMES = st.text(st.one_of(PGN_BREAKERS, st.characters()), min_size=1, max_size=50)


def test_a_name_cannot_forge_a_second_game_in_the_pgn() -> None:
    game = Game.new(WHITE.model_copy(update={"name": FORGED[:50]}), BLACK, at=T0)
    (parsed,) = read_games(game.to_pgn())
    assert parsed.headers["White"] == "Eve'] [Result '1-0']  1. e4 1-0  [Event 'forged"[:50]
    assert parsed.headers["Result"] == "*" and parsed.headers["GameId"] == game.game_id


@settings(max_examples=int(os.environ.get("PGN_PROPERTY_EXAMPLES", "200")))
@given(white=NAMES, black=NAMES)
def test_any_player_names_read_back_as_one_game_with_those_names(white: str, black: str) -> None:
    game = play(["e4", "e5"])
    game = game.model_copy(
        update={
            "white": WHITE.model_copy(update={"name": white}),
            "black": BLACK.model_copy(update={"name": black}),
        }
    )
    text = game.to_pgn()
    text.encode("utf-8")  # the archive writes it as UTF-8: no lone surrogate is left
    (parsed,) = read_games(text)
    assert len(read_games(f"{text}\n\n{text}")) == 2  # as games.pgn appends them
    assert (parsed.headers["White"], parsed.headers["Black"]) == (
        tag_value(white),
        tag_value(black),
    )
    assert parsed.headers["Result"] == "*" and parsed.headers["GameId"] == game.game_id
    assert [m.uci() for m in parsed.mainline_moves()] == ["e2e4", "e7e5"]


def test_game_session() -> None:
    game_id = str(uuid.uuid4())
    session = GameSession.new(game_id, at=T0)
    assert session.last_activity == session.created_at == T0 and session.spectators == 0
    assert session.is_active and not rebuild(session, is_active=False).is_active
    with pytest.raises(ValidationError, match=r"last_activity .* is before created_at"):
        rebuild(session, last_activity=T0 - timedelta(seconds=1))
    with pytest.raises(ValidationError, match="not a UUID"):
        GameSession.new("game-1")
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        rebuild(session, spectators=-1)


# -- validate_game_state -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fifty_plies() -> Game:
    game = random_game(seed=7, plies=50)
    assert len(game.move_history) == 50 and not game.is_over
    return game


def test_a_valid_random_game_has_no_problems(fifty_plies: Game) -> None:
    assert validate_game_state(fifty_plies) == []


def test_an_illegal_move_is_named_by_its_index(fifty_plies: Game) -> None:
    history = list(fifty_plies.move_history)
    history[20] = corrupt_move(history[20], uci_notation="a1a8", from_square="a1", to_square="a8")
    problems = validate_game_state(corrupt(fifty_plies, move_history=tuple(history)))
    assert any(p.startswith("move_history[20] (a1a8) is illegal in ") for p in problems), problems


def test_a_wrong_record_of_a_legal_move_is_named(fifty_plies: Game) -> None:
    history = list(fifty_plies.move_history)
    history[5] = corrupt_move(history[5], san_notation="Qxh7", is_capture=True)
    problems = validate_game_state(corrupt(fifty_plies, move_history=tuple(history)))
    expected = (
        f"san_notation is 'Qxh7' but the move gives {fifty_plies.move_history[5].san_notation!r}"
    )
    assert any(p.startswith("move_history[5] (") and expected in p for p in problems), problems
    assert any(p.startswith("move_history[5]: san_notation 'Qxh7' contradicts") for p in problems)


def test_each_kind_of_corruption_is_reported(fifty_plies: Game) -> None:
    game, history = fifty_plies, fifty_plies.move_history
    other = random_game(seed=8, plies=50).board_state
    cases = {
        "board_state.fen is": corrupt(game, board_state=other),
        "current_turn is 'black'": corrupt(game, current_turn="black"),
        "move_history holds 49 moves": corrupt(game, move_history=history[:-1]),
        "move_history[9].timestamp": corrupt(
            game, move_history=(*history[:9], corrupt_move(history[9], timestamp=T0), *history[10:])
        ),
        "ended_at (": corrupt(game.resign("white"), ended_at=T0 - timedelta(hours=1)),
        "game_id: 'x' is not a UUID": corrupt(game, game_id="x"),
        "result is set while the game is in progress": corrupt(game, result="draw"),
        "termination is 'threefold_repetition' but the moves do not end the game": corrupt(
            game, status="draw", result="draw", termination="threefold_repetition", ended_at=T0
        ),
        "board_state: is_check is True but the FEN gives False": corrupt(
            game,
            board_state=BoardState.model_construct(**{**dict(game.board_state), "is_check": True}),
        ),
    }
    for message, broken in cases.items():
        problems = validate_game_state(broken)
        assert any(message in p for p in problems), (message, problems)


def test_endings_the_moves_contradict(fifty_plies: Game) -> None:
    mate = play(FOOLS_MATE)
    problems = validate_game_state(corrupt(mate, result="white_wins"))
    assert "the moves end the game with black_wins but result is 'white_wins'" in problems
    extra = corrupt(mate, move_history=(*mate.move_history, mate.move_history[0]))
    assert "move_history[4] (f2f3) is played after the game ended (checkmate)" in (
        validate_game_state(extra)
    )
    threefold = play(KNIGHT_SHUFFLE)
    unfinished = corrupt(
        threefold, status="in_progress", result=None, termination=None, ended_at=None
    )
    assert "the moves end the game by threefold_repetition but termination is None" in (
        validate_game_state(unfinished)
    )


def test_several_corruptions_give_several_messages(fifty_plies: Game) -> None:
    broken = corrupt(
        fifty_plies,
        current_turn="black",
        result="draw",
        started_at=fifty_plies.last_updated + timedelta(hours=1),
    )
    problems = validate_game_state(broken)
    for message in ("current_turn", "result is set", "move_history[0].timestamp"):
        assert sum(message in p for p in problems) == 1, (message, problems)
    assert len(problems) >= 3
