"""``python -m multiagent eval``: the command line of ``multiagent.evaluation.evaluate``.

stdout gets the leaderboard (markdown; ``--json`` prints ``result.json`` instead); the progress
bar and the paths written go to stderr. Every name and spec is checked before the first episode,
so a typo exits 2 at once with one line naming it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from envkit.append_log import ConfigChangedError
from envkit.cli import parse_price
from envkit.command_line import UsageError, add_debug_flag
from multiagent.evaluation.conditions import OBSERVABILITY_CONDITIONS

__all__ = ["add_eval_command", "run_eval", "split_background"]

EPILOG = """\
examples:
  python -m multiagent eval --world commons \\
      --focal scripted:multiagent.worlds.commons:sustainable --episodes 30 --out runs/commons
  python -m multiagent eval --world forage --scenario visitor --focal random noop \\
      --observability configured full --episodes 20 --out runs/forage-voi
  python -m multiagent eval --world commons --scenario resident \\
      --focal "openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1" \\
      --price gpt-4o-mini=0.15/0.60 --max-cost 2 --replay-cache runs/cache --out runs/llm

A rerun of the same command resumes: it plays only the episodes missing from OUT/episodes.jsonl.
A changed configuration is refused unless --fresh is given.
"""


def add_eval_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``eval`` on ``python -m multiagent``'s subcommands."""
    parser = commands.add_parser(
        "eval",
        help="play a world's scenarios with the players under test; leaderboard with intervals",
        description="Write OUT/result.json, episodes.jsonl, logs/, leaderboard.md and "
        "leaderboard.html.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_debug_flag(parser)
    parser.add_argument("--world", required=True, help="a built-in world or a YAML file")
    parser.add_argument(
        "--scenario",
        nargs="+",
        metavar="NAME",
        help="scenarios to play (default: all the world declares)",
    )
    parser.add_argument(
        "--focal", nargs="+", required=True, metavar="SPEC", help="the players under test"
    )
    parser.add_argument(
        "--background",
        nargs="+",
        default=[],
        metavar="[SEAT|ROLE=]SPEC",
        help="replace the scenarios' background players (a bare SPEC fills every background seat)",
    )
    parser.add_argument(
        "--background-set", metavar="NAME", help="play against this held-out background set"
    )
    parser.add_argument("--episodes", type=int, default=10, help="per scenario, player, condition")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--observability",
        nargs="+",
        default=["configured"],
        choices=OBSERVABILITY_CONDITIONS,
        help="conditions: the configured matrix, everything exactly, or nothing but oneself",
    )
    parser.add_argument(
        "--noise-scale",
        nargs="+",
        type=float,
        default=[1.0],
        metavar="X",
        help="conditions: the configured noise multiplied by each X",
    )
    parser.add_argument(
        "--error-allowance",
        type=int,
        default=3,
        help="refused actions a seat may make per episode before it forfeits (3)",
    )
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="do not play random and the scenarios' strong baselines (no normalised score)",
    )
    parser.add_argument(
        "--llm-concurrency", type=int, default=4, metavar="K", help="LLM requests at once (4)"
    )
    parser.add_argument(
        "--price",
        nargs="+",
        default=[],
        metavar="MODEL=IN/OUT",
        help="dollars per million prompt/completion tokens of a model",
    )
    parser.add_argument("--max-cost", type=float, metavar="USD", help="stop past this LLM cost")
    parser.add_argument(
        "--replay-cache", metavar="DIR", help="answer repeated LLM requests from DIR, and store new"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="where the results go")
    parser.add_argument("--fresh", action="store_true", help="discard the episodes already in OUT")
    parser.add_argument("--json", action="store_true", help="print result.json instead")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def split_background(texts: Sequence[str]) -> dict[str, str]:
    """``--background`` values as seat/role -> spec (``"*"`` for a bare spec).

    A value is ``KEY=SPEC`` when the part before its first ``=`` holds no ``:`` or ``?`` (a spec
    such as ``openai:m?base_url=...`` holds ``=`` only after them); the key must then be a seat
    or a role of the world, which ``EvalRun.build`` checks.

    Example:
        >>> split_background(["fisher=random", "openai:m?temperature=0"])
        {'fisher': 'random', '*': 'openai:m?temperature=0'}
    """
    overrides: dict[str, str] = {}
    for text in texts:
        key, equals, spec = text.partition("=")
        if not equals or ":" in key or "?" in key:
            key, spec = "*", text
        if key in overrides:
            raise ValueError(f"--background: {key!r} is given twice")
        overrides[key] = spec
    return overrides


def run_eval(args: argparse.Namespace) -> int:
    """Run ``eval`` as parsed; its exit status."""
    from multiagent.evaluation.leaderboard import leaderboard_markdown
    from multiagent.evaluation.runner import RESULT_FILE, EvalRun

    try:
        for name, value in (("--episodes", args.episodes), ("--llm-concurrency",
                            args.llm_concurrency)):  # fmt: skip
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if args.error_allowance < 0:
            raise ValueError(f"--error-allowance must be >= 0, got {args.error_allowance}")
        run = EvalRun.build(
            args.world,
            focal=args.focal,
            scenarios=args.scenario,
            background=split_background(args.background),
            background_set=args.background_set,
            episodes=args.episodes,
            seed=args.seed,
            observability=args.observability,
            noise_scales=args.noise_scale,
            error_allowance=args.error_allowance,
            baselines=not args.no_baselines,
        )
        prices = dict(parse_price(text) for text in args.price)
    except ValueError as error:  # all before the first episode
        raise UsageError(str(error)) from error
    try:
        result = run.play(
            args.out,
            llm_concurrency=args.llm_concurrency,
            prices=prices,
            max_cost=args.max_cost,
            replay_cache=args.replay_cache,
            fresh=args.fresh,
            progress=not args.quiet,
        )
    except ConfigChangedError as error:  # OUT holds another run: refused before any episode
        raise UsageError(str(error)) from error
    print(result.model_dump_json(indent=2) if args.json else leaderboard_markdown(result))
    for name in (RESULT_FILE, "episodes.jsonl", "logs/", "leaderboard.md", "leaderboard.html"):
        print(f"wrote {args.out}/{name}", file=sys.stderr)
    return 0
