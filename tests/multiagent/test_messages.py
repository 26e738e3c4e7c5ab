"""Messages: the channels section, who hears what (the observability rule), next-turn delivery,
bad messages refused with their path and no trace, the LLM signature, the RL space unchanged,
the observation envelope and the episode log.

The world is ``data/message_world.yaml``: four fishers A-D, C unaware of A, everyone else aware
of everyone (externally), channels ``talk`` (broadcast) and ``whisper`` (direct), 40 characters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import yaml
from pettingzoo.test import parallel_api_test

from envkit.schema import render, to_json_schema, validate
from multiagent import WorldEnv, load_config
from multiagent.config import SimulationConfig
from multiagent.dto import Message, ObservationEnvelope
from multiagent.errors import WorldConfigError
from multiagent.recording import EpisodeLog, load_episode_log, save_episode_log
from multiagent.signatures import action_signature
from multiagent.summary import summarize
from multiagent.wrappers import TextObservationWrapper

WORLD = Path(__file__).resolve().parent / "data" / "message_world.yaml"


def act(take: int = 0, **messages: Any) -> dict[str, Any]:
    """An action taking ``take`` fish, with ``messages`` by channel."""
    return {"take": take, "leave": False, **messages}


STILL = act()


@pytest.fixture(scope="module")
def config() -> SimulationConfig:
    return load_config(WORLD)


def world_data() -> dict[str, Any]:
    return yaml.safe_load(WORLD.read_text(encoding="utf-8"))


def fresh(config: SimulationConfig, **kwargs: Any) -> WorldEnv:
    env = WorldEnv(config, **kwargs)
    env.reset(seed=0)
    return env


def quiet(env: WorldEnv, **overrides: Any) -> dict[str, Any]:
    """Every live agent stays still, except those given."""
    return {agent: overrides.get(agent, STILL) for agent in env.agents}


def heard(infos: dict[str, dict[str, Any]]) -> dict[str, list[tuple[str, str, str]]]:
    """{recipient: [(sender, channel, text)]} for the agents that heard anything."""
    return {
        agent: [(m["sender"], m["channel"], m["text"]) for m in info["messages"]]
        for agent, info in infos.items()
        if "messages" in info
    }


# -- who hears what ----------------------------------------------------------------------------


def test_a_broadcast_reaches_every_other_agent_aware_of_the_sender(
    config: SimulationConfig,
) -> None:
    env = fresh(config)
    *_, infos = env.step(quiet(env, A=act(1, talk="hello"), B=act(talk="hey")))
    assert heard(infos) == {
        "A": [("B", "talk", "hey")],
        "B": [("A", "talk", "hello")],
        "C": [("B", "talk", "hey")],  # C is unaware of A: it hears B only
        "D": [("A", "talk", "hello"), ("B", "talk", "hey")],
    }
    assert [(m.sender, m.recipients) for m in env.messages_sent] == [
        ("A", ["B", "D"]),
        ("B", ["A", "C", "D"]),
    ]


def test_a_direct_message_reaches_its_addressee_only_if_aware_of_the_sender(
    config: SimulationConfig,
) -> None:
    env = fresh(config)
    *_, infos = env.step(
        quiet(
            env,
            A=act(whisper={"to": "C", "text": "psst"}),  # C cannot hear A
            B=act(whisper={"to": "A", "text": "meet me"}),
        )
    )
    assert heard(infos) == {"A": [("B", "whisper", "meet me")]}
    assert [(m.sender, m.to, m.recipients) for m in env.messages_sent] == [
        ("A", "C", []),
        ("B", "A", ["A"]),
    ]


def test_without_observability_everyone_else_hears(tmp_path: Path) -> None:
    data = world_data()
    del data["observability"]
    path = tmp_path / "open.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    env = fresh(load_config(Path(path)))
    *_, infos = env.step(quiet(env, A=act(talk="all hear")))
    assert set(heard(infos)) == {"B", "C", "D"}


def test_messages_arrive_with_the_next_turn_once(config: SimulationConfig) -> None:
    env = fresh(config)
    assert env.messages_sent == []
    *_, infos = env.step(quiet(env, B=act(talk="turn zero")))
    assert infos["A"]["messages"] == [
        {"turn": 0, "sender": "B", "channel": "talk", "text": "turn zero"}
    ]
    assert env.world is not None and env.world.turn == 1
    *_, infos = env.step(quiet(env, B=act(talk="turn one")))
    assert [m["turn"] for m in infos["A"]["messages"]] == [1]
    *_, infos = env.step(quiet(env))
    assert heard(infos) == {} and env.messages_sent == []


def test_finished_agents_neither_hear_nor_speak(config: SimulationConfig) -> None:
    env = fresh(config)
    *_, infos = env.step(quiet(env, D={"take": 0, "leave": True}, B=act(talk="bye D")))
    assert infos["D"]["messages"][0]["text"] == "bye D"  # its last infos still carry it
    assert "D" not in env.agents
    *_, infos = env.step(quiet(env, B=act(talk="D gone", whisper={"to": "D", "text": "hi"})))
    assert set(heard(infos)) == {"A", "C"}
    assert [m.recipients for m in env.messages_sent] == [["A", "C"], []]
    # An action sent for a finished agent is ignored, its messages too.
    *_, infos = env.step({**quiet(env), "D": act(talk="ghost")})
    assert heard(infos) == {}


def test_silence_is_none_or_an_empty_text(config: SimulationConfig) -> None:
    env = fresh(config)
    *_, infos = env.step(quiet(env, A=act(talk=None, whisper={"to": "B", "text": ""})))
    assert heard(infos) == {} and env.messages_sent == [] and "action_error" not in infos["A"]


# -- bad messages ---------------------------------------------------------------------------------


BAD = [
    ({"talk": 5}, "actions[A].talk: a message is a string, got int"),
    ({"talk": "x" * 41}, "actions[A].talk: 41 characters, longer than the channel's max_length 40"),
    ({"whisper": "B"}, "actions[A].whisper: a direct message is"),
    ({"whisper": {"to": "Z", "text": "hi"}}, "actions[A].whisper.to: 'Z' is not an agent"),
    ({"whisper": {"to": "A", "text": "hi"}}, "actions[A].whisper.to: 'A' is the sender"),
    ({"whisper": {"to": "B"}}, "actions[A].whisper.text: missing"),
    ({"whisper": {"to": "B", "text": "hi", "cc": "C"}}, "actions[A].whisper.cc: unknown key"),
    ({"whisper": {"to": "B", "text": ["hi"]}}, "actions[A].whisper.text: a message is a string"),
]


@pytest.mark.parametrize(("message", "error"), BAD, ids=[e.split(":")[1] for _, e in BAD])
def test_a_bad_message_refuses_the_action_as_a_bad_field_does(
    config: SimulationConfig, message: dict[str, Any], error: str
) -> None:
    refused, bad = fresh(config), fresh(config)
    expected = refused.step(quiet(refused, A=act(7), B=act(2)))  # take: out of range
    got = bad.step(quiet(bad, A={**act(3, talk="lost"), **message}, B=act(2)))
    assert got[4]["A"]["action_error"].startswith(error)
    assert bad.world == refused.world and got[1] == expected[1]  # A took nothing
    assert all("messages" not in info for info in got[4].values())  # A's other message is lost
    assert bad.messages_sent == []


@pytest.mark.parametrize(("message", "error"), BAD[:2])
def test_a_bad_message_raises_with_raise_and_leaves_the_world(
    config: SimulationConfig, message: dict[str, Any], error: str
) -> None:
    env = fresh(config, invalid_action="raise")
    before = env.world
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("]", r"\]")):
        env.step(quiet(env, A=act(1, **message)))
    assert env.world == before and env.messages_sent == []


def test_space_elements_carry_messages_too(config: SimulationConfig) -> None:
    env = fresh(config)
    space = env.action_space("A")
    space.seed(3)
    element = space.sample()
    assert env.decode_action("A", {**element, "talk": "sampled"}) == env.decode_action("A", element)
    *_, infos = env.step(quiet(env, A={**element, "talk": "sampled"}))
    assert infos["B"]["messages"][0]["text"] == "sampled" and "action_error" not in infos["A"]


# -- the config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("channels", "error"),
    [
        ({"take": {"kind": "broadcast"}}, "channels.take: 'take' is already an action field"),
        (
            {"say-it": {"kind": "broadcast"}},
            "channels.say-it: a channel name must be an identifier",
        ),
        ({"talk": {"kind": "shout"}}, "channels.talk.kind: 'shout' is not one of"),
        ({"talk": {"kind": "direct", "max_length": 0}}, "channels.talk.max_length: "),
        ({"talk": {"kind": "direct", "loud": True}}, "channels.talk.loud: unknown key"),
    ],
)
def test_bad_channels_are_refused_with_their_path(channels: dict[str, Any], error: str) -> None:
    data = {**world_data(), "channels": channels}
    with pytest.raises(WorldConfigError) as caught:
        load_config(data)
    assert any(line.startswith(error) for line in str(caught.value).splitlines()), caught.value


def test_validate_summary_lists_the_channels(config: SimulationConfig) -> None:
    summary = summarize(config, str(WORLD))
    assert summary.channels == {
        "talk": "broadcast, up to 40 characters",
        "whisper": "direct, up to 40 characters",
    }
    lines = summary.text().splitlines()
    assert "  channels:" in lines and "    talk: broadcast, up to 40 characters" in lines


# -- what LLM agents see, what RL agents see ---------------------------------------------------


def test_the_signature_lists_channels_as_optional_and_validates_them(
    config: SimulationConfig,
) -> None:
    assert render(action_signature(config.actions), name="act") == (
        "act(take [:and :int [:>= 0.0] [:<= 3.0]], leave :boolean) -> :any"
    )
    signature = action_signature(config.actions, config.channels, agents=config.agent_names)
    base = act(1)
    good = [
        base,
        {**base, "talk": "x" * 40, "whisper": {"to": "B", "text": "line\nbreak"}},
        {**base, "talk": None, "whisper": None},  # what strict tool calls send for "nothing"
    ]
    for action in good:
        assert validate(signature, action).ok, action
        fresh(config).decode_turn("A", action)  # the env accepts it too
    for action, path in [
        ({**base, "talk": "x" * 41}, "talk"),
        ({**base, "talk": "x" * 40 + "\n"}, "talk"),
        ({**base, "talk": 5}, "talk"),
        ({**base, "whisper": {"to": "Z", "text": "hi"}}, "whisper.to"),
        ({**base, "whisper": {"to": "B"}}, "whisper.text"),
    ]:
        result = validate(signature, action)
        assert not result.ok and {issue.path for issue in result.errors} == {path}, action
        with pytest.raises(ValueError, match=path.replace(".", r"\.")):
            fresh(config).decode_turn("A", action)


def test_the_signature_is_valid_json_schema_bounding_the_texts(config: SimulationConfig) -> None:
    signature = action_signature(config.actions, config.channels, agents=config.agent_names)
    for flavor in ("plain", "anthropic", "openai-strict"):
        jsonschema.Draft202012Validator.check_schema(to_json_schema(signature, flavor=flavor))
    checker = jsonschema.Draft202012Validator(to_json_schema(signature, flavor="plain"))
    base = act(1)
    assert checker.is_valid({**base, "talk": "x" * 40, "whisper": {"to": "B", "text": "a\nb"}})
    assert not checker.is_valid({**base, "talk": "x" * 41})
    assert not checker.is_valid({**base, "whisper": {"to": "Z", "text": "hi"}})


def test_the_rl_api_and_spaces_are_those_of_the_world_without_channels(
    config: SimulationConfig,
) -> None:
    silent = load_config({key: value for key, value in world_data().items() if key != "channels"}
                         | {"engine": {"dynamics": "message_rules:step"}})  # fmt: skip
    talking, plain = WorldEnv(config), WorldEnv(silent)
    for agent in config.agent_names:
        assert talking.action_space(agent) == plain.action_space(agent)
        assert talking.observation_space(agent) == plain.observation_space(agent)
    parallel_api_test(WorldEnv(config), num_cycles=10)


def test_the_text_view_shows_what_was_heard_at_the_last_step(config: SimulationConfig) -> None:
    env = TextObservationWrapper(WorldEnv(config), format="json")
    env.reset(seed=0)
    observations, *_ = env.step(
        {
            "A": act(talk="hi all"),
            "B": act(whisper={"to": "A", "text": "x"}),
            "C": STILL,
            "D": STILL,
        }
    )
    envelopes = {a: ObservationEnvelope.model_validate_json(o) for a, o in observations.items()}
    assert [(m.sender, m.text) for m in envelopes["A"].messages] == [("B", "x")]
    assert [(m.sender, m.text) for m in envelopes["D"].messages] == [("A", "hi all")]
    assert envelopes["C"].messages == []
    observations, *_ = env.step(dict.fromkeys(env.agents, STILL))
    assert all('"messages":[]' in text for text in observations.values())


def test_the_envelope_round_trips_and_renders_messages() -> None:
    messages = [Message(turn=3, sender="Fisher_2", channel="talk", text="low\nstock"),
                Message(turn=3, sender="Fisher_3", channel="whisper", text="ok")]  # fmt: skip
    envelope = ObservationEnvelope(turn=4, observer="Fisher_1", messages=messages)
    assert ObservationEnvelope.model_validate_json(envelope.to_json()) == envelope
    assert envelope.to_text().splitlines()[-3:] == [
        "Messages:",
        "- turn 3, Fisher_2 (talk): low stock",
        "- turn 3, Fisher_3 (whisper): ok",
    ]
    old = json.loads(envelope.to_json())
    del old["messages"]  # an envelope stored before messages existed
    assert ObservationEnvelope.model_validate(old).messages == []


# -- the episode log ---------------------------------------------------------------------------


def test_the_log_keeps_every_message_and_round_trips(
    config: SimulationConfig, tmp_path: Path
) -> None:
    env = WorldEnv(config, record=True)
    env.reset(seed=0)
    env.step(quiet(env, A=act(1, talk="one"), B=act(whisper={"to": "C", "text": "two"})))
    env.step(quiet(env, C=act(talk="three")))
    log = env.episode_log
    assert log is not None
    assert [
        (m.turn, m.sender, m.channel, m.to, m.recipients, m.text)
        for turn in log.turns
        for m in turn.messages
    ] == [
        (0, "A", "talk", None, ["B", "D"], "one"),
        (0, "B", "whisper", "C", ["C"], "two"),
        (1, "C", "talk", None, ["A", "B", "D"], "three"),
    ]
    assert all("messages" not in info for turn in log.turns for info in turn.infos.values())
    path = save_episode_log(log, tmp_path / "harbour.json.gz")
    assert load_episode_log(path) == log
    old = json.loads(log.model_dump_json())
    for turn in old["turns"]:
        del turn["messages"]  # a log written before messages existed
    assert all(turn.messages == [] for turn in EpisodeLog.model_validate(old).turns)


def test_a_log_naming_a_stranger_in_a_message_does_not_load(config: SimulationConfig) -> None:
    env = WorldEnv(config, record=True)
    env.reset(seed=0)
    env.step(quiet(env, A=act(talk="hi")))
    assert env.episode_log is not None
    data = json.loads(env.episode_log.model_dump_json())
    data["turns"][0]["messages"][0]["recipients"].append("Z")
    with pytest.raises(ValueError, match=r"turns\[0\]\.messages\[0\]: 'Z' is not an agent"):
        EpisodeLog.model_validate(data)


def test_same_seed_same_messages_and_log(config: SimulationConfig) -> None:
    def run() -> str:
        env = WorldEnv(config, record=True)
        env.reset(seed=5)
        rng = np.random.default_rng(0)
        while env.agents:
            env.step({a: act(int(rng.integers(4)), talk=f"{a} says {rng.integers(99)}")
                      for a in env.agents})  # fmt: skip
        assert env.episode_log is not None
        return env.episode_log.model_dump_json()

    assert run() == run()
