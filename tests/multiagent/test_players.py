"""World players: every kind acts validly in the built-in worlds, deterministically; specs are
checked and refused with their forms; the model kind equals ``model.predict``; the openai kind
talks to a real local endpoint."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.errors import PlayerSpecError
from multiagent.config import SimulationConfig
from multiagent.env import WorldEnv
from multiagent.play import play_episode, seat_seed
from multiagent.players import (
    NoopPlayer,
    RandomPlayer,
    SeatTurn,
    WorldPlayer,
    WorldPlayerSpecError,
    check_world_player,
    fallback_action,
    make_world_player,
    register_world_player,
    unregister_world_player,
    world_player_kinds,
)
from multiagent.players.llm import LLMWorldPlayer
from multiagent.spaces import from_space_value
from multiagent.variables import VariableDefinition
from multiagent.worlds import load_world

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from chat_server import ChatServer, ToolCall, WithUsage

WORLDS = ["forage", "trade"]
POLICY_MODULE = "polyarena_test_seat_policies"
POLICY_SOURCE = """
def first_value(turn):
    return {"move": "up"} if turn.agent.startswith("Forager") else {
        "verb": "rest", "good": "food", "target_town": "Capital", "amount": 1.0}

def seen(turn):
    return {"move": "left" if len(turn.envelope.agents) > 1 else "right"}
