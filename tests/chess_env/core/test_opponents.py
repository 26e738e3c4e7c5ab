"""Opponents: random, greedy, Stockfish, SB3 policies, callables, and how the env treats them."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest

import chess_env.core.opponents as opponents_module
from chess_env import ChessEnv, OpponentError, StockfishNotFoundError
from chess_env.core.encoding import board_to_tensor, decode_action, encode_move, legal_action_mask
from chess_env.core.opponents import (
    GreedyOpponent,
    Opponent,
    PolicyOpponent,
    RandomOpponent,
    StockfishOpponent,
)
from chess_env.core.players import make_player
from chess_env.errors import PlayerFailedError

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from stockfish_binary import needs_stockfish

START_FEN = chess.STARTING_FEN
SEEDS = range(12)


def play_out(white: Opponent, black: Opponent, max_plies: int = 200) -> list[chess.Move]:
    """Let two opponents play each other, checking every move is legal before playing it."""
    board = chess.Board()
    moves = []
    while not board.is_game_over(claim_draw=True) and len(moves) < max_plies:
        mover = white if board.turn == chess.WHITE else black
        move = mover(board)
        assert move in board.legal_moves, f"{move} is illegal in {board.fen()}"
        board.push(move)
        moves.append(move)
    return moves


def greedy_moves(fen: str, seeds: range = SEEDS) -> list[str]:
    """The move a fresh greedy opponent picks in ``fen`` under each seed (UCI, in seed order)."""
    board = chess.Board(fen)
    moves = []
    for seed in seeds:
        greedy = GreedyOpponent()
        greedy.reset(seed=seed)
        moves.append(greedy(board).uci())
    assert board.fen() == fen, "the opponent must leave the board as it found it"
    return moves


def random_positions(count: int, seed: int = 0) -> list[chess.Board]:
    """Positions from seeded random games, both colours to move, a new game when one ends."""
    rng = np.random.default_rng(seed)
    boards: list[chess.Board] = []
    board = chess.Board()
    while len(boards) < count:
        if board.is_game_over():
            board = chess.Board()
        boards.append(board.copy())
        moves = list(board.legal_moves)
        board.push(moves[int(rng.integers(len(moves)))])
    return boards


def legal_action(env: ChessEnv, rng: np.random.Generator) -> int:
    """A uniformly random legal action for the agent, from the env's own mask."""
    return int(rng.choice(np.flatnonzero(env.action_masks())))


def engine_exited(engine: Any) -> bool:
    """Whether a python-chess engine's process has exited (its returncode future is settled)."""
    return engine.protocol.returncode.done()


# -- RandomOpponent ---------------------------------------------------------------------------


def test_random_opponent_only_plays_legal_moves() -> None:
    for seed in range(5):
        white, black = RandomOpponent(), RandomOpponent()
        white.reset(seed=seed)
        black.reset(seed=seed + 100)
        assert play_out(white, black)


def test_random_opponent_is_reproducible_per_seed() -> None:
    def game(seed: int) -> list[chess.Move]:
        opponent = RandomOpponent()
        opponent.reset(seed=seed)
        return play_out(opponent, opponent, max_plies=60)

    assert game(3) == game(3)
    assert game(3) != game(4)


def test_random_opponent_picks_from_the_given_legal_moves() -> None:
    """The env hands over its legal-move list; the opponent must choose from that list."""
    board = chess.Board()
    offered = [chess.Move.from_uci("g1f3"), chess.Move.from_uci("b1c3")]
    opponent = RandomOpponent()
    picked = set()
    for seed in SEEDS:
        opponent.reset(seed=seed)
        picked.add(opponent.choose_move(board, offered))
    assert picked == set(offered)


# -- GreedyOpponent ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fen", "mate"),
    [
        ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"),  # back-rank mate
        ("r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1", "a8a1"),  # the same for black
        ("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", "d8h4"),  # fool's mate
        # Mate beats winning the queen (Bxa2 is on the board too).
        ("6k1/5ppp/8/8/8/1B6/q4PPP/2R3K1 w - - 0 1", "c1c8"),
    ],
)
def test_greedy_takes_mate_in_one(fen: str, mate: str) -> None:
    board = chess.Board(fen)
    board.push_uci(mate)
    assert board.is_checkmate()
    assert set(greedy_moves(fen)) == {mate}


