"""``anneal``: behaviour cloning, then DAgger rounds and PPO, each stage checked before the next.

- A BC stage passes when its validation accuracy reaches ``bc_accuracy_threshold``; otherwise
  the run stops there with status FAIL (PPO from a policy that never learned the expert's moves
  is what the anneal exists to avoid).
- A DAgger stage (``training.dagger``) or a PPO stage is compared with the stage before it, on
  the same seeded evaluation: a score drop
  larger than ``score_tolerance`` flags ``score_drop``, and, between two PPO stages, a relative
  rise of ``loss_total`` beyond ``loss_tolerance`` flags ``loss_rise`` (a BC loss is an NLL, not
  comparable with PPO's). A flagged stage sets the status to HOLD and, with ``rollback=True``,
  the model returns to the previous stage's checkpoint.
- PASS when every stage passed. The kept model plays ``final_eval_games`` games at the end.

Every stage writes its artefacts under ``<out_dir>/stage-<cycle>-<mode>/``, so a rollback reloads a
file, never a copy kept in memory. ``out_dir`` defaults to ``"auto"``: a new ``runs/anneal-<time>``
holding the kept model (PASS or HOLD; on FAIL the failed stage's model stays in its own folder),
the curve and ``summary.json``. With ``out_dir=None`` the stages use a temporary folder and
nothing is kept.
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from training.bc import bc_dataset, bc_model, train_bc
from training.config import AnnealConfig, BCConfig, resolve_out_dir
from training.curves import EpisodePoint, EvalPoint, plot_learning_curve
from training.dto import (
    AnnealStageResult,
    AnnealStatus,
    AnnealSummary,
    Artifacts,
    BCTrainingResult,
    EvaluationResult,
    PPOTrainingResult,
)
from training.evaluation import evaluate
from training.platform import platform_record
from training.sb3_models import load_model

if TYPE_CHECKING:
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    from training.datasets import BCDataset
    from training.ppo import PPORun

__all__ = ["anneal"]


@contextmanager
def _run_dir(out_dir: str | None) -> Iterator[Path]:
    if out_dir is not None:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="anneal-") as temporary:
        yield Path(temporary)


@dataclass
class _Curve:
    """The whole run on one time axis: PPO timesteps summed over stages, a BC stage at a point."""

    offset: int = 0
    episodes: list[EpisodePoint] = field(default_factory=list)
    evaluations: list[EvalPoint] = field(default_factory=list)
    stages: list[tuple[int, str]] = field(default_factory=list)

    def mark(self, cycle: int, mode: str) -> None:
        self.stages.append((self.offset, f"{cycle}: {mode}"))

    def add_evaluation(self, evaluation: EvaluationResult | None) -> None:
        if evaluation is not None:
            self.evaluations.append(
                EvalPoint(
                    self.offset, evaluation.score, evaluation.score_low, evaluation.score_high
                )
            )

    def add_run(self, run: PPORun) -> None:
        self.episodes += [
            point._replace(timesteps=point.timesteps + self.offset) for point in run.episodes
        ]
        self.evaluations += [
            point._replace(timesteps=point.timesteps + self.offset) for point in run.evaluations
        ]
        self.offset += run.result.total_timesteps


def cpu_seconds() -> float:
    """User + system CPU time of this process and its waited-for children, so worker processes
    count: the unit of the issue's training budget ("30 CPU-minutes")."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _score(result: BCTrainingResult | PPOTrainingResult) -> float | None:
    return result.evaluation.score if result.evaluation is not None else None


