"""training.experts: the alpha-beta searcher mates, wins material, avoids mates, and agrees with
a plain minimax; chess_expert reads its specs; the world experts beat random play."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import training.experts as experts_module
from chess_env import ChessEnv
from chess_env.encoding import encode_move
from chess_env.errors import StockfishNotFoundError
from chess_env.opponents import StockfishOpponent
from multiagent import parallel_env
from multiagent.worlds import load_world
from multiagent.wrappers import SingleAgentEnv
from training.evaluation import make_player
from training.experts import (
    MATE,
    AlphaBetaExpert,
    ForageExpert,
    TradeExpert,
    chess_expert,
    evaluate,
    world_expert,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from stockfish_binary import needs_stockfish

MATES_IN_ONE = [
    "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",  # back rank
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # Qxf7
    "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq g3 0 2",  # fool's mate
    "7k/8/5K2/8/8/8/8/6Q1 w - - 0 1",  # Qg6 would stalemate instead
]
HANGING_QUEENS = [
    ("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", "d2d5"),
    ("4k3/3r4/8/8/3Q4/8/8/4K3 b - - 0 1", "d7d4"),
    (
        "r3k3/8/8/8/q7/8/1N6/4K3 w - - 0 1",
        "b2a4",
    ),  # defended by the rook: still a queen for a knight
]
# Most moves here allow a mate in one (found in random games): 18/20, 31/36 and 25/30.
MATE_THREATS = [
    "rnb1kb1r/pppp1pB1/5n1p/8/1P3P1P/4p1q1/P1PPPNP1/RN1QKB1R w KQkq - 0 9",
    "5rnr/1b1p1k2/2q1pp1b/2p3p1/1PP4p/R2nK1P1/1PQBNP1P/1N1B3R w - - 2 29",
    "1rbq4/1p1n3p/3pB3/2pPkrpn/p1P1p3/4K1P1/PPN1P2N/1R5R b - - 1 30",
]


def expert_move(fen: str, depth: int = 2, seed: int = 0) -> chess.Move:
    expert = AlphaBetaExpert(depth=depth)
    expert.reset(seed=seed)
    board = chess.Board(fen)
    before = board.fen()
    move = expert(board)
    assert board.fen() == before, "the expert must leave the board as it found it"
    return move


def allows_mate_in_one(board: chess.Board) -> bool:
    for move in board.legal_moves:
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return True
    return False


def random_position(seed: int, plies: int) -> chess.Board:
    """The position after up to ``plies`` random moves (earlier if the game ends)."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves or board.is_game_over():
            break
        board.push(rng.choice(moves))
    return board


def reference_value(board: chess.Board, depth: int, ply: int) -> int:
    """Plain negamax over the legal moves, no pruning: what alpha-beta must agree with."""
    if depth == 0:
        return ply - MATE if board.is_checkmate() else evaluate(board)
    moves = list(board.legal_moves)
    if not moves:
        return ply - MATE if board.is_check() else 0
    best = -(10**9)
    for move in moves:
        board.push(move)
        best = max(best, -reference_value(board, depth - 1, ply + 1))
        board.pop()
    return best


def reference_best_moves(board: chess.Board, depth: int) -> set[chess.Move]:
    scores = {}
    for move in board.legal_moves:
        board.push(move)
        scores[move] = -reference_value(board, depth - 1, 1)
        board.pop()
    best = max(scores.values())
    return {move for move, score in scores.items() if score == best}


# -- alpha-beta ---------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("fen", MATES_IN_ONE)
def test_alphabeta_mates_in_one(fen: str, depth: int) -> None:
    board = chess.Board(fen)
    board.push(expert_move(fen, depth))
    assert board.is_checkmate()


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(("fen", "capture"), HANGING_QUEENS)
def test_alphabeta_wins_a_hanging_queen(fen: str, capture: str, depth: int) -> None:
    assert expert_move(fen, depth).uci() == capture


@pytest.mark.parametrize("fen", MATE_THREATS)
def test_alphabeta_at_depth_two_avoids_a_mate_in_one(fen: str) -> None:
    board = chess.Board(fen)
    board.push(expert_move(fen, depth=2))
    assert not allows_mate_in_one(board), board.fen()


