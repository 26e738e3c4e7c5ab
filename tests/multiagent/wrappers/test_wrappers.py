"""The wrappers: noise on any env (chess too), SB3 flattening, one learning agent among policies,
and the text view LLM agents read. Each is checked by the API checkers and by what it promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test
from pydantic import ValidationError

import chess_env
from multiagent import WorldEnv, parallel_env
from multiagent.observability import observe_all
from multiagent.worlds import WORLDS, world_path
from multiagent.wrappers import (
    FlattenForSB3,
    GymNoiseWrapper,
    NoiseWrapper,
    ObservabilityWrapper,
    ParallelNoiseWrapper,
    SingleAgentEnv,
    TextObservationWrapper,
    observation_envelope,
)

LEARNER = {"trade": "Trader_1", "forage": "Forager_1", "commons": "Fisher_1"}
FORAGE_MOVES = ["stay", "up", "down", "left", "right"]
# The Gymnasium checker's advice for wrapped envs without a spec; not a failure of ours.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:gymnasium.utils.env_checker")


def world_dict(name: str, **simulation: Any) -> dict[str, Any]:
    """A built-in world's YAML as a dict, with ``simulation`` settings replaced."""
    data = yaml.safe_load(world_path(name).read_text(encoding="utf-8"))
    data["simulation"].update(simulation)
    return data


def leaves(space: spaces.Space[Any], value: Any) -> Iterator[tuple[spaces.Space[Any], Any]]:
    """Every (leaf space, leaf value) of an observation, walking Dict, Tuple and Sequence."""
    if isinstance(space, spaces.Dict):
        for key, child in space.spaces.items():
            yield from leaves(child, value[key])
    elif isinstance(space, spaces.Tuple):
        for child, item in zip(space.spaces, value, strict=True):
            yield from leaves(child, item)
    elif isinstance(space, spaces.Sequence):
        for item in value:
            yield from leaves(space.feature_space, item)
    else:
        yield space, value


def paired_leaves(
    space: spaces.Space[Any], a: Any, b: Any
) -> Iterator[tuple[spaces.Space[Any], Any, Any]]:
    """Leaves of two observations of the same shape, side by side."""
    for (leaf, x), (_, y) in zip(leaves(space, a), leaves(space, b), strict=True):
        yield leaf, x, y


def assert_flat_element(space: spaces.Dict, observation: dict[str, Any]) -> None:
    """A flat observation: the same keys as the space, arrays of the leaf's dtype, contained."""
    assert list(observation) == list(space.spaces)
    for key, leaf in space.spaces.items():
        value = observation[key]
        if isinstance(leaf, spaces.Discrete):
            assert isinstance(value, (int, np.integer)), key
        else:
            assert isinstance(value, np.ndarray), key
            assert value.dtype == leaf.dtype and value.shape == leaf.shape, key
        assert leaf.contains(value), f"{key}: {value!r} not in {leaf}"


def flat_env(world: str, **kwargs: Any) -> FlattenForSB3:
    return FlattenForSB3(
        SingleAgentEnv(ObservabilityWrapper(parallel_env(world)), LEARNER[world]), **kwargs
    )


def world_of(env: FlattenForSB3) -> WorldEnv:
    """The world env under FlattenForSB3(SingleAgentEnv(ObservabilityWrapper(...)))."""
    return env.env.env.unwrapped  # type: ignore[attr-defined,no-any-return]


def world_of_single(env: FlattenForSB3) -> WorldEnv:
    """The world env under FlattenForSB3(SingleAgentEnv(world))."""
    return env.env.env  # type: ignore[attr-defined,no-any-return]


# -- NoiseWrapper on a Gymnasium env (the chess tensor) -----------------------------------------


def chess_observations(env: Any, seed: int, plies: int = 12) -> list[np.ndarray]:
    """Observations over legal moves chosen by ``seed`` (the same moves for any wrapper)."""
    choose = np.random.default_rng(seed)
    observation, info = env.reset(seed=seed)
    seen = [observation]
    for _ in range(plies):
        legal = np.flatnonzero(info["action_mask"])
        observation, _, terminated, truncated, info = env.step(int(choose.choice(legal)))
        seen.append(observation)
        if terminated or truncated:
            break
    return seen