"""


def world(name: str) -> SimulationConfig:
    return load_world(name)


def everyone(config: SimulationConfig, spec: Any, **options: Any) -> dict[str, WorldPlayer]:
    return {seat: make_world_player(spec, config, **options) for seat in config.agent_names}


@pytest.fixture
def policy_folder(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / f"{POLICY_MODULE}.py").write_text(POLICY_SOURCE)
    yield tmp_path
    sys.modules.pop(POLICY_MODULE, None)
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


# -- every kind acts validly ------------------------------------------------------------------


@pytest.mark.parametrize("name", WORLDS)
@pytest.mark.parametrize("spec", ["random", "noop"])
def test_built_in_kinds_play_whole_episodes_without_a_refused_action(name: str, spec: str) -> None:
    config = world(name)
    outcome = play_episode(config, everyone(config, spec), seed=3, max_turns=25)
    assert outcome.length == 25 and outcome.truncated
    assert outcome.invalid_actions == dict.fromkeys(config.agent_names, 0)
    assert outcome.players == dict.fromkeys(config.agent_names, spec)


@pytest.mark.parametrize("name", WORLDS)
def test_random_actions_are_plain_values_the_env_accepts(name: str) -> None:
    config, env = world(name), WorldEnv(world(name))
    player = RandomPlayer(config)
    player.reset(5)
    for _ in range(200):
        action = player.act(None)
        assert json.loads(json.dumps(action)) == action  # plain values only
        assert env.decode_action(config.agent_names[0], action) == action


@pytest.mark.parametrize("name", WORLDS)
def test_the_fallback_is_every_field_at_its_default_and_valid(name: str) -> None:
    config = world(name)
    action = fallback_action(config)
    assert action == {key: defn.derived_default() for key, defn in config.actions.items()}
    assert WorldEnv(config).decode_action(config.agent_names[0], action) == action
    assert NoopPlayer(config).act(None) == action


# -- determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", WORLDS)
def test_same_seed_same_episode_and_another_seed_another(name: str) -> None:
    config = world(name)
    first = play_episode(config, everyone(config, "random"), seed=11, max_turns=30)
    again = play_episode(config, everyone(config, "random"), seed=11, max_turns=30)
    other = play_episode(config, everyone(config, "random"), seed=12, max_turns=30)
    assert first == again
    assert first.returns != other.returns


def test_seat_seeds_come_from_a_seed_sequence_not_hash() -> None:
    expected = np.random.SeedSequence([7, 2]).generate_state(1, np.uint64)[0] >> np.uint64(1)
    assert seat_seed(7, 2) == int(expected)
    assert seat_seed(None, 2) is None
    assert len({seat_seed(7, index) for index in range(10)}) == 10


def test_each_player_is_reset_with_its_seat_seed_and_scope() -> None:
    config = world("forage")
    seen: dict[str, tuple[int | None, str]] = {}

    class Recorder(NoopPlayer):
        def reset(self, seed: int | None, *, scope: str = "") -> None:
            seen[scope] = (seed, scope)

    players = {seat: Recorder(config) for seat in config.agent_names}
    play_episode(config, players, seed=4, max_turns=1, scope="ep-3")
    assert seen == {
        f"ep-3/{seat}": (seat_seed(4, index), f"ep-3/{seat}")
        for index, seat in enumerate(config.agent_names)
    }


# -- what a seat is shown ----------------------------------------------------------------------


def test_a_seat_turn_holds_its_observation_envelope_space_and_the_refusal() -> None:
    config = world("trade")
    turns: list[SeatTurn] = []

    class Wrong(WorldPlayer):
        def act(self, turn: SeatTurn) -> dict[str, Any]:
            turns.append(turn)
            return {"verb": "fly"}

    players: dict[str, WorldPlayer] = {seat: NoopPlayer(config) for seat in config.agent_names}
    players["Trader_1"] = Wrong()
    outcome = play_episode(config, players, seed=0, max_turns=3)
    assert outcome.invalid_actions["Trader_1"] == 3
    assert [turn.turn for turn in turns] == [0, 1, 2]
    assert turns[0].feedback is None and "verb" in (turns[1].feedback or "")
    first = turns[0]
    assert first.envelope.observer == "Trader_1"
    assert "Trader_4" not in first.envelope.agents  # unaware to Trader_1, as the wrapper says
    assert sorted(first.observation["others"]) == ["Trader_2", "Trader_3"]
    assert first.action_space == WorldEnv(config).action_space("Trader_1")


def test_full_observability_shows_every_seat_the_ground_truth() -> None:
    config = world("trade")
    turns: list[SeatTurn] = []

    def look(turn: SeatTurn) -> dict[str, Any]:
        turns.append(turn)
        return fallback_action(config)

    players = {seat: make_world_player(look, config) for seat in config.agent_names}
    play_episode(config, players, seed=0, max_turns=1, observability="full")
    assert all(len(turn.envelope.agents) == 4 for turn in turns)


def test_players_must_fill_exactly_the_worlds_seats() -> None:
    config = world("forage")
    players: dict[str, WorldPlayer] = {
        "Forager_1": NoopPlayer(config),
        "Nobody": NoopPlayer(config),
    }
    with pytest.raises(ValueError, match=r"missing: \['Forager_2', 'Forager_3'\].*\['Nobody'\]"):
        play_episode(config, players, seed=0)


# -- scripted -----------------------------------------------------------------------------------


def test_a_scripted_policy_is_imported_from_the_world_folder(policy_folder: Path) -> None:
    config = world("forage")
    spec = f"scripted:{POLICY_MODULE}:seen"
    players = everyone(config, spec, folder=policy_folder)
    outcome = play_episode(config, players, seed=0, max_turns=5)
    assert outcome.invalid_actions == dict.fromkeys(config.agent_names, 0)
    assert players["Forager_1"].name == spec


@pytest.mark.parametrize("name", WORLDS)
def test_a_scripted_policy_plays_both_worlds(name: str, policy_folder: Path) -> None:
    config = world(name)
    players = everyone(config, f"scripted:{POLICY_MODULE}:first_value", folder=policy_folder)
    outcome = play_episode(config, players, seed=0, max_turns=5)
    assert outcome.invalid_actions == dict.fromkeys(config.agent_names, 0)


def test_a_scripted_module_that_is_missing_names_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(WorldPlayerSpecError) as caught:
        make_world_player("scripted:no_such_policies:act", world("forage"), folder=tmp_path)
    message = str(caught.value)
    assert "no module named 'no_such_policies'" in message and str(tmp_path) in message
    assert message.startswith("player 'scripted:no_such_policies:act': ")


def test_a_scripted_function_that_is_missing_gets_a_suggestion(policy_folder: Path) -> None:
    with pytest.raises(WorldPlayerSpecError, match="has no attribute 'sen'; did you mean 'seen'"):
        make_world_player(f"scripted:{POLICY_MODULE}:sen", world("forage"), folder=policy_folder)


# -- the spec grammar ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("radnom", r"unknown player 'radnom' \(did you mean 'random'\?\)"),
        ("random:3", "random takes no ':' argument"),
        ("noop?x=1", "unknown option 'x'"),
        ("scripted:module_only", "expected scripted:MODULE:FUNCTION"),
        ("openai:m?retries=11", "retries must be in 0..10, got 11"),
        ("openai:m?tool_calling=perhaps", "tool_calling must be true or false"),
        ("openai:m?prompt=x", "unknown option 'prompt'"),
        ("openai?timeout=3", "expected openai:MODEL"),
        ("model", "expected model:PATH"),
        ("hf", "expected hf:PATH"),
        ("hf:runs/x?tool_calls=yes", "unknown option 'tool_calls'"),
        ("hf:runs/x?max_tokens=0", "max_tokens must be in 1..4096"),
    ],
)
def test_bad_specs_are_refused_naming_the_spec_and_the_forms(spec: str, message: str) -> None:
    with pytest.raises(WorldPlayerSpecError, match=message) as caught:
        check_world_player(spec)
    assert isinstance(caught.value, PlayerSpecError)
    assert "a world player is one of: random, noop, scripted:MODULE:FUNCTION" in str(caught.value)


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_any_text_is_a_checked_spec_or_a_spec_error(text: str) -> None:
    try:
        spec = check_world_player(text)
    except WorldPlayerSpecError:
        return
    assert spec.kind in world_player_kinds()


@pytest.mark.parametrize(
    "spec",
    ["scripted:mod:f", "model:runs/m.zip", "openai:gpt-4o-mini?timeout=5", "hf:runs/m?seed=1"],
)
def test_a_server_makes_only_the_served_kinds(spec: str) -> None:
    assert world_player_kinds(served=True) == ["random", "noop"]
    check_world_player(spec)  # a fine spec ...
    refused = r"a server does not make .* \(it makes: random, noop\)"
    with pytest.raises(WorldPlayerSpecError, match=refused):
        check_world_player(spec, served=True)  # ... that a server refuses
    with pytest.raises(WorldPlayerSpecError, match="a server does not make"):
        make_world_player(spec, world("forage"), served=True)
    assert make_world_player("random", world("forage"), served=True).name == "random"


def test_registered_kinds_get_their_spec_and_world_and_can_be_served() -> None:
    made: list[tuple[str | None, str]] = []

    def factory(spec: Any, config: SimulationConfig) -> WorldPlayer:
        made.append((spec.argument, config.simulation.name))
        return NoopPlayer(config)

    register_world_player("lazy", factory)
    try:
        player = make_world_player("lazy:3", world("forage"), served=True)
        assert made == [("3", "forage")] and player.name == "lazy:3"
        assert "lazy" in world_player_kinds(served=True)
        with pytest.raises(ValueError, match="built-in"):
            register_world_player("random", factory)
    finally:
        unregister_world_player("lazy")
    with pytest.raises(WorldPlayerSpecError, match="unknown player 'lazy'"):
        check_world_player("lazy")


def test_objects_are_players_too() -> None:
    config = world("forage")
    player = NoopPlayer(config)
    assert make_world_player(player, config) is player
    with pytest.raises(WorldPlayerSpecError, match="cannot make a world player of a int"):
        make_world_player(3, config)  # type: ignore[arg-type]


# -- model: ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forage_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from multiagent import parallel_env
    from multiagent.wrappers import FlattenForSB3, SingleAgentEnv

    env = FlattenForSB3(SingleAgentEnv(parallel_env("forage", observability=True), "Forager_1"))
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(128)
    path = tmp_path_factory.mktemp("model") / "forage.zip"
    model.save(path)
    return path


def test_a_model_plays_as_its_predictions_mapped_back(forage_model: Path) -> None:
    from stable_baselines3 import PPO

    from multiagent import parallel_env
    from multiagent.wrappers import FlattenForSB3, SingleAgentEnv

    config = world("forage")
    model = PPO.load(forage_model, device="cpu")
    flat = FlattenForSB3(SingleAgentEnv(parallel_env(config, observability=True), "Forager_1"))
    definition = VariableDefinition(type="object", schema_=config.actions)
    player = make_world_player(f"model:{forage_model}", config)
    checked = 0

    class Both(WorldPlayer):
        def act(self, turn: SeatTurn) -> dict[str, Any]:
            nonlocal checked
            action = player.act(turn)
            expected, _ = model.predict(flat.observation(turn.observation), deterministic=True)
            assert action == from_space_value(definition, flat.action(expected))
            checked += 1
            return action

    players: dict[str, WorldPlayer] = {seat: NoopPlayer(config) for seat in config.agent_names}
    players["Forager_1"] = Both()
    outcome = play_episode(config, players, seed=2, max_turns=40)
    assert checked == 40 and outcome.invalid_actions["Forager_1"] == 0


def test_a_model_refuses_a_seat_or_world_it_was_not_trained_on(forage_model: Path) -> None:
    forage, trade = world("forage"), world("trade")
    players: dict[str, WorldPlayer] = {seat: NoopPlayer(forage) for seat in forage.agent_names}
    players["Forager_2"] = make_world_player(f"model:{forage_model}", forage)
    with pytest.raises(WorldPlayerSpecError, match=r"the seat has \['others/Forager_1/_visible'"):
        play_episode(forage, players, seed=0, max_turns=1)
    with pytest.raises(WorldPlayerSpecError, match="seat Trader_1's flattened observation"):
        play_episode(trade, everyone(trade, f"model:{forage_model}"), seed=0, max_turns=1)


def test_a_model_refuses_full_observability(forage_model: Path) -> None:
    config = world("forage")
    players = everyone(config, f"model:{forage_model}")
    with pytest.raises(WorldPlayerSpecError, match="not in the space the model was trained on"):
        play_episode(config, players, seed=0, max_turns=1, observability="full")


def test_a_missing_model_file_is_named() -> None:
    players = everyone(world("forage"), "model:no/such/model.zip")
    with pytest.raises(FileNotFoundError, match=r"no saved model at 'no/such/model\.zip'"):
        play_episode(world("forage"), players, seed=0, max_turns=1)


# -- openai: ---------------------------------------------------------------------------------


def llm_player(server: ChatServer, config: SimulationConfig, options: str = "") -> LLMWorldPlayer:
    spec = f"openai:test-model?base_url={server.base_url}&api_key_env=POLYARENA_TEST_NO_KEY"
    player = make_world_player(spec + options, config)
    assert isinstance(player, LLMWorldPlayer) and player.calls_endpoint
    return player


def test_an_llm_seat_is_shown_its_envelope_and_its_invalid_answers_are_fed_back() -> None:
    config = world("forage")
    script = ['{"move": "north"}', WithUsage('{"move": "up"}', 40, 5)]
    with ChatServer(script) as server:
        player = llm_player(server, config)
        players: dict[str, WorldPlayer] = {seat: NoopPlayer(config) for seat in config.agent_names}
        players["Forager_1"] = player
        outcome = play_episode(config, players, seed=0, max_turns=1)
    assert outcome.invalid_actions["Forager_1"] == 0
    prompt = server.requests[0].json["messages"][1]["content"]
    assert prompt.startswith("Turn 0, observer Forager_1")
    assert "act(move [:enum" in prompt
    feedback = server.requests[1].json["messages"][-1]["content"]
    assert feedback.startswith("Your action was invalid:") and "north" in feedback
    decision = player.last_decision
    assert decision is not None and decision.valid and decision.action == {"move": "up"}
    assert player.decisions == [decision] and decision.requests == 2


def test_an_llm_seat_reads_why_the_env_refused_its_last_action() -> None:
    config = world("forage")
    with ChatServer([ToolCall({"move": "down"})]) as server:
        player = llm_player(server, config, "&tool_calling=true&max_tokens=64&retries=0")
        envelope_turn = _first_turn(config, "Forager_2")
        turn = SeatTurn(**{**envelope_turn.__dict__, "feedback": "actions[Forager_2]: too late"})
        assert player.act(turn) == {"move": "down"}
    body = server.requests[0].json
    assert body["messages"][1]["content"].startswith(
        "Your last action was refused: actions[Forager_2]: too late\nTurn 0, observer Forager_2"
    )
    assert body["max_tokens"] == 64 and body["tools"][0]["function"]["name"] == "act"
    assert player.agent.settings.max_self_corrections == 0


def _first_turn(config: SimulationConfig, seat: str) -> SeatTurn:
    turns: list[SeatTurn] = []

    def look(turn: SeatTurn) -> dict[str, Any]:
        turns.append(turn)
        return fallback_action(config)

    players = {name: make_world_player(look, config) for name in config.agent_names}
    play_episode(config, players, seed=0, max_turns=1)
    return next(turn for turn in turns if turn.agent == seat)
