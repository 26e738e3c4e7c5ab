"""Importing an env package stays light: heavy libraries load only where they are used."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "stable_baselines3", "fastapi", "ray", "matplotlib", "pygame")


@pytest.mark.parametrize("package", ["chess_env", "multiagent", "envkit", "training"])
def test_importing_a_package_loads_no_heavy_dependency(package: str) -> None:
    code = f"import sys, {package}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_training_exports_functions_even_after_their_modules_are_imported() -> None:
    """``from training import anneal`` is the function: no submodule shadows a lazy name."""
    code = (
        "import importlib, training\n"
        "for module in ('annealing', 'bc', 'ppo', 'evaluation', 'dagger', 'config', 'dto'):\n"
        "    importlib.import_module('training.' + module)\n"
        "from training import anneal, evaluate, train_bc, train_ppo\n"
        "print(all(callable(f) and f.__name__ == n for f, n in ((anneal, 'anneal'), "
        "(evaluate, 'evaluate'), (train_bc, 'train_bc'), (train_ppo, 'train_ppo'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
