"""Fixtures for the RLlib tests: one local Ray for the session, a world probe.

The tests that train need ray (``make test-distributed`` installs it in ``.venv-distributed``);
in the main venv they skip, and the ray-free tests (wrappers, config, DTO, CLI errors) still run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """A local Ray that every training test shares (``train_rllib`` uses a running Ray as it
    is and leaves it running), so the suite starts Ray once instead of once per run."""
    ray = pytest.importorskip("ray", reason="needs ray[rllib]: make test-distributed")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    yield ray
    ray.shutdown()
