"""``python -m multiagent run``: play episodes of a world with a player in every seat.

``--players SEAT=SPEC`` names a seat's player (the grammar of ``multiagent.players``),
``--default-player`` the player of every other seat (default ``random``). Episode i is seeded
``seed + i``. Prints each seat's mean return and the episode lengths as a table, or with
``--json`` one ``EpisodeOutcome`` per episode as a JSON list; progress goes to stderr. A bad
seat or spec is a ``UsageError`` (exit 2) naming it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from envkit.command_line import EXIT_OK, UsageError, add_debug_flag
from envkit.errors import PlayerSpecError
from multiagent.config import SimulationConfig
from multiagent.play import EpisodeOutcome, play_episode
from multiagent.players import WorldPlayer, check_world_player, make_world_player
from multiagent.worlds import WORLDS

__all__ = ["add_run_parser", "outcome_table", "run", "seat_specs"]


def add_run_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``run`` subcommand's parser, added to ``commands``."""
    run_parser: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="play episodes with a player in every seat and print each seat's mean return",
        description="Exit status 2 when the world, a seat or a player spec is bad.",
    )
    run_parser.add_argument(
        "world",
        metavar="FILE",
        help=f"a world YAML file, or a built-in world ({', '.join(WORLDS)})",
    )
    run_parser.add_argument("--episodes", type=int, default=1, help="episodes (default 1)")
    run_parser.add_argument("--seed", type=int, default=0, help="first episode's seed (default 0)")
    run_parser.add_argument(
        "--players",
        nargs="+",
        default=[],
        metavar="SEAT=SPEC",
        help="a seat's player, e.g. Forager_1=scripted:my_policies:greedy",
    )
    run_parser.add_argument(
        "--default-player",
        default="random",
        metavar="SPEC",
        help="the player of the seats --players leaves out (default: random)",
    )
    run_parser.add_argument(
        "--observability",
        choices=("configured", "full"),
        default="configured",
        help="the world's matrix and noise (default), or the ground truth for every seat",
    )
    run_parser.add_argument("--json", action="store_true", help="print the episodes as JSON")
    add_debug_flag(run_parser)
    return run_parser


def seat_specs(config: SimulationConfig, pairs: list[str], default: str) -> dict[str, str]:
    """Each seat's spec from ``SEAT=SPEC`` pairs and the default, every spec checked.

    Example:
        >>> from multiagent.worlds import load_world
        >>> seat_specs(load_world("forage"), ["Forager_2=noop"], "random")
        {'Forager_1': 'random', 'Forager_2': 'noop', 'Forager_3': 'random'}
    """
    specs = dict.fromkeys(config.agent_names, default)
    given: set[str] = set()
    for pair in pairs:
        seat, equals, spec = pair.partition("=")
        if not equals or not seat or not spec:
            raise UsageError(
                f"--players {pair!r}: expected SEAT=SPEC, e.g. {config.agent_names[0]}=noop"
            )
        if seat not in specs:
            raise UsageError(
                f"--players {pair!r}: no seat {seat!r}; the seats are {config.agent_names}"
            )
        if seat in given:
            raise UsageError(f"--players: seat {seat!r} is given twice")
        given.add(seat)
        specs[seat] = spec
    for seat, spec in specs.items():
        try:
            check_world_player(spec)
        except PlayerSpecError as error:
            flag = "--players" if seat in given else "--default-player"
            raise UsageError(f"{flag} (seat {seat}): {error}") from None
    return specs


def run(args: argparse.Namespace) -> int:
    """Play ``args.episodes`` episodes and print the table (or JSON); the exit status."""
    if args.episodes < 1:
        raise UsageError(f"--episodes must be at least 1, got {args.episodes}")
    config, folder = _world(args.world)
    specs = seat_specs(config, args.players, args.default_player)
    players = _players(config, specs, folder)
    outcomes: list[EpisodeOutcome] = []
    try:
        for index in range(args.episodes):
            seed = args.seed + index
            outcome = play_episode(
                config, players, seed=seed, observability=args.observability, scope=f"ep-{index}"
            )
            outcomes.append(outcome)
            print(
                f"episode {index + 1}/{args.episodes} (seed {seed}): {outcome.length} turns",
                file=sys.stderr,
            )
    finally:
        for player in players.values():
            player.close()
    if args.json:
        print(json.dumps([outcome.model_dump(mode="json") for outcome in outcomes], indent=2))
    else:
        print(outcome_table(outcomes))
    return EXIT_OK


def _world(source: str) -> tuple[SimulationConfig, Path | None]:
    """The world and the folder its file is in (where ``scripted:`` modules are looked for)."""
    from multiagent.config import load_config
    from multiagent.worlds import load_world

    path = Path(source)
    if path.is_file():
        try:
            return load_config(path), path.resolve().parent
        except ValueError as error:
            raise UsageError(f"{source}: {error}") from None
    if source in WORLDS:
        return load_world(source), None
    raise UsageError(f"{source}: no such file", f"the built-in worlds are {', '.join(WORLDS)}")


def _players(
    config: SimulationConfig, specs: dict[str, str], folder: Path | None
) -> dict[str, WorldPlayer]:
    players: dict[str, WorldPlayer] = {}
    for seat, spec in specs.items():
        try:
            players[seat] = make_world_player(spec, config, folder=folder)
        except (PlayerSpecError, FileNotFoundError) as error:
            for made in players.values():
                made.close()
            raise UsageError(f"seat {seat} ({spec}): {error}") from None
    return players


def outcome_table(outcomes: list[EpisodeOutcome]) -> str:
    """Each seat's player and mean return, then the episode lengths.

    Example:
        >>> outcome = EpisodeOutcome(seed=0, length=3, truncated=True, returns={"A": 1.5},
        ...                          invalid_actions={"A": 1}, players={"A": "noop"})
        >>> print(outcome_table([outcome, outcome]))
        seat  player  mean return  invalid actions
        A     noop         1.5000                2
        episodes: 2, lengths: mean 3.0, min 3, max 3, truncated 2
    """
    seats = list(outcomes[0].returns)
    rows = [("seat", "player", "mean return", "invalid actions")]
    for seat in seats:
        mean = sum(outcome.returns[seat] for outcome in outcomes) / len(outcomes)
        invalid = sum(outcome.invalid_actions[seat] for outcome in outcomes)
        rows.append((seat, outcomes[0].players[seat], f"{mean:.4f}", str(invalid)))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    aligns = ("<", "<", ">", ">")
    lines = [
        "  ".join(
            f"{cell:{align}{width}}" for cell, align, width in zip(row, aligns, widths, strict=True)
        )
        for row in rows
    ]
    lengths = [outcome.length for outcome in outcomes]
    truncated = sum(outcome.truncated for outcome in outcomes)
    lines.append(
        f"episodes: {len(outcomes)}, lengths: mean {sum(lengths) / len(lengths):.1f}, "
        f"min {min(lengths)}, max {max(lengths)}, truncated {truncated}"
    )
    return "\n".join(lines)
