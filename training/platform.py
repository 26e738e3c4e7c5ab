"""``platform_record()``: what a run's numbers rest on, recorded beside them.

A seeded run repeats bit for bit on one machine, but torch's and oneDNN's kernels round
differently with AVX-512 than with AVX2, so trained weights (and the games they play) differ
between CPUs. Recording the kernel path, the library versions and the engine tells a reader
which published row their run should match.
"""

from __future__ import annotations

import platform

import chess
import torch

from chess_env.core.players import stockfish_installed

__all__ = ["platform_record"]


def platform_record() -> dict[str, str]:
    """torch's version and CPU kernel path, python-chess's version, the CPU and Python.

    Example:
        >>> sorted(platform_record())
        ['cpu', 'cpu_capability', 'python', 'python_chess', 'stockfish', 'torch']
    """
    return {
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "python_chess": chess.__version__,
        "stockfish": _stockfish_version(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }


def _stockfish_version() -> str:
    """The engine's own name for itself ("Stockfish 15.1"), or "none" when it is missing."""
    if not stockfish_installed():
        return "none"
    import chess.engine

    from chess_env.core.opponents import find_stockfish

    with chess.engine.SimpleEngine.popen_uci(find_stockfish()) as engine:
        return str(engine.id.get("name", "unknown"))
