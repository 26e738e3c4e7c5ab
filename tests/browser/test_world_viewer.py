"""The world page (/viewer/world.html) in headless Chromium: a recorded trade episode opens from a
file, two observers' views of the same turn differ as the log says (hidden greyed, noisy marked
with the true value), the heat map shows the matrix, and the slider, the arrow keys and the
buttons move between turns. An evaluation's log (``python -m multiagent eval`` against a scripted
chat endpoint) shows its messages as a timeline and each LLM decision's prompt, answers and
refusals, LLM text always as text; a log written before messages and decisions existed still opens.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from multiagent import parallel_env
from multiagent.evaluation import evaluate
from multiagent.evaluation.records import EpisodeRecord
from multiagent.recording import EpisodeLog, load_episode_log, save_episode_log

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from chat_server import ChatServer, WithUsage

HARBOUR = Path(__file__).parents[1] / "multiagent" / "data"
IMG = "<img src=x onerror=window.pwned=1>"
SCRIPT = "<script>window.pwned=2</script>"
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


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EpisodeLog]:
    """One episode of ``python -m multiagent eval`` on the harbour world (message_world.yaml), A
    an LLM seat answering from a script and the others noop: on turn 0 prose is refused then a
    broadcast carrying markup is accepted, on turn 1 a whisper carrying a script, with token
    counts, on turn 2 an out-of-range take refused then corrected; then the random baseline's
    episode. Returns the LLM episode's log path (as episodes.jsonl names it) and its log."""
    folder = tmp_path_factory.mktemp("eval")
    world = yaml.safe_load((HARBOUR / "message_world.yaml").read_text())
    world["scenarios"] = {
        "talker": {"focal": ["A"], "background": {"fisher": "noop"}, "tags": ["visitor"],
                   "episode_length": 3}
    }  # fmt: skip
    (folder / "harbour.yaml").write_text(yaml.safe_dump(world))
    shutil.copy(HARBOUR / "message_rules.py", folder / "message_rules.py")
    script = [
        "I think I will fish.",
        json.dumps({"take": 1, "leave": False, "talk": IMG}),
        WithUsage(
            json.dumps({"take": 2, "leave": False, "whisper": {"to": "D", "text": SCRIPT}}), 60, 12
        ),
        json.dumps({"take": 9, "leave": False}),
        json.dumps({"take": 1, "leave": False, "talk": "bye"}),
    ]
    with ChatServer(script) as server:
        player = f"openai:test-model?base_url={server.base_url}&api_key_env=NO_SUCH_KEY&retries=1"
        evaluate(folder / "harbour.yaml", focal=[player], episodes=1, baselines=True,
                 out=folder / "run", progress=False)  # fmt: skip
    line = (folder / "run" / "episodes.jsonl").read_text().splitlines()[0]
    path = folder / "run" / str(EpisodeRecord.model_validate_json(line).log)
    return path, load_episode_log(path)


def shown_messages(browser: Any) -> list[dict[str, Any]]:
    return browser.execute_script(
        "return [...document.querySelectorAll('#messages li')].map(li => "
        "({...li.dataset, text: li.querySelector('.text').textContent, who: "
        "li.querySelector('.who').textContent}));"
    )


def decision_section(browser: Any, agent: str) -> Any:
    return browser.find_element(By.CSS_SELECTOR, f'section[data-decision-agent="{agent}"]')


def opened(section: Any, part: str) -> Any:
    """The ``part`` details of a decision, checked closed, then opened by a click."""
    details = section.find_element(By.CSS_SELECTOR, f'details[data-part="{part}"]')
    assert details.get_attribute("open") is None, f"{part} is not collapsed by default"
    details.find_element(By.TAG_NAME, "summary").click()
    assert details.get_attribute("open") == "true"
    return details


