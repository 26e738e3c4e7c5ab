"""``anneal``: BC then PPO, stage checks, HOLD with rollback, FAIL stopping the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import training.dto
import training.ppo
from training.annealing import _flags, anneal
from training.config import AnnealConfig, BCConfig, PPOConfig
from training.dto import AnnealSummary, ColorResult, EvaluationResult
from training.policies import DestinationActionHead
from training.sb3_models import load_model

TINY = AnnealConfig(
    bc=BCConfig(expert="alphabeta:1", positions=200, epochs=1, progress_bar=False),
    ppo=PPOConfig(
        total_timesteps=64, n_steps=32, batch_size=32, n_envs=1, vec_env="dummy", progress_bar=False
    ),
    eval_games=2,
    final_eval_games=2,
    bc_accuracy_threshold=0.0,
    score_tolerance=1.0,
)


def _weights(model: Any) -> list[torch.Tensor]:
    return [t.detach().clone() for t in model.policy.state_dict().values()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_bc_then_ppo_passes_and_keeps_its_artefacts_under_runs_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    summary = anneal(TINY)
    assert summary.status == "PASS"
    assert [stage.mode for stage in summary.stages] == ["bc", "ppo"]
    assert all(stage.passed and not stage.flags for stage in summary.stages)
    assert summary.final_evaluation is not None and summary.final_evaluation.games == 2
    assert 0.0 <= summary.baselines["random_policy_score"] <= 1.0
    assert summary.artifacts.directory is not None
    folder = Path(summary.artifacts.directory)
    assert folder.parent == Path("runs") and folder.name.startswith("anneal-")
    assert summary.config.out_dir == str(folder)
    saved = AnnealSummary.model_validate_json((folder / "summary.json").read_text())
    assert saved == summary
    # What the numbers rest on, beside them: the CPU kernel path decides the weights.
    assert summary.platform["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert summary.platform["torch"] == torch.__version__
    assert summary.artifacts.curve is not None
    assert Path(summary.artifacts.curve).read_bytes()[:4] == b"\x89PNG"
    assert summary.artifacts.model is not None
    ppo_stage = summary.stages[1].result
    assert ppo_stage.config.init_model is not None  # PPO started from the BC weights
    kept = load_model(summary.artifacts.model)
    last = load_model(str(ppo_stage.artifacts.model))
    assert _same(_weights(kept), _weights(last))


@pytest.mark.parametrize("features", ["chess_cnn_attacks", "chess_cnn_destinations"])
def test_ppo_continues_the_network_bc_trained(tmp_path: Path, features: str) -> None:
    config = TINY.model_copy(update={"bc": TINY.bc.model_copy(update={"features": features})})
    summary = anneal(config, out_dir=str(tmp_path))
    assert summary.status == "PASS"
    ppo_stage = summary.stages[1].result
    assert ppo_stage.config.features == features
    assert summary.artifacts.model is not None
    policy = load_model(summary.artifacts.model).policy
    extractor = policy.features_extractor
    destinations = features == "chess_cnn_destinations"
    assert extractor.attacks and extractor.checks == extractor.destinations == destinations
    assert extractor.convolutions[0].in_channels == (17 if destinations else 14)
    assert (type(policy.action_net) is DestinationActionHead) == destinations


def test_a_bc_stage_below_its_threshold_fails_the_run_before_ppo(tmp_path: Path) -> None:
    summary = anneal(TINY, bc_accuracy_threshold=1.0, out_dir=str(tmp_path))
    assert summary.status == "FAIL"
    assert [stage.mode for stage in summary.stages] == ["bc"]
    assert summary.stages[0].flags == ("accuracy_below_threshold",)
    assert summary.final_evaluation is None
    assert not (tmp_path / "stage-1-ppo").exists()


def _collapsing_ppo(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``run_ppo`` replaced by one that scrambles the weights and scores 0: a bad stage."""
    real = training.ppo.run_ppo
    models: list[Any] = []

    def collapse(config: PPOConfig, env: Any = None) -> training.ppo.PPORun:
        run = real(config, env)
        with torch.no_grad():
            for parameter in run.model.policy.parameters():
                parameter.add_(1.0)
        lost = ColorResult(games=1, wins=0, draws=0, losses=1)
        evaluation = EvaluationResult.from_counts(
            opponent="random", seed=config.seed, white=lost, black=lost, mean_plies=10,
            illegal_actions=0, checkmates=0, terminations={"checkmate": 2},
        )  # fmt: skip
        run.result = run.result.model_copy(update={"evaluation": evaluation})
        models.append(run.model)
        return run

    monkeypatch.setattr(training.ppo, "run_ppo", collapse)
    return models


def test_a_score_drop_holds_and_rolls_back_to_the_start_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _collapsing_ppo(monkeypatch)
    summary = anneal(TINY, score_tolerance=0.0, out_dir=str(tmp_path))
    assert summary.status == "HOLD"
    stage = summary.stages[1]
    assert stage.flags == ("score_drop",) and stage.rolled_back and not stage.passed
    kept = load_model(str(summary.artifacts.model))
    start = load_model(str(tmp_path / "stage-1-ppo" / "start.zip"))
    assert _same(_weights(kept), _weights(start))


def test_without_rollback_a_flagged_stage_keeps_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained = _collapsing_ppo(monkeypatch)
    summary = anneal(TINY, score_tolerance=0.0, rollback=False, out_dir=str(tmp_path))
    assert summary.status == "HOLD" and not summary.stages[1].rolled_back
    kept = load_model(str(summary.artifacts.model))
    assert _same(_weights(kept), _weights(trained[0]))


def test_loss_rise_is_flagged_only_between_ppo_stages() -> None:
    def ppo(loss: float) -> training.dto.PPOTrainingResult:
        return training.dto.PPOTrainingResult.model_construct(loss_total=loss, evaluation=None)

    config = TINY.model_copy(update={"loss_tolerance": 0.5})
    assert _flags(config, ppo(1.6), ppo(1.0)) == ("loss_rise",)
    assert _flags(config, ppo(1.4), ppo(1.0)) == ()
    assert _flags(config, ppo(9.0), None) == ()
    bc = training.dto.BCTrainingResult.model_construct(loss=0.1, evaluation=None)
    assert _flags(config, ppo(9.0), bc) == ()  # a BC loss is an NLL: not comparable
