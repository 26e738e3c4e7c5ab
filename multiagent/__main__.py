"""``python -m multiagent serve --world trade``: a world as an OpenEnv server (HTTP, WebSocket
and MCP), each session playing one agent's seat."""

from __future__ import annotations

import argparse
import sys

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
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: local only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(run=_serve)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    args.run(args, parser)


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    try:
        from multiagent.server import serve
    except ImportError as error:  # the server extra is not installed
        parser.exit(1, f"{parser.prog} serve: error: {error}; pip install 'polyarena[server]'\n")
    from multiagent.env import as_config

    try:
        config = as_config(args.world)  # a bad world is a usage error, not a traceback
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog} serve: error: --world {args.world}: {error}\n")
    serve(config, args.host, args.port)


if __name__ == "__main__":
    main()
