"""``python -m training ppo|bc|anneal|eval|demo|rllib [--config FILE.yaml] [--set key=value ...]``.

Each command validates its config (``training.config``), runs, writes an artefacts folder (the
model, the result JSON, curve PNG and evaluation PGN where they apply; ``--out``, default
``runs/<command>-<time>``) and prints the result DTO as JSON on stdout; progress bars go to
stderr. ``demo`` is the anneal of ``training/configs/demo.yaml`` (BC from the expert, then PPO,
then 200 games against the random player) with a summary table instead of the JSON. ``rllib``
runs PPO on Ray RLlib (``training.rllib``; the ``distributed`` extra): ``--env``,
``--num-env-runners``, ``--iterations`` and ``--address auto`` to join a running Ray cluster.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from training.config import ConfigError, load_config
from training.rllib.cli import RLLIB_FLAGS, add_rllib_arguments, run_rllib_command

__all__ = ["main"]

COMMANDS = ("ppo", "bc", "anneal", "eval", "demo", "rllib")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("--config", type=Path, help="a YAML file of the command's config")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (dotted for nested ones: ppo.total_timesteps=4096)",
    )
    parser.add_argument("--out", type=Path, help="artefacts folder (default runs/<command>-<time>)")
    add_rllib_arguments(parser)
    return parser


def demo_config_path() -> Path:
    """The packaged demo config."""
    return Path(str(resources.files("training") / "configs" / "demo.yaml"))


def _run(command: str, config_path: Path | None, overrides: list[str], out: Path) -> Any:
    kind = "anneal" if command == "demo" else command
    if command == "demo" and config_path is None:
        config_path = demo_config_path()
    config = load_config(kind, config_path, [*overrides, f"out_dir={out}"])
    if kind == "ppo":
        from training.ppo import train_ppo

        return train_ppo(config=config)
    if kind == "bc":
        from training.bc import train_bc

        return train_bc(config)
    if kind == "anneal":
        from training.annealing import anneal

        return anneal(config)
    from training.commands import run_eval

    return run_eval(config)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    out = args.out or Path("runs") / f"{args.command}-{datetime.now():%Y%m%d-%H%M%S}"
    if args.command == "rllib":
        return run_rllib_command(args, out)
    if any(getattr(args, flag) is not None for flag in RLLIB_FLAGS):
        parser.error("--env, --num-env-runners, --iterations and --address are for rllib only")
    try:
        result = _run(args.command, args.config, args.overrides, out)
    except (ConfigError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.command == "demo":
        from training.report import print_summary

        print_summary(result)
    else:
        print(result.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
