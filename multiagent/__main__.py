"""The world commands.

- ``python -m multiagent serve --world trade``: a world as an OpenEnv server (HTTP, WebSocket and
  MCP), each session playing one agent's seat.
- ``python -m multiagent validate FILE`` (or a built-in world's name): load a world and print what
  it holds (``--json``: a ``multiagent.summary.WorldSummary``), so an author sees at once whether
  the YAML says what was meant. Warnings raised while loading are ``prog: warning: ...`` lines.
- ``python -m multiagent run FILE --episodes N --players SEAT=SPEC ...``: play episodes with a
  player in every seat (``multiagent.players``; default ``random``) and print each seat's mean
  return and the episode lengths (``--json``: one ``multiagent.play.EpisodeOutcome`` per episode).
- ``python -m multiagent eval --world W --focal SPEC ... --episodes N --out DIR``: play the world's
  scenarios with the players under test and write a scored, resumable run
  (``multiagent.evaluation``): result.json, episodes.jsonl, logs/ and the leaderboards.

Exit status 2 when a command cannot run as asked: a bad flag, a missing file, a world that fails
``load_config`` (``serve`` checks it before anything is served; ``validate`` prints one line per
problem, each with its field path; ``run`` a bad seat or player spec too), the server extra
missing. An error while serving (or an endpoint failing during ``run``) exits 1, also in one
line; ``--debug`` prints its traceback too.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.cli import add_server_arguments, positive, server_settings
from envkit.command_line import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_debug_flag,
    error_line,
    run_command,
)
from multiagent.evaluation.command import add_eval_command, run_eval
from multiagent.run_command import add_run_parser
from multiagent.run_command import run as run_episodes
from multiagent.worlds import WORLDS

if TYPE_CHECKING:
    from multiagent.config import SimulationConfig

# The server extra's modules, so a missing one is named with the extra that installs it.
SERVER_MODULES = dict.fromkeys(("fastapi", "uvicorn", "websockets", "httptools"), "server")


def main(argv: list[str] | None = None) -> int:
    """Run the command; its exit status."""
    parser = argparse.ArgumentParser(prog="python -m multiagent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve a world over HTTP, WebSocket and MCP (OpenEnv's protocol)",
        description="Needs the server extra: pip install 'polyarena[server]'.",
    )
    serve.add_argument(
        "--world",
        default="trade",
        help=f"a built-in world ({', '.join(WORLDS)}) or a YAML file (default: trade)",
    )
    add_server_arguments(
        serve,
        sessions="sessions (seats played)",
        idle_default=600.0,
        idle_help="close HTTP sessions idle this long (default: 600)",
    )
    serve.add_argument(
        "--allow-client-seeds",
        action="store_true",
        help="take a seed from /reset (same seed, same episode) and show it in /state; by "
        "default each episode's seed is the server's secret and a client's seed is refused, "
        "since a client who knew it could replay the episode offline and see what its seat "
        "may not (the other agents' hidden variables, the values behind the noise)",
    )
    serve.add_argument(
        "--turn-timeout",
        type=positive(float),
        metavar="SECONDS",
        help="in an episode several clients play, how long a step waits for the other client "
        "seats' actions before it is refused with 409 turn_timeout (default: 30, the server "
        "module's TURN_TIMEOUT_S)",
    )
    add_debug_flag(serve)
    validate = _add_validate(commands)
    run = add_run_parser(commands)
    evaluation = add_eval_command(commands)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "eval":
        return run_command(lambda: run_eval(args), prog=evaluation.prog, debug=args.debug)
    if args.command == "run":
        return run_command(lambda: run_episodes(args), prog=run.prog, debug=args.debug)
    if args.command == "validate":
        return run_command(
            lambda: _validate(args, validate.prog), prog=validate.prog, debug=args.debug
        )
    settings = server_settings(args, serve)  # a bad flag exits 2 through argparse
    return run_command(
        lambda: _serve(args, settings),
        prog=serve.prog,
        debug=args.debug,
        extras=SERVER_MODULES,
    )


def _serve(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    from multiagent.env import as_config

    try:
        config = as_config(args.world)  # a world that cannot load never reaches the server
    except (OSError, ValueError) as error:
        raise UsageError(f"--world {args.world}: {error}") from error
    from multiagent.server import serve

    serve(
        config,
        args.host,
        args.port,
        client_seeds=args.allow_client_seeds,
        idle_timeout=args.idle_timeout,
        **({} if args.turn_timeout is None else {"turn_timeout": args.turn_timeout}),
        **settings,
    )
    return EXIT_OK


def _add_validate(commands: Any) -> argparse.ArgumentParser:
    validate: argparse.ArgumentParser = commands.add_parser(
        "validate",
        help="load a world YAML and summarise it, or list every problem with its field path",
        description="Exit status 0 when the world loads, 2 when it does not (or is missing).",
    )
    validate.add_argument(
        "world",
        metavar="FILE",
        help=f"a world YAML file, or a built-in world ({', '.join(WORLDS)})",
    )
    validate.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_debug_flag(validate)
    return validate


def _validate(args: argparse.Namespace, prog: str) -> int:
    from multiagent.config import load_config
    from multiagent.errors import WorldConfigError
    from multiagent.summary import summarize
    from multiagent.worlds import load_world

    source: str = args.world
    builtin = source in WORLDS and not Path(source).is_file()
    if not builtin and not Path(source).is_file():
        raise UsageError(f"{source}: no such file", f"the built-in worlds are {', '.join(WORLDS)}")
    try:
        config, problems = _load_reporting_warnings(
            lambda: load_world(source) if builtin else load_config(source), prog
        )
    except WorldConfigError as error:
        for line in str(error).splitlines():
            if line.strip():
                print(error_line(prog, f"{source}: {line.strip()}"), file=sys.stderr)
        return EXIT_USAGE
    summary = summarize(config, source, problems)
    print(summary.model_dump_json(indent=2) if args.json else summary.text())
    return EXIT_OK


def _load_reporting_warnings(
    load: Callable[[], SimulationConfig], prog: str
) -> tuple[SimulationConfig, list[str]]:
    """``load()``'s config and the ``UserWarning``s it raised, each printed as one stderr line;
    any other warning is passed on as Python would show it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = load()
    messages = []
    for warning in caught:
        if issubclass(warning.category, UserWarning):
            messages.append(str(warning.message))
            print(f"{prog}: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return config, messages


if __name__ == "__main__":
    sys.exit(main())
