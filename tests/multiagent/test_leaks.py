"""The leak check: a scripted leak is flagged with the variable's path, what the recipient may see
is not, and the matching rule (whole words, whole numeric tokens, no booleans or one-character
values) holds, for random texts too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent import WorldEnv, load_config
from multiagent.config import SimulationConfig
from multiagent.leaks import Leak, find_leaks, find_leaks_in_log
from multiagent.recording import TurnRecord

WORLD = Path(__file__).resolve().parent / "data" / "message_world.yaml"
# X sees Y externally: every variable but ``spot`` is internal, so hidden from X.
TINY: dict[str, Any] = {
    "simulation": {"name": "tiny", "max_turns": 3},
    "engine": {"dynamics": None},
    "agents": [{"name": "X"}, {"name": "Y"}],
    "state_variables": {
        "agent_vars": {
            "flag": {"type": "bool", "default": False},
            "n": {"type": "int", "default": 0},
            "x": {"type": "float", "default": 0.0},
            "word": {"type": "str", "default": ""},
            "spot": {"type": "int", "default": 0},
            "pair": {"type": "tuple", "item_types": ["int", "str"], "default": [0, ""]},
        },
    },
    "observability": {
        "variable_visibility": {"internal": ["flag", "n", "x", "word", "pair"]},
        "default": {"level": "external"},
    },
}


@pytest.fixture(scope="module")
def config() -> SimulationConfig:
    return load_config(WORLD)


@pytest.fixture(scope="module")
def tiny() -> SimulationConfig:
    return load_config(TINY)


def said(text: str, y: dict[str, Any], x: dict[str, Any] | None = None) -> list[TurnRecord]:
    """One turn where X and Y hold the given values and Y tells X ``text``."""
    base = {"flag": False, "n": 0, "x": 0.0, "word": "", "spot": 0, "pair": [0, ""]}
    return [
        TurnRecord.model_validate(
            {
                "turn": 2,
                "observations": {},
                "state": {
                    "agents": {"X": {**base, **(x or {})}, "Y": {**base, **y}},
                    "global_state": {},
                },
                "messages": [
                    {
                        "turn": 2,
                        "sender": "Y",
                        "channel": "talk",
                        "text": text,
                        "recipients": ["X"],
                    }
                ],
            }
        )
    ]


def flagged(tiny: SimulationConfig, text: str, y: dict[str, Any], **x: Any) -> list[str]:
    return [leak.variable for leak in find_leaks(tiny, said(text, y, x))]


# -- a scripted episode ------------------------------------------------------------------------


def test_a_scripted_whisper_of_a_hidden_value_is_flagged_with_its_path(
    config: SimulationConfig,
) -> None:
    env = WorldEnv(config, record=True)
    env.reset(seed=0)
    still = {"take": 0, "leave": False}
    env.step(
        {
            # A is an insider of B and passes on B's gold and secret to D, who sees B externally.
            "A": {**still, "whisper": {"to": "D", "text": "B holds 17 gold: marlin."}},
            # B's own values, told to B: B sees them, so this is no leak.
            "B": {**still, "talk": "stock 100"},
            "C": {**still, "whisper": {"to": "B", "text": "mood is 0.25"}},
            "D": still,
        }
    )
    env.step({agent: {**still, "whisper": {"to": "B", "text": "you: 17, marlin"}}
              for agent in ("A",)} | {a: still for a in ("B", "C", "D")})  # fmt: skip
    assert env.episode_log is not None
    leaks = find_leaks_in_log(env.episode_log, config)
    assert leaks == [
        Leak(0, "A", "D", "whisper", "agents.B.gold", 17, "B holds 17 gold: marlin."),
        Leak(0, "A", "D", "whisper", "agents.B.secret", "marlin", "B holds 17 gold: marlin."),
        Leak(0, "C", "B", "whisper", "global.mood", 0.25, "mood is 0.25"),
    ]
    # The ground-truth log's own matrix shows everyone everything: nothing is hidden there.
    assert find_leaks_in_log(env.episode_log) == []


def test_a_log_of_another_world_is_refused(
    config: SimulationConfig, tiny: SimulationConfig
) -> None:
    env = WorldEnv(config, record=True)
    env.reset(seed=0)
    assert env.episode_log is not None
    with pytest.raises(ValueError, match="the log is of config"):
        find_leaks_in_log(env.episode_log, tiny)


# -- the matching rule -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("it is marlin!", {"word": "marlin"}, ["agents.Y.word"]),
        ("marlins and Marlin", {"word": "marlin"}, []),  # whole words, case-sensitive
        ("I have 42.", {"n": 42}, ["agents.Y.n"]),
        ("420 or 4.2 or Y_42 or 42e", {"n": 42}, []),  # whole numeric tokens only
        ("down to -42", {"n": -42}, ["agents.Y.n"]),
        ("about 12 units", {"x": 12.0}, ["agents.Y.x"]),  # f"{value:g}"
        ("exactly 0.125", {"x": 0.125}, ["agents.Y.x"]),  # repr(value)
        ("0.1250 or 0.12", {"x": 0.125}, []),
        ("True, true, yes", {"flag": True}, []),  # booleans never
        ("7 and a", {"n": 7, "word": "a"}, []),  # shorter than 2 characters never
        ("first 33 then ox", {"pair": [33, "ox"]}, ["agents.Y.pair[0]", "agents.Y.pair[1]"]),
        ("spot 55", {"spot": 55}, []),  # external: X sees it
    ],
)
def test_matching_rule(tiny: SimulationConfig, text: str, values: dict, expected: list) -> None:
    assert flagged(tiny, text, values) == expected


def test_a_value_the_recipient_sees_exactly_itself_is_no_leak(tiny: SimulationConfig) -> None:
    assert flagged(tiny, "I have 42", {"n": 42}, n=42) == []  # X's own n is 42 too
    assert flagged(tiny, "I have 42", {"n": 42}, spot=42) == []  # and so is Y's spot...
    assert flagged(tiny, "I have 42", {"n": 42, "spot": 42}) == []  # ...which X sees
    assert flagged(tiny, "I have 42", {"n": 42}, x=42.0) == []  # 42.0 reads as 42 too


def test_the_leak_names_the_excerpt_around_the_value(tiny: SimulationConfig) -> None:
    text = "a" * 50 + " secret 4242 " + "b" * 50
    [leak] = find_leaks(tiny, said(text, {"n": 4242}))
    assert leak.excerpt == "..." + "a" * 22 + " secret 4242 " + "b" * 29 + "..."
    assert (leak.turn, leak.sender, leak.recipient, leak.channel) == (2, "Y", "X", "talk")


NO_DIGITS = st.text().map(lambda text: "".join(c for c in text if not c.isdigit()))


@settings(max_examples=200, deadline=None)
@given(
    text=NO_DIGITS,
    n=st.integers(-(10**9), 10**9),
    x=st.floats(allow_nan=False, allow_infinity=False, width=64),
)
def test_texts_without_digits_never_flag_numbers(
    tiny: SimulationConfig, text: str, n: int, x: float
) -> None:
    assert flagged(tiny, text, {"n": n, "x": x}) == []


@settings(max_examples=200, deadline=None)
@given(prefix=NO_DIGITS, n=st.integers(10, 10**9), suffix=NO_DIGITS)
def test_a_spaced_number_is_always_flagged(
    tiny: SimulationConfig, prefix: str, n: int, suffix: str
) -> None:
    assert flagged(tiny, f"{prefix} {n} {suffix}", {"n": n}) == ["agents.Y.n"]
