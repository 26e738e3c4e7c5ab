"""``python -m multiagent serve --world trade``: a world as an OpenEnv server (HTTP, WebSocket
and MCP), each session playing one agent's seat.

Exit status 2, with one line on stderr, when the server cannot start as asked: a bad flag, a
world that fails ``load_config`` (checked before anything is served), the server extra missing.
An error while serving exits 1, also in one line; ``--debug`` prints its traceback too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from envkit.cli import add_server_arguments, server_settings
from envkit.command_line import EXIT_OK, UsageError, add_debug_flag, run_command
from multiagent.worlds import WORLDS

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
    add_debug_flag(serve)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
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
        **settings,
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
