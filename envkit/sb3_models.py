"""Saved Stable-Baselines3 models, loaded one way for chess players and world seats alike.

SB3 and torch are imported only when a model is loaded, so importing a package that names this
module stays light; without them the error names the extra to install. Each caller passes the
errors its users expect (chess: ``PlayerSpecError``; worlds: ``WorldPlayerSpecError``).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["TRAIN_EXTRA", "load_sb3_model"]

TRAIN_EXTRA = "pip install 'polyarena[train]'"


def load_sb3_model(
    path: str | os.PathLike[str],
    *,
    device: str = "cpu",
    missing: type[Exception] = FileNotFoundError,
    invalid: type[Exception] = ValueError,
    require_contrib: bool = False,
) -> Any:
    """The MaskablePPO or PPO model saved at ``path`` (``.zip`` may be left off).

    Args:
        path: the saved model.
        device: where its network goes.
        missing: raised when there is no file at ``path`` nor at ``path.zip``.
        invalid: raised when the file is not a saved model, or SB3 is missing.
        require_contrib: sb3-contrib (MaskablePPO) must be installed; otherwise it is tried
            only when it is.

    Example:
        >>> load_sb3_model("runs/nowhere/model.zip")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no saved model at 'runs/nowhere/model.zip'
    """
    file = next((Path(f) for f in (path, f"{os.fspath(path)}.zip") if Path(f).is_file()), None)
    if file is None:
        raise missing(f"no saved model at {os.fspath(path)!r}")
    if not zipfile.is_zipfile(file):
        raise invalid(f"{os.fspath(file)!r} is not a saved model: SB3 saves a .zip archive")
    try:
        import torch
        from stable_baselines3 import PPO
    except ImportError as error:
        raise invalid(
            f"a saved model needs Stable-Baselines3 ({error.name} is missing): {TRAIN_EXTRA}"
        ) from None
    torch.set_num_threads(1)  # a small network answers faster on one thread than on several
    algorithms: list[Any] = [PPO]
    try:
        from sb3_contrib import MaskablePPO

        algorithms.insert(0, MaskablePPO)
    except ImportError as error:
        if require_contrib:
            raise invalid(
                f"a saved model needs sb3-contrib ({error.name} is missing): {TRAIN_EXTRA}"
            ) from None
    errors = []
    for algorithm in algorithms:
        try:
            return algorithm.load(file, device=device)
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, OSError) as error:
            errors.append(f"{algorithm.__name__}: {error}")
    names = " or ".join(algorithm.__name__ for algorithm in reversed(algorithms))
    raise invalid(f"{os.fspath(file)!r} is not a saved {names} model ({'; '.join(errors)})")
