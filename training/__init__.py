"""Training: PPO / MaskablePPO, behaviour cloning, the BC-then-PPO anneal, evaluation.

- ``train_ppo(env, ...) -> PPOTrainingResult`` (``training.ppo``)
- ``train_bc(config, ...) -> BCTrainingResult`` (``training.bc``)
- ``anneal(config, ...) -> AnnealSummary`` (``training.annealing``)
- ``evaluate(agent, opponent, ...) -> EvaluationResult`` (``training.evaluation``)
- ``load_model(path)``: a model the runs saved (``artifacts.model``), PPO or MaskablePPO
  (``training.sb3_models``)
- the DTOs (``training.dto``) and configs (``training.config``); ``python -m training`` runs the
  same from the command line.

Needs the ``train`` extra (``pip install 'polyarena[train]'``); without it, the names that need
it raise ``envkit.command_line.MissingExtraError`` saying so. The names load on first use, so
``import training`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from envkit.command_line import MissingExtraError

__all__ = [
    "AnnealConfig",
    "AnnealSummary",
    "BCConfig",
    "BCTrainingResult",
    "EvalConfig",
    "EvaluationResult",
    "PPOConfig",
    "PPOTrainingResult",
    "anneal",
    "evaluate",
    "load_model",
    "train_bc",
    "train_ppo",
]

_HOMES = {
    "anneal": "training.annealing",
    "evaluate": "training.evaluation",
    "load_model": "training.sb3_models",
    "train_bc": "training.bc",
    "train_ppo": "training.ppo",
    **dict.fromkeys(("AnnealConfig", "BCConfig", "EvalConfig", "PPOConfig"), "training.config"),
    **dict.fromkeys(
        (
            "AnnealSummary",
            "BCTrainingResult",
            "EvaluationResult",
            "PPOTrainingResult",
        ),
        "training.dto",
    ),
}


# The top-level modules each optional extra brings, so a missing one is named with its extra.
MODULE_EXTRAS = {
    **dict.fromkeys(("torch", "stable_baselines3", "sb3_contrib", "matplotlib"), "train"),
    "tensorboard": "tensorboard",
    "ray": "distributed",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'training' has no attribute {name!r}")
    try:
        module = importlib.import_module(_HOMES[name])
    except ModuleNotFoundError as error:
        extra = MODULE_EXTRAS.get((error.name or "").partition(".")[0])
        if extra is None:
            raise
        raise MissingExtraError(f"training.{name} needs {error.name}", extra) from error
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(__all__)
