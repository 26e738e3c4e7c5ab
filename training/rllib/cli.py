"""``python -m training rllib``: the command's flags and its run, kept out of ``__main__``.

``add_rllib_arguments(parser)`` adds ``--env``, ``--num-env-runners``, ``--iterations`` and
``--address``; ``run_rllib_command(args, out)`` builds the ``RLlibConfig`` (YAML ``--config``,
then the flags, then ``--set``), trains, writes ``result.json`` and the RLlib checkpoint into
``out`` and prints the result DTO as JSON. Exit status 2 with a one-line ``error:`` for a bad
config, a missing ray or a cluster it cannot join.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from training.config import ConfigError
from training.rllib.config import RLlibConfig, load_rllib_config
from training.rllib.envs import ENV_NAMES

__all__ = ["RLLIB_FLAGS", "add_rllib_arguments", "run_rllib_command"]

RLLIB_FLAGS = ("env", "num_env_runners", "iterations", "address")


def add_rllib_arguments(parser: argparse.ArgumentParser) -> None:
    """The rllib command's flags (each also settable as ``--set field=value``)."""
    group = parser.add_argument_group(
        "rllib", "Ray RLlib PPO (python -m training rllib; needs the distributed extra)"
    )
    group.add_argument("--env", help=f"one of {', '.join(ENV_NAMES)}")
    group.add_argument(
        "--num-env-runners", type=int, help="remote sampling actors (0: sample in this process)"
    )
    group.add_argument("--iterations", type=int, help="training iterations")
    group.add_argument(
        "--address",
        help="join a running Ray cluster ('auto': the one `ray start` made on this machine); "
        "default: start a local Ray for the run",
    )


def run_rllib_command(args: argparse.Namespace, out: Path) -> int:
    """Run the rllib command; 0 on success, 2 with an ``error:`` line on stderr otherwise."""
    fields = {flag: getattr(args, flag) for flag in RLLIB_FLAGS if getattr(args, flag) is not None}
    try:
        config = load_rllib_config(args.config, args.overrides, **fields)
        if config.checkpoint_dir is None:  # like the other commands, keep the model in --out
            data = {**config.model_dump(), "checkpoint_dir": str(out / "checkpoint")}
            config = RLlibConfig.model_validate(data)
        from training.rllib.run import train_rllib

        result = train_rllib(config)
    except (ConfigError, ConnectionError, ImportError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    text = result.model_dump_json(indent=2)
    (out / "result.json").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0
