"""The context of a benchmark's numbers, and the clock it reads them with.

- ``machine_line(*packages)``: the machine and versions a benchmark table was measured on;
- ``load_line()``: the load average, printed before and after a run on a shared machine;
- ``CLOCKS`` and ``add_clock_argument(parser)``: ``--clock wall|cpu`` (this process's CPU time is
  steadier where others keep the machine busy).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from importlib.metadata import version

__all__ = ["CLOCKS", "add_clock_argument", "cpu_model", "load_line", "machine_line"]

CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_line(*packages: str) -> str:
    """``Machine: CPU, cores, OS; Python x; <package> <version>...`` for the named packages."""
    versions = "".join(f"; {package} {version(package)}" for package in packages)
    return (
        f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.platform()}; "
        f"Python {platform.python_version()}{versions}"
    )


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


def add_clock_argument(parser: argparse.ArgumentParser) -> None:
    """``--clock wall|cpu``, the key of ``CLOCKS`` a benchmark times with."""
    parser.add_argument(
        "--clock",
        choices=list(CLOCKS),
        default="wall",
        help="wall (default) or cpu: this process's CPU time, steadier on a machine others load",
    )
