"""``python -m chess_env arena``: the command line of ``chess_env.arena.run``.

stdout gets the leaderboard (markdown; ``--json`` prints the ``ArenaResult`` instead); the
progress bar and the paths written go to stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from chess_env.arena.schedule import DEFAULT_LADDER, DEFAULT_MAX_PLIES

if TYPE_CHECKING:
    from chess_env.arena.runner import Tournament

__all__ = ["add_arena_command"]

_EPILOG = """\
examples:
  python -m chess_env arena --players greedy alphabeta:1 --anchors random@0 \\
      --openings startpos --games-per-pair 4 --out runs/arena-small
  python -m chess_env arena --format gauntlet --players runs/demo/model.zip \\
      --anchors random greedy alphabeta:2 %s --games-per-pair 20 --workers 2 --out runs/gauntlet
  python -m chess_env arena --players "openai:gpt-4o-mini?prompt=game_arena" \\
      --price gpt-4o-mini=0.15/0.60 --games-per-pair 10 --out runs/llm

A rerun of the same command resumes: it plays only the games missing from OUT/games.jsonl
(and replays those an endpoint outage stopped). A changed configuration is refused unless
--fresh is given.
""" % " ".join(DEFAULT_LADDER)  # noqa: UP031 (the ladder's specs hold no % signs)


def add_arena_command(commands: argparse._SubParsersAction) -> None:
    """Register ``arena`` on ``python -m chess_env``'s subcommands."""
    from envkit.command_line import add_debug_flag

    arena = commands.add_parser(
        "arena",
        help="a tournament: anchored ratings with intervals and a scorecard per player",
        description="Play a round robin or a gauntlet between players and write OUT/result.json, "
        "games.jsonl, games.pgn, leaderboard.md and leaderboard.html.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_debug_flag(arena)
    arena.add_argument(
        "--players",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="the candidates (any player spec)",
    )
    arena.add_argument(
        "--anchors",
        nargs="+",
        metavar="SPEC",
        help="the ladder (default: Stockfish at UCI_Elo 1350, 1750, 2150, 50 ms a move); "
        "stockfish?elo=E is pinned at E, SPEC@RATING at RATING, others are rated; "
        "'none' for no anchors",
    )
    arena.add_argument("--format", choices=("round-robin", "gauntlet"), default="round-robin")
    arena.add_argument(
        "--games-per-pair",
        type=int,
        default=None,
        metavar="N",
        help="even (default: every opening of the suite with both colours)",
    )
    arena.add_argument(
        "--openings",
        default="default",
        metavar="FILE|default|startpos",
        help="the opening suite: the package's (default), the start position, "
        "or a .fen/.epd/.pgn file",
    )
    arena.add_argument(
        "--analyse-depth",
        type=int,
        default=None,
        metavar="N",
        help="rate every move with Stockfish at depth N (cached in OUT/evals.jsonl)",
    )
    arena.add_argument("--workers", type=int, default=1, help="processes for engine games")
    arena.add_argument(
        "--llm-concurrency", type=int, default=4, help="LLM games at once per endpoint (default 4)"
    )
    arena.add_argument(
        "--max-plies",
        type=int,
        default=DEFAULT_MAX_PLIES,
        help=f"a game longer than this is a draw (default {DEFAULT_MAX_PLIES})",
    )
    arena.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN/OUT",
        help="dollars per million prompt/completion tokens of a model",
    )
    arena.add_argument("--bootstrap", type=int, default=1000, help="resamples for the intervals")
    arena.add_argument(
        "--prior-draws",
        type=float,
        default=0.1,
        help="virtual draws per pairing that met, so a perfect score stays finite (0.1)",
    )
    arena.add_argument("--seed", type=int, default=0)
    arena.add_argument("--out", required=True, metavar="DIR", help="where the results go")
    arena.add_argument(
        "--fresh", action="store_true", help="discard the games already in OUT and start over"
    )
    arena.add_argument("--json", action="store_true", help="print result.json instead")
    arena.add_argument("--quiet", action="store_true", help="no progress bar")
    arena.set_defaults(run=_arena)


def _arena(args: argparse.Namespace) -> int:
    from chess_env.arena.report import leaderboard_markdown
    from chess_env.errors import StockfishNotFoundError
    from envkit.command_line import UsageError

    anchors = None if args.anchors is None else [a for a in args.anchors if a != "none"]
    try:
        tournament = _prepare(args, anchors)
    except (ValueError, StockfishNotFoundError) as error:  # all before the first game
        raise UsageError(str(error)) from error
    result = tournament.play()
    print(result.model_dump_json(indent=2) if args.json else leaderboard_markdown(result))
    for name in ("result.json", "games.jsonl", "games.pgn", "leaderboard.md", "leaderboard.html"):
        print(f"wrote {args.out}/{name}", file=sys.stderr)
    return 0


def _prepare(args: argparse.Namespace, anchors: list[str] | None) -> Tournament:
    from chess_env.arena.runner import prepare
    from envkit.cli import parse_price

    return prepare(
        args.players,
        anchors=anchors,
        format=args.format,
        games_per_pair=args.games_per_pair,
        openings=args.openings,
        analyse_depth=args.analyse_depth,
        workers=args.workers,
        seed=args.seed,
        out=args.out,
        fresh=args.fresh,
        max_plies=args.max_plies,
        llm_concurrency=args.llm_concurrency,
        prices=dict(parse_price(text) for text in args.price),
        bootstrap=args.bootstrap,
        prior_draws=args.prior_draws,
        progress=not args.quiet,
    )
