"""``run_eval``: the ``eval`` command, a saved model (or any player) in a seeded match."""

from __future__ import annotations

from pathlib import Path

from training.config import EvalConfig, resolve_out_dir
from training.dto import EvaluationResult
from training.evaluation import evaluate

__all__ = ["run_eval"]


def run_eval(config: EvalConfig) -> EvaluationResult:
    """Play the match; unless ``out_dir`` is None, write ``result.json`` and ``games.pgn`` there
    (``"auto"``: a new ``runs/eval-<time>``)."""
    out_dir = resolve_out_dir(config.out_dir, "eval")
    out = Path(out_dir) if out_dir else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    result = evaluate(
        config.model,
        config.opponent,
        games=config.games,
        seed=config.seed,
        max_plies=config.max_plies,
        pgn_path=out / "games.pgn" if out is not None else None,
        progress_bar=config.progress_bar,
    )
    if out is not None:
        (out / "result.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    return result
