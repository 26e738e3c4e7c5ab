"""``python -m chess_env``: a quick game (``demo``, the default), a game watched move by move or
played by a person (``play``), an evaluation (``eval``), a tournament with ratings (``arena``)
or the OpenEnv server (``serve``).

Players are named as everywhere in the package (``chess_env.core.players``): random, greedy,
stockfish:3, stockfish?elo=1500, alphabeta:2, runs/x/model.zip, openai:MODEL, human. Exit
status: 0 when the command ran, 1 when it failed, 2 on bad usage (a bad spec included), with one
line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import chess

from chess_env.arena.command import add_arena_command
from chess_env.core.players import PLAYER_FORMS
from chess_env.errors import PlayerSpecError
from chess_env.serving.game_store import UnwritableArchiveError
from chess_env.text.evaluation import COLOR_SCHEDULES, EvaluationReport
from envkit.cli import add_server_arguments, positive, server_settings
from envkit.command_line import add_debug_flag, run_command

PROG = "python -m chess_env"
PLAYERS_HELP = "a player: " + ", ".join(PLAYER_FORMS)
EXTRAS = {"torch": "train", "stable_baselines3": "train", "sb3_contrib": "train"}
EXTRAS |= {name: "server" for name in ("fastapi", "uvicorn", "websockets")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    _add_demo(commands)
    _add_play(commands)
    _add_eval(commands)
    _add_serve(commands)
    add_arena_command(commands)
    args = parser.parse_args((sys.argv[1:] if argv is None else argv) or ["demo"])
    return run_command(
        lambda: args.run(args),
        prog=f"{PROG} {args.command}",
        debug=args.debug,
        usage_errors=(PlayerSpecError, UnwritableArchiveError),
        extras=EXTRAS,
    )


def _add_demo(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser("demo", help="play a quick game and print the board, PGN, outcome")
    _add_game_arguments(demo, white="greedy", black="random", max_plies=200)
    demo.set_defaults(run=_demo)


def _add_game_arguments(
    command: argparse.ArgumentParser, *, white: str, black: str, max_plies: int
) -> None:
    """The flags of a game between two players: who plays, the seed, the ply cap."""
    add_debug_flag(command)
    command.add_argument("--white", default=white, help=f"{PLAYERS_HELP} (default: {white})")
    command.add_argument("--black", default=black, help=f"the same (default: {black})")
    command.add_argument("--seed", type=int, default=0)
    command.add_argument("--max-plies", type=int, default=max_plies, help="0 for no cap")


def _demo(args: argparse.Namespace) -> int:
    from chess_env.core.render import render_ansi
    from chess_env.text.play import play_game

    played = play_game(
        args.white,
        args.black,
        seed=args.seed,
        max_plies=args.max_plies or None,
        event="polyarena demo",
    )
    print(f"{render_ansi(played.game.board)}\n\n{played.pgn}\n\nOutcome: {played.describe()}")
    return 0


def _add_play(commands: argparse._SubParsersAction) -> None:
    play = commands.add_parser(
        "play",
        help="play one game and show it move by move; 'human' lets you type moves",
        description="Play one game between two players and show every move. A 'human' side "
        "types its moves (UCI or SAN; 'resign' gives up). Example: "
        f"{PROG} play --white human --black 'stockfish?elo=1500'",
    )
    _add_game_arguments(play, white="human", black="greedy", max_plies=512)
    play.add_argument(
        "--render",
        choices=("ansi", "svg", "none"),
        default="ansi",
        help="ansi: the board in the terminal after every move; svg: keep --svg up to date (an "
        "image viewer that reloads shows the game) and print the moves; none: the moves only",
    )
    play.add_argument("--svg", type=Path, default=Path("board.svg"), help="(default: board.svg)")
    play.add_argument("--pgn", type=Path, help="write the game here as PGN")
    play.set_defaults(run=_play)


def _play(args: argparse.Namespace) -> int:
    from chess_env.core.players import parse_player
    from chess_env.core.render import render_ansi, render_svg
    from chess_env.text.play import play_game

    humans = {
        color for color, spec in ((chess.WHITE, args.white), (chess.BLACK, args.black))
        if parse_player(spec).kind == "human"
    }  # fmt: skip

    def show(game: Any, move: chess.Move) -> None:
        board = game.board
        before = board.copy(stack=1)
        before.pop()
        number = f"{before.fullmove_number}{'.' if before.turn == chess.WHITE else '...'}"
        print(f"{number} {before.san(move)}", flush=True)
        if args.render == "svg":
            args.svg.write_text(render_svg(board), encoding="utf-8")
        elif args.render == "ansi" and (not humans or game.is_over):
            # A person's own prompt shows the board before their move.
            print(render_ansi(board, next(iter(humans), chess.WHITE)) + "\n", flush=True)

    played = play_game(
        args.white,
        args.black,
        seed=args.seed,
        max_plies=args.max_plies or None,
        on_move=show,
        event="python -m chess_env play",
    )
    if args.pgn is not None:
        args.pgn.write_text(f"{played.pgn}\n", encoding="utf-8")
    print(f"Result: {played.describe()}")
    return 0


def _add_eval(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "eval",
        help="play an agent against an opponent in ChessTextEnv and report its stats",
        description="Print a table of the games and stats; with --out also write "
        "DIR/report.json and DIR/games.pgn.",
    )
    add_debug_flag(evaluate)
    evaluate.add_argument(
        "--agent", default="random", help=f"{PLAYERS_HELP}; openai:MODEL reads the text itself"
    )
    evaluate.add_argument(
        "--base-url",
        default=None,
        help="an LLM's API root (default: $OPENAI_BASE_URL, else https://api.openai.com/v1)",
    )
    evaluate.add_argument(
        "--api-key-env", default=None, help="variable holding the key (default: OPENAI_API_KEY)"
    )
    evaluate.add_argument("--timeout", type=float, default=None, help="seconds per LLM reply (30)")
    evaluate.add_argument(
        "--tool-calling", action="store_true", help="ask the LLM for its move as a tool call"
    )
    evaluate.add_argument("--opponent", default="random", help=f"{PLAYERS_HELP} (default: random)")
    evaluate.add_argument("--games", type=positive(int), default=10)
    evaluate.add_argument("--colors", choices=COLOR_SCHEDULES, default="alternate")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--retries", type=int, default=1, help="retries after an illegal move")
    evaluate.add_argument("--max-plies", type=int, default=200, help="0 for no cap")
    evaluate.add_argument("--out", help="directory for report.json and games.pgn")
    evaluate.set_defaults(run=_evaluate)


def _evaluate(args: argparse.Namespace) -> int:
    from chess_env.text.agents import make_text_agent
    from chess_env.text.evaluation import evaluate_agent, write_report

    agent = make_text_agent(
        args.agent,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        timeout_seconds=args.timeout,
        tool_calling=args.tool_calling or None,
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
    _print_report(report)
    if args.out:
        for path in write_report(report, args.out):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _add_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve ChessEnv over HTTP, WebSocket and MCP (OpenEnv's protocol)",
        description="Needs the server extra: pip install 'polyarena[server]'.",
    )
    add_debug_flag(serve)
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
        help="also serve the multi-game chess service under /service (games, spectators) and "
        "the viewer at /viewer/ (watch, replay and play games in a browser)",
    )
    serve.add_argument(
        "--archive",
        default=None,
        metavar="DIR",
        help="keep the service's games in DIR/games.sqlite3 as they change (a killed server "
        "loses no answered move, and the next one on DIR resumes the unfinished games), with "
        "finished and evicted games exported to DIR/games.jsonl and games.pgn (implies --service)",
    )
    serve.add_argument(
        "--max-archive-bytes",
        type=positive(int),
        default=None,
        metavar="BYTES",
        help="the most the archive (the database and its exports) may take; past it, games "
        "wait in memory and new ones get 503 archive_unavailable (default: 1 GiB)",
    )
    serve.add_argument(
        "--no-resume",
        action="store_true",
        help="archive the unfinished games of the last server on --archive DIR instead of "
        "resuming them",
    )
    serve.add_argument(
        "--max-plies",
        type=positive(int),
        default=None,
        metavar="N",
        help="a service game ends as a draw (termination max_plies) at N plies (default: 1000)",
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
    serve.add_argument(
        "--list-games",
        choices=("all", "public", "off"),
        default=None,
        help="which service games GET /service/games lists: all, public (those created with "
        "public: true, or with no client seat) or off (default: public)",
    )
    _add_player_limits(serve)
    _add_client_limits(serve)
    # Usage errors found after parsing name the serve command, as argparse's own do.
    serve.set_defaults(run=lambda args: _serve(args, serve))


# Flag -> (ThinkingLimits field, type, help); each default is ThinkingLimits'.
_PLAYER_LIMITS: dict[str, tuple[str, type, str]] = {
    "--max-engines": ("max_engines", int, "Stockfish processes alive at once (default: 8)"),
    "--max-engines-per-client": (
        "max_engines_per_client",
        int,
        "Stockfish processes one client's games and sessions may hold (default: 4)",
    ),
    "--max-searches": (
        "max_searches",
        int,
        "server players searching at once (Stockfish, alphabeta); the rest wait their turn, "
        "their clocks stopped (default: the CPU cores)",
    ),
    "--max-searches-per-client": (
        "max_searches_per_client",
        int,
        "of which one client's (default: 1)",
    ),
    "--max-think-seconds": (
        "max_think_seconds",
        float,
        "a served engine's longest move; a spec asking for a longer movetime is refused "
        "(default: 5)",
    ),
    "--max-engine-depth": (
        "max_depth",
        int,
        "a served engine's deepest search in plies; a deeper spec is refused (default: 20)",
    ),
}


def _add_player_limits(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group(
        "server players",
        "what the opponents and service agents the server makes may cost; one more engine "
        "than allowed is refused with 503 (reason engine_limit) and Retry-After",
    )
    for flag, (_, kind, help_text) in _PLAYER_LIMITS.items():
        metavar = "SECONDS" if kind is float else "N"
        group.add_argument(flag, type=positive(kind), default=None, metavar=metavar, help=help_text)


def _add_client_limits(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("what one client may hold in the service")
    group.add_argument(
        "--max-live-games-per-client",
        type=positive(int),
        default=None,
        metavar="N",
        help="unfinished service games one client may have created; one more is 503 "
        "(reason client_game_limit) (default: 16)",
    )
    group.add_argument(
        "--max-spectators-per-client",
        type=positive(int),
        default=None,
        metavar="N",
        help="spectator streams one client may hold open (default: 16)",
    )
    group.add_argument(
        "--max-spectators-per-game",
        type=positive(int),
        default=None,
        metavar="N",
        help="spectator streams open on one game (default: 200)",
    )


def _player_limits(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Any:
    """The ``ThinkingLimits`` the flags set; None when none is given (the defaults)."""
    given = {
        field: getattr(args, flag[2:].replace("-", "_"))
        for flag, (field, _, _) in _PLAYER_LIMITS.items()
        if getattr(args, flag[2:].replace("-", "_")) is not None
    }
    if not given:
        return None
    from chess_env.serving.thinking import ThinkingLimits

    try:
        return ThinkingLimits(**given)
    except ValueError as error:
        parser.error(str(error))


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    settings: dict[str, Any] = server_settings(args, parser)
    service = args.service or args.archive is not None
    client_limits = ("max_live_games_per_client", "max_spectators_per_client")
    for flag in ("max_archive_bytes", "no_resume"):
        if getattr(args, flag) not in (None, False) and args.archive is None:
            parser.error(f"--{flag.replace('_', '-')} is a setting of --archive")
    for flag in (
        "max_games",
        "cleanup_interval",
        "list_games",
        *client_limits,
        "max_spectators_per_game",
        "max_plies",
    ):
        if getattr(args, flag) is not None and not service:
            parser.error(f"--{flag.replace('_', '-')} is a setting of --service (or --archive)")
    from chess_env.serving.app import serve  # without the server extra: its install hint

    settings.update(service=service, archive_dir=args.archive)
    optional = {  # unset: create_chess_app's defaults
        "idle_timeout": args.idle_timeout,
        "game_idle_timeout": args.idle_timeout,
        "max_games": args.max_games,
        "cleanup_interval": args.cleanup_interval,
        "listing": args.list_games,
        "thinking": _player_limits(args, parser),
        "max_live_games_per_client": args.max_live_games_per_client,
        "max_spectators_per_client": args.max_spectators_per_client,
        "max_spectators_per_game": args.max_spectators_per_game,
        "max_plies": args.max_plies,
        "max_archive_bytes": args.max_archive_bytes,
    }
    settings.update((name, value) for name, value in optional.items() if value is not None)
    if args.no_resume:
        settings["resume_games"] = False
    serve(args.host, args.port, **settings)
    return 0


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
    sys.exit(main())