def test_an_eval_log_shows_the_messages_timeline_and_jumps_to_a_message_turn(
    browser: Any, served: str, eval_run: tuple[Path, EpisodeLog], screenshot: Callable[[str], Path]
) -> None:
    path, log = eval_run
    assert path.name.endswith(".json.gz")
    open_log(browser, served, path)
    players = browser.find_elements(By.CSS_SELECTOR, "#players li")
    assert {li.get_attribute("data-seat"): li.get_attribute("data-player") for li in players} == (
        log.players
    )
    assert log.players["B"] == "noop" and log.players["A"].startswith("openai:test-model")

    # Every message of the episode, in turn order, as the log has it.
    sent = [message for turn in log.turns for message in turn.messages]
    assert [(m.turn, m.channel, m.to) for m in sent] == [
        (0, "talk", None),
        (1, "whisper", "D"),
        (2, "talk", None),
    ]
    shown = shown_messages(browser)
    assert [
        (int(m["messageTurn"]), m["sender"], m["channel"], m.get("to"), json.loads(m["recipients"]),
         m["text"])
        for m in shown
    ] == [(m.turn, m.sender, m.channel, m.to, m.recipients, m.text) for m in sent]  # fmt: skip
    # The broadcast lists who actually heard it: C is unaware of A, so it did not.
    assert sent[0].recipients == ["B", "D"]
    assert shown[0]["who"] == "A → all who hear: B, D"
    assert shown[1]["who"] == "A → D"
    assert [m["current"] for m in shown] == ["true", "false", "false"]

    # A click on a message shows its turn, and that turn's messages are highlighted.
    browser.find_elements(By.CSS_SELECTOR, "#messages li")[1].click()
    at_turn(browser, 1)
    assert [m["current"] for m in shown_messages(browser)] == ["false", "true", "false"]
    current = browser.find_element(By.CSS_SELECTOR, '#messages li[data-current="true"]')
    other = browser.find_element(By.CSS_SELECTOR, '#messages li[data-current="false"]')
    assert current.value_of_css_property("background-color") != other.value_of_css_property(
        "background-color"
    )
    screenshot("messages")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
    at_turn(browser, log.turns[-1].turn)
    assert [m["current"] for m in shown_messages(browser)] == ["false", "false", "false"]
    assert browser.find_element(By.ID, "decisions").text == "No LLM decision on this turn."
    assert page_errors(browser) == []


def test_a_refused_then_corrected_decision_shows_prompt_answers_and_refusal(
    browser: Any, served: str, eval_run: tuple[Path, EpisodeLog], screenshot: Callable[[str], Path]
) -> None:
    path, log = eval_run
    open_log(browser, served, path)
    step = log.turns[0].decisions["A"]
    assert step.valid and step.error_kinds == ["no_json"] and len(step.replies) == 2
    assert [d.get_attribute("data-decision-agent") for d in
            browser.find_elements(By.CSS_SELECTOR, "#decisions section")] == ["A"]  # fmt: skip
    section = decision_section(browser, "A")
    assert section.get_attribute("data-valid") == "true"
    assert section.get_attribute("data-requests") == "2"
    assert float(section.get_attribute("data-latency")) == step.latency_seconds
    action = section.find_element(By.CSS_SELECTOR, ".action").get_attribute("data-action")
    assert json.loads(action) == step.action == {"take": 1, "leave": False, "talk": IMG}

    prompt = opened(section, "prompt")
    roles = prompt.find_elements(By.CSS_SELECTOR, ".turn-message")
    assert [r.get_attribute("data-role") for r in roles] == ["system", "user"]
    assert [r.find_element(By.TAG_NAME, "pre").text for r in roles] == [
        m["content"] for m in step.messages[:2]
    ]
    assert "Turn 0, observer A" in roles[1].text

    answers = opened(section, "answers").find_elements(By.CSS_SELECTOR, "li[data-answer]")
    assert [a.get_attribute("data-refused") for a in answers] == ["no_json", ""]
    assert [a.find_element(By.CLASS_NAME, "reply").text for a in answers] == [
        reply["content"] for reply in step.replies
    ]
    feedback = answers[0].find_element(By.CLASS_NAME, "feedback").text
    assert feedback == step.messages[3]["content"] and "invalid" in feedback
    assert answers[1].find_elements(By.CLASS_NAME, "feedback") == []
    assert answers[0].find_element(By.CLASS_NAME, "verdict").text == "refused: no_json"
    errors = opened(section, "errors").find_elements(By.CSS_SELECTOR, "li[data-error]")
    assert [e.text for e in errors] == step.errors
    screenshot("decision")

    # Turn 1: tokens reported; turn 2: an out-of-range take refused, then corrected.
    browser.find_element(By.ID, "next").click()
    at_turn(browser, 1)
    section = decision_section(browser, "A")
    assert (section.get_attribute("data-tokens-in"), section.get_attribute("data-tokens-out")) == (
        "60", "12",
    )  # fmt: skip
    assert "tokens 60 in / 12 out" in section.find_element(By.CLASS_NAME, "facts").text
    browser.find_element(By.ID, "next").click()
    at_turn(browser, 2)
    section = decision_section(browser, "A")
    step = log.turns[2].decisions["A"]
    answers = opened(section, "answers").find_elements(By.CSS_SELECTOR, "li[data-answer]")
    assert [a.get_attribute("data-refused") for a in answers] == [*step.error_kinds, ""]
    assert step.error_kinds == ["bound"]
    assert "take" in answers[0].find_element(By.CLASS_NAME, "feedback").text
    assert section.get_attribute("data-tokens-in") == "?"  # a reply reported no usage
    assert page_errors(browser) == []


