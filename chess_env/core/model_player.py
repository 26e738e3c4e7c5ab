"""Saved Stable-Baselines3 models as players: ``model:PATH`` (or a bare ``PATH.zip``).

SB3 and torch are imported here only, when such a player is made, so importing ``chess_env``
stays light; without them the error names the extra to install. ``training.load_model`` is this
loader too, so a model loads the same way wherever it is named.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

from chess_env.errors import PlayerSpecError

__all__ = ["MissingModelError", "load_sb3_model"]

TRAIN_EXTRA = "pip install 'polyarena[train]'"


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
    file = next((Path(f) for f in (path, f"{os.fspath(path)}.zip") if Path(f).is_file()), None)
    if file is None:
        raise MissingModelError(f"no saved model at {os.fspath(path)!r}")
    if not zipfile.is_zipfile(file):
        raise PlayerSpecError(f"{os.fspath(file)!r} is not a saved model: SB3 saves a .zip archive")
    try:
        import torch
        from sb3_contrib import MaskablePPO
        from stable_baselines3 import PPO
    except ImportError as error:
        raise PlayerSpecError(
            f"a saved model needs Stable-Baselines3 ({error.name} is missing): {TRAIN_EXTRA}"
        ) from None
    torch.set_num_threads(1)  # a small network answers faster on one thread than on several
    errors = []
    for algorithm in (MaskablePPO, PPO):
        try:
            return algorithm.load(file, device=device)
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, OSError) as error:
            errors.append(f"{algorithm.__name__}: {error}")
    raise PlayerSpecError(
        f"{os.fspath(file)!r} is not a saved PPO or MaskablePPO model ({'; '.join(errors)})"
    )
