"""load_training_config: YAML plus ``--set`` overrides, and rejections that name the field path or
file."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.config import (
    AUTO,
    CONFIG_KINDS,
    AnnealConfig,
    BCConfig,
    EvalConfig,
    PPOConfig,
    TrainingConfigError,
    apply_overrides,
    config_keys,
    load_training_config,
    resolve_out_dir,
)


def test_no_file_and_no_overrides_are_the_defaults() -> None:
    assert load_training_config("ppo") == PPOConfig()
    assert load_training_config("anneal") == AnnealConfig()


def test_a_file_and_overrides_combine_overrides_last(tmp_path: Path) -> None:
    path = tmp_path / "ppo.yaml"
    path.write_text("env: world:forage\nn_steps: 128\nseed: 1\nenv_kwargs: {a: 1}\n")
    config = load_training_config("ppo", path, ["seed=3", "env_kwargs.b=[1, 2]", "out_dir=runs/a"])
    assert isinstance(config, PPOConfig)
    assert (config.env, config.n_steps, config.seed, config.out_dir) == (
        "world:forage",
        128,
        3,
        "runs/a",
    )
    assert config.env_kwargs == {"a": 1, "b": [1, 2]}


def test_nested_overrides_reach_the_anneals_stage_configs() -> None:
    config = load_training_config(
        "anneal", None, ["ppo.total_timesteps=4096", "schedule=[bc, ppo, ppo]"]
    )
    assert isinstance(config, AnnealConfig)
    assert config.ppo.total_timesteps == 4096 and config.schedule == ("bc", "ppo", "ppo")


def test_overrides_do_not_change_the_given_data() -> None:
    data = {"ppo": {"seed": 0}}
    assert apply_overrides(data, ["ppo.seed=3"]) == {"ppo": {"seed": 3}}
    assert data == {"ppo": {"seed": 0}}


@pytest.mark.parametrize(
    ("kind", "overrides", "message"),
    [
        ("ppo", ["n_steps=0"], "ppo config: n_steps: Input should be greater than or equal to 1"),
        ("ppo", ["bogus=1"], "ppo config: bogus: unknown key"),
        ("ppo", ["totl_timesteps=1"], "totl_timesteps: unknown key; did you mean total_timesteps?"),
        ("anneal", ["ppo.n_step=1"], "ppo.n_step: unknown key; did you mean ppo.n_steps?"),
        ("ppo", ["vec_env=threads"], "ppo config: vec_env: Input should be 'subproc' or 'dummy'"),
        ("anneal", ["ppo.n_steps=0"], "anneal config: ppo.n_steps: Input should be greater"),
        ("anneal", ["bc.env=forage"], r"anneal config: \(root\): .*bc\.env must be chess"),
        ("eval", [], "eval config: model: Field required"),
        ("ppo", ["n_steps"], "--set 'n_steps': expected key=value"),
        ("ppo", ["=3"], "expected key=value"),
        ("ppo", ["seed=["], "--set 'seed=\\[': the value is not YAML"),
        ("anneal", ["seed=1", "seed.x=2"], "--set 'seed.x=2': seed is not a mapping"),
        ("sac", [], "unknown config kind 'sac'"),
    ],
)
def test_rejections_name_the_field(kind: str, overrides: list[str], message: str) -> None:
    with pytest.raises(TrainingConfigError, match=message):
        load_training_config(kind, None, overrides)


@pytest.mark.parametrize(
    ("text", "message"),
    [("n_steps: [1, 2", "expected ',' or ']'"), ("- a\n- b\n", "top level must be a mapping")],
)
def test_a_bad_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TrainingConfigError, match=message) as error:
        load_training_config("ppo", path)
    assert str(path) in str(error.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TrainingConfigError, match=r"missing\.yaml"):
        load_training_config("ppo", tmp_path / "missing.yaml")


def test_configs_are_frozen() -> None:
    config = EvalConfig(model="random")
    with pytest.raises(ValueError, match="frozen"):
        config.games = 3  # type: ignore[misc]


def test_the_packaged_anneal_configs_load() -> None:
    configs = Path(__file__).parents[2] / "training" / "configs"
    loaded = {
        path.stem: load_training_config("anneal", path) for path in sorted(configs.glob("*.yaml"))
    }
    assert {"demo", "strong"} <= set(loaded)
    strong = loaded["strong"]
    assert isinstance(strong, AnnealConfig)
    assert strong.schedule == ("bc", *["dagger"] * 4)
    assert strong.bc.features == "chess_cnn_destinations" and strong.bc.expert == "stockfish:5"
    assert loaded["demo"].bc.features == "chess_cnn_destinations"


def test_every_config_saves_by_default_and_none_is_kept_as_given() -> None:
    assert all(kind.model_fields["out_dir"].default == AUTO for kind in CONFIG_KINDS.values())
    assert load_training_config("ppo", None, ["out_dir=null"]).out_dir is None  # type: ignore[attr-defined]


def test_auto_names_a_new_folder_under_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = resolve_out_dir(AUTO, "ppo")
    assert first is not None and first.startswith("runs/ppo-")
    Path(first).mkdir(parents=True)
    second = resolve_out_dir(AUTO, "ppo")
    assert second is not None and second != first and not Path(second).exists()
    assert resolve_out_dir(None, "ppo") is None
    assert resolve_out_dir("elsewhere", "ppo") == "elsewhere"


def test_config_keys_cover_every_field_dotted_with_type_and_default() -> None:
    keys = {key.name: key for key in config_keys(AnnealConfig)}
    nested = [f"{part}.{name}" for part, kind in (("bc", BCConfig), ("ppo", PPOConfig))
              for name in kind.model_fields if name != "schema_version"]  # fmt: skip
    assert set(nested) <= set(keys) and "schema_version" not in keys
    timesteps = keys["ppo.total_timesteps"]
    assert (timesteps.type, timesteps.default) == ("int", "20000")
    assert (keys["schedule"].type, keys["schedule"].default) == (
        "list of bc|dagger|ppo",
        "[bc, ppo]",
    )
    assert (keys["ppo.n_envs"].type, keys["ppo.n_envs"].default) == ("int | null", "null")
    assert (keys["ppo.env_kwargs"].type, keys["ppo.env_kwargs"].default) == ("mapping", "{}")
    assert str(config_keys(EvalConfig)[0]).startswith("model (str, default required)")