def test_noise_wrapper_on_chess_passes_the_gymnasium_checker() -> None:
    env = NoiseWrapper(chess_env.ChessEnv(illegal_action="penalize"), noise=0.1)
    assert isinstance(env, GymNoiseWrapper)
    gym_check_env(env)


def test_chess_noise_zero_is_the_unwrapped_observation() -> None:
    plain = chess_observations(chess_env.ChessEnv(), seed=3)
    noiseless = chess_observations(NoiseWrapper(chess_env.ChessEnv(), noise=0.0), seed=3)
    assert len(plain) == len(noiseless) > 1
    for a, b in zip(plain, noiseless, strict=True):
        assert b.dtype == np.uint8
        np.testing.assert_array_equal(a, b)


def test_chess_noise_flips_about_that_share_of_bits_reproducibly() -> None:
    plain = chess_observations(chess_env.ChessEnv(), seed=4)
    env = NoiseWrapper(chess_env.ChessEnv(), noise=0.1)
    noisy = chess_observations(env, seed=4)
    for observation in noisy:
        assert observation.dtype == np.uint8 and env.observation_space.contains(observation)
    flipped = np.mean([np.mean(a != b) for a, b in zip(plain, noisy, strict=True)])
    assert 0.07 < flipped < 0.13  # 768 bits per observation, a dozen observations
    again = chess_observations(NoiseWrapper(chess_env.ChessEnv(), noise=0.1), seed=4)
    for a, b in zip(noisy, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bad_noise_arguments() -> None:
    with pytest.raises(ValueError, match="noise must be >= 0"):
        NoiseWrapper(chess_env.ChessEnv(), noise=-0.1)
    with pytest.raises(ValueError, match="distribution must be"):
        NoiseWrapper(parallel_env("forage"), noise=0.1, distribution="cauchy")


class ConstantEnv(gym.Env):
    """A Gymnasium env that always observes ``value``: noise is all that changes it."""

    def __init__(self, space: spaces.Space[Any], value: Any) -> None:
        self.observation_space, self.action_space = space, spaces.Discrete(1)
        self.value = value

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        return self.value, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.value, 0.0, False, False, {}


def test_discrete_noise_replaces_values_at_its_rate_within_the_space() -> None:
    env = NoiseWrapper(ConstantEnv(spaces.Discrete(3, start=5), 6), noise=0.5)
    observations = [env.reset(seed=0)[0]] + [env.step(0)[0] for _ in range(2000)]
    assert set(observations) == {5, 6, 7}
    assert abs(np.mean([o != 6 for o in observations]) - 0.5) < 0.05


def test_multidiscrete_noise_stays_in_a_space_with_a_start() -> None:
    space = spaces.MultiDiscrete([3, 3], start=[5, 5])
    env = NoiseWrapper(ConstantEnv(space, np.array([6, 6])), noise=1.0)
    observation, _ = env.reset(seed=0)
    assert space.contains(observation), observation


def test_multidiscrete_noise_changes_entries_at_its_rate() -> None:
    space = spaces.MultiDiscrete([2] * 4000)
    env = NoiseWrapper(ConstantEnv(space, np.zeros(4000, dtype=np.int64)), noise=0.5)
    observation, _ = env.reset(seed=0)
    assert space.contains(observation)
    assert abs(np.mean(observation != 0) - 0.5) < 0.05  # actually about 0.25


# -- NoiseWrapper on a world ParallelEnv --------------------------------------------------------


def forage_lockstep(env: ParallelEnv, seed: int, turns: int = 30) -> list[dict[str, Any]]:
    """Observations of ``turns`` turns under plain actions drawn from ``seed``."""
    choose = np.random.default_rng(seed)
    observations, _ = env.reset(seed=seed)
    seen = [observations]
    for _ in range(turns):
        actions = {a: {"move": FORAGE_MOVES[choose.integers(5)]} for a in env.agents}
        observations, *_ = env.step(actions)
        seen.append(observations)
    return seen


@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
def test_noise_on_a_world_stays_in_space_and_changes_discretes_at_its_rate(
    distribution: str,
) -> None:
    noise = 0.3
    truth = forage_lockstep(parallel_env("forage"), seed=5)
    env = NoiseWrapper(parallel_env("forage"), noise=noise, distribution=distribution)
    assert isinstance(env, ParallelNoiseWrapper)
    noisy = forage_lockstep(env, seed=5)
    changed = total = 0
    for true_turn, noisy_turn in zip(truth, noisy, strict=True):
        for agent, observation in noisy_turn.items():
            space = env.observation_space(agent)
            assert space.contains(observation)
            for leaf, x, y in paired_leaves(space, true_turn[agent], observation):
                if isinstance(leaf, spaces.Discrete):
                    assert isinstance(y, (int, np.integer))
                    changed, total = changed + int(x != y), total + 1
                elif isinstance(leaf, spaces.Box):
                    assert y.dtype == leaf.dtype
                    assert np.all(y >= leaf.low) and np.all(y <= leaf.high)
                    if distribution == "uniform":  # v * (1 + e), |e| <= noise
                        assert np.all(np.abs(y - x) <= noise * np.abs(x) + 1e-4)
    assert total > 500
    assert abs(changed / total - noise) < 0.06


def test_world_noise_is_seeded_by_reset() -> None:
    first = forage_lockstep(NoiseWrapper(parallel_env("forage"), noise=0.2), seed=8, turns=10)
    again = forage_lockstep(NoiseWrapper(parallel_env("forage"), noise=0.2), seed=8, turns=10)
    other = forage_lockstep(NoiseWrapper(parallel_env("forage"), noise=0.2), seed=9, turns=10)
    space = parallel_env("forage").observation_space("Forager_1")

    def equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
        pairs = paired_leaves(space, a["Forager_1"], b["Forager_1"])
        return all(np.array_equal(x, y) for _, x, y in pairs)

    assert all(equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(equal(a, b) for a, b in zip(first, other, strict=True))


def test_noise_on_the_trade_world_keeps_every_observation_in_space() -> None:
    """Trade has every kind of space: sequences of tuples, texts, declared-key dicts."""
    env = NoiseWrapper(ObservabilityWrapper(parallel_env("trade")), noise=0.5)
    observations, _ = env.reset(seed=2)
    for _ in range(15):
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation), agent
        observations, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})


