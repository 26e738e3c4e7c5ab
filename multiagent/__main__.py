"""``python -m multiagent serve --world trade``: a world as an OpenEnv server (HTTP, WebSocket
and MCP), each session playing one agent's seat."""

from __future__ import annotations

import argparse
import sys

from envkit.cli import add_server_arguments, server_settings
from multiagent.worlds import WORLDS


def main(argv: list[str] | None = None) -> None:
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
    # Usage errors found after parsing name the serve command, as argparse's own do.
    serve.set_defaults(run=lambda args: _serve(args, serve))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    args.run(args)


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    settings = server_settings(args, parser)
    try:
        from multiagent.server import serve
    except ImportError as error:  # the server extra is not installed
        parser.exit(1, f"{parser.prog}: error: {error}; pip install 'polyarena[server]'\n")
    from multiagent.env import as_config

    try:
        config = as_config(args.world)  # a bad world is a usage error, not a traceback
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: error: --world {args.world}: {error}\n")
    serve(config, args.host, args.port, idle_timeout=args.idle_timeout, **settings)


if __name__ == "__main__":
    main()
