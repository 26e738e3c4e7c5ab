"""``python -m training COMMAND [--config FILE.yaml] [--set KEY=VALUE ...] [--out DIR] [--debug]``.

Commands: ``ppo``, ``bc``, ``anneal``, ``eval``, ``demo`` and ``rllib``; ``python -m training
COMMAND --help`` lists every ``--set`` key of its config with its type and default (nested keys
dotted: ``ppo.total_timesteps``), and a YAML ``--config`` file holds the same keys.

What a command promises:
- stdout carries the result only: the result DTO as JSON (``json.loads`` reads it) for ``ppo``,
  ``bc``, ``anneal``, ``eval`` and ``rllib``; ``demo`` prints a summary table instead. Progress
  bars and logs go to stderr.
- The artefacts (the model, the result JSON, the curve PNG and the games' PGN where they apply)
  go to ``--out``, else the config's ``out_dir``, else a new ``runs/<command>-<time>``;
  ``--set out_dir=null`` writes none.
- Exit status 0 on success; 1 when the run failed: an anneal that ends FAIL (a BC stage below
  its accuracy threshold) or an error during the run; 2 when the command cannot run as asked: an
  unknown command or key, a value it cannot use, an env it cannot train, a missing extra. An
  anneal that ends HOLD exits 0 with a warning on stderr: a stage was flagged (and, with
  ``rollback``, undone), the run finished and kept a model; its JSON says HOLD and why.
- An error is one line on stderr with a hint; ``--debug`` prints the traceback before it.

``demo`` is the anneal of ``training/configs/demo.yaml`` (BC from the expert, then PPO, then 200
games against the random player). ``rllib`` runs PPO on Ray RLlib (``training.rllib``; the
``distributed`` extra): ``--env``, ``--num-env-runners``, ``--iterations`` and ``--address auto``
to join a running Ray cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

from envkit.command_line import EXIT_FAILURE, EXIT_OK, add_debug_flag, error_line, run_command
from training import MODULE_EXTRAS
from training.config import (
    AUTO,
    CONFIG_KINDS,
    AnnealConfig,
    BCConfig,
    PPOConfig,
    config_keys,
    load_training_config,
    resolve_out_dir,
)
from training.rllib.cli import RLLIB_FLAGS, add_rllib_arguments, run_rllib_command
from training.rllib.config import RLlibConfig

__all__ = ["main"]

PROG = "python -m training"
COMMANDS = {
    "ppo": "Train PPO, or MaskablePPO where the env masks actions (training.train_ppo).",
    "bc": "Behaviour cloning from an expert's labelled positions (training.train_bc).",
    "anneal": "BC, DAgger and PPO stages in order, each checked before the next "
    "(training.anneal). Exit status 1 when it ends FAIL.",
    "eval": "A saved model (.zip) or a built-in player in a seeded match (training.evaluate).",
    "demo": "The anneal of training/configs/demo.yaml, with a summary table on stdout; the "
    "defaults below are that file's.",
    "rllib": "PPO on Ray RLlib, locally or on a cluster (the distributed extra).",
}
RLLIB_OPTIONS = tuple("--" + flag.replace("_", "-") for flag in RLLIB_FLAGS)


def demo_config_path() -> Path:
    """The packaged demo config."""
    return Path(str(resources.files("training") / "configs" / "demo.yaml"))


def _config_kind(command: str) -> str:
    return "anneal" if command == "demo" else command


def _keys_help(command: str) -> str:
    """The epilog of a command's ``--help``: every config key, its type and default."""
    if command == "rllib":
        keys = config_keys(RLlibConfig)
    else:
        kind = _config_kind(command)
        demo = (
            load_training_config(kind, demo_config_path()).model_dump()
            if command == "demo"
            else None
        )
        keys = config_keys(CONFIG_KINDS[kind], demo)
    lines = [
        textwrap.fill(str(key), width=100, initial_indent="  ", subsequent_indent="      ")
        for key in keys
    ]
    return "config keys (--set KEY=VALUE; a --config YAML file holds the same keys):\n" + "\n".join(
        lines
    )


def _common_arguments() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, help="a YAML file of the command's config")
    common.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (listed below; the value is read as YAML)",
    )
    common.add_argument("--out", type=Path, help="artefacts folder (default runs/<command>-<time>)")
    add_debug_flag(common)
    return common


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and each command's sub-parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _common_arguments()
    subs = {}
    for name, summary in COMMANDS.items():
        subs[name] = commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=_keys_help(name),
            parents=[common],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    add_rllib_arguments(subs["rllib"])
    return parser, subs


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The arguments; an unknown one exits 2 naming its command (rllib's flags: rllib only)."""
    parser, subs = _parsers()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        if any(token.partition("=")[0] in RLLIB_OPTIONS for token in unknown):
            subs[args.command].error(f"{', '.join(RLLIB_OPTIONS)} are for rllib only")
        subs[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run a command; its exit status (see the module docstring)."""
    args = _parse(argv)
    prog = f"{PROG} {args.command}"
    return run_command(
        lambda: _command(args, prog),
        prog=prog,
        debug=args.debug,
        usage_errors=(ValueError, FileNotFoundError),
        usage_hint=f"{prog} --help lists the keys",
        extras=MODULE_EXTRAS,
    )


def _command(args: argparse.Namespace, prog: str) -> int:
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the result's alone
        result = _run(args)
    if args.command == "demo":
        from training.report import print_summary

        print_summary(result)
    else:
        print(result.model_dump_json(indent=2))
    return _anneal_status(result, prog) if args.command in ("anneal", "demo") else EXIT_OK


def _run(args: argparse.Namespace) -> Any:
    if args.command == "rllib":
        return run_rllib_command(args, args.out or Path(str(resolve_out_dir(AUTO, "rllib"))))
    kind = _config_kind(args.command)
    path = args.config or (demo_config_path() if args.command == "demo" else None)
    config = load_training_config(kind, path, args.overrides)
    out_dir = str(args.out) if args.out else resolve_out_dir(config.out_dir, args.command)
    config = config.model_copy(update={"out_dir": out_dir})
    if isinstance(config, PPOConfig):
        from training.ppo import train_ppo

        return train_ppo(config=config)
    if isinstance(config, BCConfig):
        from training.bc import train_bc

        return train_bc(config)
    if isinstance(config, AnnealConfig):
        from training.annealing import anneal

        return anneal(config)
    from training.commands import run_eval

    return run_eval(config)


def _anneal_status(summary: Any, prog: str) -> int:
    """1 for FAIL; 0 for PASS, and for HOLD with a warning naming the flagged stages."""
    flagged = "; ".join(
        f"stage {stage.cycle} ({stage.mode}): {', '.join(stage.flags)}"
        + (" (rolled back)" if stage.rolled_back else "")
        for stage in summary.stages
        if not stage.passed
    )
    if summary.status == "FAIL":
        print(error_line(prog, f"the anneal ended FAIL at {flagged}"), file=sys.stderr)
        return EXIT_FAILURE
    if summary.status == "HOLD":
        print(f"{prog}: warning: the anneal ended HOLD at {flagged}", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