# -- FlattenForSB3 ------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_flat_observations_are_one_level_of_sb3_spaces(world: str) -> None:
    env = flat_env(world)
    space = env.observation_space
    assert isinstance(space, spaces.Dict)
    leaf_types = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)
    assert all(isinstance(leaf, leaf_types) for leaf in space.spaces.values())
    assert all("." not in key for key in space.spaces)  # torch module names forbid "."
    assert "turn" in space.spaces and f"self{env.separator}position" not in space.spaces
    observation, _ = env.reset(seed=0)
    for _ in range(25):
        assert_flat_element(space, observation)
        observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if world == "commons" and terminated:  # random fishers empty the lake
            break
        assert not (terminated or truncated)


def test_flat_forage_keys_name_their_paths() -> None:
    env = flat_env("forage")
    keys = set(env.observation_space.spaces)
    assert {"self/position/0", "self/position/1", "self/energy", "turn"} <= keys
    assert {"others/Forager_2/_visible", "global/food/0", "global/eaten"} <= keys
    observation, _ = env.reset(seed=0)
    assert (observation["self/position/0"], observation["self/position/1"]) == (0, 0)
    assert observation["self/energy"].tolist() == [100.0]


def test_flat_trade_lists_are_padded_with_masks() -> None:
    env = flat_env("trade")
    world = world_of(env)
    space = env.observation_space.spaces
    assert space["self/action_history/mask"] == spaces.MultiBinary(10)
    assert space["self/position_history/0"].shape == (20, 1)
    assert "self/inventory" not in space  # a dict without declared keys has no fixed shape
    assert "global/prices/food/present" in space  # declared keys keep their slots
    observation, _ = env.reset(seed=0)
    for turn in range(12):
        trader = world.world.agents["Trader_1"]
        history = trader["action_history"]
        assert observation["self/action_history/mask"].sum() == len(history) == min(turn, 10)
        assert observation["self/action_history/mask"].tolist() == [1] * len(history) + [0] * (
            10 - len(history)
        )
        positions = trader["position_history"]
        assert observation["self/position_history/mask"].sum() == len(positions)
        xs = observation["self/position_history/0"][:, 0]
        np.testing.assert_array_equal(xs[: len(positions)], [np.float32(x) for x, _ in positions])
        assert not xs[len(positions) :].any()  # padding is zeros
        observation, *_ = env.step(env.action_space.sample())


