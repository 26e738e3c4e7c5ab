"""The world page (/viewer/world.html) in headless Chromium: a recorded trade episode opens from a
file, two observers' views of the same turn differ as the log says (hidden greyed, noisy marked
with the true value), the heat map shows the matrix, and the slider, the arrow keys and the
buttons move between turns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from multiagent import parallel_env
from multiagent.recording import EpisodeLog, load_episode_log, save_episode_log

WAIT = 10  # seconds; every wait ends as soon as the page shows what it waits for
TURNS = 6


def record_trade(folder: Path) -> tuple[Path, EpisodeLog]:
    """A short trade episode with seeded random actions, recorded to ``folder/trade.json``."""
    env = parallel_env("trade", observability=True, record=folder / "trade.json")
    env.reset(seed=21)
    rng = np.random.default_rng(5)
    for _ in range(TURNS):
        actions = {}
        for agent in env.agents:
            env.action_space(agent).seed(int(rng.integers(2**31)))
            actions[agent] = env.action_space(agent).sample()
        env.step(actions)
    env.close()
    path = env.paths[-1]
    return path, load_episode_log(path)


def open_log(browser: Any, base: str, path: Path) -> None:
    browser.get(f"{base}/viewer/world.html")
    picker = WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "log-file"))
    picker.send_keys(str(path))
    at_turn(browser, 0)


def at_turn(browser: Any, turn: int) -> None:
    WebDriverWait(browser, WAIT).until(
        lambda d: d.find_element(By.ID, "episode").get_attribute("data-turn") == str(turn),
        message=f"the page did not reach turn {turn}",
    )


def view_cells(browser: Any) -> list[dict[str, Any]]:
    """Every observer's view cell on the page, with its data attributes (one round trip)."""
    return browser.execute_script(
        "return [...document.querySelectorAll('td.view')].map(td => ({...td.dataset}));"
    )


def cell(browser: Any, observer: str, target: str, variable: str) -> Any:
    return browser.find_element(
        By.CSS_SELECTOR,
        f'td.view[data-observer="{observer}"][data-target="{target}"][data-variable="{variable}"]',
    )


def expected_cells(log: EpisodeLog, index: int) -> dict[tuple[str, str, str], dict]:
    """What each view cell must say at ``turns[index]``, from the log alone."""
    turn = log.turns[index]
    expected = {}
    for view in log.cells:
        observed = turn.observations[view.observer]
        if view.target == "global":
            values, truth = observed.global_state or {}, turn.state.global_state
        else:
            values, truth = observed.agents.get(view.target, {}), turn.state.agents[view.target]
        for variable, mark in view.variables.items():
            entry: dict[str, Any] = {"state": mark}
            if mark != "hidden":
                entry["value"] = values[variable]
            if mark == "noisy":
                entry["true"] = truth[variable]
                entry["differs"] = values[variable] != truth[variable]
            expected[(view.observer, view.target, variable)] = entry
    return expected


