"""The tiny tool-calling model, built once per test module that asks for it.

A module that trains with GRPO declares ``TINY_LM_WARM_UP``, the keyword arguments of
``tiny_lm.tool_calling_lm`` (``env_factory``, ``rows``, ``choose_call``: which tool call to
demonstrate for a row), and takes the ``tiny_tool_lm`` fixture; ``tiny_tool_lm.grpo(factory, rows)``
then runs a real ``GRPOTrainer`` on a copy of the model. The warm-up takes about 5 s, so one per
module, not one per test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))


@pytest.fixture(scope="module")
def tiny_tool_lm(request: pytest.FixtureRequest) -> Any:
    """``tiny_lm.TinyToolLM`` warmed up on the requesting module's ``TINY_LM_WARM_UP``."""
    from tiny_lm import tool_calling_lm

    warm_up: dict[str, Any] = request.module.TINY_LM_WARM_UP
    return tool_calling_lm(**warm_up)
