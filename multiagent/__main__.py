"""``python -m multiagent serve --world trade``: a world as an OpenEnv server (HTTP, WebSocket
and MCP), each session playing one agent's seat."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from multiagent.worlds import WORLDS

Number = TypeVar("Number", int, float)


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
    serve.add_argument(
        "--token",
        default=None,
        help="require 'Authorization: Bearer TOKEN' on every route but /health "
        "(default: $POLYARENA_TOKEN, which keeps it out of the process list; unset: none)",
    )
    serve.add_argument(
        "--rate-limit",
        type=int,
        default=100,
        help="requests and WebSocket messages per minute and client IP (default: 100; 0: none)",
    )
    serve.add_argument(
        "--max-sessions",
        type=_positive(int),
        default=64,
        help="sessions (seats played) open at once, HTTP and WebSocket (default: 64)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=_positive(float),
        default=600.0,
        metavar="SECONDS",
        help="close HTTP sessions idle this long (default: 600)",
    )
    # Usage errors found after parsing name the serve command, as argparse's own do.
    serve.set_defaults(run=lambda args: _serve(args, serve))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    args.run(args)


def _positive(kind: Callable[[str], Number]) -> Callable[[str], Number]:
    """An argparse type: a finite number above 0, else a usage error naming the value."""

    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            number = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"not a {number}: {text!r}") from None
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value

    return parse


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.rate_limit < 0:
        parser.error("--rate-limit must be 0 (no limit) or more")
    try:
        from multiagent.server import serve
    except ImportError as error:  # the server extra is not installed
        parser.exit(1, f"{parser.prog}: error: {error}; pip install 'polyarena[server]'\n")
    from multiagent.env import as_config

    try:
        config = as_config(args.world)  # a bad world is a usage error, not a traceback
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: error: --world {args.world}: {error}\n")
    settings: dict[str, Any] = {
        "token": args.token or os.environ.get("POLYARENA_TOKEN") or None,
        "rate_limit": args.rate_limit or None,
        "max_sessions": args.max_sessions,
        "idle_timeout": args.idle_timeout,
    }
    serve(config, args.host, args.port, **settings)


if __name__ == "__main__":
    main()
