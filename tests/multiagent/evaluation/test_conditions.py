"""Observability conditions change what the focal seats see, and only that: the background seats
see what the world configures, so a difference between conditions is the value of information to
the focal players."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent import load_config, parallel_env
from multiagent.config import GLOBAL_TARGET, SimulationConfig
from multiagent.evaluation.conditions import condition_config
from multiagent.observability import ObservabilityPlan
from multiagent.worlds import load_world

HARBOUR = Path(__file__).parents[1] / "data" / "message_world.yaml"
TRADE = load_world("trade")  # a matrix with unaware pairs, internal variables and noise


def views(config: SimulationConfig, observer: str) -> dict[str, tuple[str, float, tuple] | None]:
    plan = ObservabilityPlan(config)
    targets = [*config.agent_names, GLOBAL_TARGET]
    return {
        target: None if (view := plan.view(observer, target)) is None
        else (view.level.value, view.noise, view.variables)
        for target in targets
    }  # fmt: skip


@pytest.mark.parametrize(("observability", "scale"), [("full", 1.0), ("none", 1.0),
                                                      ("configured", 0.3)])  # fmt: skip
def test_background_seats_see_what_the_world_configures(observability: str, scale: float) -> None:
    focal = ["Trader_1", "Trader_3"]
    changed = condition_config(TRADE, observability, scale, focal=focal)
    for observer in TRADE.agent_names:
        if observer not in focal:
            assert views(changed, observer) == views(TRADE, observer)
        assert views(changed, observer)[observer] == views(TRADE, observer)[observer]  # itself


def test_full_makes_the_focal_seats_insiders_of_everything_without_noise() -> None:
    changed = condition_config(TRADE, "full", 1.0, focal=["Trader_1"])
    seen = views(changed, "Trader_1")
    assert all(view is not None and view[:2] == ("insider", 0.0) for view in seen.values())
    assert views(TRADE, "Trader_1")["Trader_4"] is None  # unaware in the configured matrix


def test_none_leaves_the_focal_seats_only_themselves_and_silences_others_to_them() -> None:
    world = load_config(HARBOUR)
    changed = condition_config(world, "none", 1.0, focal=["B"])
    assert [t for t, view in views(changed, "B").items() if view is not None] == ["B"]
    env = parallel_env(changed)
    env.reset(seed=0)
    said = {"take": 0, "leave": False, "talk": "hello"}
    _, _, _, _, infos = env.step(dict.fromkeys(env.agents, said))
    assert "messages" not in infos["B"]  # B is unaware of every speaker
    assert [m["sender"] for m in infos["D"]["messages"]] == ["A", "B", "C"]  # D still hears B


@settings(max_examples=60, deadline=None)
@given(scale=st.floats(min_value=0.0, max_value=8.0, allow_nan=False))
def test_a_noise_scale_multiplies_the_focal_noise_capped_at_one(scale: float) -> None:
    changed = condition_config(TRADE, "configured", scale, focal=["Trader_2"])
    before, after = views(TRADE, "Trader_2"), views(changed, "Trader_2")
    for target, view in before.items():
        if view is None or target == "Trader_2":
            assert after[target] == view
            continue
        level, noise, variables = view
        assert after[target] == (level, pytest.approx(min(1.0, noise * scale)), variables)


def test_a_world_without_observability_blinds_only_the_focal_seats() -> None:
    world = load_config({"simulation": {"name": "open", "max_turns": 3},
                         "agents": [{"name": "A"}, {"name": "B"}],
                         "engine": {"dynamics": None}})  # fmt: skip
    changed = condition_config(world, "none", 1.0, focal=["A"])
    assert views(changed, "A")["B"] is None
    assert views(changed, "B") == views(world, "B")


@pytest.mark.parametrize(
    ("observability", "scale", "message"),
    [("partial", 1.0, "observability must be one of configured, full, none"),
     ("configured", -0.5, "a noise scale is a finite number >= 0"),
     ("configured", float("inf"), "a noise scale is a finite number >= 0"),
     ("configured", float("nan"), "a noise scale is a finite number >= 0")],
)  # fmt: skip
def test_bad_conditions_are_refused(observability: str, scale: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        condition_config(TRADE, observability, scale, focal=["Trader_1"])
