"""What every ``serve`` command shares: its server flags and their checks (no fastapi import).

- ``positive(int | float)``: an argparse type for a finite number above 0.
- ``add_server_arguments(parser, ...)``: ``--host``, ``--port``, ``--token``, ``--rate-limit``,
  ``--forwarded-allow-ips``, ``--allow-origin``, ``--max-sessions``,
  ``--max-sessions-per-client``, ``--idle-timeout`` and ``--busy-poll-ms``.
- ``server_settings(args, parser)``: those flags as ``envkit.server.create_app`` settings
  (the token from ``$POLYARENA_TOKEN`` when not given); a bad rate limit or busy-poll window,
  or a token shorter than ``MIN_TOKEN_LENGTH`` characters, is a usage error (exit 2).
  ``--token generate`` makes a random token (``secrets``, 256 bits) and prints it to stderr.

The defaults let any one client play whole games in a tight loop, however many:

- no rate limit (``--rate-limit 0``, as ``create_app``): a budget counts per client IP, so every
  env a training job steps on one machine shares it, and one client stepping in a tight loop
  makes hundreds of calls a second; any budget that holds that is no limit on a flood either.
  Set one for a server others can reach (``--host 0.0.0.0``): envkit's clients wait out its
  refusals as their ``Retry-After`` says rather than fail.
- 64 sessions at once (``--max-sessions``): a client holds one (a WebSocket connection, or
  ``EnvClient``'s session, which its resets reuse).
- one client IP holds at most half of the sessions (``--max-sessions-per-client``), so a
  flood of resets from one client leaves the other half to everyone else.
- the client is the connection's peer: ``X-Forwarded-For`` is believed only from the proxies
  ``--forwarded-allow-ips`` names (none by default; uvicorn's own default is 127.0.0.1).
- idle HTTP sessions close after minutes (``--idle-timeout``), a WebSocket's env never while it
  is connected: a client stepping in a loop is never idle that long.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "MIN_TOKEN_LENGTH",
    "TOKEN_VARIABLE",
    "add_server_arguments",
    "parse_price",
    "positive",
    "server_settings",
]

Number = TypeVar("Number", int, float)
TOKEN_VARIABLE = "POLYARENA_TOKEN"
MIN_TOKEN_LENGTH = 16  # shorter ones can be guessed, even through a rate limit
GENERATE_TOKEN = "generate"


def positive(kind: Callable[[str], Number]) -> Callable[[str], Number]:
    """An argparse type: a finite number above 0, else a usage error naming the value.

    Example:
        >>> positive(float)("2.5")
        2.5
    """

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


def add_server_arguments(
    serve: argparse.ArgumentParser,
    *,
    sessions: str,
    idle_default: float | None,
    idle_help: str,
) -> None:
    """The flags every server takes; ``sessions`` says what a session is in the help."""
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: local only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--token",
        default=None,
        help="require 'Authorization: Bearer TOKEN' on every route but /health; at least "
        f"{MIN_TOKEN_LENGTH} characters, or 'generate' for a random one printed to stderr "
        f"(default: ${TOKEN_VARIABLE}, which keeps it out of the process list; unset: none)",
    )
    serve.add_argument(
        "--rate-limit",
        type=int,
        default=0,
        metavar="PER_MINUTE",
        help="requests and WebSocket messages per minute and client IP; over it they are refused "
        "with a Retry-After, which envkit's clients wait out. Set it for a server others can "
        "reach (default: 0, no limit, as envkit.server.create_app: every client on one machine "
        "shares its IP's budget, and one stepping in a tight loop makes hundreds of calls a "
        "second)",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        default=None,
        metavar="IPS",
        help="proxies (comma-separated IPs or networks, or '*') whose X-Forwarded-For names the "
        "client that the rate limit and session cap count; from others it is ignored "
        "(default: none, the client is the connection's peer)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        type=_origin,
        metavar="ORIGIN",
        help="an origin (scheme://host[:port], or '*' for any) whose web pages may open "
        "WebSockets and send POST, PUT, PATCH and DELETE requests, besides the server's own; "
        "repeatable (default: none: other pages get 403 FORBIDDEN_ORIGIN)",
    )
    serve.add_argument(
        "--max-sessions",
        type=positive(int),
        default=64,
        help=f"{sessions} open at once, HTTP and WebSocket; a client holds one (default: 64)",
    )
    serve.add_argument(
        "--max-sessions-per-client",
        type=positive(int),
        default=None,
        metavar="N",
        help=f"{sessions} one client IP may hold at once, HTTP and WebSocket; one more is "
        "refused (503 CAPACITY_REACHED, reason client_session_limit) "
        "(default: half of --max-sessions)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=positive(float),
        default=idle_default,
        metavar="SECONDS",
        help=idle_help,
    )
    serve.add_argument(
        "--session-owner-check",
        action="store_true",
        help="for a server several users share: the reply that opens a session carries a "
        "session_token, and every later call naming that session must send it in "
        "X-Session-Token (403 without it); off by default, as OpenEnv's clients send none",
    )
    serve.add_argument(
        "--max-ws-pending-bytes",
        type=positive(int),
        default=None,
        metavar="BYTES",
        help="drop a WebSocket when this much output waits for a client that does not read it "
        "(pongs to a ping flood, ...) (default: 1 MiB)",
    )
    serve.add_argument(
        "--busy-poll-ms",
        type=float,
        default=0.5,
        metavar="MS",
        help="keep polling the sockets this long after each reply instead of sleeping: a client "
        "stepping in a tight loop gets each reply sooner, for at most this much CPU time per "
        "reply (default: 0.5, as envkit.server.create_app; 0: off)",
    )


def _origin(text: str) -> str:
    """An argparse type: ``*`` or an origin, ``scheme://host[:port]``, else a usage error."""
    from envkit.server.origins import ANY_ORIGIN, normalize_origin  # serving imports it anyway

    try:
        return text if text == ANY_ORIGIN else normalize_origin(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def server_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """``create_app``'s token, rate limit, session cap, busy-poll window and owner check from the
    flags, and ``make_server``'s WebSocket output limit when given (the ``serve`` functions
    pass it there)."""
    if args.rate_limit < 0:
        parser.error("--rate-limit must be 0 (no limit) or more")
    if not 0 <= args.busy_poll_ms < math.inf:
        parser.error(
            f"--busy-poll-ms must be 0 (off) or a finite number above, got {args.busy_poll_ms}"
        )
    per_client = args.max_sessions_per_client or max(1, args.max_sessions // 2)
    return {
        "token": _token(args, parser),
        "rate_limit": args.rate_limit or None,
        "forwarded_allow_ips": args.forwarded_allow_ips or None,
        "allow_origins": args.allow_origin,
        "max_sessions": args.max_sessions,
        "max_sessions_per_client": per_client,
        "busy_poll": args.busy_poll_ms / 1000,
        "session_owner_check": args.session_owner_check,
        **_given(max_ws_pending_bytes=args.max_ws_pending_bytes),
    }


def _given(**settings: Any) -> dict[str, Any]:
    """The settings a flag gave (not None): the rest keep their function's defaults."""
    return {name: value for name, value in settings.items() if value is not None}


def _token(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """The bearer token from ``--token`` or the environment; a generated one is printed."""
    if args.token == GENERATE_TOKEN:
        generated = secrets.token_urlsafe(32)
        print(f"bearer token: {generated}", file=sys.stderr, flush=True)
        return generated
    token = args.token or os.environ.get(TOKEN_VARIABLE) or None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        source = "--token" if args.token else f"${TOKEN_VARIABLE}"
        parser.error(
            f"{source} must be at least {MIN_TOKEN_LENGTH} characters, got {len(token)} "
            f"(--token {GENERATE_TOKEN} makes a random one)"
        )
    return token


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """``--price MODEL=IN/OUT`` -> (model, (in, out)) in dollars per million tokens.

    Example:
        >>> parse_price("gpt-4o-mini=0.15/0.60")
        ('gpt-4o-mini', (0.15, 0.6))
    """
    model, _, amounts = text.rpartition("=")
    try:
        prompt, completion = (float(part) for part in amounts.split("/"))
    except ValueError:
        raise ValueError(
            f"--price {text!r}: expected MODEL=IN/OUT, dollars per million prompt and completion "
            "tokens, e.g. gpt-4o-mini=0.15/0.60"
        ) from None
    if not model or not (0 <= prompt < math.inf and 0 <= completion < math.inf):
        raise ValueError(f"--price {text!r}: expected MODEL=IN/OUT with non-negative prices")
    return model, (prompt, completion)
