"""Rich tables of results, for people: ``print_summary`` (an anneal) and ``evaluation_row``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from training.dto import AnnealSummary, EvaluationResult

__all__ = ["evaluation_row", "print_summary"]


def evaluation_row(evaluation: EvaluationResult | None) -> list[str]:
    """W/D/L, the score with its 95% interval, and the checkmate rate."""
    if evaluation is None:
        return ["-", "-", "-"]
    return [
        f"{evaluation.wins}/{evaluation.draws}/{evaluation.losses}",
        f"{evaluation.score:.3f} [{evaluation.score_low:.3f}, {evaluation.score_high:.3f}]",
        f"{evaluation.checkmate_rate:.1%}",
    ]


def print_summary(summary: AnnealSummary, console: Console | None = None) -> None:
    """The stages, the final match and where the artefacts are."""
    console = console or Console()
    stages = Table(title=f"Anneal: {summary.status} in {summary.duration_sec:.0f} s")
    for column in ("stage", "mode", "key metric", "W/D/L", "score [95%]", "mates", "verdict"):
        stages.add_column(column)
    for stage in summary.stages:
        key = (
            f"loss {stage.metrics['loss_total'] or float('nan'):.3f}"
            if stage.mode == "ppo"
            else f"val_acc {stage.metrics['val_accuracy']:.3f}"  # bc and dagger
        )
        verdict = "pass" if stage.passed else ", ".join(stage.flags)
        if stage.rolled_back:
            verdict += " (rolled back)"
        row = evaluation_row(stage.result.evaluation)
        stages.add_row(str(stage.cycle), stage.mode, key, *row, verdict)
    console.print(stages)
    final = summary.final_evaluation
    if final is not None:
        table = Table(title=f"Final: {final.games} games against {final.opponent}")
        for column in ("W/D/L", "score [95%]", "mates", "mean plies", "endings"):
            table.add_column(column)
        endings = ", ".join(f"{name} {count}" for name, count in final.terminations.items())
        table.add_row(*evaluation_row(final), f"{final.mean_plies:.0f}", endings)
        console.print(table)
    if summary.platform:
        console.print(", ".join(f"{key} {value}" for key, value in summary.platform.items()))
    baseline = summary.baselines.get("random_policy_score")
    if baseline is not None:
        console.print(f"A random policy scores {baseline:.3f} against the same opponent.")
    for label, path in (
        ("learning curve", summary.artifacts.curve),
        ("model", summary.artifacts.model),
        ("summary", summary.artifacts.result),
        ("games", summary.artifacts.games_pgn),
    ):
        if path:
            console.print(f"{label}: {path}")
