"""``python -m multiagent serve``: a world that cannot load is refused in one line (exit 2)
before anything is served; ``--debug`` shows the traceback; a missing extra is named.
``validate``: a world's summary (text or JSON), or one line per problem (exit 2)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import multiagent.config
from multiagent.__main__ import main
from multiagent.summary import WorldSummary
from multiagent.worlds import world_path


@pytest.fixture
def bad_world(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text("simulation: {name: bad}\nagents: []\n", encoding="utf-8")
    return path


def test_a_world_that_fails_load_config_is_refused_in_one_line(
    bad_world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--world", str(bad_world), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"python -m multiagent serve: error: --world {bad_world}: ")
    assert "agents: " in err


def test_debug_shows_the_traceback_before_the_line(
    bad_world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--world", str(bad_world), "--debug"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith("python -m multiagent serve: error: --world")


def test_a_missing_server_extra_is_named() -> None:
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "from multiagent.__main__ import main\n"
        "sys.exit(main(['serve', '--world', 'trade', '--port', '0']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        "python -m multiagent serve: error: fastapi is not installed "
        "(pip install 'polyarena[server]')\n"
    )


# -- validate: a world's summary, or every problem with its field path -------------------------


@pytest.fixture
def world_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_world.yaml"
    shutil.copy(world_path("forage"), path)
    return path


def test_validate_summarises_a_world_file(
    world_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(world_file)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[0] == f"{world_file}: world 'forage' is valid"
    for line in (
        "  agents: Forager_1, Forager_2, Forager_3",
        "    position: tuple[int [0, 6], int [0, 6]]",
        "    eaten: int [0, ]",
        "    move: categorical (stay, up, down, left, right)",
        "  observability: unaware, external, insider",
        "  dynamics: multiagent.worlds.forage:dynamics",
    ):
        assert line in out.splitlines()


def test_validate_takes_a_built_in_name_and_prints_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", "trade", "--json"]) == 0
    summary = WorldSummary.model_validate_json(capsys.readouterr().out)
    assert summary.source == "trade" and summary.name == "trade"
    assert summary.agents == ("Trader_1", "Trader_2", "Trader_3", "Trader_4")
    assert summary.global_variables["season"] == "categorical (spring, summer, autumn, winter)"
    assert summary.actions["amount"] == "float [0, 10]"
    assert summary.dynamics == "multiagent.worlds.trade:dynamics"


def test_validate_says_none_and_off_for_a_bare_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bare.yaml"
    path.write_text("simulation: {name: bare, max_turns: 3}\nagents: [{name: A}]\n")
    assert main(["validate", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  actions: none" in lines
    assert "  observability: off" in lines and "  dynamics: none" in lines


def test_validate_lists_every_problem_with_its_field_path_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("simulation: {name: bad}\nagents: []\nactions: {x: {type: floaty}}\n")
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    prefix = f"python -m multiagent validate: error: {path}: "
    lines = err.splitlines()
    assert all(line.startswith(prefix) for line in lines)
    problems = [line.removeprefix(prefix) for line in lines]
    assert problems[0] == "simulation.max_turns: Field required"
    assert problems[1].startswith("agents: ")
    assert problems[2].startswith("actions.x.type: 'floaty' is not one of")
    assert len(problems) == 3


def test_validate_a_missing_file_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["validate", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"python -m multiagent validate: error: {missing}: no such file "
        "(the built-in worlds are trade, forage, commons)\n"
    )


class _NoDynamicsWarning(UserWarning):
    """Stands for a loader's own warning class (``WorldConfigWarning``), whichever exists."""


def test_validate_prints_loading_warnings_as_lines_and_keeps_them_in_the_json(
    world_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = multiagent.config.load_config

    def warning_load(source: Any) -> Any:
        message = "engine.dynamics: none; the state never changes"
        warnings.warn(_NoDynamicsWarning(message), stacklevel=2)
        return real(source)

    monkeypatch.setattr(multiagent.config, "load_config", warning_load)
    assert main(["validate", str(world_file), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == (
        "python -m multiagent validate: warning: engine.dynamics: none; the state never changes\n"
    )
    assert WorldSummary.model_validate_json(out).warnings == (
        "engine.dynamics: none; the state never changes",
    )


def test_validate_as_a_module_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "multiagent", "validate", "forage"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("forage: world 'forage' is valid\n")


@pytest.mark.parametrize(("flags", "expected"), [([], None), (["--turn-timeout", "4.5"], 4.5)])
def test_serve_passes_the_turn_timeout_only_when_given(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], expected: float | None
) -> None:
    pytest.importorskip("fastapi")
    seen: dict[str, Any] = {}
    monkeypatch.setattr("multiagent.server.serve", lambda *args, **kwargs: seen.update(kwargs))
    assert main(["serve", "--world", "forage", *flags]) == 0
    assert seen.get("turn_timeout") == expected
