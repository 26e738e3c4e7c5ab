"""What BC-then-PPO buys on chess: the demo's anneal against PPO alone with the same wall time.

Contenders, each finishing with the same seeded match against the random player:

- (a) the random player and (b) the greedy player (1-ply material): references that do not learn;
- (c) the anneal of ``training/configs/demo.yaml`` (``make demo``): BC from Stockfish depth 1
  (the built-in alpha-beta without Stockfish), then MaskablePPO;
- (d) MaskablePPO alone, from scratch, for as many timesteps as (c)'s PPO stage would run in
  (c)'s whole wall time (its measured steps/s times the anneal's duration): the same CPU budget.

The table gives the score with its Wilson 95% interval, W/D/L, mates, and wall time; then the
BC figures (dataset rate, validation accuracy). PettingZoo's own SB3 MaskablePPO chess tutorial
reports a 0.28 win rate against random; it is quoted, not run. ``--quick`` shrinks every budget
for a smoke run. Run: ``python -m benchmarks.training [--quick] [--games N]``.

``--strong`` measures the issue's target for the pure network instead: the anneal of
``training/configs/strong.yaml`` (BC from Stockfish depth 5, then DAgger rounds), a table of its
stages, the final 400 games against random next to the target (score >= 0.90, >= 80% of games won
by mate, no losses, within 30 CPU-minutes of training, children included), then the same network
against the greedy player and Stockfish at depth 1 and skill 0, and with ``OnePlyGuard`` on top
(reported apart, never mixed into the network's number), and how many of its mates in one the
network played in the target's match.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import chess.pgn

from benchmarks.machine import machine_line
from chess_env.core.encoding import encode_move
from chess_env.core.rules import ChessGame
from training.annealing import anneal
from training.config import AnnealConfig, load_training_config
from training.dto import AnnealSummary, EvaluationResult
from training.evaluation import evaluate
from training.ppo import train_ppo

QUICK = [
    "bc.positions=2000",
    "bc_accuracy_threshold=0.0",
    "bc.epochs=1",
    "ppo.total_timesteps=1024",
    "eval_games=10",
    "final_eval_games=20",
]


def row(name: str, evaluation: EvaluationResult, seconds: float | None) -> str:
    wall = f"{seconds:,.0f} s" if seconds is not None else "-"
    return (
        f"| {name} | {evaluation.score:.3f} [{evaluation.score_low:.3f}, "
        f"{evaluation.score_high:.3f}] | {evaluation.wins}/{evaluation.draws}/{evaluation.losses} "
        f"| {evaluation.checkmate_rate:.1%} | {evaluation.mean_plies:.0f} | {wall} |"
    )


def ppo_alone(config: AnnealConfig, budget_seconds: float, steps_per_sec: float, out: str) -> Any:
    timesteps = max(int(budget_seconds * steps_per_sec), config.ppo.n_steps)
    return train_ppo(
        config=config.ppo,
        total_timesteps=timesteps,
        eval_games=config.final_eval_games,
        eval_opponent=config.eval_opponent,
        seed=config.seed + 1,  # the anneal's final match is seeded seed + 1 too
        out_dir=out,
    )


STRONG_QUICK = [
    "schedule=[bc,dagger]",
    "bc.positions=2000",
    "bc.epochs=1",
    "bc_accuracy_threshold=0.0",
    "dagger.games=4",
    "eval_games=4",
    "final_eval_games=8",
]
TARGET_SCORE, TARGET_MATES, TARGET_CPU_MINUTES = 0.90, 0.80, 30.0


def wdl(evaluation: EvaluationResult) -> str:
    return f"{evaluation.wins}/{evaluation.draws}/{evaluation.losses}"


def stage_rows(summary: AnnealSummary) -> list[str]:
    """One row per stage: what it trained on and its evaluation match."""
    rows = [
        "| stage | measure | W/D/L | score | stalemates | repetitions |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for stage in summary.stages:
        evaluation = stage.result.evaluation
        if evaluation is None:
            continue
        metrics = stage.metrics
        measure = f"val top-1 {metrics['val_accuracy']:.3f}" if "val_accuracy" in metrics else ""
        if stage.mode == "dagger":
            measure += f", {int(metrics['positions'] or 0):,} positions"
        ends = evaluation.terminations
        repetitions = ends.get("threefold_repetition", 0) + ends.get("fivefold_repetition", 0)
        rows.append(
            f"| {stage.cycle}: {stage.mode} | {measure} | {wdl(evaluation)} | "
            f"{evaluation.score:.3f} | {ends.get('stalemate', 0)} | {repetitions} |"
        )
    return rows


@dataclass(frozen=True)
class MatesInOne:
    """How the network used its mates in one in a match (python-chess on the match's PGN)."""

    positions: int  # the network to move with a mate in one
    played: int  # of those, where it mated
    drawn_games: int
    drawn_passing_one: int  # drawn games where it had passed a mate in one by


def mates_in_one(pgn_path: str, opponent: str) -> MatesInOne:
    positions = played = drawn = passing = 0
    with open(pgn_path, encoding="utf-8") as pgn:
        while (record := chess.pgn.read_game(pgn)) is not None:
            network = record.headers["White"] != opponent
            game, had_one = ChessGame(record.board(), max_plies=None), False
            for move in record.mainline_moves():
                if game.board.turn == network and (mates := game.ending_actions().mating):
                    positions, had_one = positions + 1, True
                    played += encode_move(move, game.board.turn) in mates
                game.play(move)
            if record.headers["Result"] == "1/2-1/2":
                drawn, passing = drawn + 1, passing + had_one
    return MatesInOne(positions, played, drawn, passing)


def strong(games: int | None, quick: bool) -> None:
    """The issue's target for the pure network, measured end to end."""
    from chess_env.core.opponents import StockfishOpponent
    from training.guard import OnePlyGuard

    overrides = STRONG_QUICK if quick else []
    if games:
        overrides = [*overrides, f"final_eval_games={games}"]
    strong_yaml = Path(str(resources.files("training") / "configs" / "strong.yaml"))
    config = load_training_config("anneal", strong_yaml, overrides)
    assert isinstance(config, AnnealConfig)
    with tempfile.TemporaryDirectory(prefix="bench-strong-") as folder:
        summary = anneal(config, out_dir=f"{folder}/anneal")
        final = summary.final_evaluation
        if final is None:
            raise SystemExit(f"the anneal stopped with {summary.status}: {summary}")
        from training.sb3_models import load_model

        model = load_model(str(summary.artifacts.model))
        mates = mates_in_one(str(summary.artifacts.games_pgn), config.eval_opponent)
    seed, count = config.seed + 1, final.games
    others = {
        "greedy player": evaluate(model, "greedy", games=count // 2, seed=seed),
        "Stockfish depth 1, skill 0": evaluate(
            model, StockfishOpponent(depth=1, skill=0), games=count // 2, seed=seed
        ),
        "random, with OnePlyGuard": evaluate(OnePlyGuard(model), "random", games=count, seed=seed),
    }
    cpu_minutes = summary.cpu_sec / 60
    print(machine_line("torch", "stable-baselines3", "sb3-contrib", "chess"))
    print()
    print("\n".join(stage_rows(summary)))
    print()
    print("| the network (argmax over legal moves) against | games | W/D/L | score [95%] | mates |")
    print("|---|---:|---:|---:|---:|")
    for name, evaluation in {"random (the target's match)": final, **others}.items():
        print(
            f"| {name} | {evaluation.games} | {wdl(evaluation)} "
            f"| {evaluation.score:.3f} [{evaluation.score_low:.3f}, {evaluation.score_high:.3f}] "
            f"| {evaluation.checkmates / evaluation.games:.1%} |"
        )
    print(
        f"Mates in one in the target's match: the network had {mates.positions} and played "
        f"{mates.played}; {mates.drawn_passing_one} of its {mates.drawn_games} draws passed one."
    )
    print()
    checks = {
        f"score >= {TARGET_SCORE}": final.score >= TARGET_SCORE,
        f"won by mate >= {TARGET_MATES:.0%}": final.checkmates / final.games >= TARGET_MATES,
        "no losses": final.losses == 0,
        f"<= {TARGET_CPU_MINUTES:.0f} CPU-minutes ({cpu_minutes:.1f})": cpu_minutes
        <= TARGET_CPU_MINUTES,
    }
    print("target: " + ", ".join(f"{name} {'yes' if ok else 'NO'}" for name, ok in checks.items()))
    print(
        f"anneal {summary.status}: {summary.duration_sec / 60:.1f} min wall, {cpu_minutes:.1f} "
        f"CPU-minutes ({time.strftime('%Y-%m-%d')})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny budgets, for a smoke run")
    parser.add_argument("--games", type=int, help="games of every final match (default: 200)")
    parser.add_argument("--strong", action="store_true", help="the pure network's target run")
    args = parser.parse_args(argv)
    if args.strong:
        strong(args.games, args.quick)
        return
    from training.__main__ import demo_config_path

    overrides = QUICK if args.quick else []
    if args.games:
        overrides = [*overrides, f"final_eval_games={args.games}"]
    config = load_training_config("anneal", demo_config_path(), overrides)
    assert isinstance(config, AnnealConfig)
    games, seed = config.final_eval_games, config.seed + 1
    references = {
        name: evaluate(name, config.eval_opponent, games=games, seed=seed)
        for name in ("random", "greedy")
    }
    with tempfile.TemporaryDirectory(prefix="bench-training-") as folder:
        summary = anneal(config, out_dir=f"{folder}/anneal")
        ppo_stage = next((s.result for s in summary.stages if s.mode == "ppo"), None)
        if ppo_stage is None:
            raise SystemExit(f"the anneal stopped with {summary.status} before PPO: {summary}")
        alone = ppo_alone(config, summary.duration_sec, ppo_stage.steps_per_sec, f"{folder}/ppo")
    bc_stage = next(s.result for s in summary.stages if s.mode == "bc")
    print(machine_line("torch", "stable-baselines3", "sb3-contrib", "chess"))
    print()
    print(f"Final match: {games} games against {config.eval_opponent}, seed {seed}.")
    print()
    print("| contender | score [95%] | W/D/L | mates | mean plies | wall time |")
    print("|---|---:|---:|---:|---:|---:|")
    print(row("(a) random player", references["random"], None))
    print(row("(b) greedy player (1-ply)", references["greedy"], None))
    if summary.final_evaluation is not None:
        print(row(f"(c) anneal {summary.status}: BC + PPO", summary.final_evaluation,
                  summary.duration_sec))  # fmt: skip
    if alone.evaluation is not None:
        label = f"(d) MaskablePPO alone, {alone.total_timesteps:,} steps"
        print(row(label, alone.evaluation, alone.duration_sec))
    print()
    manifest = bc_stage.dataset
    print(
        f"BC: {manifest.positions:,} positions labelled by {manifest.expert}; "
        f"{bc_stage.epochs} epochs in {bc_stage.duration_sec:,.0f} s; "
        f"val top-1 {bc_stage.val_accuracy:.3f}, val NLL {bc_stage.val_loss:.3f}"
    )
    print(
        f"PPO stage: {ppo_stage.total_timesteps:,} steps at "
        f"{ppo_stage.steps_per_sec:,.0f} steps/s; anneal total {summary.duration_sec:,.0f} s "
        f"({time.strftime('%Y-%m-%d')})"
    )


if __name__ == "__main__":
    main()