def test_llm_text_is_shown_as_text_and_never_run(
    browser: Any, served: str, eval_run: tuple[Path, EpisodeLog]
) -> None:
    path, _ = eval_run
    open_log(browser, served, path)
    texts = [m["text"] for m in shown_messages(browser)]
    assert texts == [IMG, SCRIPT, "bye"]
    for turn in (0, 1):
        browser.execute_script("window.worldViewer.show(arguments[0])", turn)
        at_turn(browser, turn)
        section = decision_section(browser, "A")
        replies = opened(section, "answers").find_elements(By.CLASS_NAME, "reply")
        assert (IMG if turn == 0 else SCRIPT) in replies[-1].text
    # No element came from the text: markup in a message or an answer stays characters.
    injected = browser.execute_script(
        "return document.querySelectorAll("
        "'#messages img, #messages script, #decisions img, #decisions script').length"
    )
    assert injected == 0
    assert browser.execute_script("return window.pwned === undefined")
    assert page_errors(browser) == []


def test_a_log_from_before_messages_and_decisions_still_opens(
    browser: Any, served: str, tmp_path: Path
) -> None:
    _, log = record_trade(tmp_path)
    data = json.loads(log.model_dump_json())
    del data["players"]
    for turn in data["turns"]:
        del turn["messages"], turn["decisions"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert load_episode_log(path) == log  # Python reads it with the same defaults
    open_log(browser, served, path)
    assert browser.find_element(By.ID, "no-messages").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#messages li") == []
    assert browser.find_element(By.ID, "players").get_attribute("hidden") == "true"
    assert browser.find_element(By.ID, "decisions").text == "No LLM decision on this turn."
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
    at_turn(browser, TURNS)
    assert browser.find_element(By.CSS_SELECTOR, 'tr[data-agent="Trader_1"]') is not None
    assert page_errors(browser) == []


def test_a_malformed_message_is_refused_naming_its_field(
    browser: Any, served: str, tmp_path: Path
) -> None:
    _, log = record_trade(tmp_path)
    data = json.loads(log.model_dump_json())
    data["turns"][2]["messages"] = [{"turn": 2, "sender": "Trader_1", "channel": "talk"}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    browser.get(f"{served}/viewer/world.html")
    picker = WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "log-file"))
    picker.send_keys(str(path))
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, WAIT).until(lambda d: error.is_displayed())
    assert "turns[2].messages[0].text: expected a string" in error.text
    assert browser.find_element(By.ID, "episode").get_attribute("hidden") == "true"


