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
