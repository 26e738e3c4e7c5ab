"""How well Stockfish's ``UCI_Elo`` works as a rating scale at the arena's move time.

Stockfish calibrated ``UCI_Elo`` at 60 s + 0.6 s a game, anchored to the CCRL 40/4 list; the
arena gives each move a fixed ``movetime`` (50 ms by default), so the scale it anchors to is
approximate. This measures how far: a round robin of Stockfish at five ``UCI_Elo`` levels,
only the lowest pinned, and the other four fitted (Bradley-Terry, bootstrap intervals). If the
nominal scale held at this move time, every fitted gap would equal the nominal gap.

    python -m benchmarks.arena_ladder [--games-per-pair 20] [--workers 2] [--movetime 0.05]

It writes its arena under ``runs/arena-ladder`` (a rerun resumes) and prints the table.
"""

from __future__ import annotations

import argparse

from benchmarks.machine import machine_line
from chess_env.arena import run

LEVELS = (1350, 1550, 1750, 1950, 2150)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games-per-pair", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--movetime", type=float, default=0.05)
    parser.add_argument("--out", default="runs/arena-ladder")
    args = parser.parse_args()

    specs = [f"stockfish?elo={elo}&movetime={args.movetime:g}" for elo in LEVELS]
    result = run(
        specs[1:],
        anchors=[f"{specs[0]}@{LEVELS[0]}"],
        games_per_pair=args.games_per_pair,
        workers=args.workers,
        out=args.out,
    )
    cards = {card.name: card for card in result.players}
    print(f"{machine_line()}; {result.games} games, {args.movetime:g} s a move")
    print(f"pinned: {specs[0]} at {LEVELS[0]}\n")
    print("| UCI_Elo | fitted (95%) | fitted - nominal | score |")
    print("|---:|---:|---:|---:|")
    for elo, spec in zip(LEVELS, specs, strict=True):
        card = cards[spec]
        rating, low, high = card.rating or 0.0, card.rating_low or 0.0, card.rating_high or 0.0
        print(
            f"| {elo} | {rating:.0f} [{low:.0f}, {high:.0f}] | {rating - elo:+.0f} | "
            f"{card.points:g}/{card.games} |"
        )
    print(f"\n{result.wall_seconds:.0f} s of wall time, {result.cpu_seconds:.0f} s of CPU time")


if __name__ == "__main__":
    main()