def test_alphabeta_prefers_the_nearer_mate() -> None:
    # Ra8 mates at once; the expert at depth 3 must not play a slower mate.
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    board.push(expert_move(board.fen(), depth=3))
    assert board.is_checkmate()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    plies=st.integers(0, 80),
    depth=st.sampled_from([1, 2]),
    expert_seed=st.integers(0, 2**32),
)
def test_alphabeta_plays_a_best_move_of_plain_minimax(
    seed: int, plies: int, depth: int, expert_seed: int
) -> None:
    board = random_position(seed, plies)
    if board.is_game_over():
        return
    move = expert_move(board.fen(), depth, expert_seed)
    assert move in board.legal_moves
    assert move in reference_best_moves(board, depth), board.fen()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 120))
def test_evaluate_is_antisymmetric_and_colour_blind(seed: int, plies: int) -> None:
    board = random_position(seed, plies)
    assert evaluate(board.mirror()) == evaluate(board)
    if not board.is_check():
        flipped = board.copy(stack=False)
        flipped.push(chess.Move.null())
        assert evaluate(flipped) == -evaluate(board)


def test_alphabeta_is_deterministic_for_a_seed_and_draws_among_ties() -> None:
    positions = [random_position(seed, 12) for seed in range(6)]

    def moves(seed: int) -> list[str]:
        expert = AlphaBetaExpert(depth=2)
        expert.reset(seed=seed)
        return [expert(board).uci() for board in positions]

    assert moves(7) == moves(7)
    start = {expert_move(chess.STARTING_FEN, seed=seed).uci() for seed in range(12)}
    assert len(start) > 1, "tied moves in the start position are drawn by the seed"


def test_alphabeta_plays_whole_games_in_the_env() -> None:
    env = ChessEnv(opponent=AlphaBetaExpert(depth=1), max_plies=40)
    expert = AlphaBetaExpert(depth=1)
    _, info = env.reset(seed=3)
    expert.reset(seed=3)
    done = False
    while not done:
        move = expert(env.board)
        _, _, terminated, truncated, info = env.step(encode_move(move, env.board.turn))
        done = terminated or truncated
    assert "illegal_action" not in info


@pytest.mark.parametrize("depth", [0, -1, 1.5, True])
def test_alphabeta_rejects_a_bad_depth(depth: Any) -> None:
    with pytest.raises(ValueError, match="depth"):
        AlphaBetaExpert(depth=depth)


# -- chess_expert -------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "depth"), [("alphabeta:3", 3), ("alphabeta", 2)])
def test_chess_expert_alphabeta(spec: str, depth: int) -> None:
    expert = chess_expert(spec)
    assert isinstance(expert, AlphaBetaExpert) and expert.depth == depth


def test_make_player_builds_the_alphabeta_expert() -> None:
    assert repr(make_player("alphabeta:2")) == "AlphaBetaExpert(depth=2)"


