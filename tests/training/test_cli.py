"""``python -m training``: configs from YAML and --set, artefacts written, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import chess.pgn
import pytest

from training.__main__ import demo_config_path, main
from training.config import AnnealConfig, load_config
from training.dto import EvaluationResultDTO


def test_eval_command_prints_the_dto_and_writes_result_and_pgn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("model: greedy\nopponent: random\ngames: 4\nprogress_bar: false\n")
    code = main(["eval", "--config", str(config), "--set", "seed=3", "--out", str(tmp_path / "o")])
    assert code == 0
    printed = EvaluationResultDTO.model_validate_json(capsys.readouterr().out)
    assert printed.games == 4 and printed.seed == 3
    written = EvaluationResultDTO.model_validate_json((tmp_path / "o" / "result.json").read_text())
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
        (["model=greedy", "turbo=true"], "turbo: Extra inputs are not permitted"),
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
    config = load_config("anneal", demo_config_path())
    assert isinstance(config, AnnealConfig)
    assert config.schedule == ("bc", "ppo")
    assert config.final_eval_games >= 200 and config.eval_opponent == "random"


def test_nested_overrides_reach_the_stage_configs() -> None:
    config = load_config(
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