def test_flat_strings_are_dropped_by_default() -> None:
    keys = flat_env("trade").observation_space.spaces
    assert not [k for k in keys if k.endswith(("agent_name", "capital/name"))]
    assert "self/action_history" not in keys and "self/action_history/mask" in keys


def test_flat_strings_hash_to_stable_buckets() -> None:
    env = flat_env("trade", strings="hash", string_buckets=32)
    space = env.observation_space.spaces
    assert space["self/agent_name"] == spaces.Discrete(32)
    assert space["others/Trader_2/agent_name"] == spaces.Discrete(32)
    assert space["self/action_history"] == spaces.MultiDiscrete([32] * 10)
    rest = np.array([4, 0, 3, 0])  # verb 4: rest
    observation, _ = env.reset(seed=0)
    name_bucket = observation["self/agent_name"]
    for _ in range(4):
        observation, *_ = env.step(rest)
        assert observation["self/agent_name"] == name_bucket  # "Aldric" every turn
    buckets = observation["self/action_history"]
    assert observation["self/action_history/mask"].tolist()[:5] == [1, 1, 1, 1, 0]
    assert len(set(buckets[:4].tolist())) == 1  # "rest" four times: one bucket
    other = flat_env("trade", strings="hash", string_buckets=32)
    assert other.reset(seed=5)[0]["self/agent_name"] == name_bucket
    # Across processes too (Python's own str hash is salted per process).
    code = (
        "from multiagent import parallel_env\n"
        "from multiagent.wrappers import FlattenForSB3, ObservabilityWrapper, SingleAgentEnv\n"
        "env = FlattenForSB3(SingleAgentEnv(ObservabilityWrapper(parallel_env('trade')),"
        " 'Trader_1'), strings='hash', string_buckets=32)\n"
        "print(int(env.reset(seed=0)[0]['self/agent_name']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert int(result.stdout.split()[-1]) == name_bucket


def test_flat_action_spaces() -> None:
    assert flat_env("forage").action_space == spaces.Discrete(5)
    assert flat_env("trade").action_space == spaces.MultiDiscrete([5, 3, 4, 11])


@pytest.mark.parametrize("world", WORLDS)
def test_flat_actions_decode_to_valid_dict_actions(world: str) -> None:
    env = flat_env(world)
    world_env = world_of(env)
    env.action_space.seed(0)
    inner = env.env.action_space
    for _ in range(50):
        action = env.action(env.action_space.sample())
        assert inner.contains(action)
        world_env.decode_action(LEARNER[world], action)  # raises if invalid


def test_flat_actions_decode_to_the_fields_they_name() -> None:
    forage, trade = flat_env("forage"), flat_env("trade")
    assert world_of(forage).decode_action("Forager_1", forage.action(3)) == {"move": "left"}
    decoded = world_of(trade).decode_action("Trader_1", trade.action(np.array([1, 2, 3, 10])))
    assert decoded == {"verb": "buy", "good": "metal", "target_town": "Capital", "amount": 10.0}
    decoded = world_of(trade).decode_action("Trader_1", trade.action(np.array([0, 0, 0, 5])))
    assert decoded["amount"] == pytest.approx(5.0)


def test_flat_float_actions_are_a_clipped_box() -> None:
    """A world whose only action field is a float: the flat action space is that Box."""
    config = world_dict("forage")
    config["actions"] = {"effort": {"type": "float", "min": 0, "max": 2}}
    del config["engine"]["dynamics"]  # forage's rules read "move": a static world instead
    env = FlattenForSB3(SingleAgentEnv(parallel_env(config), "Forager_1"))
    assert env.action_space == spaces.Box(0.0, 2.0, (1,), np.float32)
    decoded = env.action(np.array([5.0], dtype=np.float32))
    assert decoded["effort"].tolist() == [2.0]  # clipped into the bounds
    assert world_of_single(env).decode_action("Forager_1", decoded) == {"effort": 2.0}
    gym_check_env(env)


def test_flat_action_moves_the_learner() -> None:
    env = flat_env("forage")
    env.reset(seed=0)
    observation, *_ = env.step(4)  # right
    assert world_of(env).world.agents["Forager_1"]["position"] == (0, 1)
    assert (observation["self/position/0"], observation["self/position/1"]) == (0, 1)


@pytest.mark.parametrize("world", WORLDS)
def test_flat_env_passes_the_gymnasium_and_sb3_checkers(world: str) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    gym_check_env(flat_env(world))
    sb3_check_env(flat_env(world), warn=False)


def test_bad_flatten_strings_option() -> None:
    with pytest.raises(ValueError, match="strings must be"):
        flat_env("forage", strings="keep")


# -- SingleAgentEnv -----------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_single_agent_env_passes_the_gymnasium_checker(world: str) -> None:
    gym_check_env(SingleAgentEnv(ObservabilityWrapper(parallel_env(world)), LEARNER[world]))


def forage_positions(env: SingleAgentEnv, seed: int, turns: int = 20) -> list[dict[str, Any]]:
    """The ground-truth positions of all foragers while the learner always goes right."""
    env.reset(seed=seed)
    world = env.env.unwrapped
    positions = []
    for _ in range(turns):
        env.step({"move": 4})
        positions.append({a: v["position"] for a, v in world.world.agents.items()})
    return positions


def test_random_others_are_seeded_by_reset() -> None:
    def env() -> SingleAgentEnv:
        return SingleAgentEnv(ObservabilityWrapper(parallel_env("forage")), "Forager_1")

    first = forage_positions(env(), seed=3)
    assert forage_positions(env(), seed=3) == first
    assert forage_positions(env(), seed=4) != first
    assert len({p["Forager_2"] for p in first}) > 1  # the others do move at random


def test_policies_for_the_others_are_used() -> None:
    seen: list[tuple[str, Any]] = []

    def stay(name: str) -> Callable[[Any], Any]:
        def policy(observation: Any) -> Any:
            seen.append((name, observation))
            return {"move": 0}

        return policy

    env = SingleAgentEnv(
        ObservabilityWrapper(parallel_env("forage")), "Forager_1", others={"Forager_2": stay("2")}
    )
    positions = forage_positions(env, seed=1)
    assert {p["Forager_2"] for p in positions} == {(6, 6)}  # always stays
    assert len({p["Forager_3"] for p in positions}) > 1  # left out: random
    assert len(seen) == 20 and {name for name, _ in seen} == {"2"}
    space = env.env.observation_space("Forager_2")
    assert all(space.contains(observation) for _, observation in seen)
    assert seen[0][1]["self"]["position"] == (6, 6)  # Forager_2's own observation

    everyone = SingleAgentEnv(parallel_env("forage"), "Forager_1", others=stay("all"))
    positions = forage_positions(everyone, seed=1)
    assert {p["Forager_2"] for p in positions} == {(6, 6)}
    assert {p["Forager_3"] for p in positions} == {(0, 6)}


def test_single_agent_env_rejects_unknown_agents() -> None:
    with pytest.raises(ValueError, match="unknown agent 'Forager_9'"):
        SingleAgentEnv(parallel_env("forage"), "Forager_9")
    with pytest.raises(ValueError, match="unknown agents"):
        SingleAgentEnv(parallel_env("forage"), "Forager_1", others={"Nobody": lambda o: 0})


def test_single_agent_env_refuses_to_step_after_the_episode() -> None:
    env = SingleAgentEnv(parallel_env(world_dict("forage", max_turns=3)), "Forager_1")
    env.reset(seed=0)
    results = [env.step({"move": 0}) for _ in range(3)]
    assert [truncated for *_, truncated, _ in results] == [False, False, True]
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step({"move": 0})
    env.reset(seed=0)
    env.step({"move": 0})  # a reset starts a new episode


def test_ppo_learns_on_the_flat_forage_env() -> None:
    torch = pytest.importorskip("torch")
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    env = FlattenForSB3(SingleAgentEnv(ObservabilityWrapper(parallel_env("forage")), "Forager_1"))
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    assert model.num_timesteps == 128
    observation, _ = env.reset(seed=0)
    action, _ = model.predict(observation, deterministic=True)
    assert env.action_space.contains(int(action))


# -- TextObservationWrapper ---------------------------------------------------------------------


@pytest.mark.parametrize("text_format", ["text", "json"])
@pytest.mark.parametrize("world", WORLDS)
def test_text_wrapper_passes_the_parallel_api_test(world: str, text_format: str) -> None:
    parallel_api_test(TextObservationWrapper(parallel_env(world), format=text_format), 20)


def test_text_format_shows_only_what_the_observer_knows() -> None:
    env = TextObservationWrapper(parallel_env("trade"))
    observations, _ = env.reset(seed=0)
    text = observations["Trader_1"]
    assert text.startswith("Turn 0, observer Trader_1\nAgents:\n")
    assert "- Trader_1 (insider): " in text and "- Trader_2 (external, noise 0.1): " in text
    assert "Trader_4" not in text and "Dunya" not in text  # unaware of Trader_4
    assert '"agent_name": "Aldric"' in text
    assert env.observation_space("Trader_1").contains(text)


def test_json_format_has_no_unaware_targets() -> None:
    env = TextObservationWrapper(parallel_env("trade"), format="json")
    observations, _ = env.reset(seed=0)
    for _ in range(3):
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation)
        data = json.loads(observations["Trader_1"])
        assert data["observer"] == "Trader_1"
        assert set(data["agents"]) == {"Trader_1", "Trader_2", "Trader_3"}
        assert "gold" in data["agents"]["Trader_1"]["variables"]
        assert "gold" not in data["agents"]["Trader_2"]["variables"]  # internal, seen externally
        assert data["global_context"]["level"] == "insider"
        assert set(json.loads(observations["Trader_4"])["agents"]) == {
            "Trader_2",
            "Trader_3",
            "Trader_4",
        }
        observations, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})


