"""ChessTextEnv and parse_move: what text is read as which move, why a move is refused, retries."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

from chess_env import ChessTextEnv, GameOverError, IllegalActionError, InvalidPositionError
from chess_env.core.move_parsing import REASONS, MoveParseError, parse_move
from chess_env.core.players import make_player
from chess_env.errors import OpponentError
from chess_env.text.agents import OpponentTextAgent, RandomTextAgent
from chess_env.text.env import OBSERVATION_MAX_LENGTH, position_prompt
from chess_env.text.evaluation import evaluate_agent
from chess_env.text.prompt_conditions import PRESETS, PromptCondition

PROMOTION_FEN = "7k/4P3/8/8/8/8/8/4K3 w - - 0 1"
CASTLING_FEN = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
AFTER_E4_D5 = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
BISHOP_OR_PAWN_FEN = "rnbqk1nr/pppp1ppp/8/4p3/2b5/1P2P3/P1PP1PPP/RNBQKBNR w KQkq - 0 1"
PINNED_KNIGHT_FEN = "4k3/4r3/8/8/8/4N3/8/4K3 w - - 0 1"
KINGS_FEN = "4k3/8/8/8/8/8/8/4K3 w - - 0 1"
TWO_KNIGHTS_FEN = "rnbqkbnr/pppppppp/8/8/8/5N2/PPP1PPPP/RNBQKB1R w KQkq - 0 1"
MOST_MOVES_FEN = "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1"  # 218 legal moves


def fixed_replies(*ucis: str) -> Any:
    """An opponent that plays the given moves in order: for hand-made scenarios."""
    replies = iter(ucis)
    return lambda board: chess.Move.from_uci(next(replies))


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fen", "text", "uci"),
    [
        (None, "e2e4", "e2e4"),
        (None, "E2E4", "e2e4"),
        (None, "e2-e4", "e2e4"),
        (None, "e4", "e2e4"),
        (None, "E4", "e2e4"),
        (None, "Nf3", "g1f3"),
        (None, "nf3", "g1f3"),
        (None, "NF3", "g1f3"),
        (None, "Ng1f3", "g1f3"),
        (None, "b4", "b2b4"),  # a lowercase b is the b-file first
        (None, "B4", "b2b4"),
        (None, "I play [e2e4]", "e2e4"),
        (None, "[thinking] ... then [ Nf3 ] it is", "g1f3"),
        (None, "My move: Nf3.", "g1f3"),
        (None, "**e4**", "e2e4"),
        (None, "`d2d4`", "d2d4"),
        (None, "1. e4", "e2e4"),
        (None, "Nf3!?", "g1f3"),
        (None, "e4!!", "e2e4"),
        (PROMOTION_FEN, "e8=Q", "e7e8q"),
        (PROMOTION_FEN, "e8Q", "e7e8q"),
        (PROMOTION_FEN, "e8=Q+", "e7e8q"),
        (PROMOTION_FEN, "e8=N", "e7e8n"),
        (PROMOTION_FEN, "e7e8q", "e7e8q"),
        (PROMOTION_FEN, "E7E8Q", "e7e8q"),
        (PROMOTION_FEN, "e7e8=R", "e7e8r"),
        (CASTLING_FEN, "O-O", "e1g1"),
        (CASTLING_FEN, "0-0", "e1g1"),
        (CASTLING_FEN, "o-o", "e1g1"),
        (CASTLING_FEN, "O-O-O", "e1c1"),
        (CASTLING_FEN, "0-0-0+", "e1c1"),
        (CASTLING_FEN, "e1g1", "e1g1"),
        (AFTER_E4_D5, "exd5", "e4d5"),
        (AFTER_E4_D5, "EXD5", "e4d5"),
        (AFTER_E4_D5, "e4xd5", "e4d5"),
        (AFTER_E4_D5, "Bb5+", "f1b5"),
        (AFTER_E4_D5, "bb5", "f1b5"),  # no pawn reading is legal, so b is the bishop
        (BISHOP_OR_PAWN_FEN, "bxc4", "b3c4"),  # both are legal: the pawn reading wins
        (BISHOP_OR_PAWN_FEN, "Bxc4", "f1c4"),  # a capital B is a bishop
        (TWO_KNIGHTS_FEN, "Nbd2", "b1d2"),
        (TWO_KNIGHTS_FEN, "Nfd2", "f3d2"),
    ],
)
def test_text_is_read_as_the_move(fen: str | None, text: str, uci: str) -> None:
    board = chess.Board(fen) if fen else chess.Board()
    assert parse_move(text, board).uci() == uci
    assert parse_move(text, board, list(board.legal_moves)).uci() == uci


@pytest.mark.parametrize(
    ("fen", "text", "reason", "message"),
    [
        (None, "hello there", "unreadable", "no move found in 'hello there'"),
        (None, "", "unreadable", "no move found in ''"),
        (None, "0000", "unreadable", "no move found"),
        (None, "e3e4", "no_piece", "no piece on e3"),
        (None, "Qh5", "cannot_move_there", "the queen on d1 cannot move to h5"),
        (KINGS_FEN, "e4", "no_piece", "you have no pawn on the e-file"),
        (KINGS_FEN, "Qd8", "no_piece", "you have no queen"),
        (KINGS_FEN, "Ne1e4", "no_piece", "you have no knight on e1"),
        (None, "e7e5", "not_your_piece", "the pawn on e7 is black's, and you play white"),
        (None, "g1g3", "cannot_move_there", "the knight on g1 cannot move to g3"),
        (None, "Ng3", "cannot_move_there", "none of your knights (b1, g1) can move to g3"),
        (None, "e2e5", "cannot_move_there", "the pawn on e2 cannot move to e5"),
        # python-chess's Move.from_uci refuses these outright (a ValueError, once a 500 served)
        (None, "a1a1", "cannot_move_there", "the rook on a1 cannot move to a1"),
        (None, "e4e4", "no_piece", "no piece on e4"),
        (None, "h8h8q", "not_your_piece", "the rook on h8 is black's, and you play white"),
        (None, "e2e4q", "cannot_move_there", "only a pawn reaching the last rank can promote"),
        (None, "O-O", "cannot_move_there", "pieces stand between your king and rook"),
        (
            "r3k2r/8/8/8/8/8/8/R3K2R w Qkq - 0 1",
            "e1g1",
            "cannot_move_there",
            "you cannot castle kingside: the right is gone",
        ),
        (
            "r3k1r1/8/8/8/8/8/8/R3K2R w KQq - 0 1",
            "O-O",
            "cannot_move_there",
            "pass through or land on an attacked square",
        ),
        (
            "r3k2r/8/8/8/8/8/4r3/R3K2R w KQkq - 0 1",
            "O-O-O",
            "cannot_move_there",
            "you cannot castle queenside: your king is in check",
        ),
        (
            PINNED_KNIGHT_FEN,
            "e3d5",
            "leaves_king_in_check",
            "e3d5 leaves your king in check (the knight on e3 is pinned)",
        ),
        (
            "4k3/4r3/8/8/8/8/8/4K3 w - - 0 1",
            "e1e2",
            "leaves_king_in_check",
            "e1e2 leaves your king in check (the king would be attacked on e2)",
        ),
        (
            "4k3/8/8/8/8/8/P7/4K2r w - - 0 1",
            "a3",
            "leaves_king_in_check",
            "a3 leaves your king in check (you are in check",
        ),
        (PROMOTION_FEN, "e7e8", "missing_promotion", "missing promotion piece: e7e8"),
        (PROMOTION_FEN, "e8", "missing_promotion", "write e7e8q or e8=Q+"),
        (TWO_KNIGHTS_FEN, "Nd2", "ambiguous", "Nd2 is ambiguous: Nbd2 or Nfd2"),
        ("7k/5QQ1/8/8/8/8/8/K7 b - - 0 1", "Kh7", "game_over", "the game is over (checkmate)"),
        ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "Kg8", "game_over", "the game is over (stalemate)"),
        (None, "move the knight from g1 to f3", "cannot_move_there", "pawn"),  # "g1" decides
    ],
)
def test_failures_name_the_reason_and_the_square(
    fen: str | None, text: str, reason: str, message: str
) -> None:
    board = chess.Board(fen) if fen else chess.Board()
    with pytest.raises(MoveParseError) as caught:
        parse_move(text, board)
    assert caught.value.reason == reason and reason in REASONS
    assert message in str(caught.value)
    assert isinstance(caught.value, IllegalActionError) and isinstance(caught.value, ValueError)


def test_parse_errors_pickle_with_their_reason() -> None:
    with pytest.raises(MoveParseError) as caught:
        parse_move("e3e4", chess.Board())
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.reason, str(copy)) == ("no_piece", "no piece on e3")


def test_unreadable_text_is_quoted_short_and_in_ascii() -> None:
    with pytest.raises(MoveParseError) as caught:
        parse_move("♔ très bien " * 20, chess.Board())
    message = str(caught.value)
    assert message.isascii() and "..." in message and len(message) < 200


# -- the env ----------------------------------------------------------------------------------


CHECKER_CONFIGS = [
    {},
    {"agent_color": "black", "notation": "san", "board_style": "unicode", "retries": 0},
    {"agent_color": "random", "retries": 3, "render_mode": "ansi", "opponent": "greedy"},
]


@pytest.mark.parametrize("kwargs", CHECKER_CONFIGS + [{"prompt": name} for name in PRESETS])
def test_gymnasium_checker_passes(kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Gymnasium's checker reports problems as warnings
        check_env(gym.make("chess_env/ChessText-v0", **kwargs).unwrapped)


def test_registered_id_makes_the_env() -> None:
    assert isinstance(gym.make("chess_env/ChessText-v0").unwrapped, ChessTextEnv)


def test_reset_observation_shows_board_fen_moves_and_prompt() -> None:
    env = ChessTextEnv()
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    lines = obs.splitlines()
    assert lines[0] == "You play white. It is your move (white to move, move 1)."
    assert lines[1].strip() == "a b c d e f g h" and lines[2] == "8 r n b q k b n r 8"
    assert lines[9] == "1 R N B Q K B N R 1"
    assert f"FEN: {chess.STARTING_FEN}" in lines and "Last move: none." in lines
    assert f"Legal moves (UCI): {' '.join(info['legal_moves'])}" in lines
    assert "[e2e4]" in lines[-1]
    assert info == {
        "fen": chess.STARTING_FEN,
        "outcome": None,
        "result": "*",
        "agent_move": None,
        "opponent_move": None,
        "ply": 0,
        "legal_moves": [m.uci() for m in chess.Board().legal_moves],
        "agent_color": "white",
        "retries_left": 1,
        "illegal_attempts": 0,
        "last_error": None,
    }


def test_a_full_game_by_uci_text_against_the_random_opponent() -> None:
    env = ChessTextEnv(opponent="random")
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        uci = str(rng.choice(info["legal_moves"]))
        obs, reward, terminated, truncated, info = env.step(f"I play [{uci}]")
        assert info["agent_move"] == uci and info["last_error"] is None
        assert env.observation_space.contains(obs)
    assert info["outcome"] is not None and info["legal_moves"] == []
    assert reward in (-1.0, 0.0, 1.0) and "Game over" in obs.splitlines()[0]
    assert info["fen"] == env.board.fen() and info["ply"] == env.board.ply()


def test_san_notation_lists_san_and_either_notation_is_accepted() -> None:
    env = ChessTextEnv(notation="san", opponent=fixed_replies("e7e5", "b8c6"))
    obs, _ = env.reset(seed=0)
    sans = [chess.Board().san(m) for m in chess.Board().legal_moves]
    assert f"Legal moves (SAN): {' '.join(sans)}" in obs.splitlines()
    obs, *_, info = env.step("[Nf3]")
    assert info["agent_move"] == "g1f3" and "Last move: black played e7e5 (e5)." in obs
    _, *_, info = env.step("[b1c3]")
    assert info["agent_move"] == "b1c3"


def test_first_illegal_answer_gets_a_retry_and_the_second_loses() -> None:
    env = ChessTextEnv()
    obs_before, _ = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("[g1g3]")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["fen"] == chess.STARTING_FEN and info["ply"] == 0
    assert info["retries_left"] == 1 and info["illegal_attempts"] == 1
    assert info["last_error"] == {
        "reason": "cannot_move_there",
        "message": "the knight on g1 cannot move to g3",
    }
    assert (
        "Your last answer was rejected (cannot_move_there): the knight on g1 cannot move to g3. "
        "1 retry left for this move."
    ) in obs.splitlines()
    assert obs.replace(obs.splitlines()[-2] + "\n", "") == obs_before  # only the error line added

    obs, reward, terminated, truncated, info = env.step("[e2e5]")
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["outcome"] == "illegal_move" and info["result"] == "0-1"
    assert info["illegal_attempts"] == 2 and info["retries_left"] == 0
    assert info["fen"] == chess.STARTING_FEN and info["legal_moves"] == []
    assert obs.splitlines()[0].endswith("you lose by an illegal move.")
    assert "the pawn on e2 cannot move to e5" in obs and "Legal moves" not in obs
    with pytest.raises(GameOverError, match=r"episode is over \(illegal_move\); call reset"):
        env.step("[e2e4]")


def test_retries_zero_loses_at_once() -> None:
    env = ChessTextEnv(retries=0, agent_color="black", opponent=fixed_replies("e2e4"))
    _, info = env.reset(seed=0)
    assert info["retries_left"] == 0
    _, reward, terminated, _, info = env.step("nonsense")
    assert (reward, terminated, info["outcome"]) == (-1.0, True, "illegal_move")
    assert info["result"] == "1-0"  # the agent plays black
    assert info["last_error"]["reason"] == "unreadable"


def test_retries_three_allows_three_and_restarts_after_a_legal_move() -> None:
    env = ChessTextEnv(retries=3, opponent=fixed_replies("e7e5", "b8c6"))
    env.reset(seed=0)
    for left in (3, 2, 1):  # the first illegal answer is no retry yet: three retries follow it
        obs, reward, terminated, _, info = env.step("e2e5")
        assert (reward, terminated, info["retries_left"]) == (0.0, False, left)
        assert f"{left} {'retry' if left == 1 else 'retries'} left for this move." in obs
    _, reward, terminated, _, info = env.step("e4")
    assert (reward, terminated, info["illegal_attempts"]) == (0.0, False, 3)
    assert info["last_error"] is None and info["retries_left"] == 3  # counted per move
    for left in (3, 2, 1):
        assert env.step("Qxe5")[4]["retries_left"] == left  # no queen move reaches e5
    _, reward, terminated, _, info = env.step("Qxe5")
    assert (reward, terminated, info["outcome"]) == (-1.0, True, "illegal_move")
    assert info["illegal_attempts"] == 7


def test_illegal_attempts_never_change_the_board() -> None:
    env = ChessTextEnv(retries=10)
    env.reset(seed=0)
    for text in ["", "e3e4", "e7e5", "Ng3", "O-O", "e2e4q", "Bc4", "♔", "x" * 5000]:
        _, _, terminated, _, info = env.step(text)
        assert not terminated and info["fen"] == chess.STARTING_FEN
        assert env.game.legal_uci == info["legal_moves"]


def test_same_seed_same_game() -> None:
    def play(seed: int) -> list[tuple]:
        env = ChessTextEnv(agent_color="random", opponent="random", max_plies=40)
        obs, info = env.reset(seed=seed)
        record: list[tuple] = [(obs, info["agent_color"])]
        while info["legal_moves"]:
            obs, reward, *_, info = env.step(f"[{info['legal_moves'][-1]}]")
            record.append((obs, reward, info["opponent_move"]))
        return record

    assert play(3) == play(3)
    assert play(3) != play(4)


def test_agent_as_black_sees_the_opponents_first_move_from_its_side() -> None:
    env = ChessTextEnv(agent_color="black", opponent=fixed_replies("e2e4"))
    obs, info = env.reset(seed=0)
    assert info["opponent_move"] == "e2e4" and info["agent_color"] == "black"
    assert info["ply"] == 1 and env.board.turn == chess.BLACK
    lines = obs.splitlines()
    assert lines[0] == "You play black. It is your move (black to move, move 1)."
    assert lines[1].strip() == "h g f e d c b a" and lines[9] == "8 r n b k q b n r 8"
    assert "Last move: white played e2e4 (e4)." in lines


def test_rewards_from_the_agents_side() -> None:
    win = ChessTextEnv(agent_color="black", opponent=fixed_replies("f2f3", "g2g4"))
    win.reset(seed=0)
    win.step("e5")
    obs, reward, terminated, _, info = win.step("Qh4#")
    assert (reward, terminated, info["outcome"], info["result"]) == (1.0, True, "checkmate", "0-1")
    assert obs.splitlines()[0] == "You play black. Game over (checkmate, 0-1): you win."

    loss = ChessTextEnv(opponent="greedy")  # greedy always takes a mate in one
    loss.reset(seed=0, options={"moves": ["f2f3", "e7e5"]})
    obs, reward, terminated, _, info = loss.step("g4")
    assert (reward, terminated, info["opponent_move"]) == (-1.0, True, "d8h4")
    assert "Last move: black played d8h4 (Qh4#)." in obs and "you lose." in obs

    draw = ChessTextEnv(opponent=fixed_replies(), render_mode="ansi")
    draw.reset(options={"fen": "k7/8/1Q6/8/8/8/8/7K w - - 0 1"})
    _, reward, terminated, _, info = draw.step("Qc7")
    assert (reward, terminated, info["outcome"]) == (0.0, True, "stalemate")
    assert info["result"] == "1/2-1/2"
    assert "it is a draw" in str(draw.render())


def test_truncation_at_max_plies() -> None:
    env = ChessTextEnv(max_plies=4)
    _, info = env.reset(seed=1)
    _, _, _, truncated, info = env.step(info["legal_moves"][0])
    assert not truncated
    obs, reward, terminated, truncated, info = env.step(info["legal_moves"][0])
    assert (reward, terminated, truncated, info["outcome"]) == (0.0, False, True, "max_plies")
    assert "stopped at the ply limit" in obs
    with pytest.raises(GameOverError, match="max_plies"):
        env.step("e4")


def test_reset_from_fen_and_moves() -> None:
    env = ChessTextEnv(agent_color="black", opponent=fixed_replies("g1f3"))
    obs, info = env.reset(options={"fen": chess.STARTING_FEN, "moves": ["e2e4", "c7c5"]})
    assert info["opponent_move"] == "g1f3" and info["ply"] == 3
    assert "Last move: white played g1f3 (Nf3)." in obs
    env = ChessTextEnv(opponent=fixed_replies())
    obs, info = env.reset(options={"fen": PROMOTION_FEN})
    assert f"FEN: {PROMOTION_FEN}" in obs and "e7e8q" in info["legal_moves"]
    with pytest.raises(InvalidPositionError, match="does not parse"):
        env.reset(options={"fen": "not a fen"})
    assert env.board.fen() == PROMOTION_FEN  # the old episode survives


def test_step_before_reset_and_bad_actions_are_clear_errors() -> None:
    with pytest.raises(ResetNeeded, match="reset"):
        ChessTextEnv().step("e4")
    env = ChessTextEnv()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be text"):
        env.step(12)  # type: ignore[arg-type]
    assert env.board.fen() == chess.STARTING_FEN


def test_opponent_errors_roll_back_the_agents_move() -> None:
    env = ChessTextEnv(opponent=lambda board: chess.Move.from_uci("e2e4"), retries=2)
    env.reset(seed=0)
    env.step("Ng3")
    with pytest.raises(OpponentError, match="not a legal move"):
        env.step("e4")
    assert env.board.fen() == chess.STARTING_FEN
    _, _, terminated, _, info = env.step("Ng3")  # the retry count was not reset by the rollback
    assert not terminated and (info["illegal_attempts"], info["retries_left"]) == (2, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"agent_color": "green"}, "agent_color must be one of"),
        ({"notation": "lan"}, "notation must be one of"),
        ({"board_style": "svg"}, "board_style must be one of"),
        ({"prompt": "kaggle"}, "prompt must be one of"),
        ({"history": "all"}, "history must be one of"),
        ({"legal_moves": "no"}, "legal_moves must be True, False or None"),
        ({"board_style": "none"}, "board=none needs history=pgn"),
        ({"prompt": "textarena_blind", "history": "last"}, "board=none needs history=pgn"),
        ({"render_mode": "rgb_array"}, "render_mode must be one of"),
        ({"retries": -1}, "retries must be a non-negative integer"),
        ({"max_plies": 0}, "max_plies must be a positive integer or None"),
        ({"opponent": "kasparov"}, "unknown player 'kasparov'"),
    ],
)
def test_bad_constructor_arguments_name_the_parameter(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ChessTextEnv(**kwargs)


@pytest.mark.parametrize("board_style", ["ascii", "unicode"])
def test_the_longest_observations_stay_inside_the_text_space(board_style: str) -> None:
    env = ChessTextEnv(notation="san", board_style=board_style, retries=5, opponent=fixed_replies())
    obs, info = env.reset(options={"fen": MOST_MOVES_FEN})
    assert len(info["legal_moves"]) == 218 and env.observation_space.contains(obs)
    for text in ["♔♕ ünïcödé garbage " * 50, "Qd5"]:  # garbage, then an ambiguous queen move
        obs, *_ = env.step(text)
        assert env.observation_space.contains(obs) and len(obs) < OBSERVATION_MAX_LENGTH / 2
    assert "Qd5 is ambiguous: Q2d5, Qfd5, Qcd5, Qed5 or Q7d5" in obs


def test_render_returns_the_observation_text() -> None:
    env = ChessTextEnv(render_mode="ansi", board_style="unicode")
    obs, _ = env.reset(seed=0)
    assert env.render() == obs and "♔" in obs and "·" in obs
    plain = ChessTextEnv()
    plain.reset(seed=0)
    assert plain.render() is None


# -- prompt conditions ---------------------------------------------------------------------------

BLACKS_ROW = "8 r n b k q b n r 8"  # the back rank, seen from black's side
LEGEND = "Uppercase letters are white pieces"


def test_the_default_condition_is_the_default_preset() -> None:
    assert ChessTextEnv().condition == PRESETS["default"] == PromptCondition()
    env = ChessTextEnv(prompt="game_arena", legal_moves=True)
    assert env.condition.label == "board=fen&legal=true&history=pgn"
    env = ChessTextEnv(prompt=PromptCondition(board="fen"), history="none")
    assert env.condition.label == "board=fen&legal=true&history=none"


LAST, PGN, LIST = "Last move: white played e2e4 (e4).", "Moves so far (PGN): 1. e4", "Legal moves"


@pytest.mark.parametrize(
    ("kwargs", "shown", "hidden"),
    [
        ({}, [BLACKS_ROW, LEGEND, "FEN: ", LAST, LIST], ["PGN"]),
        ({"board_style": "fen"}, ["FEN: ", LAST, LIST], [BLACKS_ROW, LEGEND]),
        ({"prompt": "game_arena"}, ["FEN: ", PGN], [BLACKS_ROW, LIST, "Last move"]),
        ({"prompt": "textarena_blind"}, [PGN], ["FEN", BLACKS_ROW, LIST, "Last move"]),
        ({"board_style": "none", "history": "pgn"}, [PGN, LIST], ["FEN", BLACKS_ROW]),
        ({"legal_moves": False}, [BLACKS_ROW, "FEN: ", LAST], [LIST]),
        ({"prompt": "textarena"}, [BLACKS_ROW, LEGEND, "FEN: ", PGN, LIST], ["Last move"]),
        ({"prompt": "llm_chess"}, ["8 ♜ ♞ ♝ ♚ ♛ ♝ ♞ ♜ 8", "FEN: ", LIST], ["Last", "PGN", LEGEND]),
        ({"history": "none"}, [BLACKS_ROW, LIST], ["Last move", "PGN"]),
    ],
)
def test_each_condition_shows_what_it_names_and_nothing_else(
    kwargs: dict[str, Any], shown: list[str], hidden: list[str]
) -> None:
    env = ChessTextEnv(agent_color="black", opponent=fixed_replies("e2e4", "g1f3"), **kwargs)
    obs, info = env.reset(seed=0)
    for text in shown:
        assert text in obs
    for text in hidden:
        assert text not in obs
    assert info["fen"] == env.board.fen()  # the position is in info whatever the prompt shows
    assert obs.splitlines()[0] == "You play black. It is your move (black to move, move 1)."
    assert obs.endswith("e.g. [e2e4] or [Nf3].") and env.observation_space.contains(obs)
    obs, *_ = env.step("e5")
    assert env.observation_space.contains(obs)
    assert ("Moves so far (PGN): 1. e4 e5 2. Nf3" in obs) == (env.condition.history == "pgn")


def test_fen_alone_is_the_fen_line_and_no_diagram() -> None:
    board = chess.Board()
    board.push_san("e4")
    prompt = position_prompt(board, chess.BLACK, [], condition=PromptCondition(board="fen"))
    assert prompt.splitlines()[1:4] == [
        f"FEN: {board.fen()}",
        "Last move: white played e2e4 (e4).",
        "Legal moves (UCI): ",
    ]


def test_a_blind_prompt_from_a_fen_carries_the_start_position() -> None:
    fen = "4k3/4p3/8/8/8/8/4P3/4K3 w - - 0 1"
    env = ChessTextEnv(prompt="textarena_blind", opponent=fixed_replies("e8d8"))
    obs, _ = env.reset(options={"fen": fen})
    assert f"The moves below start from this position (FEN): {fen}" in obs
    assert "Moves so far (PGN): none." in obs
    obs, *_ = env.step("Kd1")
    assert "Moves so far (PGN): 1. Kd1 Kd8" in obs and "FEN: " not in obs


def test_the_game_over_observation_keeps_the_condition() -> None:
    opponent = fixed_replies("f2f3", "g2g4")
    env = ChessTextEnv(agent_color="black", opponent=opponent, prompt="game_arena")
    env.reset(seed=0)
    env.step("e5")
    obs, _, terminated, _, _ = env.step("Qh4#")
    assert terminated and "Game over (checkmate, 0-1): you win." in obs
    assert "Moves so far (PGN): 1. f3 e5 2. g4 Qh4#" in obs and LEGEND not in obs


@pytest.mark.parametrize("name", list(PRESETS))
def test_a_reading_agent_plays_whole_games_under_every_preset(name: str) -> None:
    """The non-LLM text agents read the position from any prompt: from the PGN when blind."""
    for fen in (None, "r3k2r/pppq1ppp/2n5/8/8/2N5/PPPQ1PPP/R3K2R w KQkq - 6 12"):
        env = ChessTextEnv(prompt=name, opponent="random", max_plies=120, retries=0)
        agent = OpponentTextAgent(make_player("greedy"))
        obs, info = env.reset(seed=1, options={"fen": fen} if fen else None)
        agent.reset(seed=1)
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(agent.decide(obs))
            assert info["illegal_attempts"] == 0 and env.observation_space.contains(obs)
        assert info["outcome"] != "illegal_move" and info["ply"] > 10


def test_evaluation_runs_under_a_blind_condition() -> None:
    report = evaluate_agent(
        RandomTextAgent(), "random", 2, max_plies=40, progress=False, prompt="textarena_blind"
    )
    assert report.stats.illegal_moves_attempted == 0 and report.stats.total_moves >= 38


def test_a_very_long_game_and_the_longest_lists_stay_inside_the_text_space() -> None:
    """A 2,000-ply history (cut to its last moves), 218 legal moves in SAN and an error: more
    than any one position shows at once."""
    rng = np.random.default_rng(0)
    board = chess.Board()
    while board.ply() < 2000:  # a random walk, draw rules ignored
        moves = list(board.legal_moves)
        if not moves:
            board = chess.Board()
            continue
        board.push(moves[rng.integers(len(moves))])
    most = chess.Board(MOST_MOVES_FEN)
    legal = [most.san(move) for move in most.legal_moves]
    env = ChessTextEnv(prompt="textarena", notation="san", board_style="unicode")
    prompt = position_prompt(board, board.turn, legal, "san", env.condition, "x" * 300)
    assert env.observation_space.contains(prompt) and "plies are left out" in prompt
    assert len(prompt) < OBSERVATION_MAX_LENGTH * 3 / 4
