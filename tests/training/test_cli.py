"""``python -m training``: configs from YAML and --set, artefacts written, the result alone on
stdout, per-command help, one-line errors and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import chess.pgn
import pytest
from sb3_contrib import MaskablePPO

import training
from training.__main__ import _anneal_status, demo_config_path, main
from training.config import CONFIG_KINDS, AnnealConfig, config_keys, load_training_config
from training.dto import (
    AnnealSummary,
    BCTrainingResult,
    EvaluationResult,
    PPOTrainingResult,
)


def test_eval_command_prints_the_dto_and_writes_result_and_pgn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("model: greedy\nopponent: random\ngames: 4\nprogress_bar: false\n")
    code = main(["eval", "--config", str(config), "--set", "seed=3", "--out", str(tmp_path / "o")])
    assert code == 0
    printed = EvaluationResult.model_validate_json(capsys.readouterr().out)
    assert printed.games == 4 and printed.seed == 3
    written = EvaluationResult.model_validate_json((tmp_path / "o" / "result.json").read_text())
    assert written == printed
    with open(tmp_path / "o" / "games.pgn", encoding="utf-8") as pgn:
        games = [chess.pgn.read_game(pgn) for _ in range(4)]
    assert all(
        game is not None and game.headers["Event"] == "polyarena evaluation" for game in games
    )


def test_the_same_eval_twice_prints_the_same_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for run in range(2):
        args = ["eval", "--set", "model=greedy", "--set", "games=2", "--set", "progress_bar=false"]
        assert main([*args, "--out", str(tmp_path / str(run))]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["games=0"], "games: Input should be greater than or equal to 1"),
        (["model=greedy", "games"], "expected key=value"),
        (["model=greedy", "turbo=true"], "turbo: unknown key"),
    ],
)
def test_bad_configs_exit_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: list[str], message: str
) -> None:
    args = [item for override in overrides for item in ("--set", override)]
    assert main(["eval", *args, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_unknown_player_is_refused_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--set", "model=grandmaster", "--out", str(tmp_path)]) == 2
    assert "unknown player 'grandmaster'" in capsys.readouterr().err


def test_the_packaged_demo_config_is_a_valid_anneal() -> None:
    config = load_training_config("anneal", demo_config_path())
    assert isinstance(config, AnnealConfig)
    assert config.schedule == ("bc", "ppo")
    assert config.final_eval_games >= 200 and config.eval_opponent == "random"


def test_nested_overrides_reach_the_stage_configs() -> None:
    config = load_training_config(
        "anneal", demo_config_path(), ["ppo.total_timesteps=512", "bc.positions=100"]
    )
    assert isinstance(config, AnnealConfig)
    assert config.ppo.total_timesteps == 512 and config.bc.positions == 100


def test_module_entry_point_runs(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "training", "eval", "--set", "model=random", "--set", "games=1",
         "--set", "progress_bar=false", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(completed.stdout)["games"] == 1


# -- the command-line contract: stdout is the result, --help lists the keys, exit codes --------

TINY_PPO = ["--set", "total_timesteps=64", "--set", "n_steps=32", "--set", "batch_size=32",
            "--set", "eval_games=1", "--set", "n_envs=1"]  # fmt: skip
TINY_ANNEAL = ["--set", "bc.expert=alphabeta:1", "--set", "bc.positions=100", "--set",
               "bc.epochs=1", "--set", "eval_games=1", "--set", "final_eval_games=1"]  # fmt: skip


def one_line(text: str) -> str:
    """The text, asserted to be one line (an error's whole report)."""
    assert text.count("\n") == 1 and text.endswith("\n"), text
    return text


def test_ppo_prints_only_its_json_and_the_progress_bar_goes_to_stderr(tmp_path: Path) -> None:
    """A real process, progress bar on (SB3's own bar is rich's, on stdout)."""
    done = subprocess.run(
        [sys.executable, "-m", "training", "ppo", *TINY_PPO, "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = PPOTrainingResult.model_validate(json.loads(done.stdout))
    assert result.total_timesteps == 64 and "64/64" in done.stderr  # the bar, on stderr
    assert result.artifacts.model == str(tmp_path / "run" / "model.zip")
    assert isinstance(training.load_model(result.artifacts.model), MaskablePPO)


@pytest.mark.parametrize(
    ("command", "listed", "absent"),
    [
        ("ppo", "total_timesteps (int, default 20000): Environment steps", "bc.positions"),
        ("bc", "positions (int, default 20000): Positions to label", "total_timesteps"),
        ("anneal", "ppo.total_timesteps (int, default 20000)", "--iterations"),
        ("demo", "bc.positions (int, default 160000)", "--iterations"),  # demo.yaml's value
        ("eval", "model (str, default required)", "positions"),
        ("rllib", "iterations (int, default 1)", "bc.positions"),
    ],
)
def test_each_commands_help_lists_its_keys_with_type_and_default(
    capsys: pytest.CaptureFixture[str], command: str, listed: str, absent: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # unwrapped
    assert listed in text and absent not in text
    if command != "rllib":
        kind = "anneal" if command == "demo" else command
        assert all(f" {key.name} (" in text for key in config_keys(CONFIG_KINDS[kind]))


@pytest.mark.parametrize(
    ("command", "key", "suggestion"),
    [
        ("ppo", "totl_timesteps=5", "did you mean total_timesteps?"),
        ("anneal", "total_timesteps=5", "did you mean ppo.total_timesteps?"),
        ("bc", "epoch=2", "did you mean epochs"),
        ("rllib", "iteration=3", "did you mean iterations?"),
    ],
)
def test_an_unknown_key_exits_2_with_the_nearest_keys(
    capsys: pytest.CaptureFixture[str], command: str, key: str, suggestion: str
) -> None:
    assert main([command, "--set", key]) == 2
    err = one_line(capsys.readouterr().err)
    assert suggestion in err and f"python -m training {command} --help" in err


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["pp"], ["ppo", "--turbo"], ["eval", "--iterations", "3"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
    capsys.readouterr()
    assert main(["ppo", "--set", "gamma=2"]) == 2
    assert one_line(capsys.readouterr().err) == (
        "python -m training ppo: error: ppo config: gamma: Input should be less than or equal to "
        "1 (python -m training ppo --help lists the keys)\n"
    )


def test_an_error_is_one_line_and_debug_adds_the_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--set", "model=grandmaster", "--out", str(tmp_path)]
    assert main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("python -m training eval: error: ") and "grandmaster" in line
    assert main([*argv, "--debug"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and err.endswith(line)


def test_an_anneal_that_ends_fail_exits_1_after_printing_its_json(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    argv = ["anneal", *TINY_ANNEAL, "--set", "bc_accuracy_threshold=1.0", "--out", str(tmp_path)]
    assert main(argv) == 1
    out, err = capfd.readouterr()
    summary = AnnealSummary.model_validate(json.loads(out))
    assert summary.status == "FAIL"
    assert "the anneal ended FAIL at stage 0 (bc): accuracy_below_threshold" in err
    assert "BC epoch 1/1" in err  # the bars went to stderr


def test_an_anneal_that_ends_hold_exits_0_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stage = SimpleNamespace(
        cycle=1, mode="ppo", flags=("score_drop",), rolled_back=True, passed=False
    )
    summary = SimpleNamespace(status="HOLD", stages=[stage])
    assert _anneal_status(summary, "python -m training anneal") == 0
    assert "warning: the anneal ended HOLD at stage 1 (ppo): score_drop (rolled back)" in (
        capsys.readouterr().err
    )


def test_tensorboard_missing_names_its_extra_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard now fails
    argv = ["ppo", "--set", "env=CartPole-v1", "--set", "tensorboard=true", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "pip install 'polyarena[tensorboard]'" in one_line(capsys.readouterr().err)


def test_a_missing_train_extra_is_named(tmp_path: Path) -> None:
    """torch absent (simulated in a fresh process): the train commands and training.load_model
    name the extra that brings it."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from training.__main__ import main\n"
        f"code = main(['ppo', '--set', 'env=CartPole-v1', '--out', {str(tmp_path)!r}])\n"
        "import training\n"
        "try:\n    training.load_model('model.zip')\n"
        "except ImportError as error:\n    print(error)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    hint = "pip install 'polyarena[train]'"
    assert one_line(done.stderr) == (
        f"python -m training ppo: error: torch is not installed ({hint})\n"
    )
    assert done.stdout == f"training.load_model needs torch ({hint})\n"


def test_ppo_refuses_a_text_env_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ppo", "--set", "env=chess_env/ChessText-v0", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = one_line(capsys.readouterr().err)
    assert "PPO cannot train on a Text observation space" in err and "chess_env/Chess-v0" in err
    assert not (tmp_path / "model.zip").exists()


def test_bc_keeps_its_model_by_default_and_prints_only_json(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["bc", "--set", "expert=alphabeta:1", "--set", "positions=40", "--set", "epochs=1"]
    assert main([*argv, "--set", "eval_games=1"]) == 0
    out, err = capfd.readouterr()
    result = BCTrainingResult.model_validate(json.loads(out))
    assert result.artifacts.model is not None and result.artifacts.model.startswith("runs/bc-")
    assert training.load_model(result.artifacts.model).policy is not None
    assert "BC epoch 1/1" in err
