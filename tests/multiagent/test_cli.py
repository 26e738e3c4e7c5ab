"""``python -m multiagent serve``: a world that cannot load is refused in one line (exit 2)
before anything is served; ``--debug`` shows the traceback; a missing extra is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from multiagent.__main__ import main


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
