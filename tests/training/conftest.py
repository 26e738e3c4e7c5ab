"""Small torch networks run on one thread in these tests, as in training (``training.sb3_models``):
on this 2-core machine shared with other jobs, two threads made a policy's forward pass 30x
slower."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    torch.set_num_threads(1)