def anneal(config: AnnealConfig | None = None, **overrides: Any) -> AnnealSummary:
    """Run ``config.schedule`` (default: bc, ppo) on chess; see the module docstring.

    ``overrides`` replace top-level fields of the config, e.g. ``schedule=("bc", "ppo", "ppo")``
    or ``out_dir=None`` (no files; the default ``"auto"`` is a new ``runs/anneal-<time>``).
    """
    config = AnnealConfig.model_validate({**(config or AnnealConfig()).model_dump(), **overrides})
    config = config.model_copy(update={"out_dir": resolve_out_dir(config.out_dir, "anneal")})
    start, cpu_start = time.perf_counter(), cpu_seconds()
    with _run_dir(config.out_dir) as run:
        baselines = {
            "random_policy_score": evaluate(
                "random", config.eval_opponent, games=config.eval_games, seed=config.seed
            ).score
        }
        curve = _Curve()
        stages, model, status = _run_stages(config, run, curve)
        if any(not stage.passed for stage in stages):
            status = "FAIL" if status == "FAIL" else "HOLD"
        final = None
        if model is not None and status != "FAIL":
            final = _final(config, model, run)
            curve.add_evaluation(final)
        artifacts = _save(config, run, model if final is not None else None, curve)
        summary = AnnealSummary(
            status=status,
            stages=tuple(stages),
            baselines=baselines,
            final_evaluation=final,
            duration_sec=time.perf_counter() - start,
            cpu_sec=cpu_seconds() - cpu_start,
            artifacts=artifacts,
            platform=platform_record(),
            config=config,
        )
        if config.out_dir is not None:
            (run / "summary.json").write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    return summary


def _save(
    config: AnnealConfig, run: Path, model: PPO | MaskablePPO | None, curve: _Curve
) -> Artifacts:
    """The kept model and the curve in ``out_dir`` (nothing without one)."""
    if config.out_dir is None:
        return Artifacts()
    paths = {"directory": str(run), "result": str(run / "summary.json")}
    if model is not None:
        model.save(run / "model.zip")
        paths.update(model=str(run / "model.zip"), games_pgn=str(run / "final.pgn"))
    if curve.episodes or curve.evaluations:
        title = f"anneal {' -> '.join(config.schedule)} on chess"
        png = plot_learning_curve(
            curve.episodes,
            curve.evaluations,
            run / "curve.png",
            title,
            stages=curve.stages,
            eval_label=f"score vs {config.eval_opponent}",
        )
        paths["curve"] = str(png)
    return Artifacts.model_validate(paths)


@dataclass
class _State:
    """What the stages hand on: the model, the BC data, DAgger's aggregate, the last result."""

    model: PPO | MaskablePPO | None = None
    dataset: BCDataset | None = None
    aggregate: BCDataset | None = None
    previous: BCTrainingResult | PPOTrainingResult | None = None


def _run_stages(
    config: AnnealConfig, run: Path, curve: _Curve
) -> tuple[list[AnnealStageResult], PPO | MaskablePPO | None, AnnealStatus]:
    """The stages in order, the model kept at the end, and FAIL if a BC stage stopped the run."""
    stages: list[AnnealStageResult] = []
    state = _State()
    for cycle, mode in enumerate(config.schedule):
        folder = run / f"stage-{cycle}-{mode}"
        curve.mark(cycle, mode)
        result: BCTrainingResult | PPOTrainingResult
        if mode == "bc":
            result = _bc(config, folder, state)
            stage = _bc_stage(cycle, result, config.bc_accuracy_threshold)
            curve.add_evaluation(result.evaluation)
        else:
            result, stage = _judged_stage(config, cycle, folder, state, curve)
        stages.append(stage)
        if mode == "bc" and not stage.passed:
            return stages, state.model, "FAIL"
        if not stage.rolled_back:  # after a rollback, the next stage compares with the model
            state.previous = result  # it starts from, which the previous result describes
    return stages, state.model, "PASS"


def _stage_bc_config(config: AnnealConfig, folder: Path) -> BCConfig:
    return config.bc.model_copy(
        update={
            "out_dir": str(folder),
            "eval_opponent": config.eval_opponent,
            "eval_games": config.eval_games,
            "seed": config.seed,
        }
    )


def _bc(config: AnnealConfig, folder: Path, state: _State) -> BCTrainingResult:
    bc_config = _stage_bc_config(config, folder)
    if state.model is None:
        state.model = bc_model(bc_config)
    if state.dataset is None:
        state.dataset = bc_dataset(bc_config)  # generated once, shared by every BC stage
    return train_bc(bc_config, dataset=state.dataset, model=state.model)


