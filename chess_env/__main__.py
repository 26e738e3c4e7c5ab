"""``python -m chess_env``: a demo game (``demo``, the default), an evaluation (``eval``) or the
OpenEnv server (``serve``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chess_env.demo import main as demo_main
from chess_env.evaluation import COLOR_SCHEDULES, EvaluationReport
from chess_env.opponents import OPPONENT_NAMES
from envkit.cli import add_server_arguments, positive, server_settings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m chess_env", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser("demo", help="play a game and print the board, PGN and outcome")
    for side, default in (("white", "greedy"), ("black", "random")):
        demo.add_argument(f"--{side}", choices=OPPONENT_NAMES, default=default)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--max-plies", type=int, default=200, help="0 for no cap")
    demo.set_defaults(run=_demo)
    _add_eval(commands)
    _add_serve(commands)
    args = parser.parse_args((sys.argv[1:] if argv is None else argv) or ["demo"])
    args.run(args, parser)


def _demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    demo_main(args.white, args.black, args.seed, args.max_plies or None)


def _add_eval(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "eval",
        help="play an agent against an opponent in ChessTextEnv and report its stats",
        description="Print a table of the games and stats; with --out also write "
        "DIR/report.json and DIR/games.pgn.",
    )
    evaluate.add_argument(
        "--agent",
        default="random",
        help="openai:MODEL (an OpenAI-compatible endpoint), or random, greedy, stockfish[:DEPTH]",
    )
    evaluate.add_argument("--base-url", default="https://api.openai.com/v1", help="API root")
    evaluate.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key"
    )
    evaluate.add_argument("--timeout", type=float, default=30.0, help="seconds per LLM reply")
    evaluate.add_argument(
        "--tool-calling", action="store_true", help="ask the LLM for its move as a tool call"
    )
    evaluate.add_argument("--opponent", default="random", help="random, greedy, stockfish[:DEPTH]")
    evaluate.add_argument("--games", type=int, default=10)
    evaluate.add_argument("--colors", choices=COLOR_SCHEDULES, default="alternate")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--retries", type=int, default=1, help="retries after an illegal move")
    evaluate.add_argument("--max-plies", type=int, default=200, help="0 for no cap")
    evaluate.add_argument("--out", help="directory for report.json and games.pgn")
    evaluate.set_defaults(run=_evaluate)


def _evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from chess_env.agents import make_text_agent
    from chess_env.evaluation import evaluate_agent, write_report
    from envkit.llm import ChatError

    try:
        agent = make_text_agent(
            args.agent,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            timeout_seconds=args.timeout,
            tool_calling=args.tool_calling,
        )
        try:
            report = evaluate_agent(
                agent,
                args.opponent,
                args.games,
                colors=args.colors,
                seed=args.seed,
                retries=args.retries,
                max_plies=args.max_plies or None,
            )
        finally:
            agent.close()
    except (ValueError, FileNotFoundError, ChatError) as error:
        parser.exit(1, f"{parser.prog} eval: error: {error}\n")
    _print_report(report)
    if args.out:
        for path in write_report(report, args.out):
            print(f"wrote {path}")


def _add_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve ChessEnv over HTTP, WebSocket and MCP (OpenEnv's protocol)",
        description="Needs the server extra: pip install 'polyarena[server]'.",
    )
    add_server_arguments(
        serve,
        sessions="env sessions",
        idle_default=None,
        idle_help="close HTTP sessions, and service games, idle this long "
        "(default: 600 for sessions, 1800 for games)",
    )
    serve.add_argument(
        "--service",
        action="store_true",
        help="also serve the multi-game chess service under /service (games, spectators)",
    )
    serve.add_argument(
        "--archive",
        default=None,
        metavar="DIR",
        help="append finished and evicted service games to DIR/games.jsonl and games.pgn "
        "(implies --service)",
    )
    serve.add_argument(
        "--max-games",
        type=positive(int),
        default=None,
        help="service games held at once; the least recently updated go first (default: 100)",
    )
    serve.add_argument(
        "--cleanup-interval",
        type=positive(float),
        default=None,
        metavar="SECONDS",
        help="seconds between two sweeps of the service for idle games (default: 60)",
    )
    # Usage errors found after parsing name the serve command, as argparse's own do.
    serve.set_defaults(run=lambda args, _: _serve(args, serve))


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    settings: dict[str, Any] = server_settings(args, parser)
    service = args.service or args.archive is not None
    for flag in ("max_games", "cleanup_interval"):
        if getattr(args, flag) is not None and not service:
            parser.error(f"--{flag.replace('_', '-')} is a setting of --service (or --archive)")
    try:
        from chess_env.server import serve
    except ImportError as error:  # the server extra is not installed
        parser.exit(1, f"{parser.prog}: error: {error}; pip install 'polyarena[server]'\n")
    settings.update(service=service, archive_dir=args.archive)
    optional = {  # unset: create_chess_app's defaults
        "idle_timeout": args.idle_timeout,
        "game_idle_timeout": args.idle_timeout,
        "max_games": args.max_games,
        "cleanup_interval": args.cleanup_interval,
    }
    settings.update((name, value) for name, value in optional.items() if value is not None)
    serve(args.host, args.port, **settings)


def _print_report(report: EvaluationReport) -> None:
    from rich.console import Console
    from rich.table import Table

    games = Table(title=f"{report.agent} vs {report.opponent}")
    for column in ("game", "colour", "result", "outcome", "moves", "illegal", "thinking s"):
        games.add_column(column, justify="left" if column in ("colour", "outcome") else "right")
    for number, game in enumerate(report.games, 1):
        games.add_row(
            str(number),
            game.agent_color,
            game.result,
            game.outcome,
            str(game.moves),
            str(game.illegal_attempts),
            f"{game.thinking_time:.2f}",
        )
    stats = Table(title="Agent stats")
    stats.add_column("stat")
    stats.add_column("value", justify="right")
    for name, value in report.stats.model_dump(exclude={"schema_version"}).items():
        stats.add_row(name, f"{value:.3f}" if isinstance(value, float) else str(value))
    console = Console()
    console.print(games)
    console.print(stats)


if __name__ == "__main__":
    main()
