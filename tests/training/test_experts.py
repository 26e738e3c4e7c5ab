"""training.experts: chess_expert reads its specs through the player registry; the world experts
beat random play."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest

import training.experts as experts_module
from chess_env.core.alphabeta import AlphaBetaOpponent
from chess_env.core.opponents import StockfishOpponent
from chess_env.core.players import make_player
from multiagent import parallel_env
from multiagent.worlds import load_world
from multiagent.wrappers import SingleAgentEnv
from training.experts import (
    ForageExpert,
    TradeExpert,
    chess_expert,
    world_expert,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from stockfish_binary import needs_stockfish

# -- chess_expert -------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "depth"), [("alphabeta:3", 3), ("alphabeta", 2)])
def test_chess_expert_alphabeta(spec: str, depth: int) -> None:
    expert = chess_expert(spec)
    assert isinstance(expert, AlphaBetaOpponent) and expert.depth == depth


def test_make_player_builds_the_alphabeta_expert() -> None:
    assert repr(make_player("alphabeta:2")) == "AlphaBetaOpponent(depth=2)"


@pytest.mark.parametrize(
    "spec", ["", "auto:1", "minimax:2", "stockfish:", "alphabeta:0", "alphabeta:x", "random"]
)
def test_chess_expert_rejects_a_bad_spec_by_name(spec: str) -> None:
    with pytest.raises(ValueError, match=r"player|expert") as caught:
        chess_expert(spec)
    assert repr(spec) in str(caught.value)


def test_auto_falls_back_to_alphabeta_without_stockfish(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experts_module, "stockfish_installed", lambda: False)
    expert = chess_expert("auto")
    assert isinstance(expert, AlphaBetaOpponent) and expert.depth == 2


@needs_stockfish
@pytest.mark.stockfish
@pytest.mark.parametrize(("spec", "depth"), [("auto", 1), ("stockfish:3", 3), ("stockfish", 1)])
def test_chess_expert_stockfish(spec: str, depth: int) -> None:
    expert = chess_expert(spec)
    try:
        assert isinstance(expert, StockfishOpponent) and expert.depth == depth
        board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # a back-rank mate
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