def _judged_stage(
    config: AnnealConfig, cycle: int, folder: Path, state: _State, curve: _Curve
) -> tuple[BCTrainingResult | PPOTrainingResult, AnnealStageResult]:
    """A DAgger or PPO stage from the current model (saved first, so a rollback can reload it),
    judged against the stage before it."""
    folder.mkdir(parents=True, exist_ok=True)
    start_model = None
    if state.model is not None:
        start_model = folder / "start.zip"
        state.model.save(start_model)
    mode = config.schedule[cycle]
    result: BCTrainingResult | PPOTrainingResult
    if mode == "ppo":
        result = _ppo(config, folder, state, curve)
        metrics = {
            "score": _score(result),
            "loss_total": result.loss_total,
            "mean_episode_reward": result.mean_episode_reward,
            "approx_kl": result.approx_kl,
        }
    else:
        result, aggregate = _dagger(config, cycle, folder, state)
        curve.add_evaluation(result.evaluation)
        metrics = {
            "score": _score(result),
            "val_accuracy": result.val_accuracy,
            "positions": float(len(aggregate)),
        }
    flags = _flags(config, result, state.previous)
    rolled_back = bool(flags) and config.rollback and start_model is not None
    if rolled_back:
        state.model = load_model(str(start_model), device=config.ppo.device)
    stage = AnnealStageResult(
        cycle=cycle,
        mode=mode,
        metrics=metrics,
        threshold=config.score_tolerance,
        passed=not flags,
        flags=flags,
        rolled_back=rolled_back,
        result=result,
    )
    return result, stage


def _dagger(
    config: AnnealConfig, cycle: int, folder: Path, state: _State
) -> tuple[BCTrainingResult, BCDataset]:
    """A DAgger round on the model; its result and the aggregate, which ``state`` keeps too."""
    from training.dagger import dagger_round

    bc_config = _stage_bc_config(config, folder)
    if state.model is None:
        state.model = bc_model(bc_config)
    result, aggregate = dagger_round(
        state.model,
        config.dagger,
        bc_config,
        base=state.dataset,
        aggregate=state.aggregate,
        seed=config.seed + 1000 * (cycle + 1),  # each round reaches new positions
    )
    state.aggregate = aggregate
    return result, aggregate


def _ppo(config: AnnealConfig, folder: Path, state: _State, curve: _Curve) -> PPOTrainingResult:
    from training.ppo import ppo_config, run_ppo

    start = folder / "start.zip"
    features = config.bc.features if config.ppo.features == "auto" else config.ppo.features
    stage_config = ppo_config(
        config=config.ppo,
        features=features,  # the network BC trained, which PPO continues
        init_model=str(start) if start.exists() else None,
        out_dir=str(folder),
        eval_opponent=config.eval_opponent,
        eval_games=config.eval_games,
        seed=config.seed,
    )
    ppo_run = run_ppo(stage_config)
    curve.add_run(ppo_run)
    state.model = ppo_run.model
    return ppo_run.result


def _bc_stage(cycle: int, result: BCTrainingResult, threshold: float) -> AnnealStageResult:
    passed = result.val_accuracy >= threshold
    return AnnealStageResult(
        cycle=cycle,
        mode="bc",
        metrics={
            "accuracy": result.accuracy,
            "val_accuracy": result.val_accuracy,
            "loss": result.loss,
            "val_loss": result.val_loss,
            "score": _score(result),
        },
        threshold=threshold,
        passed=passed,
        flags=() if passed else ("accuracy_below_threshold",),
        result=result,
    )


def _flags(
    config: AnnealConfig,
    result: BCTrainingResult | PPOTrainingResult,
    previous: BCTrainingResult | PPOTrainingResult | None,
) -> tuple[str, ...]:
    """score_drop against the previous stage; loss_rise between two PPO stages."""
    if previous is None:
        return ()
    flags = []
    before, after = _score(previous), _score(result)
    if before is not None and after is not None and before - after > config.score_tolerance:
        flags.append("score_drop")
    if (
        config.loss_tolerance is not None
        and isinstance(previous, PPOTrainingResult)
        and isinstance(result, PPOTrainingResult)
        and previous.loss_total is not None
        and result.loss_total is not None
        and result.loss_total - previous.loss_total
        > config.loss_tolerance * abs(previous.loss_total)
    ):
        flags.append("loss_rise")
    return tuple(flags)


def _final(config: AnnealConfig, model: PPO | MaskablePPO, run: Path) -> EvaluationResult:
    """The kept model's match; seeded apart from the stage evaluations it was selected on."""
    return evaluate(
        model,
        config.eval_opponent,
        games=config.final_eval_games,
        seed=config.seed + 1,
        pgn_path=run / "final.pgn" if config.out_dir is not None else None,
        progress_bar=config.bc.progress_bar,
    )