@pytest.mark.parametrize(
    ("fen", "expected", "why"),
    [
        ("4k3/8/2q1p3/8/3N4/8/8/4K3 w - - 0 1", "d4c6", "the queen before the pawn"),
        ("4k3/8/8/3r4/4PN2/8/8/3QK3 w - - 0 1", "e4d5", "the pawn takes, not the knight/queen"),
        ("8/1P6/8/7k/8/8/r7/2N1K3 w - - 0 1", "b7b8q", "promoting (+8) beats Nxa2 (+5)"),
        ("r7/1P6/7k/5q2/8/8/8/4KR2 w - - 0 1", "b7a8q", "bxa8=Q (+13) beats Rxf5 (+9)"),
        ("4k3/8/8/3pP3/8/7p/8/4K1N1 w - d6 0 1", "e5d6", "en passant wins a pawn, by a pawn"),
    ],
)
def test_greedy_capture_order(fen: str, expected: str, why: str) -> None:
    assert set(greedy_moves(fen)) == {expected}, why


def test_greedy_breaks_ties_with_its_seed() -> None:
    """Two pawns can take two equal pawns: both get played across seeds, each seed reproducibly."""
    fen = "4k3/8/8/2p1p3/1P3P2/8/8/4K3 w - - 0 1"
    moves = greedy_moves(fen)
    assert set(moves) == {"b4c5", "f4e5"}
    assert greedy_moves(fen) == moves


def test_greedy_plays_a_seeded_random_move_when_nothing_wins_material() -> None:
    moves = greedy_moves(START_FEN)
    assert {chess.Move.from_uci(uci) for uci in moves} <= set(chess.Board().legal_moves)
    assert len(set(moves)) > 1
    assert greedy_moves(START_FEN) == moves


def test_greedy_only_plays_legal_moves() -> None:
    greedy, rand = GreedyOpponent(), RandomOpponent()
    greedy.reset(seed=1)
    rand.reset(seed=2)
    assert play_out(greedy, rand)
    assert play_out(rand, greedy)


def greedy_game(seed: int, agent_seed: int = 0) -> list[tuple[str, str | None]]:
    """(fen, opponent_move) after every step of a random agent against the greedy opponent."""
    env = ChessEnv(opponent="greedy", max_plies=120)
    rng = np.random.default_rng(agent_seed)
    _, info = env.reset(seed=seed)
    trajectory = [(info["fen"], info["opponent_move"])]
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(legal_action(env, rng))
        trajectory.append((info["fen"], info["opponent_move"]))
        done = terminated or truncated
    env.close()
    return trajectory


def test_greedy_env_games_replay_from_the_seed() -> None:
    first = greedy_game(seed=7)
    assert len(first) > 10
    assert greedy_game(seed=7) == first
    assert greedy_game(seed=8) != first


def test_greedy_in_env_mates_the_agent() -> None:
    env = ChessEnv(opponent="greedy")
    env.reset(seed=0, options={"fen": "r5k1/5ppp/8/8/8/7N/5PPP/6K1 w - - 0 1"})
    action = encode_move(chess.Move.from_uci("h3g5"), chess.WHITE)
    _, reward, terminated, truncated, info = env.step(action)
    assert info["opponent_move"] == "a8a1"
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["outcome"] == "checkmate"
    assert info["result"] == "0-1"


# -- StockfishOpponent ------------------------------------------------------------------------


def test_missing_stockfish_binary_has_a_helpful_error() -> None:
    with pytest.raises(StockfishNotFoundError, match="apt-get install stockfish") as caught:
        StockfishOpponent(path="/nonexistent/stockfish")
    assert "/nonexistent/stockfish" in str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)


