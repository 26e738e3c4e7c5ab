"""The demo's numbers are a function of the seed: the same config run twice gives the same
dataset, the same weights after every stage and the same games (on one machine: torch's float
kernels differ between CPU instruction sets, so another CPU may train other weights).

And the expert a dataset records is a spec that makes that expert again (the worker processes
make it from the name), whatever the spec was written as.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

import training
from chess_env.core.players import stockfish_installed
from training import experts
from training.annealing import anneal
from training.config import load_training_config
from training.datasets import generate_chess_dataset
from training.datasets.chess_games import expert_name
from training.sb3_models import load_model

DEMO_CONFIG = Path(training.__file__).parent / "configs" / "demo.yaml"

needs_stockfish = pytest.mark.skipif(not stockfish_installed(), reason="Stockfish not installed")


@pytest.mark.parametrize(
    ("spec", "name"),
    [("alphabeta", "alphabeta:2"), ("alphabeta:1", "alphabeta:1"), ("alphabeta:3", "alphabeta:3")],
)
def test_the_recorded_expert_is_the_spec_with_its_depth(spec: str, name: str) -> None:
    assert expert_name(spec) == name
    assert expert_name(name) == name  # what the workers are given makes the same expert


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("auto", "stockfish:1"),
        ("stockfish", "stockfish:1"),
        ("stockfish:2", "stockfish:2"),
        ("stockfish?depth=3", "stockfish:3"),
        ("stockfish:2?skill=5", "stockfish:2?skill=5"),  # options kept as written
    ],
)
@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_specs_are_recorded_with_their_depth(spec: str, name: str) -> None:
    assert expert_name(spec) == name
    assert expert_name(name) == name


def test_auto_without_stockfish_records_alphabeta_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experts, "stockfish_installed", lambda: False)
    assert expert_name("auto") == "alphabeta:2"
    data = generate_chess_dataset("auto", 4, seed=0, progress_bar=False)
    assert data.manifest.expert == "alphabeta:2"


def test_a_dataset_labels_in_workers_under_the_name_it_records() -> None:
    data = generate_chess_dataset("alphabeta:1", 12, seed=0, progress_bar=False, workers=2)
    assert data.manifest.expert == "alphabeta:1"
    assert len(data) == 12


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return load_model(str(path)).policy.state_dict()


def _demo(out: Path) -> None:
    """The demo's config (workers, network, PPO on two envs, stage evaluations, the final match)
    on a budget of seconds."""
    config = load_training_config(
        "anneal",
        DEMO_CONFIG,
        [
            "bc.positions=600",
            "bc.epochs=1",
            "bc.progress_bar=false",
            "bc_accuracy_threshold=0",
            "ppo.total_timesteps=256",
            "ppo.n_steps=128",
            "ppo.batch_size=64",
            "ppo.eval_every=128",
            "ppo.eval_games_during=4",
            "ppo.progress_bar=false",
            "score_tolerance=1",  # keep the PPO stage's weights, to compare them
            "eval_games=4",
            "final_eval_games=8",
            f"out_dir={out}",
        ],
    )
    anneal(config)


@needs_stockfish
@pytest.mark.stockfish
def test_the_demo_config_twice_gives_the_same_data_weights_and_games(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _demo(first)
    _demo(second)
    for name in (
        "stage-0-bc/dataset.npz",
        "stage-0-bc/evaluation.pgn",
        "stage-1-ppo/games.pgn",
        "final.pgn",
    ):
        assert _digest(first / name) == _digest(second / name), name
    for name in ("stage-0-bc/model.zip", "stage-1-ppo/model.zip", "model.zip"):
        a, b = _weights(first / name), _weights(second / name)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[key], b[key]) for key in a), name
