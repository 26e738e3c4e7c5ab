"""The notebooks run top to bottom in a fresh kernel, and are stored without outputs.

Each notebook executes with nbclient in its own temporary working directory, on a kernel that
runs this interpreter (a kernelspec written for the test, so the venv under test is the one the
notebook imports). Any cell error fails the test with the cell's traceback; then a few things the
notebook shows are checked in its outputs. The notebooks pick free ports and temporary folders
themselves, so ``pytest -n 2`` runs two of them side by side.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 600  # seconds; each notebook takes well under a minute on an idle 2-core machine
# What a notebook needs beyond the core install (extras), checked before starting a kernel.
NEEDS = {
    "03_training": ("torch", "stable_baselines3", "sb3_contrib", "matplotlib"),
    "04_llm_agents": ("fastapi", "uvicorn", "httpx"),
}


class Outputs:
    """A notebook's outputs after execution: stdout text, display text, and rich data by type."""

    def __init__(self, notebook: nbformat.NotebookNode) -> None:
        self.stdout: list[str] = []
        self.data: list[dict[str, str]] = []
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                if output.output_type == "stream" and output.name == "stdout":
                    self.stdout.append(output.text)
                elif output.output_type in ("display_data", "execute_result"):
                    self.data.append(dict(output.data))

    @property
    def text(self) -> str:
        return "".join(self.stdout)

    def of_type(self, mime: str) -> list[str]:
        return [data[mime] for data in self.data if mime in data]

    def markdown(self) -> str:
        return "\n".join(self.of_type("text/markdown"))


def check_chess_env(out: Outputs) -> None:
    assert len(out.of_type("image/png")) >= 2  # the 12 planes, twice
    (svg,) = out.of_type("image/svg+xml")
    assert "<svg" in svg
    assert "e2e4 -> action 2421" in out.text
    assert "black's e7e5 -> 2421" in out.text
    assert "same as white's view of board.mirror(): True" in out.text
    assert "IllegalActionError - action 2421 (e7e5) is illegal: no piece on e7" in out.text
    assert "the same legal action indices in both envs" in out.text
    tables = out.markdown()
    assert "| random |" in tables and "| greedy |" in tables
    # The throughput table: every contender, each with its ratio to PettingZoo's chess.
    rows = [row for row in tables.splitlines() if row.startswith("| (")]
    assert [row[3] for row in rows] == list("abcdef")
    assert all(re.search(r"\| [\d.]+x \| [\d.]+x \|$", row) for row in rows)


def check_partial_observability(out: Outputs) -> None:
    assert len(out.of_type("image/png")) == 2  # the heat map, the noise plot
    assert "unknown key; did you mean 'value_type'?" in out.text
    assert "unknown observer 'Trader_9'" in out.text
    assert "Trader_1 sees: ['Trader_2', 'Trader_3'] - Trader_4 is absent" in out.text
    tables = out.markdown()
    assert "| `economic_strength` | float | `Box(0.0, inf, (1,), float32)` |" in tables
    assert "charset" not in tables
    # Noise stays within its bound: 0.15 for Trader_2's view of Trader_1, 0.2 for Trader_3's.
    largest = re.search(r"largest relative error: (\{.*\})", out.text)
    assert largest is not None
    errors = ast.literal_eval(largest.group(1))
    assert 0 < errors["Trader_2"] <= 0.15 + 1e-6 and 0 < errors["Trader_3"] <= 0.2 + 1e-6
    seeds = re.search(r"seed 0: (\S+) \| seed 0 again: (\S+) \| seed 1: (\S+)", out.text)
    assert seeds is not None and seeds[1] == seeds[2] != seeds[3]


def check_training(out: Outputs) -> None:
    assert "status " in out.text
    assert "BCTrainingResult" in out.text and "PPOTrainingResult" in out.text
    assert "2000 positions by alphabeta:1" in out.text
    assert "loads back equal: True" in out.text
    assert "frozen: Instance is frozen" in out.text
    assert out.of_type("image/png")  # the learning curve
    scores = dict(re.findall(r"score vs (random|greedy): ([\d.]+)", out.text))
    assert set(scores) == {"random", "greedy"}
    assert all(0.0 <= float(score) <= 1.0 for score in scores.values())


def check_llm_agents(out: Outputs) -> None:
    assert 'limit: coerced string "10" to int' in out.text
    assert 'filters.year: expected int, got string "last"' in out.text
    assert "errors fed back: ['move: missing required key']" in out.text
    stats_line = re.search(r"AgentStats (\{.*\})", out.text)
    assert stats_line is not None
    stats = ast.literal_eval(stats_line.group(1))
    assert stats["games_played"] == 2
    assert stats["illegal_moves_attempted"] == 2  # one rejected e2e5 per game
    assert stats["timeouts"] == 0 and stats["total_moves"] > 0
    assert "refused: VALIDATION_ERROR cannot_move_there" in out.text
    assert "server stopped: True" in out.text


CHECKS: dict[str, Callable[[Outputs], None]] = {
    "01_chess_env": check_chess_env,
    "02_partial_observability": check_partial_observability,
    "03_training": check_training,
    "04_llm_agents": check_llm_agents,
}


def test_every_notebook_is_checked() -> None:
    assert sorted(path.stem for path in NOTEBOOKS) == sorted(CHECKS)


@pytest.fixture
def kernel_manager(tmp_path: Path) -> object:
    """A kernel manager whose ``python3`` kernel runs this interpreter (``sys.executable``)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)])
    assert specs.get_kernel_spec("python3").argv[0] == sys.executable
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs(path: Path, tmp_path: Path, kernel_manager: object) -> None:
    for module in NEEDS.get(path.stem, ()):
        pytest.importorskip(module)
    notebook = nbformat.read(path, as_version=4)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    client = nbclient.NotebookClient(
        notebook,
        km=kernel_manager,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any error
    CHECKS[path.stem](Outputs(notebook))
    assert not list(workdir.iterdir())  # artefacts go to temporary folders, not the cwd


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {cell.id} has stored outputs"
            assert cell.execution_count is None, f"{path.name}: cell {cell.id} was executed"
            assert "execution" not in cell.metadata, f"{path.name}: cell {cell.id} has timings"