def test_make_player_stockfish_without_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing on PATH or in /usr/games, the default lookup fails at construction."""
    monkeypatch.setattr(opponents_module.shutil, "which", lambda name: None)
    with pytest.raises(StockfishNotFoundError, match="apt-get"):
        make_player("stockfish")
    with pytest.raises(StockfishNotFoundError):
        ChessEnv(opponent="stockfish")


@pytest.mark.parametrize(
    "kwargs", [{"depth": 0}, {"depth": -3}, {"skill": -1}, {"skill": 21}], ids=str
)
def test_stockfish_rejects_bad_arguments(kwargs: dict[str, int]) -> None:
    """Argument errors come before the binary look-up, so they hold without Stockfish too."""
    with pytest.raises(ValueError, match=r"depth|skill"):
        StockfishOpponent(**kwargs)


@pytest.fixture
def stockfish() -> Iterator[StockfishOpponent]:
    opponent = StockfishOpponent()
    yield opponent
    opponent.close()


@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_plays_legal_moves_in_env(stockfish: StockfishOpponent) -> None:
    env = ChessEnv(opponent=stockfish, max_plies=30)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    done = False
    while not done:
        before = env.board.copy()
        action = legal_action(env, rng)
        before.push(decode_action(action, before))
        _, _, terminated, truncated, info = env.step(action)
        if info["opponent_move"] is not None:
            assert chess.Move.from_uci(info["opponent_move"]) in before.legal_moves
        done = terminated or truncated
    env.close()


@needs_stockfish
@pytest.mark.stockfish
@pytest.mark.parametrize(
    ("fen", "mate"),
    [
        ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"),
        ("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", "d8h4"),
        ("6k1/5ppp/8/8/8/1B6/q4PPP/2R3K1 w - - 0 1", "c1c8"),
    ],
)
def test_stockfish_finds_mate_in_one_at_depth_one(
    stockfish: StockfishOpponent, fen: str, mate: str
) -> None:
    assert stockfish.depth == 1
    assert stockfish(chess.Board(fen)).uci() == mate


@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_close_ends_the_engine_and_a_new_move_restarts_it(
    stockfish: StockfishOpponent,
) -> None:
    assert stockfish._engine is None, "the engine starts lazily, on the first move"
    stockfish(chess.Board())
    first = stockfish._engine
    assert first is not None and not engine_exited(first)
    stockfish.close()
    assert stockfish._engine is None
    assert engine_exited(first)
    stockfish.close()  # closing twice is harmless
    assert stockfish(chess.Board()) in chess.Board().legal_moves
    assert stockfish._engine is not None and stockfish._engine is not first


@needs_stockfish
@pytest.mark.stockfish
def test_env_close_closes_stockfish(stockfish: StockfishOpponent) -> None:
    env = ChessEnv(opponent=stockfish)
    env.reset(seed=0)
    env.step(legal_action(env, np.random.default_rng(0)))
    engine = stockfish._engine
    assert engine is not None
    env.close()
    assert stockfish._engine is None
    assert engine_exited(engine)


@needs_stockfish
@pytest.mark.stockfish
@pytest.mark.parametrize(
    ("kwargs", "config"),
    [
        ({"skill": 0}, {"Skill Level": 0}),
        ({"elo": 1500}, {"UCI_LimitStrength": True, "UCI_Elo": 1500}),
        ({"skill": 5, "elo": 2000, "depth": 2}, {"Skill Level": 5, "UCI_Elo": 2000}),
    ],
    ids=str,
)
def test_stockfish_strength_options_reach_the_engine(
    kwargs: dict[str, int], config: dict[str, object]
) -> None:
    opponent = StockfishOpponent(**kwargs)
    try:
        board = chess.Board()
        assert opponent(board) in board.legal_moves
        configured = opponent._engine.protocol.config  # type: ignore[union-attr]
        assert {name: configured[name] for name in config} == config
    finally:
        opponent.close()


@needs_stockfish
@pytest.mark.stockfish
def test_failed_engine_configuration_does_not_leak_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chess.engine

    started: list[chess.engine.SimpleEngine] = []
    popen_uci = chess.engine.SimpleEngine.popen_uci

    def recording_popen_uci(*args: Any, **kwargs: Any) -> chess.engine.SimpleEngine:
        engine = popen_uci(*args, **kwargs)
        started.append(engine)
        return engine

    def rejecting_configure(self: chess.engine.SimpleEngine, options: object) -> None:
        raise chess.engine.EngineError("expected value for option 'UCI_Elo' to be at least 1350")

    monkeypatch.setattr(chess.engine.SimpleEngine, "popen_uci", recording_popen_uci)
    monkeypatch.setattr(chess.engine.SimpleEngine, "configure", rejecting_configure)
    try:
        with pytest.raises(PlayerFailedError, match=r"could not be set up: .*UCI_Elo"):
            StockfishOpponent(elo=1500)  # with an Elo, the engine starts at once to check it
        assert len(started) == 1
        assert engine_exited(started[0]), "a refused engine outlived its opponent"
    finally:
        for engine in started:
            if not engine_exited(engine):
                engine.quit()  # the test cleans up the leak, so pytest itself can exit


@needs_stockfish
@pytest.mark.stockfish
def test_elo_outside_the_engines_range_is_named_when_the_opponent_is_made() -> None:
    with pytest.raises(ValueError, match=r"elo=100 is outside this Stockfish's UCI_Elo range \d+"):
        StockfishOpponent(elo=100)


@needs_stockfish
@pytest.mark.stockfish
def test_make_player_stockfish() -> None:
    opponent = make_player("stockfish")
    try:
        assert isinstance(opponent, StockfishOpponent)
        assert opponent(chess.Board()) in chess.Board().legal_moves
    finally:
        opponent.close()


# -- misbehaving opponents: OpponentError and rollback ----------------------------------------


def env_state(env: ChessEnv) -> dict[str, Any]:
    """Everything a failed step must leave untouched."""
    return {
        "fen": env.board.fen(),
        "move_stack": list(env.board.move_stack),
        "mask": env.action_masks().copy(),
        "legal_moves": list(env.game.legal_moves),
        "plies": env.game.plies,
        "outcome": env.game.outcome,
    }


def assert_same_state(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert after.keys() == before.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[key], value, err_msg=key)
        else:
            assert after[key] == value, key


class OpponentCrashError(Exception):
    """Raised by an opponent that crashes."""


def crashing_opponent(board: chess.Board) -> chess.Move:
    raise OpponentCrashError("engine crashed")


BAD_REPLIES: dict[str, Callable[[chess.Board], Any]] = {
    "white_move_for_black": lambda board: chess.Move.from_uci("d2d4"),
    "off_shape_move": lambda board: chess.Move.from_uci("a7h2"),
    "null_move": lambda board: chess.Move.null(),
    "uci_string": lambda board: "e7e5",
    "none": lambda board: None,
}


@pytest.mark.parametrize("reply", list(BAD_REPLIES), ids=str)
@pytest.mark.parametrize("agent_move", ["e2e4", "g1f3"])
def test_illegal_opponent_reply_raises_and_rolls_back(reply: str, agent_move: str) -> None:
    env = ChessEnv(opponent=BAD_REPLIES[reply])
    env.reset(seed=0, options={"moves": ["b1c3", "b8c6"]})
    before = env_state(env)
    action = encode_move(chess.Move.from_uci(agent_move), chess.WHITE)
    with pytest.raises(OpponentError, match="not a legal move"):
        env.step(action)
    assert_same_state(before, env_state(env))

    env.opponent = RandomOpponent()
    _, _, terminated, _, info = env.step(action)
    assert not terminated
    assert info["fen"].split()[1] == "w"
    assert env.board.move_stack[-2] == chess.Move.from_uci(agent_move)


def test_crashing_opponent_exception_propagates_and_rolls_back() -> None:
    env = ChessEnv(opponent=crashing_opponent)
    env.reset(seed=0)
    before = env_state(env)
    with pytest.raises(OpponentCrashError, match="engine crashed"):
        env.step(encode_move(chess.Move.from_uci("e2e4"), chess.WHITE))
    assert_same_state(before, env_state(env))


def test_illegal_first_reply_in_reset_raises() -> None:
    with pytest.raises(OpponentError):
        ChessEnv(opponent=BAD_REPLIES["none"], agent_color="black").reset(seed=0)


def knight_shuffle(board: chess.Board) -> chess.Move:
    """Black's knight goes g8-f6-g8-...: with white doing the same, the start position recurs."""
    if board.piece_at(chess.G8) == chess.Piece(chess.KNIGHT, chess.BLACK):
        return chess.Move.from_uci("g8f6")
    return chess.Move.from_uci("f6g8")


