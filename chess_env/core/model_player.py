"""Saved Stable-Baselines3 models as players: ``model:PATH`` (or a bare ``PATH.zip``).

SB3 and torch are imported here only, when such a player is made, so importing ``chess_env``
stays light; without them the error names the extra to install. ``training.load_model`` is this
loader too, so a model loads the same way wherever it is named.
"""

from __future__ import annotations

import os
from typing import Any

from chess_env.errors import PlayerSpecError
from envkit.sb3_models import load_sb3_model as envkit_load_sb3_model

__all__ = ["MissingModelError", "load_sb3_model"]


class MissingModelError(PlayerSpecError, FileNotFoundError):
    """No saved model where a spec or a caller said one is."""


def load_sb3_model(path: str | os.PathLike[str], device: str = "cpu") -> Any:
    """The MaskablePPO or PPO model saved at ``path`` (``.zip`` may be left off).

    Raises:
        MissingModelError: no file at ``path`` nor at ``path.zip`` (a ``FileNotFoundError``).
        PlayerSpecError: the file is not a saved PPO or MaskablePPO model, or SB3 is missing.

    Example:
        >>> load_sb3_model("runs/nowhere/model.zip")
        Traceback (most recent call last):
        ...
        chess_env.core.model_player.MissingModelError: no saved model at 'runs/nowhere/model.zip'
    """
    return envkit_load_sb3_model(
        path, device=device, missing=MissingModelError, invalid=PlayerSpecError,
        require_contrib=True,
    )  # fmt: skip
