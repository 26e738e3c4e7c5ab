"""``env=world:PATH.yaml``: training reads a world from a YAML file as well as a built-in name;
a missing or bad file is a config error naming ``env`` (exit 2 on the command line)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from multiagent.worlds import world_path
from training.__main__ import main
from training.config import TrainingConfigError, load_training_config
from training.dto import PPOTrainingResult
from training.envs import env_factory, is_world_file, load_training_world

TINY_PPO = ["--set", "total_timesteps=64", "--set", "n_steps=32", "--set", "batch_size=32",
            "--set", "n_envs=1", "--set", "vec_env=dummy",
            "--set", "progress_bar=false"]  # fmt: skip


@pytest.fixture
def world_file(tmp_path: Path) -> Path:
    """The forage world copied under a new name, as a user starts a world of their own."""
    path = tmp_path / "my_world.yaml"
    shutil.copy(world_path("forage"), path)
    return path


@pytest.mark.parametrize(
    ("world", "expected"),
    [("trade", False), ("forage", False), ("missing.yaml", True), ("a/b.YML", True)],
)
def test_a_world_names_a_file_by_its_suffix(world: str, expected: bool) -> None:
    assert is_world_file(world) is expected


def test_an_existing_file_without_a_yaml_suffix_is_a_file(world_file: Path) -> None:
    plain = world_file.with_suffix("")
    world_file.rename(plain)
    assert is_world_file(str(plain))
    assert load_training_world(str(plain)).simulation.name == "forage"


def test_a_relative_path_is_read_from_the_working_directory(
    world_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(world_file.parent)
    env = env_factory("world:./my_world.yaml")()
    try:
        observation, _ = env.reset(seed=0)
        assert env.observation_space.contains(observation)
    finally:
        env.close()


def test_the_ppo_config_accepts_a_world_file(world_file: Path) -> None:
    config = load_training_config("ppo", overrides=[f"env=world:{world_file}"])
    assert config.env == f"world:{world_file}"


@pytest.mark.parametrize(
    ("world", "message"),
    [
        ("nowhere.yaml", "ppo config: env: world:nowhere.yaml: world file 'nowhere.yaml' does not"),
        ("tradez", "ppo config: env: world:tradez: unknown world 'tradez'"),
    ],
)
def test_a_missing_world_is_a_config_error_naming_env(world: str, message: str) -> None:
    with pytest.raises(TrainingConfigError) as caught:
        load_training_config("ppo", overrides=[f"env=world:{world}"])
    assert str(caught.value).startswith(message)


def test_a_bad_world_file_names_env_and_the_worlds_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(world_path("forage").read_text().replace("max_turns: 200", "max_turns: 0"))
    with pytest.raises(TrainingConfigError, match=r"ppo config: env: .*simulation\.max_turns"):
        load_training_config("ppo", overrides=[f"env=world:{bad}"])


def test_the_anneal_checks_its_ppo_world_too() -> None:
    with pytest.raises(TrainingConfigError, match=r"anneal config: ppo\.env: world:gone\.yaml"):
        load_training_config("anneal", overrides=["ppo.env=world:gone.yaml"])


def test_ppo_trains_on_a_world_file(
    world_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["ppo", "--set", f"env=world:{world_file}", *TINY_PPO, "--out", str(tmp_path / "r")]
    )
    assert code == 0, capsys.readouterr().err
    result = PPOTrainingResult.model_validate(json.loads(capsys.readouterr().out))
    assert result.total_timesteps == 64
    assert result.config.env == f"world:{world_file}"


def test_the_command_line_refuses_a_missing_world_file_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ppo", "--set", "env=world:gone.yaml", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "env: world:gone.yaml: world file 'gone.yaml' does not exist" in err


def test_worker_processes_find_a_dynamics_module_that_sits_next_to_the_world_file(
    tmp_path: Path,
) -> None:
    """Two SubprocVecEnv workers, started after the world was loaded, import its dynamics module
    from the YAML's folder (they used to fail: no module named ...)."""
    folder = tmp_path / "my_world"
    folder.mkdir()
    (folder / "my_forage_rules.py").write_text("from multiagent.worlds.forage import dynamics\n")
    text = world_path("forage").read_text()
    assert "multiagent.worlds.forage:dynamics" in text
    (folder / "world.yaml").write_text(
        text.replace("multiagent.worlds.forage:dynamics", "my_forage_rules:dynamics")
    )
    subprocess_argv = [
        sys.executable, "-m", "training", "ppo", "--set", f"env=world:{folder / 'world.yaml'}",
        *TINY_PPO[:6], "--set", "n_envs=2", "--set", "vec_env=subproc",
        "--set", "progress_bar=false", "--out", str(tmp_path / "run"),
    ]  # fmt: skip
    done = subprocess.run(subprocess_argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["total_timesteps"] >= 64
