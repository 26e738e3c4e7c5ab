"""``training.load_model``: a saved run's model back, and a clear error for anything else."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from stable_baselines3 import PPO

import training


def test_a_saved_model_loads_with_or_without_its_zip_suffix(tmp_path: Path) -> None:
    result = training.train_ppo(
        "CartPole-v1", total_timesteps=64, n_envs=1, n_steps=32, batch_size=32,
        progress_bar=False, out_dir=str(tmp_path),
    )  # fmt: skip
    assert result.artifacts.model == str(tmp_path / "model.zip")
    for path in (result.artifacts.model, str(tmp_path / "model")):
        model = training.load_model(path)
        assert isinstance(model, PPO) and model.num_timesteps == result.total_timesteps


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no saved model at .*nothing\.zip"):
        training.load_model(tmp_path / "nothing.zip")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a zip", "is not a saved model: SB3 saves a .zip archive"),
        (None, "is not a saved PPO or MaskablePPO model"),
    ],
)
def test_a_file_that_is_not_a_model_is_refused(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "other.zip"
    if content is None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("data", "{}")
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        training.load_model(str(path))
