"""The ``validate`` summary shows the sections an evaluation reads: channels, collapse and
scenarios (a world without them says none)."""

from __future__ import annotations

from multiagent import load_config
from multiagent.summary import WorldSummary, summarize
from multiagent.worlds import load_world


def test_scenarios_are_one_line_each() -> None:
    summary = summarize(load_world("forage"), "forage")
    walker = "scripted:multiagent.worlds.forage:walk_to_food"
    assert summary.scenarios == {
        "all_focal": f"focal Forager_1, Forager_2, Forager_3; tags self_play; baseline {walker}",
        "visitor": f"focal Forager_1; background forager=random; held out walkers; tags visitor; "
        f"baseline {walker}",
    }
    lines = summary.text().splitlines()
    assert "  scenarios:" in lines and any(line.startswith("    visitor: focal") for line in lines)
    assert WorldSummary.model_validate_json(summary.model_dump_json()) == summary


def test_collapse_and_the_empty_sections() -> None:
    config = load_config(
        {
            "simulation": {"name": "pond", "max_turns": 9},
            "engine": {"dynamics": None},
            "agents": [{"name": "A"}],
            "state_variables": {"global_vars": {"stock": {"type": "float", "default": 10.0}}},
            "collapse": {"variable": "stock", "below": 2.5},
        }
    )
    summary = summarize(config, "pond.yaml")
    assert summary.collapse == "stock below 2.5"
    assert (summary.channels, summary.scenarios) == ({}, {})
    lines = summary.text().splitlines()
    assert {"  collapse: stock below 2.5", "  channels: none", "  scenarios: none"} <= set(lines)