@pytest.mark.parametrize(
    "spec", ["", "auto:1", "minimax:2", "stockfish:", "alphabeta:0", "alphabeta:x", "Stockfish:1"]
)
def test_chess_expert_rejects_a_bad_spec_by_name(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown chess expert") as caught:
        chess_expert(spec)
    assert repr(spec) in str(caught.value)


def test_auto_falls_back_to_alphabeta_without_stockfish(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(path: Any = None) -> str:
        raise StockfishNotFoundError("no Stockfish here")

    monkeypatch.setattr(experts_module, "find_stockfish", missing)
    expert = chess_expert("auto")
    assert isinstance(expert, AlphaBetaExpert) and expert.depth == 2


@needs_stockfish
@pytest.mark.stockfish
@pytest.mark.parametrize(("spec", "depth"), [("auto", 1), ("stockfish:3", 3), ("stockfish", 1)])
def test_chess_expert_stockfish(spec: str, depth: int) -> None:
    expert = chess_expert(spec)
    try:
        assert isinstance(expert, StockfishOpponent) and expert.depth == depth
        board = chess.Board(MATES_IN_ONE[0])
        board.push(expert(board))
        assert board.is_checkmate()
    finally:
        expert.close()


# -- world experts ------------------------------------------------------------------------------


def short_world(name: str, turns: int) -> Any:
    config = load_world(name)
    simulation = config.simulation.model_copy(update={"max_turns": turns})
    return config.model_copy(update={"simulation": simulation})


def episode_return(config: Any, agent: str, policy: Any, seed: int) -> float:
    """One episode of ``agent`` under the world's observability; the others act at random."""
    env = SingleAgentEnv(parallel_env(config, observability=True), agent)
    observation, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    total, done = 0.0, False
    while not done:
        action = policy(observation) if policy is not None else env.action_space.sample()
        assert env.action_space.contains(action), action
        observation, reward, terminated, truncated, info = env.step(action)
        assert "action_error" not in info, info["action_error"]
        total += reward
        done = terminated or truncated
    return total


@pytest.mark.parametrize(
    ("world", "agent", "turns"),
    [("forage", "Forager_1", 60), ("forage", "Forager_3", 60), ("trade", "Trader_1", 20),
     ("trade", "Trader_4", 20)],
)  # fmt: skip
def test_world_expert_beats_random_play(world: str, agent: str, turns: int) -> None:
    config = short_world(world, turns)
    expert = world_expert(world)
    seeds = [0, 1]
    scripted = np.mean([episode_return(config, agent, expert, seed) for seed in seeds])
    uniform = np.mean([episode_return(config, agent, None, seed) for seed in seeds])
    assert scripted > uniform + 1.0, (scripted, uniform)


@pytest.mark.parametrize(
    ("position", "food", "move"),
    [((0, 0), (3, 1), "down"), ((3, 3), (3, 0), "left"), ((5, 2), (1, 4), "up"),
     ((2, 2), (2, 6), "right"), ((4, 4), (4, 4), "stay"), ((1, 1), (2, 2), "down")],
)  # fmt: skip
def test_forage_expert_walks_toward_the_food(
    position: tuple[int, int], food: tuple[int, int], move: str
) -> None:
    values = load_world("forage").actions["move"].values
    action = ForageExpert()({"self": {"position": position}, "global": {"food": food}})
    assert values[action["move"]] == move


def trader_view(**changes: Any) -> dict[str, Any]:
    """Trader_1's first observation (at Farmstead, holding 10 food), with ``self`` changed."""
    env = parallel_env("trade", observability=True)
    observations, _ = env.reset(seed=0)
    observation = observations["Trader_1"]
    me = dict(observation["self"])
    stats = dict(me["stats"])
    if "stamina" in changes:
        stats["stamina"] = changes.pop("stamina")
    me.update(stats=stats, **changes.pop("self", {}))
    world = dict(observation["global"])
    if "market_open" in changes:
        world["market_open"] = np.array([int(changes.pop("market_open"))], dtype=np.int8)
    return {**observation, "self": me, "global": world}


def decoded(action: dict[str, Any]) -> tuple[str, str, str]:
    actions = load_world("trade").actions
    return (
        actions["verb"].values[action["verb"]],
        actions["good"].values[action["good"]],
        actions["target_town"].values[action["target_town"]],
    )


def test_trade_expert_produces_the_most_valuable_harvest_when_rested() -> None:
    # At Farmstead: 10 x 900 / 1400 food at 4 beats wood, metal and buying cheap food.
    assert decoded(TradeExpert()(trader_view()))[:2] == ("produce", "food")


def test_trade_expert_buys_cheap_goods_when_too_tired_to_produce() -> None:
    verb, good, town = decoded(TradeExpert()(trader_view(stamina=0)))
    assert (verb, good, town) == ("buy", "food", "Farmstead")  # local 2.2 against global 4


def test_trade_expert_rests_when_it_can_do_nothing_useful() -> None:
    assert decoded(TradeExpert()(trader_view(stamina=0, market_open=False)))[0] == "rest"


def test_trade_expert_sells_where_a_good_is_dear() -> None:
    at_ironforge = {"location": (np.array([50.0], np.float32), np.array([85.0], np.float32))}
    view = trader_view(stamina=0, self=at_ironforge)
    assert decoded(TradeExpert()(view)) == ("sell", "food", "Ironforge")  # 12 against 4


def test_trade_expert_travels_to_sell_when_produce_is_out_of_reach() -> None:
    # Too tired to produce (2 < 3 stamina) and nothing worth trading at Farmstead but the 10
    # food it holds sells at three times the global price in Ironforge.
    view = trader_view(stamina=2, self={"gold": np.array([0.0], np.float32)})
    assert decoded(TradeExpert()(view))[0::2] == ("move", "Ironforge")


def test_world_expert_rejects_an_unknown_world() -> None:
    with pytest.raises(ValueError, match="'chess'"):
        world_expert("chess")
