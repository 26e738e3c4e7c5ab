"""``python -m training rllib``: the command's flags and its run, kept out of ``__main__``.

``add_rllib_arguments(parser)`` adds ``--env``, ``--num-env-runners``, ``--iterations`` and
``--address``; ``run_rllib_command(args, out)`` builds the ``RLlibConfig`` (YAML ``--config``,
then the flags, then ``--set``), trains, writes ``result.json`` and the RLlib checkpoint into
``out`` and returns the result DTO (``__main__`` prints it). A bad config is a
``TrainingConfigError`` and a missing ray a ``MissingExtraError`` (both exit 2), a cluster it
cannot join a ``ConnectionError`` (exit 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envkit.command_line import MissingExtraError, did_you_mean
from training.config import TrainingConfigError, config_keys
from training.rllib.config import RLlibConfig, load_rllib_config
from training.rllib.dto import RLlibTrainingResult
from training.rllib.envs import ENV_NAMES
from training.rllib.run import INSTALL_HINT, RLlibUnavailableError, train_rllib

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


def run_rllib_command(args: argparse.Namespace, out: Path) -> RLlibTrainingResult:
    """Train as the flags say; ``result.json`` and the checkpoint (unless set) go into ``out``."""
    fields = {flag: getattr(args, flag) for flag in RLLIB_FLAGS if getattr(args, flag) is not None}
    _check_keys(args.overrides)
    config = load_rllib_config(args.config, args.overrides, **fields)
    if config.checkpoint_dir is None:  # like the other commands, keep the model in --out
        data = {**config.model_dump(), "checkpoint_dir": str(out / "checkpoint")}
        config = RLlibConfig.model_validate(data)
    try:
        result = train_rllib(config)
    except RLlibUnavailableError as error:
        cause = f" ({error.__cause__})" if error.__cause__ else ""
        raise MissingExtraError(
            f"Ray RLlib is not installed{cause}", "distributed", hint=INSTALL_HINT
        ) from error
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return result


def _check_keys(overrides: list[str]) -> None:
    """An unknown ``--set`` key is a ``TrainingConfigError`` naming the nearest keys (a mapping
    field's own keys, ``env_config.max_plies``, are the env's to judge)."""
    keys = {key.name: key.type for key in config_keys(RLlibConfig)}
    for override in overrides:
        key = override.partition("=")[0].strip()
        head = key.partition(".")[0]
        if key not in keys and keys.get(head) != "mapping":
            hint = did_you_mean(key, keys)
            raise TrainingConfigError(
                "; ".join(filter(None, [f"rllib config: {key}: unknown key", hint]))
            )