def test_two_observers_see_the_same_turn_differently(
    browser: Any, served: str, screenshot: Callable[[str], Path], tmp_path: Path
) -> None:
    path, log = record_trade(tmp_path)
    open_log(browser, served, path)
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(3):
        body.send_keys(Keys.ARROW_RIGHT)
    at_turn(browser, 3)
    assert browser.find_element(By.ID, "turn").get_attribute("value") == "3"

    # Every view cell says what the log says: its mark, the value seen, the true value.
    expected = expected_cells(log, 3)
    shown = {(c["observer"], c["target"], c["variable"]): c for c in view_cells(browser)}
    assert shown.keys() == expected.keys()
    for key, want in expected.items():
        got = shown[key]
        assert got["state"] == want["state"], key
        if "value" in want:
            assert json.loads(got["value"]) == want["value"], key
        if "true" in want:
            assert json.loads(got["true"]) == want["true"], key
            assert got["differs"] == str(want["differs"]).lower(), key

    # Trader_4 seen by itself (insider, exact), by Trader_2 (external, 10% noise) and by
    # Trader_1 (unaware): three different views of the same turn.
    truth = log.turns[3].state.agents["Trader_4"]
    own = cell(browser, "Trader_4", "Trader_4", "economic_strength")
    outside = cell(browser, "Trader_2", "Trader_4", "economic_strength")
    unaware = cell(browser, "Trader_1", "Trader_4", "economic_strength")
    assert own.get_attribute("data-state") == "exact"
    assert json.loads(own.get_attribute("data-value")) == truth["economic_strength"]
    assert outside.get_attribute("data-state") == "noisy"
    assert outside.find_element(By.CLASS_NAME, "badge").text == "≈"
    assert outside.find_element(By.CLASS_NAME, "true").text.startswith("true")
    assert "true value" in outside.get_attribute("title")
    seen = log.turns[3].observations["Trader_2"].agents["Trader_4"]["economic_strength"]
    assert json.loads(outside.get_attribute("data-value")) == seen != truth["economic_strength"]
    assert unaware.get_attribute("data-state") == "hidden" and unaware.text == "hidden"
    internal = cell(browser, "Trader_2", "Trader_4", "gold")
    assert internal.get_attribute("data-state") == "hidden"
    assert cell(browser, "Trader_4", "Trader_4", "gold").get_attribute("data-state") == "exact"
    # Hidden is greyed (striped), noisy is tinted: the page shows the difference too.
    assert "gradient" in unaware.value_of_css_property("background-image")
    assert outside.value_of_css_property("background-color") != own.value_of_css_property(
        "background-color"
    )
    # The global state: Trader_1 is an insider, Trader_2 sees it from outside with noise.
    assert cell(browser, "Trader_1", "global", "capital").get_attribute("data-state") == "exact"
    assert cell(browser, "Trader_2", "global", "capital").get_attribute("data-state") == "hidden"
    assert cell(browser, "Trader_2", "global", "prices").get_attribute("data-state") == "noisy"

    # The heat map: observers by targets, coloured by level, with the noise.
    matrix = {
        (td.get_attribute("data-observer"), td.get_attribute("data-target")): td
        for td in browser.find_elements(By.CSS_SELECTOR, "#matrix td")
    }
    assert len(matrix) == len(log.agents) * (len(log.agents) + 1)
    for view in log.cells:
        td = matrix[(view.observer, view.target)]
        assert td.get_attribute("data-level") == view.level
        assert float(td.get_attribute("data-noise")) == view.noise
    colours = {
        level: matrix[key].value_of_css_property("background-color")
        for level, key in [
            ("insider", ("Trader_1", "Trader_1")),
            ("external", ("Trader_2", "Trader_4")),
            ("unaware", ("Trader_1", "Trader_4")),
        ]
    }
    assert len(set(colours.values())) == 3
    assert matrix[("Trader_2", "Trader_4")].text.splitlines() == ["external", "±10%"]
    screenshot("turn-3")
    # A heat map cell leads to its target's views (the page scrolls there).
    matrix[("Trader_2", "Trader_4")].click()
    section = browser.find_element(By.CSS_SELECTOR, 'section.target[data-target="Trader_4"]')
    WebDriverWait(browser, WAIT).until(
        lambda d: (
            d.execute_script("return arguments[0].getBoundingClientRect().top", section) < 200
        ),
        message="the heat map cell did not lead to Trader_4's views",
    )
    screenshot("views")

    # The slider steps (its own arrow keys), the buttons and End jump.
    slider = browser.find_element(By.ID, "turn")
    slider.send_keys(Keys.ARROW_RIGHT)
    at_turn(browser, 4)
    gold = browser.find_element(
        By.CSS_SELECTOR, 'td.truth[data-target="Trader_1"][data-variable="gold"]'
    )
    assert (
        json.loads(gold.get_attribute("data-value"))
        == log.turns[4].state.agents["Trader_1"]["gold"]
    )
    browser.find_element(By.ID, "prev").click()
    at_turn(browser, 3)
    slider.send_keys(Keys.END)
    at_turn(browser, TURNS)
    assert browser.find_element(By.ID, "next").get_attribute("disabled") == "true"
    last = {(c["observer"], c["target"], c["variable"]): c for c in view_cells(browser)}
    assert {k: v["state"] for k, v in last.items()} == {
        k: v["state"] for k, v in expected_cells(log, TURNS).items()
    }
    assert page_errors(browser) == []


def test_a_gzipped_log_opens(browser: Any, served: str, tmp_path: Path) -> None:
    _, log = record_trade(tmp_path)
    packed = save_episode_log(log, tmp_path / "trade.json.gz")
    open_log(browser, served, packed)
    assert browser.find_element(By.ID, "summary").text.startswith("trade · seed 21")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
    at_turn(browser, TURNS)
    assert page_errors(browser) == []


def test_a_file_that_is_not_a_log_is_refused_with_a_reason(
    browser: Any, served: str, tmp_path: Path
) -> None:
    path = tmp_path / "game.json"
    path.write_text(json.dumps({"schema_version": 1, "world": "trade", "agents": ["A"]}))
    browser.get(f"{served}/viewer/world.html")
    picker = WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "log-file"))
    picker.send_keys(str(path))
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, WAIT).until(lambda d: error.is_displayed())
    assert "game.json" in error.text and "agent_variables: expected a list" in error.text
    assert browser.find_element(By.ID, "episode").get_attribute("hidden") == "true"


def page_errors(browser: Any) -> list[str]:
    """The console's errors since the last call (a refused script or style shows here), but a
    missing favicon, which is the server's business."""
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if entry["level"] == "SEVERE" and "favicon.ico" not in entry["message"]
    ]


@pytest.fixture(autouse=True)
def _no_leftover_page(browser: Any) -> None:
    """Each test starts on a blank page with an empty console (the session shares one browser)."""
    browser.get("about:blank")
    browser.get_log("browser")