def test_an_eval_run_lists_its_episodes_by_key_and_opens_one(
    browser: Any,
    served: str,
    eval_run: tuple[Path, EpisodeLog],
    screenshot: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    path, log = eval_run
    run = path.parents[1]
    records = [
        EpisodeRecord.model_validate_json(line)
        for line in (run / "episodes.jsonl").read_text().splitlines()
    ]
    assert [record.focal for record in records] == [log.players["A"], "random"]
    browser.get(f"{served}/viewer/world.html")
    picker = WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "log-file"))
    # The run's index with one of its two logs: the other episode is listed but cannot open.
    picker.send_keys(f"{run / 'episodes.jsonl'}\n{path}")
    rows = WebDriverWait(browser, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#run-episodes tr[data-episode-key]")
    )
    listed = [(r.get_attribute("data-episode-key"), r.get_attribute("data-log"),
               r.get_attribute("data-available")) for r in rows]  # fmt: skip
    assert listed == [
        (record.key, str(record.log), str(record.log == path.relative_to(run).as_posix()).lower())
        for record in records
    ]
    assert listed[0][2] == "true" and listed[1][2] == "false"
    assert rows[1].find_elements(By.CLASS_NAME, "open-episode") == []
    assert f"{Path(str(records[1].log)).name} not opened" in rows[1].text
    assert browser.find_element(By.ID, "episode").get_attribute("hidden") == "true"

    rows[0].find_element(By.CLASS_NAME, "open-episode").click()
    at_turn(browser, 0)
    WebDriverWait(browser, WAIT).until(lambda d: rows[0].get_attribute("data-shown") == "true")
    assert rows[1].get_attribute("data-shown") == "false"
    summary = browser.find_element(By.ID, "summary").text
    assert path.name in summary
    assert f"seed {log.seed} ·" in summary and log.seed > 2**53  # every digit of a 64-bit seed
    assert len(browser.find_elements(By.CSS_SELECTOR, "#messages li")) == 3
    assert decision_section(browser, "A").get_attribute("data-valid") == "true"
    screenshot("run")
    # Another log opened on its own: the run stays listed, none of its episodes shown.
    other, _ = record_trade(tmp_path)
    picker.send_keys(str(other))
    WebDriverWait(browser, WAIT).until(lambda d: rows[0].get_attribute("data-shown") == "false")
    assert browser.find_element(By.ID, "summary").text.startswith("trade · seed 21")
    assert browser.find_element(By.ID, "no-messages").is_displayed()
    assert browser.find_element(By.ID, "run").is_displayed()
    assert page_errors(browser) == []


def test_several_files_without_one_run_index_are_refused(
    browser: Any, served: str, eval_run: tuple[Path, EpisodeLog], tmp_path: Path
) -> None:
    path, _ = eval_run
    browser.get(f"{served}/viewer/world.html")
    picker = WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "log-file"))
    picker.send_keys(f"{path}\n{path.parents[1] / 'result.json'}")
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, WAIT).until(lambda d: error.is_displayed())
    assert "2 files with 0 .jsonl" in error.text
    broken = tmp_path / "episodes.jsonl"
    broken.write_text('{"key": "a", "log": "logs/a.json.gz"}\n{"key": 3, "log": "x"}\n')
    picker.send_keys(f"{broken}\n{path}")
    WebDriverWait(browser, WAIT).until(lambda d: "line 2: key: expected a string" in error.text)
    assert browser.find_element(By.ID, "run").get_attribute("hidden") == "true"


def test_undelivered_messages_say_so(browser: Any, served: str, tmp_path: Path) -> None:
    _, log = record_trade(tmp_path)
    data = json.loads(log.model_dump_json())
    data["turns"][1]["messages"] = [
        {"turn": 1, "sender": "Trader_1", "channel": "talk", "text": "anyone?", "to": None,
         "recipients": []},
        {"turn": 1, "sender": "Trader_1", "channel": "whisper", "text": "psst", "to": "Trader_3",
         "recipients": []},
    ]  # fmt: skip
    path = tmp_path / "quiet.json"
    path.write_text(json.dumps(data))
    load_episode_log(path)  # a log Python accepts
    open_log(browser, served, path)
    shown = shown_messages(browser)
    assert [m["who"] for m in shown] == [
        "Trader_1 → all who hear: no one",
        "Trader_1 → Trader_3 (not delivered)",
    ]
    assert [m["recipients"] for m in shown] == ["[]", "[]"]
    assert [m.get("to") for m in shown] == [None, "Trader_3"]
    assert page_errors(browser) == []