def test_text_full_view_shows_everyone_exactly() -> None:
    env = TextObservationWrapper(parallel_env("trade"), format="json", full=True)
    observations, _ = env.reset(seed=0)
    data = json.loads(observations["Trader_1"])
    assert set(data["agents"]) == {"Trader_1", "Trader_2", "Trader_3", "Trader_4"}
    assert data["agents"]["Trader_4"]["variables"]["gold"] == 40.0


def test_bad_text_format() -> None:
    with pytest.raises(ValueError, match="format must be"):
        TextObservationWrapper(parallel_env("forage"), format="yaml")


def test_observation_envelope_is_a_frozen_dto() -> None:
    env = ObservabilityWrapper(parallel_env("trade"))
    env.reset(seed=0)
    world = env.unwrapped.world
    view = observe_all(world, env.plan, seed=0, observers=["Trader_1"])["Trader_1"]
    envelope = observation_envelope("Trader_1", view, env.plan)
    assert envelope.observer == "Trader_1" and envelope.turn == 0
    assert set(envelope.agents) == {"Trader_1", "Trader_2", "Trader_3"}
    trader_2 = envelope.agents["Trader_2"]
    assert (trader_2.name, trader_2.level, trader_2.noise) == ("Trader_2", "external", 0.1)
    assert "gold" not in trader_2.variables and "location" in trader_2.variables
    assert envelope.agents["Trader_1"].variables["gold"] == 100.0
    assert envelope.global_context is not None and envelope.global_context.level == "insider"
    with pytest.raises(ValidationError):
        envelope.turn = 5  # type: ignore[misc]
    with pytest.raises(ValidationError):
        trader_2.level = "insider"  # type: ignore[misc]


def test_text_view_and_observability_wrapper_see_the_same_noise() -> None:
    """Noise depends on (seed, turn, observer, target) only, so both views of a turn agree."""
    text = TextObservationWrapper(parallel_env("trade"), format="json")
    numeric = ObservabilityWrapper(parallel_env("trade"))
    documents, _ = text.reset(seed=6)
    observations, _ = numeric.reset(seed=6)
    for _ in range(3):
        seen = json.loads(documents["Trader_3"])["agents"]["Trader_1"]["variables"]
        encoded = observations["Trader_3"]["others"]["Trader_1"]
        assert encoded["economic_strength"].tolist() == [np.float32(seen["economic_strength"])]
        assert encoded["location"][1].tolist() == [np.float32(seen["location"][1])]
        actions = {a: text.action_space(a).sample() for a in text.agents}
        documents, *_ = text.step(actions)
        observations, *_ = numeric.step(actions)