@pytest.mark.parametrize("failure", [crashing_opponent, BAD_REPLIES["none"]], ids=["raise", "bad"])
def test_rolled_back_steps_leave_repetition_counts_alone(
    failure: Callable[[chess.Board], Any],
) -> None:
    """Every step first fails once: threefold repetition must still come at the 8th ply, no earlier.

    A rollback that forgot to un-count the agent's position would reach threefold too soon.
    """
    env = ChessEnv(opponent=knight_shuffle)
    env.reset(seed=0)
    shuffle = ["g1f3", "f3g1"] * 2
    for index, uci in enumerate(shuffle):
        action = encode_move(chess.Move.from_uci(uci), chess.WHITE)
        env.opponent = make_player(failure)
        with pytest.raises((OpponentCrashError, OpponentError)):
            env.step(action)
        env.opponent = make_player(knight_shuffle)
        _, _, terminated, _, info = env.step(action)
        last = index == len(shuffle) - 1
        assert terminated == last, f"step {index}: {info['outcome']}"
    assert info["outcome"] == "threefold_repetition"
    assert info["fen"].split()[:4] == START_FEN.split()[:4]


def test_callable_opponent_gets_a_copy_of_the_board() -> None:
    seen: list[chess.Board] = []

    def plays_on_the_board(board: chess.Board) -> chess.Move:
        seen.append(board)
        move = chess.Move.from_uci("e7e5")
        board.push(move)  # the common "play it, then return it" mistake
        return move

    env = ChessEnv(opponent=plays_on_the_board)
    env.reset(seed=0)
    _, _, _, _, info = env.step(encode_move(chess.Move.from_uci("e2e4"), chess.WHITE))
    assert seen[0] is not env.board
    assert info["opponent_move"] == "e7e5"
    expected = chess.Board()
    for uci in ("e2e4", "e7e5"):
        expected.push_uci(uci)
    assert info["fen"] == expected.fen()


