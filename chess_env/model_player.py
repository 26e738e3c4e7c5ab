"""Saved Stable-Baselines3 models as players: ``model:PATH`` (or a bare ``PATH.zip``).

SB3 and torch are imported here only, when such a player is made, so importing ``chess_env``
stays light; without them the error names the extra to install.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from chess_env.errors import PlayerSpecError

__all__ = ["load_sb3_model"]

TRAIN_EXTRA = "pip install 'polyarena[train]'"


def load_sb3_model(path: str | os.PathLike[str], device: str = "cpu") -> Any:
    """The MaskablePPO or PPO model saved at ``path``, whichever the file holds.

    Example:
        >>> load_sb3_model("runs/nowhere/model.zip")
        Traceback (most recent call last):
        ...
        chess_env.errors.PlayerSpecError: no saved model at 'runs/nowhere/model.zip'
    """
    file = Path(path)
    if not file.is_file():
        hint = " (SB3 saves models as .zip files)" if file.suffix != ".zip" else ""
        raise PlayerSpecError(f"no saved model at {os.fspath(path)!r}{hint}")
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
        except (KeyError, TypeError, ValueError, AttributeError, OSError) as error:
            errors.append(f"{algorithm.__name__}: {error}")
    raise PlayerSpecError(
        f"{os.fspath(path)!r} is not a saved PPO or MaskablePPO model ({'; '.join(errors)})"
    )
