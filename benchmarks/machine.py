"""``machine_line(*packages)``: the machine and versions a benchmark table was measured on."""

from __future__ import annotations

import os
import platform
from importlib.metadata import version

__all__ = ["cpu_model", "machine_line"]


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
