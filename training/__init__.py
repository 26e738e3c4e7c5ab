"""Training: PPO / MaskablePPO, behaviour cloning, the BC-then-PPO anneal, evaluation.

- ``train_ppo(env, ...) -> PPOTrainingResultDTO`` (``training.ppo``)
- ``train_bc(config, ...) -> BCTrainingResultDTO`` (``training.bc``)
- ``anneal(config, ...) -> AnnealSummaryDTO`` (``training.annealing``)
- ``evaluate(agent, opponent, ...) -> EvaluationResultDTO`` (``training.evaluation``)
- the DTOs (``training.dto``) and configs (``training.config``); ``python -m training`` runs the
  same from the command line.

Needs the ``train`` extra. The names load on first use, so ``import training`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "AnnealConfig",
    "AnnealSummaryDTO",
    "BCConfig",
    "BCTrainingResultDTO",
    "EvalConfig",
    "EvaluationResultDTO",
    "PPOConfig",
    "PPOTrainingResultDTO",
    "anneal",
    "evaluate",
    "train_bc",
    "train_ppo",
]

_HOMES = {
    "anneal": "training.annealing",
    "evaluate": "training.evaluation",
    "train_bc": "training.bc",
    "train_ppo": "training.ppo",
    **dict.fromkeys(("AnnealConfig", "BCConfig", "EvalConfig", "PPOConfig"), "training.config"),
    **dict.fromkeys(
        (
            "AnnealSummaryDTO",
            "BCTrainingResultDTO",
            "EvaluationResultDTO",
            "PPOTrainingResultDTO",
        ),
        "training.dto",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'training' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)
