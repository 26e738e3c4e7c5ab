"""``python -m chess_env``: play a demo game between built-in players (``demo``, the default)."""

from __future__ import annotations

import argparse
import sys

from chess_env.demo import main as demo_main
from chess_env.opponents import OPPONENT_NAMES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m chess_env", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser("demo", help="play a game and print the board, PGN and outcome")
    for side, default in (("white", "greedy"), ("black", "random")):
        demo.add_argument(f"--{side}", choices=OPPONENT_NAMES, default=default)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--max-plies", type=int, default=200, help="0 for no cap")
    args = parser.parse_args((sys.argv[1:] if argv is None else argv) or ["demo"])
    demo_main(args.white, args.black, args.seed, args.max_plies or None)


if __name__ == "__main__":
    main()