# -- PolicyOpponent ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def policies() -> dict[str, Any]:
    """Untrained (freshly initialised) SB3 models: the opponent logic, not the play, is tested."""
    torch = pytest.importorskip("torch")
    sb3 = pytest.importorskip("stable_baselines3")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    torch.set_num_threads(1)
    small = {"n_steps": 64, "batch_size": 32, "seed": 0}
    return {
        "maskable": sb3_contrib.MaskablePPO("MlpPolicy", ChessEnv(), **small),
        "ppo": sb3.PPO("MlpPolicy", ChessEnv(illegal_action="penalize"), **small),
        "ppo_dict": sb3.PPO(
            "MultiInputPolicy", ChessEnv(illegal_action="penalize", obs_mode="dict"), **small
        ),
    }


POLICY_KINDS = ["maskable", "ppo", "ppo_dict"]


@pytest.mark.parametrize("kind", POLICY_KINDS)
def test_policy_opponent_plays_legal_moves(policies: dict[str, Any], kind: str) -> None:
    for deterministic in (True, False):
        opponent = PolicyOpponent(policies[kind], deterministic=deterministic)
        opponent.reset(seed=0)
        for board in random_positions(40):
            assert opponent(board) in board.legal_moves, board.fen()


@pytest.mark.parametrize("kind", POLICY_KINDS)
def test_policy_opponent_deterministic_ignores_the_seed(
    policies: dict[str, Any], kind: str
) -> None:
    boards = random_positions(30, seed=1)
    opponent = PolicyOpponent(policies[kind])
    opponent.reset(seed=0)
    first = [opponent(board) for board in boards]
    opponent.reset(seed=1)
    assert [opponent(board) for board in boards] == first


@pytest.mark.parametrize("kind", POLICY_KINDS)
def test_policy_opponent_sampling_is_reproducible_per_seed(
    policies: dict[str, Any], kind: str
) -> None:
    boards = random_positions(30, seed=2)
    opponent = PolicyOpponent(policies[kind], deterministic=False)

    def sample(seed: int) -> list[chess.Move]:
        opponent.reset(seed=seed)
        return [opponent(board) for board in boards]

    assert sample(5) == sample(5)
    assert sample(5) != sample(6)


def test_policy_opponent_matches_maskable_predict(policies: dict[str, Any]) -> None:
    """The opponent sees the position as the env shows it to the side to move, mask applied."""
    model = policies["maskable"]
    opponent = PolicyOpponent(model)
    for board in random_positions(30, seed=3):
        action, _ = model.predict(
            board_to_tensor(board), action_masks=legal_action_mask(board), deterministic=True
        )
        assert opponent(board) == decode_action(int(action), board), board.fen()


@pytest.mark.parametrize("agent_color", ["white", "black"])
def test_policy_opponent_in_env(policies: dict[str, Any], agent_color: str) -> None:
    opponent = PolicyOpponent(policies["maskable"])
    env = ChessEnv(opponent=opponent, agent_color=agent_color)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    assert (info["opponent_move"] is None) == (agent_color == "white")
    for _ in range(8):
        action = legal_action(env, rng)
        after_agent = env.board.copy()
        after_agent.push(decode_action(action, after_agent))
        _, _, terminated, truncated, info = env.step(action)
        assert info["opponent_move"] == opponent(after_agent).uci()
        if terminated or truncated:
            break
    env.close()
