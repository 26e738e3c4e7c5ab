"""``ChessToolEnv``: the tool TRL sees, scripted games with their feedback and rewards, puzzles,
pool reuse, the picklable factory and determinism by seed."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from training.llm_rl import ChessToolEnv, chess_tool_env

MATE_IN_ONE = "7k/8/6K1/8/8/8/8/R7 w - - 0 1"  # Ra8# (a1a8)
STALEMATE_IN_ONE = "7k/8/6Q1/8/8/8/8/K7 w - - 0 1"  # Qf7 stalemates
QUEEN_HANGS = "4k3/8/8/3q4/8/8/8/3RK3 w - - 0 1"  # Rxd5 wins a queen (d1d5)


class Scripted:
    """An opponent playing the first of its SAN moves that is legal, else the first legal move."""

    def __init__(self, *sans: str) -> None:
        self.sans = sans

    def __call__(self, board: chess.Board) -> chess.Move:
        for san in self.sans:
            try:
                return board.parse_san(san)
            except ValueError:
                continue
        return next(iter(board.legal_moves))


def _fen_after(env_text: str) -> str:
    return next(line for line in env_text.splitlines() if line.startswith("FEN: "))[5:]


# -- what TRL sees -------------------------------------------------------------------------------


def test_public_methods_are_exactly_reset_move_and_get_reward() -> None:
    public = {name for name, _ in inspect.getmembers(ChessToolEnv) if not name.startswith("_")}
    assert public == {"reset", "move", "get_reward"}
    # TRL's own selection of tools: every public function but reset and get_reward
    tools = [
        name
        for name, _ in inspect.getmembers(ChessToolEnv, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    assert tools == ["move"]


def test_move_tool_schema() -> None:
    transformers_utils = pytest.importorskip("transformers.utils")
    schema = transformers_utils.get_json_schema(ChessToolEnv().move)
    function = schema["function"]
    assert schema["type"] == "function"
    assert function["name"] == "move"
    assert function["description"].startswith("Play one chess move")
    parameters = function["parameters"]
    assert parameters["required"] == ["move"]
    assert set(parameters["properties"]) == {"move"}
    assert parameters["properties"]["move"]["type"] == "string"
    assert "UCI" in parameters["properties"]["move"]["description"]


def test_reset_shows_the_text_envs_position_and_asks_for_the_tool() -> None:
    prompt = ChessToolEnv().reset(seed=0)
    lines = prompt.splitlines()
    assert lines[0] == "You play white. It is your move (white to move, move 1)."
    assert f"FEN: {chess.STARTING_FEN}" in lines
    assert any(line.startswith("Legal moves (UCI): ") for line in lines)
    assert lines[-1] == "Call the move tool with your move in UCI or SAN, e.g. e2e4 or Nf3."
    assert "square brackets" not in prompt


def test_prompt_condition_is_the_text_envs() -> None:
    prompt = ChessToolEnv(prompt="game_arena").reset(seed=0)
    assert "Legal moves" not in prompt
    assert "Moves so far (PGN): none." in prompt


def test_as_black_the_opponent_moves_before_the_prompt() -> None:
    prompt = ChessToolEnv(opponent=Scripted("e4"), colour="black").reset(seed=0)
    assert prompt.splitlines()[0] == "You play black. It is your move (black to move, move 1)."
    assert "Last move: white played e2e4 (e4)." in prompt


# -- scripted games ------------------------------------------------------------------------------


def test_fools_mate_as_black_is_a_win() -> None:
    env = ChessToolEnv(opponent=Scripted("f3", "g4"), colour="black")
    env.reset(seed=0)
    assert env.move("e5").startswith("You played e5 (e7e5). Your opponent replied g4 (g2g4).")
    reply = env.move("d8h4")  # UCI
    assert reply.splitlines()[:2] == [
        "You played Qh4# (d8h4).",
        "You play black. Game over (checkmate, 0-1): you win.",
    ]
    assert env.get_reward() == 1.0
    with pytest.raises(ValueError, match=r"the game is over \(checkmate\)"):
        env.move("e4")


def test_fools_mate_as_white_is_a_loss() -> None:
    env = ChessToolEnv(opponent=Scripted("e5", "Qh4"), colour="white")
    env.reset(seed=0)
    env.move("f3")
    reply = env.move("g2g4")
    assert reply.startswith("You played g4 (g2g4). Your opponent replied Qh4# (d8h4).")
    assert "You play white. Game over (checkmate, 0-1): you lose." in reply
    assert env.get_reward() == -1.0


def test_stalemate_is_a_draw() -> None:
    env = ChessToolEnv()
    env.reset(seed=0, fen=STALEMATE_IN_ONE)
    reply = env.move("Qf7")
    assert "Game over (stalemate, 1/2-1/2): it is a draw." in reply
    assert env.get_reward() == 0.0


def test_the_ply_cap_stops_an_unfinished_game_scoring_zero() -> None:
    env = ChessToolEnv(max_plies=2)
    env.reset(seed=0)
    reply = env.move("e4")
    assert "Game over (max_plies, *): the game was stopped at the ply limit." in reply
    assert env.get_reward() == 0.0
    with pytest.raises(ValueError, match="the game is over"):
        env.move("d4")


def test_material_reward_counts_material_won_in_an_unfinished_game() -> None:
    outcome, material = ChessToolEnv(max_plies=2), ChessToolEnv(max_plies=2, reward="material")
    for env in (outcome, material):
        env.reset(seed=0, fen=QUEEN_HANGS)
        assert env.get_reward() == 0.0
        env.move("Rxd5")
    assert outcome.get_reward() == 0.0
    assert material.get_reward() == pytest.approx(9 / 39)


def test_material_reward_of_a_decided_game_is_the_outcome() -> None:
    env = ChessToolEnv(reward="material")
    env.reset(seed=0, fen=MATE_IN_ONE)
    env.move("Ra8")
    assert env.get_reward() == 1.0


def test_san_and_uci_play_the_same_game() -> None:
    san, uci = ChessToolEnv(), ChessToolEnv()
    san.reset(seed=5)
    uci.reset(seed=5)
    assert san.move("Nf3") == uci.move("g1f3")


# -- refused moves and the error allowance -------------------------------------------------------


def test_an_illegal_move_raises_its_reason_and_changes_nothing() -> None:
    env = ChessToolEnv()
    prompt = env.reset(seed=0)
    with pytest.raises(ValueError) as refused:
        env.move("g1g3")
    assert str(refused.value) == (
        "Illegal move 'g1g3' (cannot_move_there): the knight on g1 cannot move to g3. "
        "2 more illegal moves allowed; try again."
    )
    with pytest.raises(ValueError, match=r"Illegal move 'hello' \(unreadable\): no move found"):
        env.move("hello")
    with pytest.raises(ValueError, match=r"Illegal move 'Ke3' \(cannot_move_there\)"):
        env.move("Ke3")
    assert env.get_reward() == 0.0
    untouched = ChessToolEnv()
    assert untouched.reset(seed=0) == prompt
    assert env.move("e4") == untouched.move("e4")  # the game goes on as if nothing was refused


def test_past_the_error_allowance_the_game_is_lost() -> None:
    env = ChessToolEnv(error_allowance=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="0 more illegal moves allowed"):
        env.move("e5")
    env.move("e4")  # the allowance is per game, not per move
    with pytest.raises(ValueError, match="more than the 1 illegal moves allowed: you lose"):
        env.move("Ke3")
    assert env.get_reward() == -1.0
    with pytest.raises(ValueError, match=r"the game is over \(illegal_moves\)"):
        env.move("d4")
    assert env.get_reward() == -1.0


def test_zero_allowance_loses_at_the_first_illegal_move() -> None:
    env = ChessToolEnv(error_allowance=0, reward="material")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="you lose the game"):
        env.move("e2e5")
    assert env.get_reward() == -1.0


def test_a_move_before_reset_is_refused() -> None:
    with pytest.raises(ValueError, match="no game yet"):
        ChessToolEnv().move("e4")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"colour": "red"}, "colour"),
        ({"reward": "elo"}, "reward"),
        ({"error_allowance": -1}, "error_allowance"),
        ({"max_plies": 0}, "max_plies"),
        ({"prompt": "nope"}, "prompt"),
        ({"opponent": "stockfsh"}, "stockfsh"),
    ],
)
def test_bad_options_are_named(options: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ChessToolEnv(**options)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=field):
        chess_tool_env(**options)


# -- puzzles -------------------------------------------------------------------------------------


def test_a_puzzles_right_answer_scores_one_and_ends_the_episode() -> None:
    env = ChessToolEnv()
    row: dict[str, Any] = {
        "fen": MATE_IN_ONE,
        "answers": ["a1a8"],
        "kind": "mate_in_1",
        "task_id": "m1-0",
    }
    env.reset(seed=0, **row)
    assert env.move("Ra8") == "You played Ra8# (a1a8). Correct: that solves the puzzle."
    assert env.get_reward() == 1.0
    with pytest.raises(ValueError, match=r"the game is over \(puzzle_solved\)"):
        env.move("Kf7")


def test_a_puzzles_wrong_answer_scores_zero_and_ends_the_episode() -> None:
    env = ChessToolEnv()
    env.reset(seed=0, fen=MATE_IN_ONE, answers=["a1a8"])
    assert env.move("a1a2") == "You played Ra2 (a1a2). Wrong: that is not the solution."
    assert env.get_reward() == 0.0
    with pytest.raises(ValueError, match="the game is over"):
        env.move("Ra8")


def test_a_puzzle_lost_by_illegal_moves_scores_zero() -> None:
    env = ChessToolEnv(error_allowance=0)
    env.reset(seed=0, fen=MATE_IN_ONE, answers=["a1a8"])
    with pytest.raises(ValueError, match="you lose"):
        env.move("a1b2")
    assert env.get_reward() == 0.0


def test_in_a_puzzle_the_agent_plays_the_side_to_move_and_nobody_replies() -> None:
    env = ChessToolEnv(colour="white")
    black_to_move = "r6k/8/8/8/8/8/6PP/7K b - - 0 1"
    prompt = env.reset(seed=0, fen=black_to_move, answers=["a8a1"])
    assert prompt.startswith("You play black. It is your move")
    assert _fen_after(prompt) == black_to_move
    assert env.move("Ra1").endswith("Correct: that solves the puzzle.")
    # the colour option is back for the next (non-puzzle) game
    assert env.reset(seed=0).startswith("You play white.")


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ([], "answers must be a non-empty list"),
        ("a1a8", "answers must be a non-empty list"),
        (["a1a8", "e2e4"], r"answers\[1\]: 'e2e4' is not a legal UCI move"),
        (["Ra8"], r"answers\[0\]: 'Ra8' is not a legal UCI move"),
        ([7], r"answers\[0\]: 7 is not a legal UCI move"),
    ],
)
def test_bad_answers_are_named_and_leave_the_env_as_it_was(answers: object, message: str) -> None:
    env = ChessToolEnv()
    env.reset(seed=0)
    env.move("e4")
    with pytest.raises(ValueError, match=message):
        env.reset(seed=1, fen=MATE_IN_ONE, answers=answers)
    assert env.move("d4").startswith("You played d4 (d2d4).")


def test_a_bad_fen_is_named_and_leaves_the_env_as_it_was() -> None:
    env = ChessToolEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="black has no king"):
        env.reset(seed=0, fen="8/8/8/8/8/8/8/K7 w - - 0 1")
    assert env.move("e4").startswith("You played e4 (e2e4).")


# -- pool reuse, the factory, determinism --------------------------------------------------------


def test_a_reused_instance_starts_from_the_seeds_position_every_time() -> None:
    fresh = ChessToolEnv(colour="random").reset(seed=11)
    env = ChessToolEnv(colour="random")
    for _ in range(3):
        assert env.reset(seed=11) == fresh
        for _ in range(3):
            legal = next(line for line in env.reset(seed=11).splitlines() if "Legal" in line)
            env.move(legal.split()[-1])
        with pytest.raises(ValueError):
            env.move("a1a1")
    puzzle = ChessToolEnv(colour="random").reset(seed=11, fen=QUEEN_HANGS)
    assert env.reset(seed=11, fen=QUEEN_HANGS) == puzzle
    assert env.reset(seed=11) == fresh


def test_a_reused_instance_forgets_the_last_puzzle_and_errors() -> None:
    env = ChessToolEnv(error_allowance=0)
    env.reset(seed=0, fen=MATE_IN_ONE, answers=["a1a8"])
    env.move("a1a2")
    env.reset(seed=0, fen=MATE_IN_ONE)
    assert env.get_reward() == 0.0
    assert "You play white. Game over (checkmate, 1-0): you win." in env.move("a1a8")
    assert env.get_reward() == 1.0


def test_the_factory_pickles_and_builds_envs_with_its_options() -> None:
    factory = chess_tool_env(opponent="greedy", colour="black", max_plies=4, error_allowance=0)
    rebuilt = pickle.loads(pickle.dumps(factory))
    env = rebuilt()
    assert isinstance(env, ChessToolEnv)
    assert env.reset(seed=2) == factory().reset(seed=2)
    assert env.reset(seed=2).startswith("You play black.")
    with pytest.raises(ValueError, match="you lose the game"):
        env.move("e2e4")


def _first_legal_game(env: ChessToolEnv, seed: int, moves: int) -> list[str]:
    texts = [env.reset(seed=seed)]
    for _ in range(moves):
        legal = next((line for line in texts[-1].splitlines() if "Legal" in line), None)
        if legal is None:
            break
        texts.append(env.move(legal.split()[-1]))
    return texts


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), moves=st.integers(1, 6))
def test_the_same_seed_gives_the_same_game(seed: int, moves: int) -> None:
    first = _first_legal_game(ChessToolEnv(colour="random"), seed, moves)
    second = _first_legal_game(ChessToolEnv(colour="random"), seed, moves)
    assert first == second


def test_different_seeds_give_different_games() -> None:
    games = {tuple(_first_legal_game(ChessToolEnv(colour="random"), seed, 4)) for seed in range(6)}
    assert len(games) > 1
